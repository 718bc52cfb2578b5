#!/usr/bin/env bash
# make demo: a local cluster of 8 `gossipd run` daemons (started and supervised by `gossipd cluster`) trains
# softmax regression on Fashion-MNIST (Debian's dataset-fashion-mnist) with DeepSqueeze + top-1% over
# ZeroMQ on loopback, with live progress and a summary at the end. Each node's model ends up in
# $OUT/node-<id>/model.npy (numpy.load opens it; model.json beside it names the layout).
set -euo pipefail
cd "$(dirname "$0")/.."
GOSSIPD=${1:-build/release/daemon/gossipd}
OUT=${DEMO_OUT:-build/demo/cluster}
rm -rf "$OUT"   # a fresh run (a kept directory would resume from its checkpoints)
mkdir -p "$OUT"
echo "== the graph: 8-node ring, Metropolis weights"
"$GOSSIPD" topo --topology ring --nodes 8 | tail -n 1
echo
echo "== 8 daemons on loopback: DeepSqueeze + top-1% (error-compensated compressed models), Ctrl-C stops them cleanly"
echo "   open the dashboard URL below in a browser: topology, loss and accuracy, bytes, events, live"
"$GOSSIPD" cluster --nodes 8 --config examples/demo_cluster.toml --dir "$OUT" "${@:2}"
