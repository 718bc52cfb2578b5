#!/usr/bin/env bash
# gossipd cluster: N supervised local nodes. A short run ends with every node done and exit 0; a long run
# stopped with SIGINT (Ctrl-C) stops every child cleanly (checkpoint, leave) and leaves no process behind;
# a node killed under the supervisor is reported by id and started again; bad arguments (and a --set of a
# key the supervisor sets itself) are one line and exit 2.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
common=(--set data.format=synthetic --set model.kind=logistic --set model.l2=0.01 --set algorithm.name=choco
        --set compressor.name=topk --set compressor.ratio=0.2 --set algorithm.gamma=0.4 --set monitor.eval_every=0)

# 1. A short run: all done, summary printed, exit 0. Its --http-port is held by another process: node 0
# serves on another port and the supervisor says so.
python3 -c 'import socket, time; s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(120)' >"$WORK/held" &
PIDS+=($!)
wait_for 10 "a helper to hold a port" test -s "$WORK/held"
HELD=$(cat "$WORK/held")
rc=0
"$GOSSIPD" cluster --nodes 4 --dir "$WORK/short" --http-port "$HELD" "${common[@]}" --set algorithm.rounds=200 >"$WORK/short.out" 2>&1 || rc=$?
[ "$rc" = 0 ] || fail "short cluster run exited $rc: $(tail -3 "$WORK/short.out")"
[ "$(grep -c ' done ' "$WORK/short.out")" = 4 ] || fail "expected 4 nodes done in the summary: $(cat "$WORK/short.out")"
for i in 0 1 2 3; do test -s "$WORK/short/node-$i/model.npy" || fail "node $i wrote no model"; done
# The time spent in the algorithm is counted apart (bench/daemon_round.sh subtracts it): above zero, below
# the node's whole life.
for i in 0 1 2 3; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not 0 < d['compute_seconds'] < d['seconds'])" \
    "$WORK/short/node-$i/status.json" || fail "node $i: compute_seconds not in (0, seconds): $(cat "$WORK/short/node-$i/status.json")"
done
grep -q "port $HELD is taken; node 0 serves HTTP on another port" "$WORK/short.out" || fail "no note that --http-port $HELD was taken: $(head -3 "$WORK/short.out")"
echo "ok: 4-node cluster ran 200 rounds, all done, exit 0 (--http-port taken: another port)"

# 2. A long run: kill -9 one child (reported), then SIGINT: the others stop cleanly, nothing is left behind.
"$GOSSIPD" cluster --nodes 4 --dir "$WORK/long" --http-port 0 "${common[@]}" --set algorithm.rounds=100000000 >"$WORK/long.out" 2>&1 &
CL=$!
PIDS+=($CL)
for i in 0 1 2 3; do wait_for 30 "node $i of the long run to train" grep -q '"state":"training"' "$WORK/long/node-$i/status.json"; done
# The dashboard URL is printed, and node 0 serves the dashboard there.
wait_for 10 "the supervisor to print the dashboard URL" grep -q "^dashboard: http://127.0.0.1:$(cat "$WORK/long/node-0/http_port")/ " "$WORK/long.out"
curl -sf "http://127.0.0.1:$(cat "$WORK/long/node-0/http_port")/" | grep -qi '<html' || fail "no dashboard page at the printed URL"
echo "ok: the dashboard URL is printed and serves the page"
children() { pgrep -P "$CL" || true; }
vpid=$(for p in $(children); do if grep -q "node.id=2" /proc/$p/cmdline 2>/dev/null; then echo $p; fi; done | head -1)
[ -n "$vpid" ] || fail "could not find node 2's process"
kill -9 "$vpid"
wait_for 10 "the supervisor to report node 2 and start it again" grep -q "node 2 killed by signal 9: starting it again" "$WORK/long.out"
# Supervised: node 2 comes back from its data directory as a new incarnation and trains with the others.
restarted() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d['incarnation'] >= 1 and d['state'] == 'training' and d['alive'] == 4))" "$WORK/long/node-2/status.json"; }
wait_for 60 "node 2 to train again as a later incarnation with all 4 alive" restarted
# The progress line counts the running nodes' views only (a killed node's stale status.json said everyone
# was alive).
all_alive_shown() { [ "$(sed -n '/node 2 killed by signal 9: starting it again/,$p' "$WORK/long.out" | grep -o 'alive [0-9]*/4' | tail -n 1)" = "alive 4/4" ]; }
wait_for 20 "a progress line with 4 of 4 alive after the restart" all_alive_shown
kids=$(children)
kill -INT "$CL"
wait_for 30 "the cluster to stop after SIGINT" exited "$CL"
rc=0; wait "$CL" || rc=$?
[ "$rc" = 0 ] || fail "a cluster whose killed node was restarted and then stopped cleanly should exit 0, got $rc"
for p in $kids; do exited "$p" || fail "child $p still running after the cluster stopped"; done
[ "$(grep -c ' stopped ' "$WORK/long.out")" = 4 ] || fail "expected 4 nodes stopped: $(tail -8 "$WORK/long.out")"
echo "ok: kill -9 of a child reported and the child started again, SIGINT stopped all 4 cleanly, no process left"

# 2b. The same command again resumes every node from its own checkpoint: none takes a neighbour's model
# (issue 28: after a Ctrl-C, 7 of 8 nodes replaced their checkpointed model with a neighbour's).
for i in 0 1 2 3; do : >"$WORK/long/node-$i/log"; done  # this run's lines only
"$GOSSIPD" cluster --nodes 4 --dir "$WORK/long" --http-port 0 "${common[@]}" --set algorithm.rounds=100000000 >"$WORK/resume.out" 2>&1 &
CL=$!
PIDS+=($CL)
trains_on() { grep -q "training from round" "$WORK/long/node-$1/log"; }
for i in 0 1 2 3; do
  wait_for 30 "node $i to resume from its checkpoint" grep -q "resumed at round" "$WORK/long/node-$i/log"
  wait_for 30 "node $i to train again after resuming" trains_on $i
done
for i in 0 1 2 3; do
  if grep -q "state transfer done" "$WORK/long/node-$i/log"; then fail "node $i took a neighbour's model on a whole-cluster resume: $(grep 'state transfer done' "$WORK/long/node-$i/log")"; fi
done
kill -INT "$CL"
wait_for 30 "the resumed cluster to stop after SIGINT" exited "$CL"
rc=0; wait "$CL" || rc=$?
[ "$rc" = 0 ] || fail "the resumed cluster exited $rc"
echo "ok: a whole-cluster resume keeps every node's own checkpoint"

# 3. Bad arguments: one line, exit 2, no child started.
for bad in "--nodes 0" "--nodes x" "--nodes 4 --set algorithm.name=nope" "--frobnicate" "--nodes 2 --http-port 70000" \
           "--nodes 2 --set node.id=3" "--nodes 2 --set node.data_dir=/tmp/x"; do
  rc=0; out=$("$GOSSIPD" cluster $bad --dir "$WORK/bad" 2>&1) || rc=$?
  [ "$rc" = 2 ] || fail "cluster $bad: expected exit 2, got $rc ($out)"
  [ "$(echo "$out" | wc -l)" = 1 ] || fail "cluster $bad: expected one line, got: $out"
done
echo "ok: bad arguments give one line and exit 2"

# 4. --trainer: a trainer beside each node (tests/integration/trainer_quadratic.py, node i pulls toward i),
# with the node's environment; the cluster ends when daemons and trainers have; a trainer that fails is
# reported and makes the cluster exit 1.
TRAINER="$(cd "$(dirname "$0")" && pwd)/trainer_quadratic.py"
"$GOSSIPD" cluster --nodes 3 --dir "$WORK/tr" --http-port 0 --set algorithm.rounds=200 \
  --trainer "/usr/bin/python3 $TRAINER \"\$GOSSIPD_DATA_DIR\" \"\$GOSSIPD_NODE\" \"\$GOSSIPD_DATA_DIR/x.npy\"" >"$WORK/tr.out" 2>&1 \
  || fail "cluster --trainer exited $?: $(tail -n 5 "$WORK/tr.out")"
/usr/bin/python3 - "$WORK/tr" <<'PY' || fail "cluster --trainer: the trainers' models"
import sys, numpy as np
xs = [float(np.load(f"{sys.argv[1]}/node-{i}/x.npy").mean()) for i in range(3)]
assert all(abs(x - 1.0) < 0.05 for x in xs), f"expected the mean target 1.0 on every node, got {xs}"
PY
rc=0
"$GOSSIPD" cluster --nodes 2 --dir "$WORK/trbad" --http-port 0 --set algorithm.rounds=50 --trainer "exit 3" >"$WORK/trbad.out" 2>&1 &
CL=$!
PIDS+=($CL)
wait_for 30 "the supervisor to report the failed trainers" grep -q "trainer of node 1 exited with code 3" "$WORK/trbad.out"
kill -INT "$CL"
wait_for 30 "the cluster to stop after SIGINT" exited "$CL"
wait "$CL" || rc=$?
[ "$rc" = 1 ] || fail "a cluster whose trainers failed should exit 1, got $rc"
echo "ok: --trainer runs a trainer beside each node; a failing trainer is reported"

# 5. SIGINT to a cluster with trainers: the trainers' own processes stop too, not only the shells that
# started them (each trainer runs in a process group of its own, which the supervisor signals).
"$GOSSIPD" cluster --nodes 2 --dir "$WORK/trint" --http-port 0 --set algorithm.rounds=100000000 \
  --trainer "/usr/bin/python3 $TRAINER \"\$GOSSIPD_DATA_DIR\" \"\$GOSSIPD_NODE\" \"\$GOSSIPD_DATA_DIR/x.npy\" --sleep 0.01" >"$WORK/trint.out" 2>&1 &
CL=$!
PIDS+=($CL)
for i in 0 1; do wait_for 60 "node $i's trainer to attach" grep -q '"trainer":"attached"' "$WORK/trint/node-$i/status.json"; done
trainers=$(for sh in $(pgrep -P "$CL"); do pgrep -P "$sh"; done)
[ "$(echo $trainers | wc -w)" = 2 ] || fail "expected 2 trainer processes under the shells, got '$trainers'"
kill -INT "$CL"
wait_for 30 "the cluster with trainers to stop after SIGINT" exited "$CL"
for p in $trainers; do wait_for 10 "trainer process $p to end with its cluster" exited "$p"; done
echo "ok: SIGINT stops the trainers' processes with the cluster"
