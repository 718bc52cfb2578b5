#!/usr/bin/env bash
# Checkpoints across processes: a run saved after round 60 in one gossipd process and resumed in another
# ends bit-identical to a run that was never interrupted, for every algorithm with a stochastic estimator,
# with a crash before the save and a restart (new incarnation) after it. A corrupt checkpoint is refused
# with one line and exit 2.
set -eu
GOSSIPD=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
check() {  # check NAME ARGS... : straight run vs save+resume in two more processes
  local name=$1
  shift
  local common=(--set data.format=synthetic --set cluster.nodes=8 --set model.kind=logistic --set model.l2=0.01
    --set algorithm.rounds=120 --set sim.eval_every=40 --set algorithm.lr=0.1
    --set 'faults.crash=[{node=2,round=30},{node=5,round=80}]' --set 'faults.join=[{node=2,round=90}]' "$@")
  "$GOSSIPD" sim "${common[@]}" --out "$TMP/$name-straight.json" 2>/dev/null
  "$GOSSIPD" sim "${common[@]}" --save-after 60 --checkpoint-dir "$TMP/$name-ckpt" 2>/dev/null
  "$GOSSIPD" sim "${common[@]}" --resume "$TMP/$name-ckpt" --out "$TMP/$name-resumed.json" 2>/dev/null
  if python3 - "$TMP/$name-straight.json" "$TMP/$name-resumed.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["records"][-1] for p in sys.argv[1:])
for r in (a, b):
    r.pop("seconds")
sys.exit(0 if a == b else 1)
PY
  then pass=$((pass + 1)); else echo "FAIL: $name resumed run differs from the straight run"; fail=$((fail + 1)); fi
}
check dpsgd --set algorithm.name=dpsgd --set algorithm.estimator=sgd
check deepsqueeze --set algorithm.name=deepsqueeze --set compressor.name=topk --set compressor.ratio=0.2 --set algorithm.estimator=sgd
check choco --set algorithm.name=choco --set algorithm.gamma=0.3 --set compressor.name=qsgd --set compressor.levels=4 --set algorithm.estimator=lsvrg
check nids --set algorithm.name=nids --set algorithm.estimator=saga
check lead --set algorithm.name=lead --set compressor.name=lead --set algorithm.estimator=sgd
check prox_lead --set algorithm.name=prox_lead --set model.l1=0.005 --set compressor.name=lead --set algorithm.estimator=saga

# A truncated node checkpoint: one line on stderr, exit 2.
f=$(ls "$TMP"/prox_lead-ckpt/node-*.ckpt | head -1)
truncate -s 100 "$f"
set +e
"$GOSSIPD" sim --set data.format=synthetic --set cluster.nodes=8 --set algorithm.name=prox_lead \
  --set compressor.name=lead --resume "$TMP/prox_lead-ckpt" 2>"$TMP/err" >/dev/null
rc=$?
set -e
if [ $rc -eq 2 ] && [ "$(wc -l <"$TMP/err")" -eq 1 ] && grep -q "node-" "$TMP/err"; then pass=$((pass + 1)); else
  echo "FAIL: corrupt checkpoint gave exit $rc:"; cat "$TMP/err"; fail=$((fail + 1)); fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
