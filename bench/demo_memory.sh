#!/usr/bin/env bash
# Resident memory of each daemon in `make demo` (8 daemons, Fashion-MNIST softmax, each with its shard):
# samples VmRSS and VmHWM (the peak so far) of every `gossipd run` child from /proc every 0.2 s while the
# demo cluster trains, and writes per-node steady (median VmRSS while training) and peak figures as JSON.
# Usage: bench/demo_memory.sh [GOSSIPD] [OUT.json]
set -euo pipefail
cd "$(dirname "$0")/.."
GOSSIPD=${1:-build/release/daemon/gossipd}
OUT=${2:-docs/results/demo_memory.json}
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
"$GOSSIPD" cluster --nodes 8 --config examples/demo_cluster.toml --dir "$WORK/cluster" "${@:3}" >"$WORK/log" 2>&1 &
cluster=$!
samples="$WORK/samples"
: >"$samples"
while kill -0 $cluster 2>/dev/null; do
  for pid in $(pgrep -P $cluster -x gossipd || true); do
    # The node id is the --set node.id=<i> on the child's command line.
    id=$( (tr "\0" " " <"/proc/$pid/cmdline") 2>/dev/null | grep -o 'node\.id=[0-9]*' | cut -d= -f2 || true)
    st=$(awk '/^VmRSS|^VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null | tr '\n' ' ' || true)
    state=$(grep -o '"state": *"[a-z]*"' "$WORK/cluster/node-$id/status.json" 2>/dev/null | grep -o '[a-z]*"$' | tr -d '"' || true)
    [ -n "$id" ] && [ -n "$st" ] && echo "$id $st ${state:-none}" >>"$samples"
  done
  sleep 0.2
done
wait $cluster || { echo "demo cluster failed:"; tail -5 "$WORK/log"; exit 1; }
/usr/bin/python3 - "$samples" "$OUT" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 4]
nodes = {}
for node, hwm, rss, state in rows:   # /proc/PID/status lists VmHWM before VmRSS
    n = nodes.setdefault(int(node), {"rss": [], "hwm": 0})
    if state == "training":
        n["rss"].append(int(rss))
    n["hwm"] = max(n["hwm"], int(hwm))
out = {"what": "gossipd cluster, examples/demo_cluster.toml (8 daemons, Fashion-MNIST softmax, DeepSqueeze top-1%)",
       "nodes": [{"node": k, "training_rss_median_mb": round(statistics.median(v["rss"]) / 1024, 1) if v["rss"] else None,
                  "training_rss_max_mb": round(max(v["rss"]) / 1024, 1) if v["rss"] else None,
                  "peak_rss_mb": round(v["hwm"] / 1024, 1)} for k, v in sorted(nodes.items())]}
json.dump(out, open(sys.argv[2], "w"), indent=1)
for n in out["nodes"]:
    print(f"node {n['node']}: training RSS median {n['training_rss_median_mb']} MB, max {n['training_rss_max_mb']} MB, peak {n['peak_rss_mb']} MB")
PY
