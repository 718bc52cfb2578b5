#!/usr/bin/env bash
# The HTTP server of `gossipd run` (docs/monitoring.md) on 2 real daemons: the bound port in
# <data_dir>/http_port, /metrics accepted by `promtool check metrics`, /status the node's JSON, 404, 405,
# HEAD, 431 for an oversized header, the round metric growing between scrapes, a slow client cut off by
# the read deadline, idle connections beyond the cap closed while the rounds go on, and a bad or taken
# node.http refused with one line and exit 2.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (make deps installs it)"; exit 77; }
command -v promtool >/dev/null || { echo "SKIP: promtool is not installed (Debian package prometheus; make deps installs it)"; exit 77; }
N=2
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=$N --set cluster.topology=ring
      --set algorithm.name=choco --set compressor.name=topk --set compressor.ratio=0.1
      --set algorithm.rounds=100000000 --set monitor.eval_every=0 --set monitor.status_every_ms=100)
start_cluster $N "${args[@]}"
for ((i = 0; i < N; i++)); do wait_for 30 "node $i to write its http_port file" test -s "$WORK/node-$i/http_port"; done
port() { cat "$WORK/node-$1/http_port"; }
url() { echo "http://127.0.0.1:$(port "$1")$2"; }
metric() { curl -sf "$(url "$1" /metrics)" | awk -v m="$2" '$1 == m { print $2 }'; }
grep -q "http http://127.0.0.1:$(port 0)" "$WORK/node-0/log" || fail "node 0's start line does not name its http port $(port 0)"
wait_for 30 "both nodes to train (state training in /status)" \
  sh -c "curl -sf '$(url 0 /status)' | grep -q '\"state\":\"training\"' && curl -sf '$(url 1 /status)' | grep -q '\"state\":\"training\"'"
echo "ok: http ports $(port 0) and $(port 1), both nodes training"
# The disagreement exists only once a round has mixed; a node reports "training" before that.
has_disagreement() { [ -n "$(metric "$1" gossipd_disagreement)" ]; }
for ((i = 0; i < N; i++)); do wait_for 30 "node $i to publish gossipd_disagreement (a round mixed)" has_disagreement $i; done

# /metrics passes promtool's format and lint checks.
for ((i = 0; i < N; i++)); do
  curl -sf "$(url $i /metrics)" -o "$WORK/metrics-$i.txt" || fail "GET /metrics on node $i"
  out=$(promtool check metrics <"$WORK/metrics-$i.txt" 2>&1) || fail "promtool check metrics on node $i: $out"
  [ -z "$out" ] || fail "promtool check metrics on node $i complains: $out"
  for m in gossipd_round gossipd_train_loss gossipd_compression_ratio 'gossipd_bytes_sent_total{peer="'$((1 - i))'"}' \
           'gossipd_peer_up{peer="'$((1 - i))'"}' gossipd_round_duration_seconds_count gossipd_incarnation gossipd_neighbors \
           gossipd_disagreement gossipd_suspicions_total gossipd_refutations_total; do
    grep -q "^$m " "$WORK/metrics-$i.txt" || fail "node $i: no sample $m in /metrics"
  done
  # Two nodes with different data never agree exactly: a positive, finite disagreement.
  awk '$1 == "gossipd_disagreement" { ok = ($2 + 0 > 0 && $2 + 0 < 1e30) } END { exit !ok }' "$WORK/metrics-$i.txt" ||
    fail "node $i: gossipd_disagreement is not a positive finite number: $(grep '^gossipd_disagreement ' "$WORK/metrics-$i.txt")"
done
echo "ok: promtool check metrics accepts /metrics of both nodes ($(wc -l <"$WORK/metrics-0.txt") lines)"

# /status is the node's JSON.
for ((i = 0; i < N; i++)); do
  curl -sf "$(url $i /status)" | python3 -c "import json,sys; j=json.load(sys.stdin); assert j['id'] == $i, j['id']; assert j['endpoint']" \
    || fail "node $i: /status is not JSON with id $i"
done
echo "ok: /status is JSON with the node's id"

# The round grows between two scrapes.
r1=$(metric 0 gossipd_round)
[[ "$r1" =~ ^[0-9]+$ ]] || fail "gossipd_round of node 0 is '$r1'"
round_grew() { [ "$(metric 0 gossipd_round)" -gt "$r1" ]; }  # a function: scraped again on every poll
wait_for 20 "gossipd_round of node 0 to grow past $r1" round_grew
echo "ok: gossipd_round grew from $r1 to $(metric 0 gossipd_round)"

# Status codes.
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "$(url 0 /nope)")" = 404 ] || fail "GET /nope: expected 404, got $(code "$(url 0 /nope)")"
[ "$(code -X POST -d x "$(url 0 /metrics)")" = 405 ] || fail "POST /metrics: expected 405"
curl -s -D - -o /dev/null -X DELETE "$(url 0 /status)" | grep -ci '^allow: GET, HEAD' >/dev/null || fail "405 without Allow: GET, HEAD"
head=$(curl -s -I "$(url 0 /metrics)")
[[ "$head" == "HTTP/1.1 200"* ]] && grep -qi '^content-length: [1-9]' <<<"$head" || fail "HEAD /metrics: $head"
[ "$(curl -s -I "$(url 0 /metrics)" -o /dev/null -w '%{size_download}')" = 0 ] || fail "HEAD /metrics sent a body"
[ "$(code "$(url 0 '/metrics?x=1')")" = 200 ] || fail "GET /metrics?x=1: expected 200"
[ "$(code -H "X-Big: $(head -c 20000 /dev/zero | tr '\0' a)" "$(url 0 /metrics)")" = 431 ] || fail "a 20 kB header: expected 431"
echo "ok: 404 unknown path, 405 with Allow for POST/DELETE, HEAD without body, 431 for a 20 kB header"

# Hostile clients, in one Python process: 300 idle connections (over the cap of 256: the oldest idle
# ones are closed to make room) neither lock out a scraper nor stop the rounds; a client sending one byte
# a second is cut off by the 10 s request deadline.
before=$(metric 0 gossipd_round)
python3 - "$(port 0)" "$WORK/node-0/status.json" <<'EOF' || fail "hostile clients (see above)"
import json, socket, sys, time, urllib.request
port = int(sys.argv[1])
def round_now():
    return json.load(open(sys.argv[2]))["round"]
idle = []
for _ in range(300):
    try:
        idle.append(socket.create_connection(("127.0.0.1", port), timeout=2))
    except OSError:
        break
def scrape():
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=5) as r:
        return r.status, r.read()
status, body = scrape()
if status != 200 or b"gossipd_round " not in body:
    sys.exit("/metrics during %d idle connections: status %d" % (len(idle), status))
evicted = 0
for s in idle[:50]:
    s.settimeout(0.01)
    try:
        if s.recv(1) == b"":
            evicted += 1
    except socket.timeout:
        pass
    except OSError:
        evicted += 1
if evicted == 0:
    sys.exit("none of the oldest idle connections was closed to make room over the cap")
# Opened after the flood, so that it is not the oldest idle connection (which the scrape above evicted).
slow = socket.create_connection(("127.0.0.1", port))
slow.settimeout(1.0)
r0 = round_now()
t0 = time.time()
closed_after = None
req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
for b in req:
    try:
        slow.send(bytes([b]))
        if slow.recv(1) == b"":
            closed_after = time.time() - t0
            break
    except socket.timeout:
        continue
    except OSError:
        closed_after = time.time() - t0
        break
    if time.time() - t0 > 20:
        break
r1 = round_now()
for s in idle:
    s.close()
if closed_after is None:
    sys.exit("a client sending one byte a second was not cut off within 20 s")
if not 8 <= closed_after <= 14:
    sys.exit("the slow client was cut off after %.1f s, expected about 10 s" % closed_after)
if r1 <= r0:
    sys.exit("rounds did not advance while %d idle connections were open (round %d -> %d)" % (len(idle), r0, r1))
print("ok: %d idle connections: /metrics still answered, %d of the 50 oldest closed to make room" % (len(idle), evicted))
print("ok: a one-byte-a-second client cut off after %.1f s; rounds %d -> %d meanwhile" % (closed_after, r0, r1))
EOF
wait_for 20 "node 0 to answer /metrics after the hostile clients" curl -sf -o /dev/null "$(url 0 /metrics)"
[ "$(metric 0 gossipd_round)" -gt "$before" ] || fail "node 0's round did not advance during the hostile clients"

# A bad node.http: one line naming node.http, exit 2 (unparseable, and a port another node holds).
bad() {
  local rc=0 out
  out=$("$GOSSIPD" run --set node.data_dir="$WORK/bad" --set node.http="$1" --set data.format=synthetic 2>&1) || rc=$?
  [ "$rc" = 2 ] || fail "node.http=$1: expected exit 2, got $rc ($out)"
  [ "$(wc -l <<<"$out")" = 1 ] && [[ "$out" == *node.http* ]] || fail "node.http=$1: expected one line naming node.http, got: $out"
  echo "ok: node.http=$1 -> exit 2: $out"
}
bad "127.0.0.1"
bad "example.org:80"
bad "127.0.0.1:$(port 1)"

# SIGTERM stops the HTTP server with the node (exit 0, port free again).
p=$(port 1)
kill -TERM "${NODE_PID[1]}"
wait_exit 1 20
rc=0; curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$p/metrics" || rc=$?
[ "$rc" != 0 ] || fail "node 1 still answers HTTP after it exited"
echo "ok: SIGTERM: node 1 exited 0 and its HTTP port is closed"
