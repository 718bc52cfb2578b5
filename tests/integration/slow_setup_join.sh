#!/usr/bin/env bash
# cluster.start_timeout_ms counts from when a node has set itself up and begins to join, not from the
# process's start: a node whose data takes longer to make than the timeout still joins its seed. (A
# 100M-parameter synthetic problem took 60 s to generate, and the joiner then gave up at its first step
# with "no seed answered within cluster.start_timeout_ms (60000 ms; tried ... 0 times)".) Here the
# synthetic data of 4M features takes a few seconds to generate and the timeout is 200 ms.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
args=(--set data.format=synthetic --set data.synthetic_dim=4000000 --set data.synthetic_samples=1
      --set algorithm.batch=1 --set model.kind=logistic --set cluster.nodes=2 --set algorithm.name=dpsgd
      --set compressor.name=fp32 --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=100 --set cluster.start_timeout_ms=200 --set node.checkpoint_every=0)
start_node 0 "" "${args[@]}"
# Node 0 up and answering (it trains alone after its own 200 ms), so that only node 1's set-up is slow.
state_is() { [ "$(status_field "$1" state)" = "$2" ]; }
wait_for 60 "node 0 to train" state_is 0 training
t0=$SECONDS
start_node 1 "$(endpoint_of 0)" "${args[@]}"
training() {
  state_is "$1" training && [ "$(status_field "$1" alive)" = 2 ] && return 0
  kill -0 "${NODE_PID[$1]}" 2>/dev/null || fail "node $1 exited: $(tail -n 1 "$WORK/node-$1/log")"
  return 1
}
wait_for 60 "node 1 to join node 0 and train (it must not give up on its seed after 200 ms of setting up)" training 1
echo "ok: node 1 trained with its seed $((SECONDS - t0)) s after its start (its set-up outlasted the 200 ms start timeout)"
