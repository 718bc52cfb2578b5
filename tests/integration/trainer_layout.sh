#!/usr/bin/env bash
# A torch module through the trainer bridge (docs/trainer.md, "Layout"), on real daemons: its frozen layer
# is neither sent nor changed (DeepSqueeze with top-k moved one by 140% of its norm when every parameter was
# mixed); the bound tensors' names, shapes and offsets are written to model_layout.json beside model.npy; a
# node whose trainer bound another module of the same size is refused at join with the first tensor that
# differs; a trainer attaching another module to a running node gets layout_mismatch and the node's own
# trainer goes on. The trainers wait for a go file after binding, so the checks that need a running node
# (the intruding attach takes a torch import, seconds on a loaded machine) do not race the run's end.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
/usr/bin/python3 -c "import torch" 2>/dev/null || fail "python3-torch is missing (make deps installs it)"
TRAINER=(/usr/bin/python3 "$(cd "$(dirname "$0")" && pwd)/trainer_module.py")
ROUNDS=1500
args=(--set trainer.enable=true --set trainer.mode=model --set algorithm.name=deepsqueeze --set compressor.name=topk
      --set compressor.ratio=0.3 --set algorithm.eta=0.5 --set cluster.nodes=2 --set cluster.topology=ring
      --set algorithm.rounds=$ROUNDS --set monitor.status_every_ms=100 --set node.checkpoint_every=200
      --set trainer.idle_timeout_ms=300000)  # the trainers wait idle for the go file meanwhile
json_field() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$1" "$2"; }
start_trainer() {  # start_trainer DATA_DIR OUT ARGS...: sets TRAINER_PID
  "${TRAINER[@]}" "$1" "$2" "${@:3}" >>"$1/trainer.log" 2>&1 &
  TRAINER_PID=$!
  PIDS+=($!)
}

start_node 0 "" "${args[@]}"
wait_for 20 "node 0 to bind its trainer socket" test -S "$WORK/node-0/trainer.sock"
GO="$WORK/go"
start_trainer "$WORK/node-0" "$WORK/out0.json" --go "$GO"
T0=$TRAINER_PID
wait_for 60 "node 0 to write model_layout.json (its trainer's init)" test -s "$WORK/node-0/model_layout.json"
/usr/bin/python3 - "$WORK/node-0/model_layout.json" <<'PY' || fail "model_layout.json: $(cat "$WORK/node-0/model_layout.json")"
import json, sys
j = json.load(open(sys.argv[1]))
names = [t["name"] for t in j["tensors"]]
# embed.* is frozen: not bound; the BatchNorm's float buffers follow the parameters, num_batches_tracked stays
assert names == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "bn.weight", "bn.bias", "bn.running_mean",
                 "bn.running_var"], names
assert [t["offset"] for t in j["tensors"]] == [0, 48, 54, 72, 75, 81, 87, 93] and j["dim"] == 99, j
PY
echo "ok: model_layout.json names the 6 trainable tensors and 2 BatchNorm buffers (the frozen embed.* left out)"

# A node whose trainer bound the swapped module (same 99 values, fc2 before fc1) is refused at join.
seed=$(endpoint_of 0)
mkdir -p "$WORK/other"
"$GOSSIPD" run "${args[@]}" --set node.id=1 --set node.data_dir="$WORK/other" --set node.listen=tcp://127.0.0.1:0 \
  --set "cluster.seeds=[\"$seed\"]" >"$WORK/other/log" 2>&1 &
OTHER=$!
PIDS+=($OTHER)
wait_for 20 "the other node to bind its trainer socket" test -S "$WORK/other/trainer.sock"
start_trainer "$WORK/other" "$WORK/other.json" --order swapped
wait_for 60 "the node with the swapped module to exit" exited $OTHER
rc=0
wait $OTHER || rc=$?
[ "$rc" = 3 ] || fail "the node with the swapped module exited with code $rc, expected 3 (refused): $(tail -n 3 "$WORK/other/log")"
want='model.layout: tensor 0 is "fc2.weight" [3, 6] float32 here, "fc1.weight" [6, 8] float32 there'
grep -qF "$want" "$WORK/other/log" || fail "the refusal does not name the first tensor: $(tail -n 1 "$WORK/other/log")"
kill -9 $TRAINER_PID 2>/dev/null || true
wait $TRAINER_PID 2>/dev/null || true
echo "ok: refused at join: $(tail -n 1 "$WORK/other/log" | sed 's/.*cluster differs: //')"

# Node 1 with the same module joins, and the two train.
start_node 1 "$seed" "${args[@]}"
wait_for 20 "node 1 to bind its trainer socket" test -S "$WORK/node-1/trainer.sock"
start_trainer "$WORK/node-1" "$WORK/out1.json" --go "$GO"
T1=$TRAINER_PID
trainer_is() { [ "$(status_field "$1" trainer)" = "$2" ]; }
for i in 0 1; do wait_for 60 "node $i's trainer to attach" trainer_is $i attached; done

# Another module attached to the running node 0: layout_mismatch; node 0's own trainer stays attached.
"${TRAINER[@]}" "$WORK/node-0" "$WORK/intruder.json" --order swapped --once >"$WORK/intruder.log" 2>&1 ||
  fail "the intruding trainer failed: $(tail -n 3 "$WORK/intruder.log")"
[ "$(json_field "$WORK/intruder.json" attach_error_code)" = layout_mismatch ] ||
  fail "the intruder's attach: $(cat "$WORK/intruder.json")"
json_field "$WORK/intruder.json" attach_error |
  grep -qF 'tensor 0 is "fc1.weight" [6, 8] float32 in the daemon'"'"'s model, "fc2.weight" [3, 6] float32 in the trainer'"'"'s' ||
  fail "the intruder's error does not name the tensor: $(json_field "$WORK/intruder.json" attach_error)"
trainer_is 0 attached || fail "node 0's trainer is $(status_field 0 trainer) after the refused attach"
touch "$GO"
at_least() { local r; r=$(status_field "$1" round) && [ "$r" -ge "$2" ]; }
wait_for 60 "node 0 to train with its own trainer after the refused attach" at_least 0 20
echo "ok: another module's attach refused: $(json_field "$WORK/intruder.json" attach_error | sed 's/^gossipd daemon: //')"

wait_exit 0 180
wait_exit 1 60
for t in $T0 $T1; do wait_for 30 "trainer $t to finish" exited $t; done
for i in 0 1; do
  out="$WORK/out$i.json"
  test -s "$out" || fail "trainer $i wrote no result: $(tail -n 3 "$WORK/node-$i/trainer.log")"
  [ "$(json_field "$out" rounds)" = $ROUNDS ] || fail "trainer $i ended at round $(json_field "$out" rounds)"
  [ "$(json_field "$out" frozen_identical)" = True ] || fail "node $i's frozen layer changed"
  /usr/bin/python3 -c "import numpy as np,sys; assert np.load(sys.argv[1]).shape == (99,)" "$WORK/node-$i/model.npy" ||
    fail "node $i's model.npy is not the 99 values model_layout.json indexes"
  /usr/bin/python3 -c "import torch,sys; s = torch.load(sys.argv[1])['state']; assert len(s) == 6 and all('momentum_buffer' in v for v in s.values()), s.keys()" \
    "$WORK/node-$i/trainer_optimizer.pt" || fail "node $i's trainer_optimizer.pt does not hold the momentum of its 6 tensors"
  # gossipd.load puts the node's model.npy into a fresh module by name: it equals the trainer's final module.
  /usr/bin/python3 - "$WORK/node-$i" "$WORK/out$i.pt" "$(dirname "$0")" <<'PY' || fail "gossipd.load of node $i's model"
import sys, torch
sys.path.insert(0, sys.argv[3])
import trainer_module, gossipd
fresh, final = trainer_module.make(), torch.load(sys.argv[2])
loaded = gossipd.load(fresh, sys.argv[1])
assert loaded == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "bn.weight", "bn.bias", "bn.running_mean",
                  "bn.running_var"], loaded
for name, t in fresh.state_dict().items():
    if name != "bn.num_batches_tracked":  # local: counted by the trainer, not in model.npy
        assert torch.equal(t, final[name]), (name, t, final[name])
PY
done
# The BatchNorm running means were mixed: node 1's inputs are shifted by 2, so alone the two nodes' running
# means would be as far apart as the means of their BatchNorm inputs (a ratio of ~1); mixed they are pulled
# together every round while each forward pass pulls 10% back towards the node's own mean (0.33 here, with
# DeepSqueeze top-30%; D-PSGD fp32 on two nodes would make them equal after each mix).
/usr/bin/python3 - "$WORK/out0.json" "$WORK/out1.json" <<'PY' || fail "the BatchNorm statistics were not mixed"
import json, sys, numpy as np
a, b = (json.load(open(p)) for p in sys.argv[1:3])
apart = np.linalg.norm(np.subtract(a["bn_input_mean"], b["bn_input_mean"]))
mixed = np.linalg.norm(np.subtract(a["running_mean"], b["running_mean"]))
print(f"ok: the running means are {mixed:.4f} apart, the nodes' own input means {apart:.4f}")
assert mixed < 0.5 * apart, (mixed, apart)
PY
echo "ok: $ROUNDS rounds; both frozen layers bit-identical; the optimizers' momentum saved beside the checkpoints; gossipd.load gives each node's final module"

# A bfloat16 module (docs/trainer.md, "bfloat16 models"): two nodes under `gossipd cluster`, D-PSGD fp32, so
# after each mix both hold the average; the shared memory holds bfloat16, the state float32.
BF="$WORK/bf16"
timeout 120 "$GOSSIPD" cluster --nodes 2 --dir "$BF" --http-port 0 --set trainer.enable=true --set algorithm.name=dpsgd \
  --set compressor.name=fp32 --set algorithm.rounds=300 \
  --trainer "${TRAINER[*]} \$GOSSIPD_DATA_DIR \$GOSSIPD_DATA_DIR/out.json --dtype bfloat16" >"$BF.log" 2>&1 ||
  fail "the bfloat16 cluster failed: $(tail -n 5 "$BF.log")"
/usr/bin/python3 - "$BF" "$(dirname "$0")" <<'PY' || fail "the bfloat16 cluster's results: $(cat "$BF"/node-*/out.json)"
import json, sys, torch
sys.path.insert(0, sys.argv[2])
import trainer_module, gossipd
out = [json.load(open(f"{sys.argv[1]}/node-{i}/out.json")) for i in (0, 1)]
assert all(o["rounds"] == 300 and o["frozen_identical"] for o in out), out
assert out[0]["running_mean"] == out[1]["running_mean"], out  # D-PSGD on two nodes: equal after each mix
layout = json.load(open(f"{sys.argv[1]}/node-0/model_layout.json"))
assert {t["dtype"] for t in layout["tensors"]} == {"bfloat16"}, layout
m = trainer_module.make().to(torch.bfloat16)
gossipd.load(m, f"{sys.argv[1]}/node-0")
final = torch.load(f"{sys.argv[1]}/node-0/out.pt")
assert all(torch.equal(v, final[k]) for k, v in m.state_dict().items() if k != "bn.num_batches_tracked")
PY
echo "ok: a bfloat16 module on two nodes: 300 rounds, equal running means, gossipd.load gives its final module"
