#!/usr/bin/env bash
# gossipd sim with one data file per node ("{id}" in data.train): each node trains on its own CSV, the
# run succeeds, and the results file reports every node alive with a test accuracy.
set -eu
GOSSIPD=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Three nodes with different label mixes of one separable 2-D problem (label = x0 + x1 > 0).
for id in 0 1 2; do
  {
    echo "x0,x1,label"
    for k in $(seq 1 40); do
      a=$(( (k * 7 + id * 13) % 21 - 10 )); b=$(( (k * 11 + id * 5) % 17 - 8 + id ))
      echo "$a,$b,$(( a + b > 0 ? 1 : 0 ))"
    done
  } >"$TMP/node$id.csv"
done
cp "$TMP/node1.csv" "$TMP/test.csv"
"$GOSSIPD" sim --set data.format=csv --set "data.train=$TMP/node{id}.csv" --set "data.test=$TMP/test.csv" \
  --set data.header=true --set data.label_column=-1 --set data.scaling=standardize --set model.kind=logistic \
  --set cluster.nodes=3 --set algorithm.name=nids --set algorithm.estimator=full --set algorithm.lr=0.5 \
  --set algorithm.rounds=200 --set sim.eval_every=100 --out "$TMP/r.json" 2>"$TMP/err"
grep -q '"alive": 3' "$TMP/r.json" || { echo "FAIL: no 'alive: 3' in results"; cat "$TMP/err"; exit 1; }
acc=$(grep '"accuracy"' "$TMP/r.json" | tail -1 | tr -dc '0-9.')
awk -v a="$acc" 'BEGIN { exit !(a > 0.9) }' || { echo "FAIL: accuracy $acc on a separable problem"; exit 1; }
echo "1 passed, 0 failed"
