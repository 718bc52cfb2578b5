#!/usr/bin/env bash
# The cluster identity (daemon/node/cluster_identity.h, docs/daemon.md "Cluster identity") on real
# processes: a node whose shared-problem keys differ from the member it joins through is refused at its
# Join, exits 3 with one line naming each key that differs and both values, and the member logs one line
# too and keeps going with nothing of the refused node in its table; a node of the same cluster then joins.
# A second node with a live member's node.id (another data directory) is refused the same way.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=2 --set cluster.topology=ring
      --set algorithm.name=dpsgd --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=100)
alive_is() { [ "$(status_field "$1" alive)" = "$2" ]; }

start_node 0 "" "${args[@]}"
wait_for 20 "node 0 to write its endpoint" test -s "$WORK/node-0/endpoint"
seed=$(endpoint_of 0)

# refused ID EXPECTED_LINE_PART ARGS...: node ID joins through node 0 with ARGS added and must exit 3.
refused() {
  local id=$1 want=$2; shift 2
  start_node "$id" "$seed" "${args[@]}" "$@"
  wait_for 20 "node $id (another cluster) to exit" exited "${NODE_PID[$id]}"
  local rc=0
  wait "${NODE_PID[$id]}" || rc=$?
  [ "$rc" = 3 ] || fail "node $id exited with code $rc, expected 3 (refused)"
  grep -q "^gossipd run: node $id was refused by node 0 (tcp://127.0.0.1:[0-9]*): this node's cluster differs: .*$want" \
    "$WORK/node-$id/log" || fail "node $id's refusal line does not name '$want': $(tail -n 1 "$WORK/node-$id/log")"
  wait_for 10 "node 0 to log that it refused node $id" grep -q "refused node $id (tcp://.*): it belongs to another cluster" "$WORK/node-0/log"
  echo "ok: node $id refused: $(tail -n 1 "$WORK/node-$id/log" | sed 's/.*cluster differs: //')"
}
refused 1 'compressor.name is "topk" here, "fp32" there' --set compressor.name=topk --set compressor.ratio=0.1
refused 2 'cluster.name is "other" here, "gossipd" there' --set cluster.name=other
refused 3 'model.kind is "softmax" here, "logistic" there' --set model.kind=softmax
# The refused nodes never entered node 0's table, so it has trained alone... (2 members wanted: it waits
# up to cluster.start_timeout_ms, then starts), and a node of the same cluster joins it.
alive_is 0 1 || fail "node 0 counts $(status_field 0 alive) members alive after refusing three nodes, expected 1"
start_node 4 "$seed" "${args[@]}"
wait_for 30 "node 0 to see node 4 of its own cluster join" alive_is 0 2
wait_for 30 "node 4 to see node 0" alive_is 4 2
echo "ok: a node of the same cluster joins"

# A second node claiming node 4's id from another data directory is refused; node 4 goes on.
mkdir -p "$WORK/dup"
rc=0
timeout 20 "$GOSSIPD" run "${args[@]}" --set node.id=4 --set node.data_dir="$WORK/dup" --set node.listen=tcp://127.0.0.1:0 \
  --set "cluster.seeds=[\"$seed\"]" >"$WORK/dup/log" 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "the duplicate of node 4 exited with code $rc, expected 3: $(tail -n 3 "$WORK/dup/log")"
grep -q "^gossipd run: node 4 was refused by node 0 (tcp://.*): node.id 4 is held by the live member at $(endpoint_of 4), which runs from another data directory" \
  "$WORK/dup/log" || fail "the duplicate's refusal line: $(tail -n 1 "$WORK/dup/log")"
wait_for 10 "node 0 to log that it refused the duplicate" grep -q "refused node 4 (tcp://.*): node.id 4 is held by the live member at" "$WORK/node-0/log"
alive_is 0 2 || fail "node 0 counts $(status_field 0 alive) members after refusing the duplicate, expected 2"
kill -0 "${NODE_PID[4]}" || fail "node 4 died after its duplicate was refused"
echo "ok: duplicate node.id refused: $(tail -n 1 "$WORK/dup/log" | sed 's/.*: node.id/node.id/')"
# The refusals are counted in node 0's /metrics by reason (three identities, at least one duplicate id:
# each refused node may have retried its Join before it exited).
metrics() { python3 -c "import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" "http://127.0.0.1:$(cat "$WORK/node-0/http_port")/metrics"; }
counted() {
  metrics | python3 -c "
import re, sys
t = sys.stdin.read()
get = lambda r: float(re.search(r'^gossipd_joins_refused_total\{reason=\"%s\"\} (\S+)$' % r, t, re.M).group(1))
sys.exit(0 if get('identity') >= 3 and get('duplicate_id') >= 1 else 1)"
}
wait_for 10 "node 0's /metrics to count the refused joins by reason" counted
echo "ok: /metrics: $(metrics | grep '^gossipd_joins_refused_total' | tr '\n' ' ')"
for id in 0 4; do kill -TERM "${NODE_PID[$id]}"; done
for id in 0 4; do wait_exit $id 20; done
echo "ok: both stopped cleanly"
