#!/usr/bin/env bash
# 100,000 simulated nodes (issue 29): Fashion-MNIST softmax, DeepSqueeze top-1%, a random 4-regular graph,
# 2 threads, 20 rounds; the 60,000 training images cut into 10,000 Dirichlet(0.5) shards, node i on shard
# i mod 10,000 (data.shards: docs/config.md). Wall time and peak RSS from /usr/bin/time, the memory estimate
# the run was checked against and its own VmHWM from the run's JSON. Writes docs/results/sim_100k.json (OUT=... elsewhere).
#   [NODES=100000 ROUNDS=20 THREADS=2] bench/sim_100k.sh [GOSSIPD]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
GOSSIPD=$(realpath "${1:-$HERE/build/release/daemon/gossipd}")
NODES=${NODES:-100000}
ROUNDS=${ROUNDS:-20}
THREADS=${THREADS:-2}
OUT=${OUT:-$HERE/docs/results/sim_100k.json}
mkdir -p "$(dirname "$OUT")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/time -f "%e %M" -o "$tmp/time" "$GOSSIPD" sim --config "$HERE/experiments/fmnist_softmax.toml" \
  --set cluster.nodes=$NODES --set data.shards=10000 --set algorithm.rounds=$ROUNDS --set sim.eval_every=$ROUNDS \
  --set sim.eval_test_max=1000 --set algorithm.name=deepsqueeze --set algorithm.eta=0.02 --set compressor.name=topk \
  --set compressor.ratio=0.01 --set cluster.topology=random_regular --set cluster.degree=4 \
  --set sim.threads=$THREADS --out "$tmp/run.json" 2>&1 | grep -v '^round' >&2
read -r wall rss_kib <"$tmp/time"
/usr/bin/python3 - "$tmp/run.json" "$wall" "$rss_kib" "$OUT" <<'PY'
import json, sys
run, wall, rss_kib, out = json.load(open(sys.argv[1])), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
m, last = run["memory"], run["records"][-1]
c = run["config"]
res = {"nodes": c["cluster"]["nodes"], "rounds": c["algorithm"]["rounds"], "threads": c["sim"]["threads"],
       "wall_s": wall, "peak_rss_bytes": rss_kib * 1024, "estimate_bytes": m["estimate_bytes"],
       "estimate_per_node_bytes": m["estimate_per_node_bytes"], "estimate_data_bytes": m["estimate_data_bytes"],
       "estimate_over_peak": m["estimate_bytes"] / (rss_kib * 1024),
       "peak_per_node_bytes": rss_kib * 1024 / c["cluster"]["nodes"],
       "final_record": {k: last.get(k) for k in ("round", "accuracy", "loss", "consensus_distance", "bytes_sent", "seconds") if k in last}}
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res, indent=1))
PY
