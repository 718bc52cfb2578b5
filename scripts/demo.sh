#!/usr/bin/env bash
# make demo: until the daemon exists, show the topologies and the compressors.
set -euo pipefail
GOSSIPD=${1:-build/release/daemon/gossipd}
echo "== ring of 16, Metropolis weights"; "$GOSSIPD" topo --topology ring --nodes 16 | tail -n 3
echo "== exponential graph of 16";  "$GOSSIPD" topo --topology exponential --nodes 16 | tail -n 3
