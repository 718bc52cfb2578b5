#!/usr/bin/env bash
# The trainer bridge under faults (docs/trainer.md): 4 daemons on a ring, each serving a Python trainer
# (tests/integration/trainer_quadratic.py: node i pulls toward target i, so the cluster's answer, the mean
# 1.5, is known). kill -9 of a trainer: its daemon says so, follows its neighbours, and the cluster trains
# on; the restarted trainer re-attaches and gets the node's current model, not its own zeros. kill -9 of a
# daemon: its trainer waits and reconnects when the daemon is back from its checkpoint. Then everyone
# finishes (nothing hangs: every wait has a deadline) and the models agree near 1.5.
# Usage: trainer_faults.sh GOSSIPD [model|gradient ALGORITHM]
GOSSIPD=$1
MODE=${2:-model}
ALGO=${3:-dpsgd}
source "$(dirname "$0")/daemon_lib.sh"
TRAINER="$(cd "$(dirname "$0")" && pwd)/trainer_quadratic.py"
N=4
ROUNDS=6000  # enough headroom that no phase below runs into the end, also on a loaded machine
args=(--set trainer.enable=true --set trainer.mode=$MODE --set algorithm.name=$ALGO --set cluster.nodes=$N
      --set cluster.topology=ring --set algorithm.rounds=$ROUNDS --set algorithm.lr=0.1
      --set algorithm.round_timeout_ms=500 --set node.checkpoint_every=100 --set monitor.status_every_ms=100)
declare -A TRAINER_PID
start_trainer() {  # start_trainer ID: the trainer of node ID, 5 ms of "compute" per step
  /usr/bin/python3 "$TRAINER" "$WORK/node-$1" "$1" "$WORK/x$1.npy" --sleep 0.005 >>"$WORK/node-$1/trainer.log" 2>&1 &
  TRAINER_PID[$1]=$!
  PIDS+=($!)
}
round_of() { status_field "$1" round; }
at_least() { local r; r=$(round_of "$1") && [ "$r" -ge "$2" ]; }
trainer_is() { [ "$(status_field "$1" trainer)" = "$2" ]; }

start_cluster $N "${args[@]}"
for ((i = 0; i < N; i++)); do
  wait_for 20 "node $i to bind its trainer socket" test -S "$WORK/node-$i/trainer.sock"
  start_trainer $i
done
for ((i = 0; i < N; i++)); do wait_for 60 "node $i to pass round 300" at_least $i 300; done
echo "ok: $N daemons with trainers at round $(round_of 0)"

# kill -9 the trainer of node 2: node 2 notices and follows; the cluster trains on.
kill -9 "${TRAINER_PID[2]}"
wait_for 10 "node 2 to notice its trainer died" trainer_is 2 detached
grep -q "trainer detached (its connection closed)" "$WORK/node-2/log" || fail "node 2 did not log the detach"
r0=$(round_of 0)
wait_for 30 "node 0 to train on past the trainer's death" at_least 0 $((r0 + 200))
wait_for 30 "node 2 to follow its neighbours" at_least 2 $((r0 + 150))
echo "ok: trainer 2 killed at round $r0; node 0 went on to $(round_of 0), node 2 (no trainer) to $(round_of 2)"

# Restart it: it re-attaches and starts from the node's current model.
start_trainer 2
attached_twice() { [ "$(grep -c '^attached' "$WORK/node-2/trainer.log")" -ge 2 ]; }
wait_for 20 "trainer 2 to re-attach" attached_twice
last=$(grep '^attached' "$WORK/node-2/trainer.log" | tail -n 1)
[[ $last == *"x0 0.000000"* ]] && fail "the restarted trainer 2 kept its own zeros instead of the node's model: $last"
wait_for 10 "node 2 to report its trainer attached" trainer_is 2 attached
echo "ok: trainer 2 re-attached with the node's model: $last"

# kill -9 the daemon of node 1: its trainer keeps trying; the restarted daemon resumes from its checkpoint
# and the trainer reconnects.
kill -9 "${NODE_PID[1]}"
r0=$(round_of 0)
wait_for 30 "node 0 to train on past node 1's death" at_least 0 $((r0 + 200))
start_node 1 "$(endpoint_of 0)" "${args[@]}"
wait_for 20 "node 1 to resume from its checkpoint" grep -q "resumed at round" "$WORK/node-1/log"
wait_for 30 "trainer 1 to reconnect" grep -q "reconnect" "$WORK/node-1/trainer.log"
wait_for 20 "node 1 to report its trainer attached" trainer_is 1 attached
r1=$(round_of 1)
wait_for 30 "node 1 to train after its restart" at_least 1 $((r1 + 100))
echo "ok: daemon 1 killed at round $r0, restarted, trainer reconnected; node 1 at round $(round_of 1)"

# Everyone finishes: daemons exit 0, trainers exit 0 with their final model. A daemon that is done maps
# nothing of its trainer's shared memory any more (its trainer may still run and read the final model):
# checked while it lingers for its neighbours' acknowledgements, for each daemon that is still there.
done_state() { [ "$(status_field "$1" state)" = done ]; }
checked=0
for ((i = 0; i < N; i++)); do
  wait_for 120 "node $i to finish its rounds" done_state $i
  maps=$(cat "/proc/${NODE_PID[$i]}/maps" 2>/dev/null) || continue  # it already exited
  grep -q "/dev/shm/gossipd-" <<<"$maps" && fail "node $i is done but still maps its trainer's shared memory"
  checked=$((checked + 1))
done
echo "ok: $checked of $N done daemons checked: none maps its trainer's shared memory"
for ((i = 0; i < N; i++)); do wait_exit $i 120; done
for ((i = 0; i < N; i++)); do
  wait_for 30 "trainer $i to finish" exited "${TRAINER_PID[$i]}"
  rc=0
  wait "${TRAINER_PID[$i]}" || rc=$?
  [ "$rc" = 0 ] || fail "trainer $i exited with code $rc: $(tail -n 3 "$WORK/node-$i/trainer.log")"
done
/usr/bin/python3 - "$WORK" $N "$ALGO" <<'EOF' || fail "final models"
import sys, numpy as np
work, n, algo = sys.argv[1], int(sys.argv[2]), sys.argv[3]
xs = [np.load(f"{work}/x{i}.npy") for i in range(n)]
means = [float(x.mean()) for x in xs]
print("final models (mean entry):", " ".join(f"{m:.4f}" for m in means))
avg = sum(means) / n
# D-PSGD with a constant step ends near, not at, the mean target 1.5 (its fixed point is biased by lr);
# a lost model or a trainer restarted from zeros would show as a node far away.
assert abs(avg - 1.5) < 0.05, f"average model {avg:.4f} is not near the mean target 1.5"
assert max(abs(m - avg) for m in means) < 0.5, f"node models spread too far: {means}"
# LEAD is exact: every node at the optimum, crash and restarts included (only fp32 rounding on the wire).
if algo == "lead":
    assert max(abs(m - 1.5) for m in means) < 1e-4, f"lead did not reach the optimum 1.5 on every node: {means}"
EOF
echo "ok: all daemons and trainers finished"
