#!/usr/bin/env bash
# Time to accuracy under a per-host bandwidth cap (issue 8): 8 hosts, each a network namespace with its own
# address (tests/netns/netns_lib.sh), tc tbf at RATE on both ends of every host's link.
#
# The default methods train the Fashion-MNIST MLP 784-128-10 on iid shards, minibatch 32 per host, step
# 0.05, l2 1e-4:
#   dpsgd deepsqueeze choco: gossipd on a ring: D-PSGD fp32, DeepSqueeze top-1% (eta 0.02), CHOCO top-1%
#                            (gamma 0.05), the daemons' built-in mlp
#   ddp:                     PyTorch DDP, gloo all-reduce of fp32 gradients (bench/ddp_gloo.py), one
#                            process per host
# Opt-in methods train the CNN of examples/pytorch (cnn.py, 114,314 parameters) on iid shards (cnn.py's
# split, seed 0), minibatch 32 per host, SGD step 0.05 momentum 0.9, no l2 (train_cnn.py's defaults):
#   cnn_deepsqueeze: gossipd on a ring with trainer.enable (model mode), DeepSqueeze top-1% (eta 0.02); in
#                    each host examples/pytorch/train_cnn.py beside its daemon takes the SGD steps and
#                    reports its accuracy to the daemon (status.json)
#   cnn_ddp:         PyTorch DDP of the same CNN (bench/ddp_gloo.py --model cnn), one process per host
# A run ends when the mean test accuracy of the 8 nodes' own models (each node evaluates every EVAL rounds
# on the first TEST_MAX test images; DDP's one model on the same images) reaches TARGET, or after MAX_S s.
# Time is from the moment all 8 train (data loading excluded: the daemons train, and for cnn_deepsqueeze
# every trainer is attached and has its data); bytes are what the 8 hosts' interfaces sent in that time
# (kernel counters: headers, acks and retransmits included).
#
#   sudo bench/bandwidth_tta.sh build/release/daemon/gossipd docs/results/bandwidth_tta.json [method...]
#   sudo bench/bandwidth_tta.sh build/release/daemon/gossipd docs/results/cnn_tta.json cnn_deepsqueeze cnn_ddp
#
# methods: dpsgd deepsqueeze choco ddp cnn_deepsqueeze cnn_ddp (default: dpsgd deepsqueeze choco ddp).
# Environment: RATE (100mbit) TARGET (0.80) MAX_S (400) EVAL (50) TEST_MAX (1000). The 8 hosts share this
# machine's cores: the compute part of a round is that of 8 processes on 2 cores, the same for every method
# of one model.
set -euo pipefail
GOSSIPD=$(realpath "$1")
OUT=$2
shift 2
METHODS=("$@")
[ ${#METHODS[@]} -gt 0 ] || METHODS=(dpsgd deepsqueeze choco ddp)
HERE=$(cd "$(dirname "$0")" && pwd)
TRAIN_CNN=$(realpath "$HERE/../examples/pytorch/train_cnn.py")
MLP="mlp 784-128-10"
CNN="cnn examples/pytorch/cnn.py"
source "$HERE/../tests/netns/netns_lib.sh"
netns_require
RATE=${RATE:-100mbit}
TARGET=${TARGET:-0.80}
MAX_S=${MAX_S:-400}
EVAL=${EVAL:-50}
TEST_MAX=${TEST_MAX:-1000}
N=8
WORK=$(mktemp -d /tmp/gossipd-bw.XXXXXX)
PIDS=()
stop_all() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  # A killed daemon leaves its trainer's shared memory behind: /dev/shm/gossipd-UID-NODE-PID-SERIAL.
  for p in "${PIDS[@]}"; do rm -f /dev/shm/gossipd-"$(id -u)"-*-"$p"-*; done
  PIDS=()
}
trap 'stop_all; netns_cleanup; rm -rf "$WORK"' EXIT
DATA=/usr/share/datasets/fashion-mnist
[ -f $DATA/train-images-idx3-ubyte.gz ] || { echo "bandwidth_tta: $DATA missing (Debian dataset-fashion-mnist)" >&2; exit 2; }

tx_total() {  # bytes sent by the 8 hosts' eth0 so far
  local i s=0
  for ((i = 0; i < N; i++)); do s=$((s + $(ip netns exec "$(netns_name $i)" cat /sys/class/net/eth0/statistics/tx_bytes))); done
  echo $s
}

# The state of a gossipd run in one line: "<training nodes> <mean round> <nodes evaluated> <mean accuracy>".
# With a third argument "trainer", a node trains once its daemon does, its trainer is attached and the
# trainer has its data (train_cnn.py loads its shard and the test images after attaching, then prints
# "node I/N: ... training images"; the daemons' rounds wait for it).
cat >"$WORK/poll.py" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
trainer = len(sys.argv) > 3 and sys.argv[3] == "trainer"
sts = []
for i in range(n):
    try:
        sts.append(json.load(open(f"{work}/node-{i}/status.json")))
    except (OSError, ValueError):
        sts.append({})

def loaded(i):
    try:
        return " training images" in open(f"{work}/node-{i}/trainer.log").read()
    except OSError:
        return False

training = sum(s.get("state") == "training" and (not trainer or (s.get("trainer") == "attached" and loaded(i)))
               for i, s in enumerate(sts))
rounds = [s.get("round", 0) for s in sts]
acc = [s["accuracy"] for s in sts if s.get("accuracy") is not None]
print(training, sum(rounds) // n, len(acc), (sum(acc) / len(acc)) if acc else 0.0)
PY

start_daemons() {  # SETS...: the 8 daemons of a gossipd run on a ring, in $WORK/run/node-I
  local sets=(algorithm.rounds=100000000 cluster.nodes=$N cluster.topology=ring monitor.status_every_ms=200
              node.checkpoint_every=0 "$@")
  local args=() s i
  for s in "${sets[@]}"; do args+=(--set "$s"); done
  rm -rf "$WORK/run"; mkdir -p "$WORK/run"
  for ((i = 0; i < N; i++)); do
    mkdir -p "$WORK/run/node-$i"
    ip netns exec "$(netns_name $i)" "$GOSSIPD" run "${args[@]}" --set node.id=$i --set node.data_dir="$WORK/run/node-$i" \
      --set node.listen="tcp://$(netns_ip $i):7000" --set "cluster.seeds=[\"tcp://$(netns_ip 0):7000\"]" \
      >"$WORK/run/node-$i/log" 2>&1 &
    PIDS+=($!)
  done
}

start_trainers() {  # train_cnn.py beside each daemon (its ipc socket is a file in the daemon's data dir)
  local i
  for ((i = 0; i < N; i++)); do
    ip netns exec "$(netns_name $i)" /usr/bin/python3 "$TRAIN_CNN" --data-dir "$WORK/run/node-$i" --dataset "$DATA" \
      --eval-every $EVAL --eval-max $TEST_MAX --log-every 0 >"$WORK/run/node-$i/trainer.log" 2>&1 &
    PIDS+=($!)
  done
}

measure() {  # NAME MODEL [trainer]: wait until all 8 train, then poll status.json to TARGET or MAX_S; record
  local name=$1 model=$2 mode=${3:-} line p end=$((SECONDS + 120))
  [ -z "$mode" ] || end=$((SECONDS + 240))  # 8 trainers start python and torch and load their data on 2 cores
  until line=$(/usr/bin/python3 "$WORK/poll.py" "$WORK/run" $N $mode) && [ "${line%% *}" = $N ]; do
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || { end=0; break; }; done
    [ $SECONDS -lt $end ] || { tail -n 5 "$WORK"/run/node-*/*log >&2
      echo "bandwidth_tta: $name: the 8 nodes did not all start training${mode:+ with their trainers}$( [ $end = 0 ] && echo " (a process exited)")" >&2; exit 1; }
    sleep 0.2
  done
  local t0 b0 now acc rnd nacc
  t0=$(date +%s%3N); b0=$(tx_total)
  while :; do
    read -r _ rnd nacc acc < <(/usr/bin/python3 "$WORK/poll.py" "$WORK/run" $N)
    now=$(date +%s%3N)
    if [ "$nacc" = $N ] && awk -v a="$acc" -v t="$TARGET" 'BEGIN { exit !(a >= t) }'; then
      record "$name" "$(( now - t0 ))" "$(( $(tx_total) - b0 ))" "$rnd" "$acc" true "$model"; break
    fi
    if [ $(( now - t0 )) -gt $((MAX_S * 1000)) ]; then
      record "$name" "$(( now - t0 ))" "$(( $(tx_total) - b0 ))" "$rnd" "$acc" false "$model"; break
    fi
    sleep 0.5
  done
  stop_all
}

run_gossipd() {  # NAME SETS...: the daemons' built-in mlp
  local name=$1; shift
  start_daemons data.format=idx "data.train=$DATA/train-images-idx3-ubyte.gz" "data.test=$DATA/t10k-images-idx3-ubyte.gz" \
    data.partition=iid model.kind=mlp "model.hidden=[128]" model.l2=0.0001 algorithm.lr=0.05 algorithm.estimator=sgd \
    algorithm.batch=32 monitor.eval_every=$EVAL monitor.eval_test_max=$TEST_MAX "$@"
  measure "$name" "$MLP"
}

run_trainer() {  # NAME SETS...: the daemons serve train_cnn.py trainers (model mode), which report accuracy
  local name=$1; shift
  start_daemons trainer.enable=true "$@"
  start_trainers
  measure "$name" "$CNN" trainer
}

run_ddp() {  # NAME MODEL DDP_ARGS...
  local name=$1 model=$2 i
  shift 2
  rm -rf "$WORK/run"; mkdir -p "$WORK/run"
  for ((i = 0; i < N; i++)); do
    ip netns exec "$(netns_name $i)" /usr/bin/python3 "$HERE/ddp_gloo.py" --rank $i --world-size $N \
      --master "$(netns_ip 0):29500" --iface eth0 --steps 100000000 --eval-every $EVAL --test-max $TEST_MAX \
      --target-accuracy "$TARGET" --partition iid --data "$DATA" "$@" --out "$WORK/run/ddp.json" >"$WORK/run/ddp-$i.log" 2>&1 &
    PIDS+=($!)
  done
  # rank 0 stops all ranks at the target (or the step limit); MAX_S bounds the wait.
  local end=$((SECONDS + MAX_S + 120))
  while [ ! -s "$WORK/run/ddp.json" ]; do
    # rank 0 writes the file and then exits: gone without it, it failed
    kill -0 "${PIDS[0]}" 2>/dev/null || [ -s "$WORK/run/ddp.json" ] || end=0
    [ $SECONDS -lt $end ] || { tail -n 5 "$WORK"/run/ddp-*.log >&2; echo "bandwidth_tta: $name did not finish" >&2; exit 1; }
    sleep 1
  done
  stop_all
  /usr/bin/python3 - "$WORK/run/ddp.json" "$name" "$model" >>"$WORK/rows.jsonl" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
b = j["bytes"]
reached = j.get("time_to_target_seconds") is not None
# Every rank's own interface counter from the start barrier to the stop (the stop follows the evaluation
# that reached the target), summed: what the 8 hosts sent, as for the gossipd runs.
sent = sum(r["tx"] for r in b["measured_per_rank"])
print(json.dumps({"method": sys.argv[2], "model": sys.argv[3], "seconds": j["time_to_target_seconds"] if reached else j["total_seconds"],
                  "reached": reached, "rounds": j["steps_to_target"] if reached else j["steps"],
                  "accuracy": j["final_accuracy"], "bytes_sent": sent,
                  "bytes_estimated_ring": b["estimated_per_step"] * 8 * (j["steps_to_target"] or j["steps"])}))
PY
  /usr/bin/python3 - "$(tail -n 1 "$WORK/rows.jsonl")" "$TARGET" >&2 <<'PY'
import json, sys
r = json.loads(sys.argv[1])
got = f"reached {sys.argv[2]}" if r["reached"] else f"NOT reached ({r['accuracy']})"
print(f"== {r['method']}: {got} in {r['seconds']} s, step {r['rounds']}, {r['bytes_sent'] // 1000000} MB sent")
PY
}

record() {  # NAME MS BYTES ROUND ACC REACHED MODEL
  printf '{"method": "%s", "model": "%s", "seconds": %s, "bytes_sent": %s, "rounds": %s, "accuracy": %s, "reached": %s}\n' \
    "$1" "$7" "$(awk -v m="$2" 'BEGIN { print m / 1000 }')" "$3" "$4" "$5" "$6" >>"$WORK/rows.jsonl"
  echo "== $1: $( [ "$6" = true ] && echo "reached $TARGET" || echo "NOT reached ($5)" ) in $(awk -v m="$2" 'BEGIN { print m / 1000 }') s, round $4, $(( $3 / 1000000 )) MB sent" >&2
}

netns_setup $N
netns_cap "$RATE"
: >"$WORK/rows.jsonl"
for m in "${METHODS[@]}"; do
  echo "== $m" >&2
  case $m in
    dpsgd) run_gossipd dpsgd algorithm.name=dpsgd compressor.name=fp32 ;;
    deepsqueeze) run_gossipd deepsqueeze algorithm.name=deepsqueeze algorithm.eta=0.02 compressor.name=topk compressor.ratio=0.01 ;;
    choco) run_gossipd choco algorithm.name=choco algorithm.gamma=0.05 compressor.name=topk compressor.ratio=0.01 ;;
    ddp) run_ddp ddp "$MLP" ;;
    cnn_deepsqueeze) run_trainer cnn_deepsqueeze algorithm.name=deepsqueeze algorithm.eta=0.02 compressor.name=topk compressor.ratio=0.01 ;;
    cnn_ddp) run_ddp cnn_ddp "$CNN" --model cnn ;;
    *) echo "bandwidth_tta: unknown method '$m' (dpsgd deepsqueeze choco ddp cnn_deepsqueeze cnn_ddp)" >&2; exit 2 ;;
  esac
done
/usr/bin/python3 - "$WORK/rows.jsonl" "$OUT" "$RATE" "$TARGET" "$EVAL" "$TEST_MAX" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
# The runs' models in order (each row names its own): "mlp 784-128-10" for the default methods.
models = list(dict.fromkeys(r["model"] for r in rows))
json.dump({"rate": sys.argv[3], "target_accuracy": float(sys.argv[4]), "eval_every": int(sys.argv[5]),
           "test_max": int(sys.argv[6]), "hosts": 8, "model": ", ".join(models), "partition": "iid", "runs": rows},
          open(sys.argv[2], "w"), indent=1)
PY
echo "wrote $OUT" >&2
