#!/usr/bin/env bash
# Issue 28, "must show" 1: a 4-node ring keeps its round rate while nodes of another cluster try to join.
# Measures node 0's rounds per second over WINDOW seconds without an odd node, then over WINDOW seconds
# during which an odd node (each of the mismatches below in turn) joins through node 0, is refused (exit 3)
# and is started again at once. Prints one JSON object (docs/results.md §12).
#   scripts/refusal_rate.sh build/release/daemon/gossipd
set -euo pipefail
GOSSIPD=$(realpath "$1")
WINDOW=${WINDOW:-10}
WORK=$(mktemp -d /tmp/gossipd-refusal.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=4 --set cluster.topology=ring
      --set algorithm.name=choco --set compressor.name=topk --set compressor.ratio=0.2 --set algorithm.gamma=0.4
      --set algorithm.rounds=100000000 --set monitor.eval_every=0 --set monitor.status_every_ms=100 --set node.http=)
run_node() {  # id seed extra...
  local id=$1 seed=$2; shift 2
  mkdir -p "$WORK/n$id"
  local s=(); [ -n "$seed" ] && s=(--set "cluster.seeds=[\"$seed\"]")
  "$GOSSIPD" run "${args[@]}" "$@" --set node.id=$id --set node.data_dir="$WORK/n$id" --set node.listen=tcp://127.0.0.1:0 "${s[@]}" \
    >>"$WORK/n$id/log" 2>&1
}
run_node 0 "" & 
for _ in $(seq 1 200); do [ -s "$WORK/n0/endpoint" ] && break; sleep 0.05; done
seed=$(cat "$WORK/n0/endpoint")
for i in 1 2 3; do run_node $i "$seed" & done
round() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['round'])" "$WORK/n0/status.json"; }
until [ "$(round 2>/dev/null || echo 0)" -ge 500 ]; do sleep 0.1; done
rate() {  # rounds of node 0 per second over WINDOW
  local a b; a=$(round); sleep "$WINDOW"; b=$(round); python3 -c "print(round(($b - $a) / $WINDOW, 1))"
}
quiet=$(rate)
mismatches=("compressor.name=randk" "compressor.ratio=0.1" "model.kind=softmax" "algorithm.name=dpsgd" "cluster.topology=torus"
            "cluster.nodes=5" "data.partition=label_sorted" "data.scaling=minmax" "cluster.name=other")
( refused=0; while :; do for m in "${mismatches[@]}"; do run_node 9 "$seed" --set "$m" || refused=$((refused + 1)); echo $refused >"$WORK/refused"; done; done ) &
odd=$!
busy=$(rate)
kill $odd 2>/dev/null || true
printf '{"window_s": %s, "rounds_per_s_quiet": %s, "rounds_per_s_with_odd_nodes": %s, "odd_nodes_refused": %s}\n' \
  "$WINDOW" "$quiet" "$busy" "$(cat "$WORK/refused" 2>/dev/null || echo 0)"
