#!/usr/bin/env bash
# make demo. Until the networked daemon lands (gossipd run/cluster with the dashboard), the demo runs the
# same algorithm code in the simulator: 8 virtual nodes on a ring train softmax regression on
# Fashion-MNIST (Debian's dataset-fashion-mnist) with DeepSqueeze + top-1%, printing progress, and
# compares the bytes with uncompressed D-PSGD.
set -euo pipefail
cd "$(dirname "$0")/.."
GOSSIPD=${1:-build/release/daemon/gossipd}
OUT=${DEMO_OUT:-build/demo}
mkdir -p "$OUT"

echo "== the graph: 8-node ring, Metropolis weights"
"$GOSSIPD" topo --topology ring --nodes 8 | tail -n 1
echo
COMMON=(--config experiments/fmnist_softmax.toml --set cluster.nodes=8 --set algorithm.rounds=1500
        --set sim.eval_every=100 --set sim.eval_test_max=5000)
echo "== DeepSqueeze + top-1% (error-compensated compressed models)"
"$GOSSIPD" sim "${COMMON[@]}" --set algorithm.name=deepsqueeze --set algorithm.eta=0.02 \
  --set compressor.name=topk --set compressor.ratio=0.01 --out "$OUT/deepsqueeze_topk.json"
echo
echo "== D-PSGD, uncompressed fp32, for comparison"
"$GOSSIPD" sim "${COMMON[@]}" --set sim.eval_every=500 --out "$OUT/dpsgd.json"
if /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  scripts/plot_results.py "$OUT/deepsqueeze_topk.json" "$OUT/dpsgd.json" -o "$OUT/demo.png" \
    --title "Fashion-MNIST, 8-node ring"
fi
echo "results: $OUT/*.json"
