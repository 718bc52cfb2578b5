#!/usr/bin/env bash
# What CurveZMQ costs per round: bench/daemon_round.sh twice per message size in one run, plain TCP then
# CurveZMQ, D-PSGD fp32 between 2 daemons on loopback. The cost is the ratio of the transfer parts (daemon
# round minus the algorithm's own compute, each from its own run) and of the rounds.
# Usage: bench/curve_cost.sh BUILD_DIR [OUT.json]; env SIZES: parameter counts minus one (the logistic
# model adds a bias), default "1048575 4194303 16777215" (4, 16 and 64 MB messages).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$1
OUT=${2:-bench/results/curve_cost.json}
SIZES=${SIZES:-"1048575 4194303 16777215"}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
export SAMPLES=1
for dim in $SIZES; do
  # Rounds scaled so each size runs about a minute; the steady-state window leaves out the start.
  if   [ "$dim" -ge 16000000 ]; then rounds="ROUNDS=40 FROM=10 TO=35"
  elif [ "$dim" -ge 4000000 ];  then rounds="ROUNDS=400 FROM=100 TO=350"
  else                               rounds="ROUNDS=2000 FROM=300 TO=1800"; fi
  for curve in 0 1; do
    echo "curve_cost: $((4 * (dim + 1) >> 20)) MB, CURVE=$curve ($rounds)" >&2
    env DIM=$dim CURVE=$curve $rounds bench/daemon_round.sh "$BUILD" "$W/$dim-$curve.json" >/dev/null
  done
done
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$W" "$OUT" $SIZES <<'PY'
import json, sys
w, out, sizes = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = []
for dim in sizes:
    plain, curve = (json.load(open(f"{w}/{dim}-{c}.json")) for c in (0, 1))
    tp = plain["daemon_ms_per_round"] - plain["compute_ms_per_round"]
    tc = curve["daemon_ms_per_round"] - curve["compute_ms_per_round"]
    rows.append({"parameters": plain["parameters"], "message_bytes": plain["message_bytes"],
                 "round_ms_plain": plain["daemon_ms_per_round"], "round_ms_curve": curve["daemon_ms_per_round"],
                 "round_ratio": round(curve["daemon_ms_per_round"] / plain["daemon_ms_per_round"], 2),
                 "transfer_ms_plain": round(tp, 1), "transfer_ms_curve": round(tc, 1),
                 "transfer_ratio": round(tc / tp, 2),
                 "cpu_ms_plain": plain["daemon_cpu_ms_per_round"], "cpu_ms_curve": curve["daemon_cpu_ms_per_round"],
                 "plain": plain, "curve": curve})
json.dump({"sizes": rows}, open(out, "w"), indent=1)
for r in rows:
    print(json.dumps({k: v for k, v in r.items() if k not in ("plain", "curve")}))
PY
