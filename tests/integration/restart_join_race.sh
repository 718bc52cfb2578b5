#!/usr/bin/env bash
# The restart-and-join race of issue 28, provoked on purpose: node 2 of a 4-node ring is killed (-9) and
# started again from its data directory in the same moment as a brand-new node joins. Before the fix, the
# restarted node could take its state transfer from the joiner (untrained, at round 0), drop its own
# checkpoint and train from round 0. Now a syncing node declines state requests, and a resumed node keeps
# its own checkpoint unless a neighbour is ahead of it: node 2 must always continue at a round no lower than
# its checkpoint's. ITER rounds of the race (default 3; the results in docs/results.md ran 20).
GOSSIPD=$1
ITER=${ITER:-3}
source "$(dirname "$0")/daemon_lib.sh"
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=4 --set cluster.topology=ring
      --set algorithm.name=dpsgd --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=100 --set node.checkpoint_every=50)
start_cluster 4 "${args[@]}"
seed=$(endpoint_of 0)
round_of() { status_field "$1" round; }
past() { local r; r=$(round_of "$1") && [ "$r" -ge "$2" ]; }
for i in 0 1 2 3; do wait_for 30 "node $i to pass round 300" past $i 300; done
starts() { grep -c "training from round" "$WORK/node-2/log" || true; }
for ((k = 1; k <= ITER; k++)); do
  before=$(starts)
  r2=$(round_of 2)
  kill -9 "${NODE_PID[2]}"
  wait "${NODE_PID[2]}" 2>/dev/null || true
  # Finished files only: a write cut by the kill leaves a ckpt-R.gsc.tmp, which the node never reads.
  newest=$(ls "$WORK/node-2/checkpoints" | sed -nE 's/^ckpt-([0-9]+)\.gsc$/\1/p' | sort -n | tail -n 1)
  j=$((3 + k))  # a new node each time, beside the restart
  start_node 2 "$seed" "${args[@]}"
  start_node $j "$seed" "${args[@]}"
  more_starts() { [ "$(starts)" -gt "$before" ]; }
  wait_for 30 "restarted node 2 to train again (race $k)" more_starts
  line=$(grep "training from round" "$WORK/node-2/log" | tail -n 1)
  at=$(echo "$line" | sed -E 's/.*training from round ([0-9]+).*/\1/')
  how=$(grep -E "state transfer done|kept its own checkpoint|no neighbour gave its model|no state transfer within" "$WORK/node-2/log" | tail -n 1 | sed -E 's/.*node 2: //')
  [ "$at" -ge "$newest" ] || fail "race $k: node 2 (checkpoint at round $newest, was at $r2) continued at round $at: $how"
  echo "race $k: node 2 had its checkpoint at round $newest (was at $r2), continued at round $at: $how"
  wait_for 30 "new node $j to train (race $k)" past $j 1
  kill -TERM "${NODE_PID[$j]}"
  wait_exit $j 20
done
echo "ok: $ITER races of a restart and a join: node 2 never continued below its own checkpoint"
for i in 0 1 2 3; do kill -TERM "${NODE_PID[$i]}"; done
for i in 0 1 2 3; do wait_exit $i 20; done
