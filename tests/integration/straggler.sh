#!/usr/bin/env bash
# A node left running with an earlier configuration while the rest of its cluster restarted with a new one
# (membership/membership.h, "Cluster identity"; docs/daemon.md, "What gossipd refuses, and why"). Three
# nodes train; nodes 0 and 1 are killed and started again at once, at their addresses, with another
# compressor.ratio; node 2, the straggler, still holds them alive (its suspicion timeout is long) and keeps
# probing them. Before every membership message carried the identity's fingerprint, the restarted nodes
# took node 2 in from the sender record of its pings. Now they drop its messages and say so in one line, it
# is in neither's member table, and node 2, answered by no one, loses them, knocks with a Join and exits 3
# naming the key that differs.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=3 --set cluster.topology=ring
      --set algorithm.name=dpsgd --set compressor.name=topk --set compressor.ratio=0.2
      --set algorithm.rounds=100000000 --set monitor.eval_every=0 --set monitor.status_every_ms=100)
alive_is() { [ "$(status_field "$1" alive)" = "$2" ]; }

start_node 0 "" "${args[@]}"
wait_for 20 "node 0 to write its endpoint" test -s "$WORK/node-0/endpoint"
seed=$(endpoint_of 0)
start_node 1 "$seed" "${args[@]}"
# The straggler suspects for 10 s before it declares a member dead (suspicion_mult is a node's own
# setting, not part of the identity): the restarted nodes are back well within that.
start_node 2 "$seed" "${args[@]}" --set cluster.suspicion_mult=50
for i in 0 1 2; do wait_for 30 "node $i to train with 3 alive" alive_is $i 3; done
echo "ok: 3 nodes train"

ep0=$(endpoint_of 0) ep1=$(endpoint_of 1)
kill -9 "${NODE_PID[0]}" "${NODE_PID[1]}"
wait "${NODE_PID[0]}" "${NODE_PID[1]}" 2>/dev/null || true
restart() {  # restart ID ENDPOINT SEED: the new configuration, the same address, the old run moved aside
  local id=$1 ep=$2 s=$3 seeds=()
  [ -n "$s" ] && seeds=(--set "cluster.seeds=[\"$s\"]")
  "$GOSSIPD" run "${args[@]}" --set compressor.ratio=0.1 --fresh --set node.id="$id" \
    --set node.data_dir="$WORK/node-$id" --set node.listen="$ep" "${seeds[@]}" >>"$WORK/node-$id/log" 2>&1 3>&- &
  NODE_PID[$id]=$!
  PIDS+=($!)
}
restart 0 "$ep0" ""
restart 1 "$ep1" "$ep0"
for i in 0 1; do
  wait_for 30 "restarted node $i to log that it refused node 2's messages" \
    grep -q "refused the messages of node 2 (.*): it runs with another cluster identity" "$WORK/node-$i/log"
done
echo "ok: the restarted nodes refused the straggler's messages: $(grep -h -m1 "refused the messages of node 2" "$WORK/node-0/log" | sed 's/.*refused/refused/')"
# Node 2 is in neither table: the two see each other and no one else, whatever node 2 sends them meanwhile.
for i in 0 1; do wait_for 30 "restarted node $i to see exactly 2 members alive" alive_is $i 2; done
wait_for 40 "the straggler to exit" exited "${NODE_PID[2]}"
rc=0
wait "${NODE_PID[2]}" || rc=$?
[ "$rc" = 3 ] || fail "the straggler exited with code $rc, expected 3 (refused): $(tail -n 3 "$WORK/node-2/log")"
grep -q "node 2 was refused by node [01] (.*): this node's cluster differs: compressor.ratio is 0.2 here, 0.1 there" \
  "$WORK/node-2/log" || fail "the straggler's last line does not name compressor.ratio: $(tail -n 2 "$WORK/node-2/log")"
echo "ok: the straggler exited 3: $(tail -n 1 "$WORK/node-2/log" | sed 's/.*was refused/was refused/')"
for i in 0 1; do alive_is $i 2 || fail "restarted node $i sees $(status_field $i alive) members alive, expected 2"; done
for i in 0 1; do kill -TERM "${NODE_PID[$i]}"; done
for i in 0 1; do wait_exit $i 20; done
echo "ok: the restarted nodes stopped cleanly"
