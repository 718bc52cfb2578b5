#!/usr/bin/env bash
# A real Prometheus server (Debian's `prometheus`) scrapes an 8-node local cluster of `gossipd run`
# daemons every second: a generated prometheus.yml lists each node's /metrics (the port from its
# http_port file) as a static target labelled node="<id>". Through Prometheus's HTTP API the test waits
# until gossipd_round reports all 8 nodes, then until every node's round has grown; then it kills one
# node with SIGKILL and waits until Prometheus reports up == 0 for it while the others stay up.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
for tool in prometheus curl; do
  command -v $tool >/dev/null || { echo "SKIP: $tool is not installed (Debian package $tool; make deps installs it)"; exit 77; }
done
N=8
VICTIM=5
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=$N --set cluster.topology=ring
      --set algorithm.name=dpsgd --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=200)
start_cluster $N "${args[@]}"
for ((i = 0; i < N; i++)); do wait_for 30 "node $i to write its http_port file" test -s "$WORK/node-$i/http_port"; done

# prometheus.yml: one static target per node, labelled with its id.
{
  echo "global:"
  echo "  scrape_interval: 1s"
  echo "  scrape_timeout: 900ms"
  echo "  evaluation_interval: 1s"
  echo "scrape_configs:"
  echo "  - job_name: gossipd"
  echo "    static_configs:"
  for ((i = 0; i < N; i++)); do
    echo "      - targets: ['127.0.0.1:$(cat "$WORK/node-$i/http_port")']"
    echo "        labels: {node: '$i'}"
  done
} >"$WORK/prometheus.yml"

# Prometheus on a free loopback port (picked by binding port 0; tried again should another process take
# it between the pick and Prometheus's bind), with its own storage in the test's temp dir.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
prom_ready() { curl -sf "http://127.0.0.1:$PROM_PORT/-/ready"; }
for attempt in 1 2 3; do
  PROM_PORT=$(free_port)
  mkdir -p "$WORK/prometheus"
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/prometheus/data" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$WORK/prometheus/log" 2>&1 &
  PROM_PID=$!
  PIDS+=($PROM_PID)
  if wait_for_quiet 60 sh -c "curl -sf http://127.0.0.1:$PROM_PORT/-/ready || ! kill -0 $PROM_PID" && prom_ready >/dev/null; then
    break
  fi
  kill -9 "$PROM_PID" 2>/dev/null || true
  grep -qi "address already in use" "$WORK/prometheus/log" && [ $attempt -lt 3 ] && continue
  tail -n 20 "$WORK/prometheus/log" >&2
  fail "prometheus did not become ready on 127.0.0.1:$PROM_PORT within 60 s"
done
echo "ok: prometheus $(prometheus --version 2>&1 | head -1 | awk '{print $3}') ready on 127.0.0.1:$PROM_PORT, scraping $N nodes every 1 s"

# query EXPR: prints "node value" lines of an instant query, sorted by node.
query() {
  curl -sf --get "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["status"] == "success", j
for r in sorted(j["data"]["result"], key=lambda r: int(r["metric"].get("node", "-1"))):
    print(r["metric"].get("node", "?"), r["value"][1])'
}
nodes_reporting() { [ "$(query gossipd_round | wc -l)" = "$N" ]; }
wait_for 60 "Prometheus to report gossipd_round of all $N nodes" nodes_reporting
first=$(query gossipd_round)
echo "ok: gossipd_round of all $N nodes in Prometheus: $(tr '\n' ' ' <<<"$first")"

# Every node's round grows (a later query against the first one, node by node).
all_grew() {
  python3 - "$first" "$(query gossipd_round)" "$N" <<'EOF'
import sys
before = dict(l.split() for l in sys.argv[1].splitlines())
after = dict(l.split() for l in sys.argv[2].splitlines())
n = int(sys.argv[3])
sys.exit(0 if len(after) == n and all(float(after[k]) > float(before[k]) for k in before) else 1)
EOF
}
wait_for 60 "the rounds of all $N nodes to grow in Prometheus (first: $(tr '\n' ' ' <<<"$first"))" all_grew
echo "ok: all $N rounds grew: $(query gossipd_round | tr '\n' ' ')"
[ "$(query 'up{job="gossipd"}' | awk '$2 == 1' | wc -l)" = "$N" ] || fail "not every target is up: $(query up | tr '\n' ' ')"

# SIGKILL one node: Prometheus's up for it goes to 0, the others stay 1.
kill -9 "${NODE_PID[$VICTIM]}"
t0=$SECONDS
victim_down() { [ "$(query "up{node=\"$VICTIM\"}")" = "$VICTIM 0" ]; }
wait_for 30 "Prometheus to report up == 0 for node $VICTIM after kill -9" victim_down
echo "ok: up{node=\"$VICTIM\"} == 0 within $((SECONDS - t0)) s of kill -9"
others_up=$(query 'up{job="gossipd"} == 1' | wc -l)
[ "$others_up" = $((N - 1)) ] || fail "expected $((N - 1)) targets up after the kill, got $others_up: $(query up | tr '\n' ' ')"
# The survivors keep training and see the death (their own gossipd_deaths_total).
wait_for 30 "a survivor to count the death of node $VICTIM (gossipd_deaths_total > 0 in Prometheus)" \
  sh -c "[ \"\$(curl -sf --get http://127.0.0.1:$PROM_PORT/api/v1/query --data-urlencode 'query=count(gossipd_deaths_total > 0)' | python3 -c 'import json,sys; r=json.load(sys.stdin)[\"data\"][\"result\"]; print(r[0][\"value\"][1] if r else 0)')\" -ge 1 ]"
echo "ok: $others_up targets still up; the survivors counted the death"
