#!/usr/bin/env bash
# Memory per model parameter and the daemon's own work per round with a large model, through the trainer
# bridge (issue 29, docs/results.md §13). NODES daemons on a ring (`gossipd cluster`), each with the trainer
# bench/model_trainer.py beside it (a flat float32 model of DIM parameters, a step of one pass over it).
#   pss_bytes_per_param_steady  median over the samples taken from round FROM on of the daemon's PSS / DIM,
#                               averaged over the nodes. PSS, not RSS: the model's shared memory is split
#                               between the daemon and its trainer instead of being counted twice.
#   pss_bytes_per_param_peak    the largest PSS sample (every 0.2 s) of any node / DIM
#   peak_at                     when that sample was taken: node 0's round then and the phase ("start" until
#                               its round 1, "rounds", "end" from its last round on)
#   hwm_rss_bytes_per_param     the kernel's peak RSS (VmHWM) of the largest node / DIM: an upper bound of the
#                               peak that sampling may miss; it counts the whole shared memory the daemon touched
#   work_ms_per_round           node 0's algorithm compute plus its trainer copies per round (status.json's
#                               compute_seconds + trainer_copy_seconds, rounds FROM..TO): the daemon's work
#                               outside the network
#   memcpy_ms                   np.copyto of a float32 model of DIM, measured by node 0's trainer in this run
#   work_memcpys                work_ms_per_round / memcpy_ms
#   cpu_ms_per_round            node 0's CPU time (user + system, all its threads) per round: the work above
#                               plus what it leaves out (the payload checksums, the kernel's socket copies)
#   round_ms                    node 0's wall time per round over the same rounds
#   raw_exchange_ms, raw_exchange_parts_ms (D-PSGD fp32 on 2 nodes only) a raw ZeroMQ exchange of a round's
#                               bytes between two threads (bench_transport --exchange: each end sends one
#                               model-sized message and receives the other's), as one part and in 1 MiB parts
#                               as the transport sends; measured after the cluster stopped, so alone on the
#                               machine. round_vs_raw = the faster of the two / round_ms (the issue's >= 0.8)
# Usage: bench/model_memory.sh BUILD_DIR [OUT.json]; env DIM (20000000), NODES (2), ALGO (dpsgd), COMP (fp32),
# RATIO (0.01, for topk), MODE (model; gradient for lead), ROUNDS (24), FROM (6), TO (20), CKPT (10: rounds
# between checkpoints, 0 = none).
set -euo pipefail
BUILD=$(realpath "$1")
GOSSIPD=$BUILD/daemon/gossipd
OUT=${2:-bench/results/model_memory.json}
HERE=$(cd "$(dirname "$0")" && pwd)
DIM=${DIM:-20000000}; NODES=${NODES:-2}; ALGO=${ALGO:-dpsgd}; COMP=${COMP:-fp32}; RATIO=${RATIO:-0.01}
MODE=${MODE:-model}; ROUNDS=${ROUNDS:-24}; FROM=${FROM:-6}; TO=${TO:-20}; CKPT=${CKPT:-10}
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; sleep 0.5; rm -rf "$W"' EXIT
"$GOSSIPD" cluster --nodes "$NODES" --dir "$W/cl" --no-restart \
  --set trainer.enable=true --set trainer.mode="$MODE" --set algorithm.name="$ALGO" \
  --set compressor.name="$COMP" --set compressor.ratio="$RATIO" --set cluster.topology=ring \
  --set algorithm.rounds="$ROUNDS" --set algorithm.lr=0.01 --set algorithm.round_timeout_ms=600000 \
  --set node.checkpoint_every="$CKPT" --set monitor.status_every_ms=100 >"$W/cl.log" 2>&1 &
cluster=$!
for ((i = 0; i < NODES; i++)); do
  until [ -S "$W/cl/node-$i/trainer.sock" ]; do
    kill -0 $cluster 2>/dev/null || { echo "model_memory: the cluster exited before node $i's trainer socket" >&2; cat "$W/cl.log" >&2; exit 1; }
    sleep 0.1
  done
  SEED=1 /usr/bin/python3 "$HERE/model_trainer.py" "$W/cl/node-$i" "$DIM" >"$W/trainer-$i.log" 2>&1 &
done
pids=()
for ((i = 0; i < NODES; i++)); do pids+=("$(pgrep -P $cluster -f "node\.id=$i( |$)" | head -1)"); done
/usr/bin/python3 - "$W" "$OUT" "$DIM" "$FROM" "$TO" "$cluster" "${pids[@]}" <<'PY'
import json, os, statistics, sys, time
w, out, dim, frm, to, cluster = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
pids = [int(p) for p in sys.argv[7:]]
def kb(pid, path, key):
    for line in open(f"/proc/{pid}/{path}"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0
def cpu(pid):  # user + system seconds of all the process's threads
    try:
        st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
steady, peak, hwm, marks = [[] for _ in pids], [0] * len(pids), [0] * len(pids), {}
peak_at = [None] * len(pids)
rounds_total = int(os.environ.get("ROUNDS", "24"))
def phase(r, state):
    if r <= 0 or state in ("joining", "syncing"):
        return "start"
    return "end" if r >= rounds_total - 1 or state in ("done", "stopped") else "rounds"
gone = set()  # daemons that exited before the figures were taken (the kernel's OOM killer, a crash)
deadline = time.time() + 3600
while True:
    if time.time() > deadline: sys.exit("model_memory: timed out")
    try:
        st = json.load(open(f"{w}/cl/node-0/status.json"))
    except (OSError, ValueError):
        st = {"round": -1}
    r = st.get("round", -1)
    for k in (frm, to):
        if r >= k and k not in marks:
            marks[k] = (r, st["seconds"], st["compute_seconds"], st.get("trainer_copy_seconds", 0.0), cpu(pids[0]))
    alive = False
    for n, pid in enumerate(pids):
        try:
            p = kb(pid, "smaps_rollup", "Pss")
            hwm[n] = max(hwm[n], kb(pid, "status", "VmHWM"))
        except OSError:
            if to not in marks:  # a daemon that finished its run exits: only one gone before the figures counts
                gone.add(n)
            continue
        alive = True
        if p > peak[n]:
            peak[n], peak_at[n] = p, {"round": r, "phase": phase(r, st.get("state"))}
        if r >= frm and st.get("state") != "done":
            steady[n].append(p)
    if not alive or to in marks and st.get("state") == "done":
        break
    time.sleep(0.2)
if frm not in marks or to not in marks:
    sys.exit(f"model_memory: node 0 did not reach round {to} (status {st})")
memcpy = None
for line in open(f"{w}/trainer-0.log"):
    if line.startswith("memcpy_ms"):
        memcpy = float(line.split()[1])
(r1, s1, c1, k1, u1), (r2, s2, c2, k2, u2) = marks[frm], marks[to]
n = r2 - r1
work = 1000 * ((c2 - c1) + (k2 - k1)) / n
res = {"dim": dim, "nodes": len(pids), "algorithm": os.environ.get("ALGO", "dpsgd"),
       "compressor": os.environ.get("COMP", "fp32"), "mode": os.environ.get("MODE", "model"),
       "pss_bytes_per_param_steady": round(statistics.mean(statistics.median(s) for s in steady if s) / dim, 2),
       "pss_bytes_per_param_peak": round(max(peak) / dim, 2),
       "peak_at": peak_at[peak.index(max(peak))],
       "hwm_rss_bytes_per_param": round(max(hwm) / dim, 2),
       "work_ms_per_round": round(work, 2), "compute_ms_per_round": round(1000 * (c2 - c1) / n, 2),
       "copy_ms_per_round": round(1000 * (k2 - k1) / n, 2), "memcpy_ms": memcpy,
       "work_memcpys": round(work / memcpy, 2) if memcpy else None,
       "cpu_ms_per_round": round(1000 * (u2 - u1) / n, 1),
       "round_ms": round(1000 * (s2 - s1) / n, 1), "rounds_measured": n}
# What the failure detector made of the run (a large model's start must not look like a death).
def count(pattern):
    total = 0
    for i in range(len(pids)):
        try:
            total += sum(1 for line in open(f"{w}/cl/node-{i}/log") if pattern in line)
        except OSError:
            pass
    return total
res.update(suspicions=count(") suspected"), death_verdicts=count("declared dead"), daemons_lost=len(gone))
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res))
if gone:
    sys.exit(f"model_memory: {len(gone)} of {len(pids)} daemons exited before the figures were taken "
             "(the figures above are of the others)")
PY
# Done nodes of a stateless method stay a round deadline for their neighbours' last frames (lifecycle.cc),
# and the deadline here is 600 s so that no 100M-parameter round times out: stop the cluster once the
# figures are taken (SIGTERM: it stops its daemons and trainers) instead of waiting ten minutes.
kill -TERM $cluster 2>/dev/null || true
wait $cluster || true
if [ "$ALGO" = dpsgd ] && [ "$COMP" = fp32 ] && [ "$NODES" = 2 ] && [ -x "$BUILD/bench/bench_transport" ]; then
  kb=$(((4 * DIM + 64 + 1023) / 1024)); msgs=$(( DIM > 10000000 ? 5 : 20 ))
  "$BUILD/bench/bench_transport" --exchange --kb $kb --messages $msgs --trials 3 >"$W/raw1.json"
  "$BUILD/bench/bench_transport" --exchange --kb $kb --part-kb 1024 --messages $msgs --trials 3 >"$W/raw2.json"
  /usr/bin/python3 - "$OUT" "$W/raw1.json" "$W/raw2.json" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
one, parts = (json.load(open(p))["raw_exchange_ms"] for p in sys.argv[2:4])
res.update(raw_exchange_ms=round(one, 1), raw_exchange_parts_ms=round(parts, 1),
           round_vs_raw=round(min(one, parts) / res["round_ms"], 3))
json.dump(res, open(sys.argv[1], "w"), indent=1)
print(json.dumps({k: res[k] for k in ("round_ms", "raw_exchange_ms", "raw_exchange_parts_ms", "round_vs_raw")}))
PY
fi
