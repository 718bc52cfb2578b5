#!/usr/bin/env bash
# What CurveZMQ costs on the 64 MB round: bench/daemon_round.sh twice in one run, plain TCP then CurveZMQ,
# same model (16,777,216 fp32 parameters, D-PSGD between 2 daemons on loopback). The cost is the ratio of
# the transfer parts (daemon round minus the algorithm's own compute, each from its own run).
# Usage: bench/curve_cost.sh BUILD_DIR [OUT.json]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$1
OUT=${2:-bench/results/curve_64mb.json}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export DIM=16777215 ROUNDS=${ROUNDS:-40} FROM=${FROM:-10} TO=${TO:-35} SAMPLES=1
CURVE=0 bench/daemon_round.sh "$BUILD" "$W/plain.json" >/dev/null
CURVE=1 bench/daemon_round.sh "$BUILD" "$W/curve.json" >/dev/null
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$W/plain.json" "$W/curve.json" "$OUT" <<'PY'
import json, sys
plain, curve = (json.load(open(p)) for p in sys.argv[1:3])
tp = plain["daemon_ms_per_round"] - plain["compute_ms_per_round"]
tc = curve["daemon_ms_per_round"] - curve["compute_ms_per_round"]
res = {"plain": plain, "curve": curve, "transfer_ms_plain": round(tp, 1), "transfer_ms_curve": round(tc, 1),
       "curve_transfer_cost": round(tc / tp, 2),
       "round_ratio": round(curve["daemon_ms_per_round"] / plain["daemon_ms_per_round"], 2)}
json.dump(res, open(sys.argv[3], "w"), indent=1)
print(json.dumps({k: v for k, v in res.items() if k not in ("plain", "curve")}))
PY
