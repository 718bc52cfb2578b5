#!/usr/bin/env bash
# The daemon's time per round against its two parts, all measured in the same run: the algorithm's compute
# (the engine's own clock around local steps, encode, decode and mix: status.json's compute_seconds) and a
# raw ZeroMQ exchange of the same bytes. Uncompressed D-PSGD on logistic regression with DIM features
# (message = 4·(DIM+1) bytes + headers), 2 daemons on loopback, each with one neighbour.
#   daemon_ms_per_round   steady state (rounds FROM..TO) of node 0, from its status file
#   compute_ms_per_round  node 0's time inside the algorithm over the same rounds
#   raw_exchange_ms       bench_transport --exchange: both ends send one frame of the same size over raw
#                         PUSH/PULL and receive the other's, nothing else (run after the daemons stopped)
#   transfer_ratio        raw exchange / (daemon - compute): the daemon's transfer against raw ZeroMQ
#   overhead_ms           daemon - compute - raw exchange: the daemon's own cost per round (framing and
#                         checksums, acks, node loop, waking its threads, the copy into the engine's buffer)
#   daemon_cpu_ms_per_round, cpu_overhead_ms: CPU time (user + system, all threads) of node 0's process per
#                         round, and that minus compute: less disturbed than wall time when other work shares
#                         the cores (compute is single-threaded, so its wall time is its CPU time).
# Usage: bench/daemon_round.sh BUILD_DIR [OUT.json]; env DIM (100000), ROUNDS (2000), FROM (300), TO (1800),
# SAMPLES (8: rows of synthetic data per node), CURVE (0; 1: the daemons run with CurveZMQ, keys from
# gossipd keygen; the raw exchange stays plain TCP). For the 64 MB case:
#   DIM=16777215 ROUNDS=40 FROM=10 TO=35 SAMPLES=1
set -euo pipefail
BUILD=$(realpath "$1")
GOSSIPD=$BUILD/daemon/gossipd
OUT=${2:-bench/results/daemon_round.json}
DIM=${DIM:-100000}; ROUNDS=${ROUNDS:-2000}; FROM=${FROM:-300}; TO=${TO:-1800}; SAMPLES=${SAMPLES:-8}; CURVE=${CURVE:-0}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
sets=(--set data.format=synthetic --set data.synthetic_dim=$DIM --set data.synthetic_samples=$SAMPLES
      --set model.kind=logistic --set model.l2=0.01 --set algorithm.name=dpsgd --set compressor.name=fp32
      --set algorithm.batch=$SAMPLES --set algorithm.rounds=$ROUNDS --set monitor.eval_every=0 --set node.checkpoint_every=0
      --set monitor.status_every_ms=50 --set algorithm.round_timeout_ms=60000)
if [ "$CURVE" = 1 ]; then
  "$GOSSIPD" keygen --out "$W/keys" --nodes 2 >/dev/null
  sets+=(--set security.enable=true --set security.keys_dir="$W/keys")
fi
"$GOSSIPD" cluster --nodes 2 --dir "$W/cl" "${sets[@]}" >"$W/cl.log" 2>&1 &
cluster=$!
node0=""
until [ -n "$node0" ]; do
  kill -0 $cluster 2>/dev/null || { echo "daemon_round: the cluster exited before node 0 started" >&2; cat "$W/cl.log" >&2; exit 1; }
  node0=$(pgrep -P $cluster -f 'node\.id=0' || true)
  sleep 0.02
done
# One low-rate probe process (a probe per 20 ms, as this once did, took most of a core from the daemons):
# each status.json snapshot is self-consistent (round, seconds and compute seconds written together), so
# probing rarely costs no accuracy; node 0's CPU seconds (utime + stime of all its threads) come from /proc.
read -r r1 t1 k1 c1 r2 t2 k2 c2 < <(/usr/bin/python3 - "$W/cl/node-0/status.json" "$node0" "$FROM" "$TO" <<'PY'
import json, os, sys, time
path, pid, marks = sys.argv[1], sys.argv[2], [int(sys.argv[3]), int(sys.argv[4])]
deadline, out = time.time() + 1800, []
while marks:
    if time.time() > deadline: sys.exit(f"timed out waiting for round {marks[0]}")
    try:
        d = json.load(open(path))
        st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        d = {"round": -1}
    if d["round"] >= marks[0]:
        marks.pop(0)
        out += [d["round"], d["seconds"], d["compute_seconds"], (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")]
    time.sleep(0.2)
print(*out)
PY
)
[ -n "${c2:-}" ] || { echo "the probe of node 0's status failed"; exit 1; }
wait
# A round time means something only if the two daemons mixed every round: a death (as with CurveZMQ and
# 64 MB frames, docs/security.md) leaves each training alone, with rounds as fast as its compute.
if grep -q "declared dead" "$W"/cl/node-*/log; then
  echo "daemon_round: a node was declared dead during the run; its round times are not a measurement" >&2
  grep -h "declared dead" "$W"/cl/node-*/log | head -3 >&2
  exit 1
fi
bytes=$((4 * (DIM + 1) + 52))
"$BUILD/bench/bench_transport" --exchange --kb $(((bytes + 1023) / 1024)) --messages $(( DIM > 1000000 ? 10 : 200 )) --trials 3 >"$W/raw.json"
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$r1" "$t1" "$k1" "$c1" "$r2" "$t2" "$k2" "$c2" "$W/raw.json" "$OUT" "$DIM" "$bytes" "$CURVE" <<'PY'
import json, sys
a = sys.argv[1:]
r1, t1, k1, c1, r2, t2, k2, c2 = int(a[0]), *map(float, a[1:4]), int(a[4]), *map(float, a[5:8])
raw = json.load(open(a[8]))["raw_exchange_ms"]
dim, msg = int(a[10]), int(a[11])
n = r2 - r1
d, k, c = 1000 * (t2 - t1) / n, 1000 * (k2 - k1) / n, 1000 * (c2 - c1) / n
res = {"parameters": dim + 1, "message_bytes": msg, "curve": a[12] == "1", "daemon_ms_per_round": round(d, 3),
       "compute_ms_per_round": round(k, 3), "raw_exchange_ms": round(raw, 3),
       "overhead_ms": round(d - k - raw, 3), "transfer_ratio": round(raw / (d - k), 3) if d > k else None,
       "daemon_cpu_ms_per_round": round(c, 3), "cpu_overhead_ms": round(c - k, 3), "rounds_measured": n}
json.dump(res, open(a[9], "w"), indent=1)
print(json.dumps(res))
PY
