#!/usr/bin/env bash
# The PyTorch bridge's CNN (examples/pytorch) over 8 local daemons against the same CNN with torch DDP (gloo):
# same model, initial weights, iid shards, batch 32 per node, SGD lr 0.05 momentum 0.9, same number of steps.
# The 8 trainers (or DDP's 8 processes) share this machine's cores, so wall time is not compared here
# (bench/ for that); accuracy and bytes are. Writes docs/results/pytorch_cnn_*.json.
#   [ROUNDS=2000 ETA=0.02 RATIO=0.01 FINAL=50 LRS=--cosine TAG=_x] scripts/pytorch_cnn.sh [GOSSIPD] [OUTDIR] [run...]
#   TAG is appended to each output name (pytorch_cnn_deepsqueeze_x.json), so that a variant does not
#   overwrite the default runs' files.
#   runs: ddp deepsqueeze deepsqueeze_fc dpsgd (default all)
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
GOSSIPD=$(realpath "${1:-$HERE/build/release/daemon/gossipd}")
OUT=$(realpath "${2:-$HERE/docs/results}")
shift $(( $# > 2 ? 2 : $# ))
RUNS=("$@")
[ ${#RUNS[@]} -gt 0 ] || RUNS=(ddp deepsqueeze deepsqueeze_fc dpsgd)
ROUNDS=${ROUNDS:-2000}
EVAL=${EVAL:-250}
ETA=${ETA:-0.02}      # DeepSqueeze's consensus step
RATIO=${RATIO:-0.01}  # DeepSqueeze's top-k fraction
FINAL=${FINAL:-50}    # deepsqueeze_fc: final fp32 consensus rounds
LRS=${LRS:-}          # --cosine: every run (DDP and trainers) decays its lr to 0 over the run
TAG=${TAG:-}          # suffix of the output files' names
WORK=$(mktemp -d /tmp/gossipd-cnn.XXXXXX)
trap '[ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"' EXIT
PY=/usr/bin/python3
EX=$HERE/examples/pytorch

gossip() {  # gossip NAME SETS...: 8 daemons + 8 train_cnn.py trainers, then the summary
  local name=$1; shift
  echo "== gossipd $name: $*"
  "$GOSSIPD" cluster --nodes 8 --dir "$WORK/$name" --http-port 0 --set algorithm.rounds=$ROUNDS \
    --set monitor.status_every_ms=200 "$@" \
    --trainer "$PY $EX/train_cnn.py --eval-every $EVAL --eval-max 2000 --log-every 0 $LRS --log-json \"\$GOSSIPD_DATA_DIR/evals.json\" --save \"\$GOSSIPD_DATA_DIR/final.npy\"" \
    | tail -n 12
  $PY "$EX/summarize.py" "$WORK/$name" --label "$name: $*" --out "$OUT/pytorch_cnn_$name$TAG.json"
}

for run in "${RUNS[@]}"; do
  case $run in
    ddp) echo "== torch DDP"
         $PY "$EX/ddp_baseline.py" --nodes 8 --steps $ROUNDS --eval-every $EVAL --eval-max 0 $LRS --out "$OUT/pytorch_cnn_ddp$TAG.json" | tail -n 3 ;;
    deepsqueeze) gossip deepsqueeze --set algorithm.name=deepsqueeze --set compressor.name=topk --set compressor.ratio=$RATIO --set algorithm.eta=$ETA ;;
    deepsqueeze_fc) gossip deepsqueeze_fc --set algorithm.name=deepsqueeze --set compressor.name=topk --set compressor.ratio=$RATIO --set algorithm.eta=$ETA --set algorithm.final_consensus_rounds=$FINAL ;;
    dpsgd) gossip dpsgd --set algorithm.name=dpsgd --set compressor.name=fp32 ;;
    *) echo "unknown run '$run' (ddp deepsqueeze deepsqueeze_fc dpsgd)" >&2; exit 2 ;;
  esac
done
