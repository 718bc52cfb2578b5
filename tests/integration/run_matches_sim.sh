#!/usr/bin/env bash
# Must show 1 of the daemon issue: 8 `gossipd run` processes over ZeroMQ, no faults, a deterministic
# configuration (full gradients), end with models bit-identical to `gossipd sim` with the same config:
# CHOCO with top-k and Prox-LEAD with the 2-bit LEAD quantizer.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
N=8
common=(--set data.format=synthetic --set model.kind=logistic --set model.l2=0.01 --set cluster.nodes=$N
        --set cluster.topology=ring --set algorithm.estimator=full --set algorithm.rounds=60
        --set algorithm.lr=0.2 --set node.checkpoint_every=0 --set monitor.eval_every=0)
for case in "choco topk" "prox_lead lead"; do
  read -r algo comp <<<"$case"
  args=("${common[@]}" --set algorithm.name=$algo --set compressor.name=$comp --set compressor.ratio=0.2
        --set algorithm.gamma=$([ $algo = choco ] && echo 0.4 || echo 1.0) --set model.l1=$([ $algo = prox_lead ] && echo 0.001 || echo 0))
  rm -rf "$WORK"/node-* "$WORK/sim"
  start_cluster $N "${args[@]}"
  for ((i = 0; i < N; i++)); do wait_exit $i 90; done
  "$GOSSIPD" sim "${args[@]}" --save-models "$WORK/sim" >"$WORK/sim.log" 2>&1 || fail "sim failed: $(tail -1 "$WORK/sim.log")"
  for ((i = 0; i < N; i++)); do
    cmp -s "$WORK/node-$i/model.npy" "$WORK/sim/node-$i/model.npy" ||
      fail "$algo: node $i's model differs from the simulator's"
  done
  echo "ok: $algo + $comp, $N daemons, models bit-identical to gossipd sim"
done
