#!/usr/bin/env bash
# Does a large model's round starve the failure detector? (issue 27) 3 daemons (`gossipd cluster --nodes 3`)
# run D-PSGD fp32 on a synthetic logistic model of DIM parameters with the default failure-detector settings
# (cluster.probe_interval_ms, probe_timeout_ms, suspicion_mult) and the default 2 s round timeout; a
# checkpoint every CKPT rounds (400 MB and six fsyncs each at 50M float64 parameters). Per node, from its
# final status.json and its log:
#   suspicions, refutations, deaths     membership events this node saw (status.json)
#   declared_dead_self                  times this node learnt it was declared dead and rejoined (log)
#   late                                frames refused as `late` (rejected_by_reason), i.e. for a round the
#                                       node had already closed
#   state_transfers_received / _sent    model transfers (each rejoin costs one)
#   seconds_per_round                   (seconds at the last round - seconds at round 1) / rounds between
# plus the load average when the run began and ended (the machine is shared: read numbers beside it).
# Usage: bench/membership_starvation.sh BUILD_DIR_OR_GOSSIPD OUT.json; env DIM (50000000), ROUNDS (16),
# CKPT (5), TIMEOUT_S (1800).
set -euo pipefail
GOSSIPD=$(realpath "$1")
[ -d "$GOSSIPD" ] && GOSSIPD=$GOSSIPD/daemon/gossipd
OUT=$2
DIM=${DIM:-50000000}; ROUNDS=${ROUNDS:-16}; CKPT=${CKPT:-5}; TIMEOUT_S=${TIMEOUT_S:-1800}
W=$(mktemp -d)
cluster=""
trap '[ -n "$cluster" ] && kill $cluster 2>/dev/null; wait 2>/dev/null; rm -rf "$W"' EXIT
load_begin=$(cut -d' ' -f1-3 /proc/loadavg)
start=$(date +%s)
"$GOSSIPD" cluster --nodes 3 --dir "$W/cl" \
  --set data.format=synthetic --set data.synthetic_dim="$DIM" --set data.synthetic_samples=1 \
  --set algorithm.batch=1 --set model.kind=logistic --set algorithm.name=dpsgd --set compressor.name=fp32 \
  --set algorithm.rounds="$ROUNDS" --set node.checkpoint_every="$CKPT" >"$W/cl.log" 2>&1 &
cluster=$!
# Each node's first status with round >= 1 (its age then), polled rarely: the cores are the daemons'.
/usr/bin/python3 - "$W/cl" $cluster >"$W/marks.json" <<'PY' &
import glob, json, os, sys, time
d, pid, first = sys.argv[1], int(sys.argv[2]), {}
while os.path.exists(f"/proc/{pid}"):
    for f in glob.glob(os.path.join(d, "node-*", "status.json")):
        try:
            s = json.load(open(f))
        except (OSError, ValueError):
            continue
        if s["round"] >= 1 and str(s["id"]) not in first:
            first[str(s["id"])] = [s["round"], s["seconds"]]
    time.sleep(0.5)
print(json.dumps(first))
PY
poller=$!
# Every node ends with state done (or stopped): the cluster supervisor then exits.
while kill -0 $cluster 2>/dev/null; do
  if [ $(( $(date +%s) - start )) -gt "$TIMEOUT_S" ]; then echo "membership_starvation: timed out after ${TIMEOUT_S}s" >&2; exit 1; fi
  sleep 1
done
wait $cluster || true
cluster=""
wait $poller || true
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$W/cl" "$OUT" "$DIM" "$ROUNDS" "$CKPT" "$load_begin" "$load_end" "$(( $(date +%s) - start ))" "$W/marks.json" <<'PY'
import glob, json, os, re, sys
d, out, dim, rounds, ckpt, lb, le, wall, marks = sys.argv[1:]
marks = json.load(open(marks))
nodes = []
for nd in sorted(glob.glob(os.path.join(d, "node-*"))):
    s = json.load(open(os.path.join(nd, "status.json")))
    log = open(os.path.join(nd, "log")).read()
    started = re.findall(r"training from round (\d+)", log)
    r1, t1 = marks.get(str(s["id"]), [None, None])
    spr = round((s["seconds"] - t1) / (s["round"] - r1), 2) if r1 is not None and s["round"] > r1 else None
    nodes.append({"seconds_per_round": spr,
        "node": int(s["id"]), "state": s["state"], "round": s["round"], "seconds": s["seconds"],
        "compute_seconds": round(s["compute_seconds"], 2),
        "suspicions": s["suspicions"], "refutations": s["refutations"], "deaths": s["deaths"],
        "declared_dead_self": log.count("declared dead by the cluster"),
        "late": s["rejected_by_reason"].get("late", 0),
        "rejected_by_reason": s["rejected_by_reason"],
        "state_transfers_received": s["states_received"], "state_transfers_sent": s["states_sent"],
        "incarnation": s["incarnation"], "trainings_started": len(started)})
res = {"parameters": int(dim) + 1, "rounds": int(rounds), "checkpoint_every": int(ckpt),
       "load_begin": lb, "load_end": le, "wall_seconds": int(wall), "nodes": nodes}
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res))
PY
