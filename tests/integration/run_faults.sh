#!/usr/bin/env bash
# Faults on real processes: kill -9 of a node (survivors declare it dead and go on), its restart from its
# checkpoint (new incarnation, state transfer, rejoins), SIGTERM (checkpoint, leave announced, exit 0),
# a port already in use (one line, exit 2). Prox-LEAD, whose rounds wait for every neighbour: any missed
# death or lost frame shows up as a hang, caught by the deadlines.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
N=6
args=(--set data.format=synthetic --set model.kind=logistic --set model.l2=0.01 --set cluster.nodes=$N
      --set cluster.topology=ring --set algorithm.name=prox_lead --set compressor.name=lead
      --set algorithm.estimator=full --set algorithm.rounds=100000000 --set algorithm.lr=0.2
      --set node.checkpoint_every=50 --set monitor.eval_every=0 --set monitor.status_every_ms=100)
round_of() { status_field "$1" round; }
at_least() { local r; r=$(round_of "$1") && [ "$r" -ge "$2" ]; }
start_cluster $N "${args[@]}"
for ((i = 0; i < N; i++)); do wait_for 30 "node $i to pass round 200" at_least $i 200; done

# The port of a running node: a second node cannot bind it.
rc=0
out=$("$GOSSIPD" run "${args[@]}" --set node.id=9 --set node.data_dir="$WORK/dup" --set node.listen="$(endpoint_of 0)" 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "port in use: expected exit 2, got $rc ($out)"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "port in use: expected one line, got: $out"
echo "ok: port in use -> exit 2: $out"

# kill -9 node 2: its neighbours declare it dead and keep training.
kill -9 "${NODE_PID[2]}"
r1=$(round_of 1)
wait_for 15 "node 1 to declare node 2 dead" grep -q "member 2 (incarnation 0) declared dead" "$WORK/node-1/log"
wait_for 15 "node 3 to declare node 2 dead" grep -q "member 2 (incarnation 0) declared dead" "$WORK/node-3/log"
wait_for 15 "node 1 to train on past the death" at_least 1 $((r1 + 100))
echo "ok: kill -9 detected, survivors went on from round $r1 to $(round_of 1)"

# Restart node 2 on its data dir: it resumes from its checkpoint as incarnation 1 and rejoins.
seed=$(endpoint_of 0)
start_node 2 "$seed" "${args[@]}"
wait_for 20 "node 2 to resume as incarnation 1" grep -q "incarnation 1 listening" "$WORK/node-2/log"
grep -q "resumed at round" "$WORK/node-2/log" || fail "node 2 did not load its checkpoint"
wait_for 20 "node 2 to get the model by state transfer" grep -q "state transfer done" "$WORK/node-2/log"
r2=$(round_of 2)
wait_for 20 "node 2 to train after its restart" at_least 2 $((r2 + 100))
echo "ok: node 2 restarted from its checkpoint, state transfer, training again at round $(round_of 2)"

# SIGTERM node 4: checkpoint, leave, exit 0; its neighbours see a leave, not a death.
kill -TERM "${NODE_PID[4]}"
wait_exit 4 10
grep -q "stopped at round" "$WORK/node-4/log" || fail "node 4 did not report its stop"
wait_for 10 "node 3 to see node 4 leave" grep -q "member 4 (incarnation 0) left" "$WORK/node-3/log"
if grep -q "member 4 (incarnation 0) declared dead" "$WORK/node-3/log"; then fail "node 4's leave was taken for a death"; fi
ls "$WORK/node-4/checkpoints/"*.gsc >/dev/null || fail "node 4 wrote no checkpoint"
echo "ok: SIGTERM -> checkpoint, leave announced, exit 0"

# The rest keep training until stopped; each must stop cleanly.
for i in 0 1 2 3 5; do r=$(round_of $i); wait_for 20 "node $i to keep training" at_least $i $((r + 50)); done
for i in 0 1 2 3 5; do kill -TERM "${NODE_PID[$i]}"; done
for i in 0 1 2 3 5; do wait_exit $i 20; done
for i in 0 1 2 3 5; do
  [ "$(status_field $i state)" = stopped ] || fail "node $i ended in state $(status_field $i state)"
  /usr/bin/python3 -c "import numpy" 2>/dev/null && /usr/bin/python3 -c "import numpy,sys; x=numpy.load(sys.argv[1]); assert numpy.isfinite(x).all()" "$WORK/node-$i/model.npy"
done
echo "ok: the five others trained on and stopped cleanly on SIGTERM"
