#!/usr/bin/env bash
# The daemon's time per round against its two parts measured in the same run: the simulator's compute per
# node-round and a raw ZeroMQ exchange of the same bytes. Uncompressed D-PSGD on logistic regression with
# DIM features (message = 4·(DIM+1) bytes + headers), 2 daemons on loopback, each with one neighbour.
#   daemon_ms_per_round   steady state (rounds FROM..TO), from the daemons' status files
#   sim_ms_per_node_round the same 2 nodes in `gossipd sim` (one thread, in-process network, no copies), from
#                         two runs of ROUNDS and ROUNDS/2 rounds, so that setup cancels out
#   raw_exchange_ms       bench_transport --exchange: both ends send one frame of the same size over raw
#                         PUSH/PULL and receive the other's, nothing else
#   overhead_ms           daemon - compute - raw exchange: the daemon's own cost per round (engine checks,
#                         acks, node loop, the transport's copy into the engine's buffer)
#   transfer_ratio        raw exchange / (daemon - compute): the daemon's transfer against raw ZeroMQ
#   daemon_cpu_ms_per_round, sim_cpu_ms_per_node_round: CPU time (user + system, all threads) of node 0's
#                         process and of the simulator per node-round. Less disturbed than wall time when
#                         other work shares the cores; their difference is the daemon's CPU beyond compute.
# Usage: bench/daemon_round.sh BUILD_DIR [OUT.json]; env DIM (100000), ROUNDS (2000), FROM (300), TO (1800).
# For the 64 MB case: DIM=16777215 ROUNDS=40 FROM=10 TO=35.
set -euo pipefail
BUILD=$(realpath "$1")
GOSSIPD=$BUILD/daemon/gossipd
OUT=${2:-bench/results/daemon_round.json}
DIM=${DIM:-100000}; ROUNDS=${ROUNDS:-2000}; FROM=${FROM:-300}; TO=${TO:-1800}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
sets=(--set data.format=synthetic --set data.synthetic_dim=$DIM --set data.synthetic_samples=8
      --set model.kind=logistic --set model.l2=0.01 --set algorithm.name=dpsgd --set compressor.name=fp32
      --set algorithm.batch=8 --set algorithm.rounds=$ROUNDS --set monitor.eval_every=0 --set node.checkpoint_every=0
      --set monitor.status_every_ms=50 --set cluster.nodes=2 --set algorithm.round_timeout_ms=60000)
"$GOSSIPD" cluster --nodes 2 --dir "$W/cl" "${sets[@]}" >"$W/cl.log" 2>&1 &
cluster=$!
node0=""
until [ -n "$node0" ]; do node0=$(pgrep -P $cluster -f 'node\.id=0' || true); sleep 0.02; done
# round, seconds (from status.json) and node 0's CPU seconds (utime + stime from /proc, clock ticks)
probe() { /usr/bin/python3 -c "
import json,os,sys
d=json.load(open(sys.argv[1])); st=open('/proc/'+sys.argv[2]+'/stat').read().rsplit(')',1)[1].split()
print(d['round'], d['seconds'], (int(st[11])+int(st[12]))/os.sysconf('SC_CLK_TCK'))" "$W/cl/node-0/status.json" "$node0" 2>/dev/null || echo "0 0 0"; }
deadline=$((SECONDS + 1800))
r1=0; until [ "$r1" -ge "$FROM" ]; do read -r r1 t1 c1 < <(probe); sleep 0.02; [ $SECONDS -lt $deadline ] || { echo "timed out waiting for round $FROM"; exit 1; }; done
r2=0; until [ "$r2" -ge "$TO" ]; do read -r r2 t2 c2 < <(probe); sleep 0.02; [ $SECONDS -lt $deadline ] || { echo "timed out waiting for round $TO"; exit 1; }; done
wait
# The simulator twice, for ROUNDS and ROUNDS/2 rounds: the differences of wall and CPU time are the rounds
# alone (setup, data generation and the centralized reference solve cancel out).
half=$((ROUNDS / 2))
for r in $ROUNDS $half; do
  /usr/bin/time -f "%e %U %S" -o "$W/sim-$r.time" "$GOSSIPD" sim "${sets[@]}" --set algorithm.rounds=$r \
    --set sim.eval_every=$r --set sim.threads=1 --out "$W/sim-$r.json" >/dev/null 2>&1
done
bytes=$((4 * (DIM + 1) + 52))
"$BUILD/bench/bench_transport" --exchange --kb $(((bytes + 1023) / 1024)) --messages $(( DIM > 1000000 ? 10 : 200 )) --trials 3 >"$W/raw.json"
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$r1" "$t1" "$r2" "$t2" "$W/sim-$ROUNDS.time" "$W/raw.json" "$OUT" "$DIM" "$ROUNDS" "$bytes" "$c1" "$c2" "$W/sim-$half.time" <<'PY'
import json, sys
r1, t1, r2, t2 = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def times(path):  # wall, cpu seconds of one sim run
    e, u, sy = map(float, open(path).read().split()[-3:])
    return e, u + sy
full, half = times(sys.argv[5]), times(sys.argv[13])
raw = json.load(open(sys.argv[6]))["raw_exchange_ms"]
dim, rounds, msg = int(sys.argv[8]), int(sys.argv[9]), int(sys.argv[10])
d = 1000 * (t2 - t1) / (r2 - r1)
node_rounds = 2 * (rounds - rounds // 2)
s = 1000 * (full[0] - half[0]) / node_rounds
c = 1000 * (float(sys.argv[12]) - float(sys.argv[11])) / (r2 - r1)
sc = 1000 * (full[1] - half[1]) / node_rounds
res = {"parameters": dim + 1, "message_bytes": msg, "daemon_ms_per_round": round(d, 3),
       "sim_ms_per_node_round": round(s, 3), "raw_exchange_ms": round(raw, 3),
       "overhead_ms": round(d - s - raw, 3), "transfer_ratio": round(raw / (d - s), 3) if d > s else None,
       "daemon_cpu_ms_per_round": round(c, 3), "sim_cpu_ms_per_node_round": round(sc, 3),
       "cpu_overhead_ms": round(c - sc, 3), "rounds_measured": r2 - r1}
json.dump(res, open(sys.argv[7], "w"), indent=1)
print(json.dumps(res))
PY
