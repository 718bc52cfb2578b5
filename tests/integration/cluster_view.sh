#!/usr/bin/env bash
# /cluster (docs/monitoring.md) on an 8-node ring of real daemons: node 0's page lists all 8 members with a
# progress summary each, also of nodes it has no edge to (they reach it only by status gossip), and every
# summary keeps being refreshed; the edges are the ring's with Metropolis weights 1/3 and the spectral gap
# is the ring's (1 - (1 + 2 cos(2 pi / 8)) / 3); after kill -9 of node 5 the page shows it dead, lists a
# "dead" event for it and draws no edge to it, and /metrics carries the new mixing row; every survivor's
# /cluster shows the death, and after node 5 restarts every node's /cluster shows it alive again with a
# summary of its new incarnation. The times of both changes (from the kill, from the restart) are printed.
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

now_ms() { date +%s%3N; }
# on_all IDS PYTHON: PYTHON (with `c` and `members`) holds on the /cluster page of every node in IDS. One
# process fetches them all: on 2 busy cores, a curl and a python start per node took over a second each.
on_all() {
  python3 - "$WORK" "$1" "$2" <<'PY'
import json, sys, urllib.request
work, ids, code = sys.argv[1], sys.argv[2].split(), sys.argv[3]
for i in ids:
    port = open(f"{work}/node-{i}/http_port").read().strip()
    c = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/cluster", timeout=5))
    members = {m["id"]: m for m in c["members"]}
    exec(code)
PY
}
t_kill=$(now_ms)
kill -9 "${NODE_PID[$VICTIM]}"
dead='assert members[5]["state"] == "dead" and any(e["kind"] == "dead" and e["node"] == 5 for e in c["events"]) and all(5 not in (e["a"], e["b"]) for e in c["edges"]) and len(c["edges"]) == 7, (members[5]["state"], c["edges"])'
wait_for 30 "node 0's /cluster to show node $VICTIM dead, with a dead event and no edge to it" check "$dead"
echo "ok: after kill -9 node $VICTIM is dead on node 0's /cluster, 7 edges left ($(( $(now_ms) - t_kill )) ms)"
SURVIVORS="0 1 2 3 4 6 7"
wait_for 30 "every survivor's /cluster to show node $VICTIM dead" on_all "$SURVIVORS" 'assert members[5]["state"] == "dead"'
echo "ok: every survivor's /cluster shows node $VICTIM dead $(( $(now_ms) - t_kill )) ms after kill -9 (suspicion timeout included)"
# Node 4 (a neighbour of the victim) now has a path graph row: its /metrics show its new mixing weights.
P4=$(cat "$WORK/node-4/http_port")
row_changed() { curl -sf "http://127.0.0.1:$P4/metrics" | grep -q '^gossipd_mixing_weight{peer="6"}' ; }
wait_for 30 "node 4's /metrics to list node 6 as a neighbour (the ring closed over the dead node)" row_changed
echo "ok: node 4's mixing row in /metrics: $(curl -sf "http://127.0.0.1:$P4/metrics" | grep '^gossipd_mixing_weight' | tr '\n' ' ')"

# Node 5 restarts from its data directory (a new incarnation): every node's /cluster shows it alive with a
# summary of that incarnation.
wait_for 10 "node $VICTIM's process to be gone" exited "${NODE_PID[$VICTIM]}"
rm -f "$WORK/node-$VICTIM/http_port"
t_restart=$(now_ms)
start_node $VICTIM "$(endpoint_of 0)" "${args[@]}"
wait_for 30 "the restarted node $VICTIM to serve HTTP" test -s "$WORK/node-$VICTIM/http_port"
back='assert members[5]["state"] == "alive" and members[5]["incarnation"] >= 1 and members[5]["status"] and members[5]["status"]["incarnation"] == members[5]["incarnation"], members[5]'
wait_for 60 "every node's /cluster to show node $VICTIM alive again with a summary of its new incarnation" on_all "0 1 2 3 4 5 6 7" "$back"
echo "ok: every node's /cluster shows node $VICTIM back (incarnation 1, with its summary) $(( $(now_ms) - t_restart )) ms after its restart (its start included)"
