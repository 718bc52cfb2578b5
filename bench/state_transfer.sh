#!/usr/bin/env bash
# State transfer of a large model to a late joiner over capped links (issue 29): SOURCES daemons train
# DeepSqueeze top-1% on a synthetic logistic model of DIM parameters on a complete graph, each in a network
# namespace of its own with tc tbf at RATE on both ends of its link (tests/netns/netns_lib.sh); once they
# train, a new node (node.id = SOURCES, a late joiner) starts in a host of its own, capped the same way, and
# fetches the current model from its neighbours. Compressed training leaves the links mostly to the transfer
# (a round sends ~1% of the model); the joiner's download bandwidth is RATE.
#   transfer_s   from the joiner's "fetching the current model" line to its "state transfer done" line
#                (the daemon's own log timestamps)
#   from_listen_s  from the joiner's "listening on" line (its join begins) to "state transfer done": the
#                measure builds before the fetch line existed can be compared on
#   bound_s      1.2 * model bytes / RATE + 5 s (the issue's target)
#   mb_per_s     model bytes / transfer_s
#   first_mix_s  replica methods (ALGO=choco): from "state transfer done" to the joiner's first mixed round
#                (its "round N mixed" debug line). Its edges must be set up first: each end pulls the other's
#                public state, a model's worth per edge and direction (engine/edge_fetch.cc), so the joiner
#                downloads SOURCES models and uploads as many; edges_ideal_s is that at RATE.
# Also what the joiner logged instead, when it did not finish ("no state transfer within 5 s", or training
# from round 0 after its rejoins), and the suspicions and rejoins the transfer caused.
#   sudo bench/state_transfer.sh GOSSIPD OUT.json     env DIM (25000000) RATE (100mbit) SOURCES (2) ALGO (deepsqueeze)
#                                                      SOURCE_RATE (unset: the sources' links at RATE too)
#                                                      RATIO (0.01: the sources' top-k ratio, so their own training
#                                                      traffic, which shares their upload with the transfer)
set -euo pipefail
GOSSIPD=$(realpath "$1")
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../tests/netns/netns_lib.sh"
netns_require
DIM=${DIM:-25000000}
RATE=${RATE:-100mbit}
SOURCES=${SOURCES:-2}
ALGO=${ALGO:-deepsqueeze}  # or choco (a replica method: its edges' public states follow the model, a model's worth each way)
N=$((SOURCES + 1))
WORK=$(mktemp -d /tmp/gossipd-st.XXXXXX)
PIDS=()
NODE_PID=()
# LOGS=DIR keeps every node's log there.
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; netns_cleanup
      [ -z "${LOGS:-}" ] || { mkdir -p "$LOGS"; for d in "$WORK"/node-*; do cp "$d/log" "$LOGS/$(basename "$d").log" 2>/dev/null || true; done; }
      rm -rf "$WORK"' EXIT
netns_setup $N
netns_cap "$RATE"
# SOURCE_RATE: the sources' links capped lower than the joiner's, so that one source's upload is the limit
# and several sources together can fill the joiner's download (what fetching from several buys).
if [ -n "${SOURCE_RATE:-}" ]; then
  for ((i = 0; i < SOURCES; i++)); do
    ip netns exec "$(netns_name $i)" tc qdisc replace dev eth0 root tbf rate "$SOURCE_RATE" burst 32kbit latency 400ms
    ip netns exec "$NETNS_SW" tc qdisc replace dev "$(netns_veth $i)" root tbf rate "$SOURCE_RATE" burst 32kbit latency 400ms
  done
fi
SETS=(--set cluster.nodes=$SOURCES --set cluster.topology=complete --set algorithm.rounds=100000000
      --set data.format=synthetic --set data.synthetic_dim=$((DIM - 1)) --set data.synthetic_samples=1
      --set algorithm.batch=1 --set model.kind=logistic --set algorithm.name=$ALGO
      --set compressor.name=topk --set compressor.ratio=${RATIO:-0.01} --set algorithm.lr=0.01
      --set node.checkpoint_every=0 --set monitor.status_every_ms=200 --set node.http=)
round_of() { /usr/bin/python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1])).get("round", 0))
except Exception: print(0)' "$WORK/node-$1/status.json"; }
wait_until() {  # SECONDS WHAT CMD...
  local end=$((SECONDS + $1)) what=$2; shift 2
  until "$@"; do
    [ $SECONDS -lt $end ] || { tail -n 5 "$WORK"/node-*/log >&2; echo "state_transfer: timed out waiting for $what" >&2; exit 1; }
    sleep 0.5
  done
}
trains() { local i; for ((i = 0; i < SOURCES; i++)); do [ "$(round_of $i)" -ge 3 ] || return 1; done; }
for ((i = 0; i < SOURCES; i++)); do netns_start_gossipd $i "${SETS[@]}"; done
wait_until 600 "the $SOURCES sources to pass round 3" trains
netns_start_gossipd $SOURCES "${SETS[@]}" --set node.log_levels=node=debug  # "round N mixed" lines
J=$WORK/node-$SOURCES/log
ended() { grep -sqE "state transfer done|no state transfer within|kept its own checkpoint|training from round" "$J"; }
wait_until 900 "the joiner to end its state transfer" ended
if [ "$ALGO" != deepsqueeze ] && grep -q "state transfer done" "$J"; then
  mixed() { grep -sqE "round [0-9]+ mixed" "$J"; }
  wait_until 900 "the joiner's first mixed round (its edges set up)" mixed
fi
/usr/bin/python3 - "$J" "$OUT" "$DIM" "$RATE" "$SOURCES" "$WORK" "$ALGO" "${SOURCE_RATE:-}" "${RATIO:-0.01}" <<'PY'
import datetime, json, re, sys
log, out, dim, rate, sources, work, algo = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6], sys.argv[7]
source_rate = sys.argv[8] or rate
ratio = float(sys.argv[9])
def count(path, pattern):
    return sum(1 for line in open(path) if re.search(pattern, line))
def at(pattern):
    for line in open(log):
        if re.search(pattern, line):
            return datetime.datetime.fromisoformat(line.split()[0].rstrip("Z")), line.strip()
    return None, None
t0, _ = at(r"fetching the current model")
tl, _ = at(r"listening on")
t1, done = at(r"state transfer done")
_, other = at(r"no state transfer within|kept its own checkpoint")
tm, _ = at(r"round [0-9]+ mixed")
units = {"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8}
def per_s(r):
    m = re.fullmatch(r"([0-9.]+)([kmg]bit)", r)
    return float(m.group(1)) * units[m.group(2)]
bps = per_s(rate)
model = dim * 4
res = {"algorithm": algo, "ratio": ratio, "dim": dim, "model_mb": model / 1e6, "rate": rate, "source_rate": source_rate, "sources": sources,
       "ideal_s": round(model / bps, 2), "bound_s": round(1.2 * model / bps + 5, 2),
       "one_source_ideal_s": round(model / min(bps, per_s(source_rate)), 2)}
if t1 and tl:
    res["from_listen_s"] = round((t1 - tl).total_seconds(), 2)
if t0 and t1:
    s = (t1 - t0).total_seconds()
    res.update(transfer_s=round(s, 2), mb_per_s=round(model / 1e6 / s, 2), within_bound=s <= res["bound_s"])
else:
    res.update(transfer_s=None)
if algo != "deepsqueeze":
    res["edges_ideal_s"] = round(sources * model / bps, 2)
    if t1 and tm:
        res["first_mix_s"] = round((tm - t1).total_seconds(), 2)
if not t1:
    te, end = at(r"training from round")
    res["outcome"] = other or end or "no end line"
    if te and tl:
        res["gave_up_after_s"] = round((te - tl).total_seconds(), 2)
# What the transfer did to the failure detector: the joiner's suspicions of others and its own death
# verdicts (each one a rejoin), and the sources' suspicions, until the joiner's transfer ended.
res["joiner_suspicions"] = count(log, r"\) suspected")
res["joiner_rejoins"] = count(log, r"declared dead by the cluster")
res["source_suspicions"] = sum(count(f"{work}/node-{i}/log", r"\) suspected") for i in range(sources))
# The sources' own training traffic before the joiner started (node 0's progress lines, "sent N MB", over the
# last 20 s before the fetch began): it shares each source's upload with the transfer, so what the sources can
# give the joiner is their upload minus it ("spare"), and the transfer's best time is model / min(download, spare).
def sent_before(path, until):
    pts = []
    for line in open(path):
        m = re.search(r"sent ([0-9.]+) MB", line)
        if m:
            t = datetime.datetime.fromisoformat(line.split()[0].rstrip("Z"))
            if t0 and t <= t0 and (t0 - t).total_seconds() <= 20:
                pts.append((t, float(m.group(1)) * 1e6))
    return pts
pts = sent_before(f"{work}/node-0/log", t0)
if len(pts) >= 2 and pts[-1][0] > pts[0][0]:
    train = (pts[-1][1] - pts[0][1]) / (pts[-1][0] - pts[0][0]).total_seconds()
    spare = sources * max(0.0, per_s(source_rate) - train)
    res.update(source_training_mb_per_s=round(train / 1e6, 2), spare_upload_mb_per_s=round(spare / 1e6, 2))
    if spare > 0:
        res["spare_bound_s"] = round(1.2 * model / min(bps, spare) + 5, 2)
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res))
PY
