#!/usr/bin/env bash
# Does the failure detector hold when the machine is overloaded by other work? (issue 27: with four 100M
# LEAD daemons and their trainers on 2 cores the detector raised 137 suspicions, all refuted.) NODES
# daemons (`gossipd cluster`, a ring, D-PSGD fp32 on a synthetic logistic model of DIM parameters, batch 1,
# default failure-detector settings) train for DURATION seconds while HOGS processes spin on the CPU beside them
# (nice 0, like a trainer or a build would); then the cluster is stopped (SIGTERM: a clean leave) and each
# node's status.json and log are read:
#   suspicions, refutations, deaths   membership events this node saw (status.json; a suspicion of a member
#                                      is counted by every node that hears of it)
#   declared_dead_self                times this node learnt it was declared dead and rejoined (log)
#   rounds                            rounds this node ran
# plus the load average at the start and the end. Every healthy node stays up the whole run, so every
# death and every rejoin is a false one.
# Usage: bench/membership_overload.sh GOSSIPD OUT.json; env NODES (4), DIM (200000), HOGS (8), DURATION (60).
set -euo pipefail
GOSSIPD=$(realpath "$1")
[ -d "$GOSSIPD" ] && GOSSIPD=$GOSSIPD/daemon/gossipd
OUT=$2
NODES=${NODES:-4}; DIM=${DIM:-200000}; HOGS=${HOGS:-8}; DURATION=${DURATION:-60}
W=$(mktemp -d)
cluster=""
hogs=()
cleanup() {
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -n "$cluster" ] && kill "$cluster" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
"$GOSSIPD" cluster --nodes "$NODES" --dir "$W/cl" --no-restart \
  --set data.format=synthetic --set data.synthetic_dim="$DIM" --set data.synthetic_samples=1 \
  --set algorithm.batch=1 --set model.kind=logistic --set algorithm.name=dpsgd --set compressor.name=fp32 \
  --set cluster.topology=ring --set algorithm.rounds=100000000 --set node.checkpoint_every=0 \
  --set monitor.eval_every=0 >"$W/cl.log" 2>&1 &
cluster=$!
# Training on every node before the hogs start: a join under load is another question.
deadline=$(( $(date +%s) + 120 ))
for ((i = 0; i < NODES; i++)); do
  until grep -q '"state": *"training"' "$W/cl/node-$i/status.json" 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "membership_overload: node $i not training within 120 s" >&2; cat "$W/cl.log" >&2; exit 1; }
    kill -0 $cluster 2>/dev/null || { echo "membership_overload: the cluster exited" >&2; cat "$W/cl.log" >&2; exit 1; }
    sleep 0.2
  done
done
load_begin=$(cut -d' ' -f1 /proc/loadavg)
for ((h = 0; h < HOGS; h++)); do
  sh -c 'while :; do :; done' &
  hogs+=($!)
done
sleep "$DURATION"  # the length of the overload (what is measured), not a synchronisation
load_end=$(cut -d' ' -f1 /proc/loadavg)
for p in "${hogs[@]}"; do kill "$p" 2>/dev/null || true; done
hogs=()
kill -TERM $cluster
wait $cluster || true
cluster=""
mkdir -p "$(dirname "$OUT")"
/usr/bin/python3 - "$W/cl" "$OUT" "$NODES" "$DIM" "$HOGS" "$DURATION" "$load_begin" "$load_end" <<'PY'
import glob, json, os, sys
d, out, nodes, dim, hogs, secs, lb, le = sys.argv[1:]
res = {"nodes": int(nodes), "parameters": int(dim) + 1, "hogs": int(hogs), "seconds": int(secs),
       "load_begin": float(lb), "load_end": float(le), "per_node": []}
for nd in sorted(glob.glob(os.path.join(d, "node-*"))):
    s = json.load(open(os.path.join(nd, "status.json")))
    log = open(os.path.join(nd, "log")).read()
    res["per_node"].append({"node": int(s["id"]), "state": s["state"], "round": s["round"],
        "suspicions": s["suspicions"], "refutations": s["refutations"], "deaths": s["deaths"],
        "declared_dead_self": log.count("declared dead by the cluster"), "incarnation": s["incarnation"]})
for k in ("suspicions", "refutations", "deaths", "declared_dead_self"):
    res[k] = sum(n[k] for n in res["per_node"])
json.dump(res, open(out, "w"), indent=1)
print(json.dumps({k: res[k] for k in ("hogs", "seconds", "load_begin", "load_end", "suspicions", "refutations", "deaths", "declared_dead_self")}))
PY
