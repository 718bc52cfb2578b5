#!/usr/bin/env bash
# The daemon's drift warning (daemon/monitor/drift_watch.h, docs/monitoring.md): 4 daemons whose CHOCO consensus step
# diverges (gamma = 1 with top-10%, not adapted) each log one warning and show it in status.json as drift_warning; the
# same cluster with a stable step (gamma = 0.4, top-20%) shows none over 1,500 rounds.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
common=(--set data.format=synthetic --set model.kind=logistic --set model.l2=0.01 --set algorithm.name=choco
        --set compressor.name=topk --set algorithm.lr=0.1 --set algorithm.batch=8 --set monitor.eval_every=0)

"$GOSSIPD" cluster --nodes 4 --dir "$WORK/bad" --http-port 0 "${common[@]}" --set compressor.ratio=0.1 \
  --set algorithm.gamma=1.0 --set algorithm.gamma_adapt=false --set algorithm.rounds=400 >"$WORK/bad.out" 2>&1 || fail "diverging cluster exited $?: $(tail -3 "$WORK/bad.out")"
for i in 0 1 2 3; do
  [ "$(grep -c "node $i: warning: the model is blowing up" "$WORK/bad/node-$i/log")" = 1 ] \
    || fail "node $i: expected one drift warning in its log: $(grep -i warning "$WORK/bad/node-$i/log")"
  python3 -c 'import json,sys; w = json.load(open(sys.argv[1]))["drift_warning"]; sys.exit(not (w and "lower algorithm.gamma" in w))' \
    "$WORK/bad/node-$i/status.json" || fail "node $i: no drift_warning in status.json"
done
echo "ok: a diverging CHOCO step: every node warns once (log and status.json)"

"$GOSSIPD" cluster --nodes 4 --dir "$WORK/good" --http-port 0 "${common[@]}" --set compressor.ratio=0.2 \
  --set algorithm.gamma=0.4 --set algorithm.rounds=1500 >"$WORK/good.out" 2>&1 || fail "stable cluster exited $?: $(tail -3 "$WORK/good.out")"
for i in 0 1 2 3; do
  ! grep -q "warning:" "$WORK/good/node-$i/log" || fail "node $i warned on a stable run: $(grep warning: "$WORK/good/node-$i/log")"
  grep -q '"drift_warning":null' "$WORK/good/node-$i/status.json" || fail "node $i: drift_warning set on a stable run"
done
echo "ok: a stable step: no warning on any node"
