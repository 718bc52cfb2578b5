#!/usr/bin/env bash
# BatchNorm statistics under label skew (issue 29, docs/trainer.md "Buffers"): the CNN of examples/pytorch
# with a BatchNorm2d after each convolution, 8 local daemons on a ring, D-PSGD fp32 in model mode, each
# node's shard drawn by Dirichlet(ALPHA) per class (few classes per node). Two runs that differ only in the
# buffers: mixed with the parameters (the default) and kept local (--local-buffers, as before). Each node's
# final module (its weights and its running statistics, saved by its trainer) is evaluated afterwards on all
# 10,000 test images, in eval mode, and also with its weights and the 8 nodes' averaged statistics. Prints
# and writes docs/results/batchnorm_skew.json: worst / mean / best node per run.
#   [ROUNDS=1000 ALPHA=0.1] scripts/batchnorm_skew.sh [GOSSIPD] [OUT.json]
set -euo pipefail
HERE=$(cd "$(dirname "$0")/.." && pwd)
GOSSIPD=$(realpath "${1:-$HERE/build/release/daemon/gossipd}")
OUT=${2:-$HERE/docs/results/batchnorm_skew.json}
ROUNDS=${ROUNDS:-1000}
ALPHA=${ALPHA:-0.1}
WORK=$(mktemp -d /tmp/gossipd-bn.XXXXXX)
trap '[ -n "${KEEP_WORK:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"' EXIT
PY=/usr/bin/python3
EX=$HERE/examples/pytorch

run() {  # run NAME TRAINER_ARGS...
  local name=$1; shift
  echo "== $name: $*"
  "$GOSSIPD" cluster --nodes 8 --dir "$WORK/$name" --http-port 0 --set algorithm.rounds=$ROUNDS \
    --set algorithm.name=dpsgd --set compressor.name=fp32 --set monitor.status_every_ms=500 \
    --trainer "$PY $EX/train_cnn.py --batchnorm --dirichlet $ALPHA --eval-every 0 --eval-max 100 --log-every 0 $* --save-state \"\$GOSSIPD_DATA_DIR/final.pt\"" \
    | tail -n 3
}
run mixed
run local --local-buffers
$PY - "$WORK" "$OUT" "$ROUNDS" "$ALPHA" "$EX" <<'PY'
import glob, json, os, sys
import torch
work, out, rounds, alpha, ex = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
sys.path.insert(0, ex)
import cnn
cnn.single_thread()
x, y = cnn.load_split(cnn.DEFAULT_DATA, "test")
res = {"rounds": rounds, "dirichlet_alpha": alpha, "nodes": 8, "algorithm": "dpsgd fp32", "test_images": len(x), "runs": {}}
STATS = ("running_mean", "running_var")
for name in ("mixed", "local"):
    states = [torch.load(p) for p in sorted(glob.glob(os.path.join(work, name, "node-*", "final.pt")))]
    assert len(states) == 8, (name, len(states))
    avg = {k: sum(s[k] for s in states) / 8 for k in states[0] if k.endswith(STATS)}
    own, averaged = [], []
    for s in states:
        m = cnn.make_model(0, batchnorm=True)
        m.load_state_dict(s)
        own.append(cnn.evaluate(m, x, y)[0])
        m.load_state_dict({**s, **avg})  # the node's weights with the 8 nodes' mean statistics
        averaged.append(cnn.evaluate(m, x, y)[0])
    row = {"own_statistics": own, "averaged_statistics": averaged}
    for k, v in list(row.items()):
        row[k + "_worst_mean_best"] = [min(v), sum(v) / len(v), max(v)]
    res["runs"][name] = row
    print(f"{name:6s} buffers: own statistics worst/mean/best {min(own):.2%} / {sum(own) / 8:.2%} / {max(own):.2%};"
          f" with averaged statistics {min(averaged):.2%} / {sum(averaged) / 8:.2%} / {max(averaged):.2%}")
json.dump(res, open(out, "w"), indent=1)
PY
