#!/usr/bin/env bash
# /cluster (docs/monitoring.md) on an 8-node ring of real daemons: node 0's page lists all 8 members with a
# progress summary each, also of nodes it has no edge to (they reach it only by status gossip), and every
# summary keeps being refreshed; the edges are the ring's with Metropolis weights 1/3 and the spectral gap
# is the ring's (1 - (1 + 2 cos(2 pi / 8)) / 3); after kill -9 of node 5 the page shows it dead, lists a
# "dead" event for it and draws no edge to it, and /metrics carries the new mixing row.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (make deps installs it)"; exit 77; }
N=8
VICTIM=5
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=$N --set cluster.topology=ring
      --set algorithm.name=dpsgd --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=200)
start_cluster $N "${args[@]}"
wait_for 30 "node 0 to write its http_port file" test -s "$WORK/node-0/http_port"
URL="http://127.0.0.1:$(cat "$WORK/node-0/http_port")"
curl -sf "$URL/cluster" -o "$WORK/c0.json" || fail "GET /cluster on node 0"

# check PYTHON: runs PYTHON with `c`, node 0's /cluster fetched now, and `prev` (the JSON in $WORK/prev.json).
check() {
  curl -sf "$URL/cluster" -o "$WORK/c.json" || return 1
  python3 - "$WORK/c.json" "$WORK/prev.json" "$1" <<'PY'
import json, math, os, sys
c = json.load(open(sys.argv[1]))
prev = json.load(open(sys.argv[2])) if os.path.exists(sys.argv[2]) else None
members = {m["id"]: m for m in c["members"]}
exec(sys.argv[3])
PY
}
everyone='assert len(members) == 8 and all(m["status"] and m["status"]["round"] > 0 for m in members.values()), [(i, m["status"] and m["status"]["round"]) for i, m in members.items()]'
wait_for 60 "node 0's /cluster to show all $N members with a progress summary" check "$everyone"
cp "$WORK/c.json" "$WORK/prev.json"
check "$everyone" || fail "node 0's /cluster: $(cat "$WORK/c.json")"
python3 - "$WORK/c.json" <<'PY' || fail "node 0's /cluster has the wrong graph: $(cat "$WORK/c.json")"
import json, math, sys
c = json.load(open(sys.argv[1]))
edges = sorted((e["a"], e["b"]) for e in c["edges"])
assert edges == sorted([(i, i + 1) for i in range(7)] + [(0, 7)]), edges
assert all(abs(e["weight"] - 1 / 3) < 1e-12 for e in c["edges"]), c["edges"]
assert all(abs(w - 1 / 3) < 1e-12 for w in c["self_weights"].values()), c["self_weights"]
gap = 1 - (1 + 2 * math.cos(2 * math.pi / 8)) / 3
assert abs(c["spectral_gap"] - gap) < 1e-9, (c["spectral_gap"], gap)
assert c["algorithm"] == "dpsgd" and c["topology"] == "ring" and c["self"] == 0
assert sum(e["kind"] == "joined" for e in c["events"]) >= 7, c["events"]
PY
echo "ok: node 0's /cluster: 8 members with summaries, the ring's 8 edges at 1/3, spectral gap $(python3 -c "import json; print(round(json.load(open('$WORK/c.json'))['spectral_gap'], 4))")"
# Every summary is refreshed (node 4 is two hops from node 0 either way round the ring).
fresher='assert all(members[i]["status"]["round"] > {m["id"]: m for m in prev["members"]}[i]["status"]["round"] for i in members), "not all rounds grew"'
wait_for 30 "every member's round on node 0's /cluster to grow" check "$fresher"
echo "ok: every member's summary on node 0 refreshed by gossip"

kill -9 "${NODE_PID[$VICTIM]}"
dead='assert members[5]["state"] == "dead" and any(e["kind"] == "dead" and e["node"] == 5 for e in c["events"]) and all(5 not in (e["a"], e["b"]) for e in c["edges"]) and len(c["edges"]) == 7, (members[5]["state"], c["edges"])'
wait_for 30 "node 0's /cluster to show node $VICTIM dead, with a dead event and no edge to it" check "$dead"
echo "ok: after kill -9 node $VICTIM is dead on node 0's /cluster, 7 edges left"
# Node 4 (a neighbour of the victim) now has a path graph row: its /metrics show its new mixing weights.
P4=$(cat "$WORK/node-4/http_port")
row_changed() { curl -sf "http://127.0.0.1:$P4/metrics" | grep -q '^gossipd_mixing_weight{peer="6"}' ; }
wait_for 30 "node 4's /metrics to list node 6 as a neighbour (the ring closed over the dead node)" row_changed
echo "ok: node 4's mixing row in /metrics: $(curl -sf "http://127.0.0.1:$P4/metrics" | grep '^gossipd_mixing_weight' | tr '\n' ' ')"
