#!/usr/bin/env bash
# The daemon's time per round against the simulator's compute per node-round, in one run, for a
# 100,001-parameter model (logistic regression, synthetic_dim = 100,000) with uncompressed D-PSGD
# (400 kB per message): 2 daemons on loopback, each with one neighbour.
#   daemon_ms_per_round   steady state (rounds 300..1800), from the daemons' status files
#   sim_ms_per_node_round the same 2 nodes in `gossipd sim` (one thread, in-process network, no copies)
# The difference is the daemon's cost beyond compute: ZeroMQ transfer of the 400 kB frame both ways, the
# engine's checks and the node loop. Usage: bench/daemon_round.sh GOSSIPD [OUT.json]
set -euo pipefail
GOSSIPD=$(realpath "$1")
OUT=${2:-bench/results/daemon_round.json}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
sets=(--set data.format=synthetic --set data.synthetic_dim=100000 --set data.synthetic_samples=8
      --set model.kind=logistic --set model.l2=0.01 --set algorithm.name=dpsgd --set compressor.name=fp32
      --set algorithm.batch=8 --set algorithm.rounds=2000 --set monitor.eval_every=0 --set node.checkpoint_every=0
      --set monitor.status_every_ms=50 --set cluster.nodes=2)
"$GOSSIPD" cluster --nodes 2 --dir "$W/cl" "${sets[@]}" >"$W/cl.log" 2>&1 &
probe() { /usr/bin/python3 -c "import json,sys;d=json.load(open(sys.argv[1]));print(d['round'],d['seconds'])" "$W/cl/node-0/status.json" 2>/dev/null || echo "0 0"; }
r1=0; until [ "$r1" -ge 300 ]; do read -r r1 t1 < <(probe); sleep 0.02; done
r2=0; until [ "$r2" -ge 1800 ]; do read -r r2 t2 < <(probe); sleep 0.02; done
wait
"$GOSSIPD" sim "${sets[@]}" --set sim.eval_every=2000 --out "$W/sim.json" >/dev/null 2>&1
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$r1" "$t1" "$r2" "$t2" "$W/sim.json" "$OUT" <<'PY'
import json, sys
r1, t1, r2, t2 = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
sim = json.load(open(sys.argv[5]))["records"][-1]
d = 1000 * (t2 - t1) / (r2 - r1)
s = 1000 * sim["seconds"] / 2000 / 2
res = {"parameters": 100001, "message_bytes": 400052, "daemon_ms_per_round": round(d, 3),
       "sim_ms_per_node_round": round(s, 3), "daemon_minus_compute_ms": round(d - s, 3),
       "rounds_measured": r2 - r1, "note": "difference includes the 400 kB ZeroMQ transfer both ways"}
json.dump(res, open(sys.argv[6], "w"), indent=1)
print(json.dumps(res))
PY
