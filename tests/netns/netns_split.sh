#!/usr/bin/env bash
# Eight hosts split 4/4 and healed (namespaces + veth, see netns_lib.sh), Prox-LEAD with the 2-bit LEAD
# compressor and an l1 term. While apart, each island declares the other dead and trains on as a ring of
# four; after the heal the two islands must find each other (re-contact of dead members), merge into one
# ring of eight with fresh edges, and converge to the optimum of the FULL eight-node objective again: the
# split dropped every cross edge at both ends, so the edge-decomposed dual still sums to zero and nothing
# needs a reset. Reference: `gossipd sim` with the same data and no fault, run far past convergence.
# The losing island (4/4: the one without the lowest id) rejoins as new incarnations; a node of the other
# that rejoins too is reported. Detection and heal times are printed (informational: no timing assertion in a test).
#
# This test found two faults of the engine (fixed with it): a node whose edges were still being agreed
# began its rounds anyway and ran them alone at compute speed (one went from round 31370 to the last in
# under 2 s, finished and left in the middle of the merge), and an edge the peer closed while the views
# disagreed was never proposed again. Run by hand with the directory kept:
#   sudo KEEP_WORK=1 tests/netns/netns_split.sh build/release/daemon/gossipd
GOSSIPD=$1
source "$(dirname "$0")/netns_lib.sh"
netns_require
source "$(dirname "$0")/../integration/daemon_lib.sh"
trap 'rc=$?; netns_cleanup; [ $rc = 0 ] || for f in "$WORK"/*/log; do echo "== $f" >&2; tail -n 12 "$f" >&2; done; (exit $rc); cleanup' EXIT
N=8
LEFT="0 1 2 3"
RIGHT="4 5 6 7"
PROBE_MS=200
SUSPICION_MS=$((4 * PROBE_MS))  # suspicion_mult 4 * max(1, log10(8)) * probe interval (docs/config.md)
# Enough rounds after the merge for Prox-LEAD to settle far below 1e-8 (it needs about 3000 on this
# problem, from the daemon fault runs in docs/results.md); the test fails if the merge leaves fewer. The
# split and heal take about 6 s of wall time, under 7000 rounds here (~1000 rounds/s on 2 cores).
ROUNDS=${ROUNDS:-25000}
SETTLE=4000
netns_setup $N

sets=(data.format=synthetic model.kind=logistic model.l2=0.01 model.l1=0.001 cluster.nodes=$N cluster.topology=ring
      algorithm.name=prox_lead compressor.name=lead algorithm.estimator=full algorithm.lr=0.2
      algorithm.rounds=$ROUNDS node.checkpoint_every=0 cluster.probe_interval_ms=$PROBE_MS cluster.suspicion_mult=4
      monitor.eval_every=0 monitor.status_every_ms=100)
args=()
for s in "${sets[@]}"; do args+=(--set "$s"); done
start_ns_node() { netns_start_gossipd "$1" "${args[@]}"; }
# One python per poll for all nodes (a python per node and field was too slow at ~1000 rounds/s: the
# islands were confirmed 18 s after they formed).
cat >"$WORK/poll.py" <<'PY'
import json, sys
work, what, ids, arg = sys.argv[1], sys.argv[2], [int(i) for i in sys.argv[3].split()], int(sys.argv[4])
def st(i):
    try:
        return json.load(open(f"{work}/node-{i}/status.json"))
    except (OSError, ValueError):
        return {}
if what == "round":  # print the highest round of ids
    print(max(st(i).get("round", 0) for i in ids))
elif what == "at_least":  # every id past round arg
    sys.exit(0 if all(st(i).get("round", 0) >= arg for i in ids) else 1)
elif what == "ring":  # every id training, with arg members alive and two neighbours
    sys.exit(0 if all(st(i).get("state") == "training" and st(i).get("alive") == arg and st(i).get("neighbors") == 2
                      for i in ids) else 1)
PY
poll() { /usr/bin/python3 "$WORK/poll.py" "$WORK" "$@"; }
round_of() { poll round "$1" 0; }
at_least() { poll at_least "$1" "$2"; }
stamp() { grep -m1 -E "$1" "$2" | sed -E 's/.*\[t=([0-9]+)\].*/\1/'; }

for ((i = 0; i < N; i++)); do start_ns_node $i; done
wait_for 60 "all nodes to pass round 300" at_least "0 1 2 3 4 5 6 7" 300
echo "ok: $N nodes train across $N namespaces"

split_ms=$(date +%s%3N)
netns_split "$LEFT" "$RIGHT"
echo "info: split at t=$split_ms (round $(round_of 0))"
# Each island declares the other dead and re-forms a ring of four.
wait_for 30 "the left island ($LEFT) to see a ring of 4 after the split" poll ring "$LEFT" 4
wait_for 30 "the right island ($RIGHT) to see a ring of 4 after the split" poll ring "$RIGHT" 4
islands_ms=$(date +%s%3N)
r0=$(round_of 0) r4=$(round_of 4)
wait_for 30 "the left island to train on while apart" at_least 0 $((r0 + 100))
wait_for 30 "the right island to train on while apart" at_least 4 $((r4 + 100))
# The split lasts twice the suspicion timeout past the islands' re-forming (the fault's length).
sleep "$(awk -v ms="$SUSPICION_MS" 'BEGIN { print 2 * ms / 1000 }')"
echo "ok: split 4/4, both islands trained on apart (left from round $r0 to $(round_of 0), right from $r4 to $(round_of 4))"
first_dead=$(for i in $LEFT; do stamp "member [4-7] \(incarnation 0\) declared dead" "$WORK/node-$i/log"; done | sort -n | head -1)

heal_ms=$(date +%s%3N)
netns_heal
echo "info: healed at t=$heal_ms (round $(round_of 0))"
wait_for 60 "all 8 nodes to see each other and a ring of 8 again after the heal" poll ring "$LEFT $RIGHT" 8
merged_ms=$(date +%s%3N)
merged_round=$(round_of "$LEFT $RIGHT")
echo "info: detection $((first_dead - split_ms)) ms from the split to the first death verdict;" \
  "islands re-formed after $((islands_ms - split_ms)) ms; merged (8 alive, ring of 8 on every node)" \
  "$((merged_ms - heal_ms)) ms after the heal, at round $merged_round"
[ $((ROUNDS - merged_round)) -ge $SETTLE ] ||
  fail "merged at round $merged_round, fewer than $SETTLE of $ROUNDS rounds left to converge (raise ROUNDS)"
rejoined=$(for ((i = 0; i < N; i++)); do grep -q "rejoining as incarnation" "$WORK/node-$i/log" && echo $i; done | xargs)
echo "info: $(echo $rejoined | wc -w) of $N nodes rejoined as a new incarnation: ${rejoined:-none} (the right island is $RIGHT)"
# The losing side rejoins (docs/daemon.md, "Partitions and isolation"): 4/4 is a tie, which the side with
# the lowest node id wins, so every node of the right island. Nodes of the left should not: 20 of 20 runs
# on a loaded machine rejoined exactly 4 5 6 7, but a 21st (load 13) also had nodes 1 and 3 rejoin, likely
# the open case of docs/results.md §12 (verdicts passed on while the heal reaches the nodes link by link),
# so that is reported, not asserted.
for i in $RIGHT; do
  [[ " $rejoined " == *" $i "* ]] || fail "node $i of the losing (right) island did not rejoin after the heal (rejoined: ${rejoined:-none})"
done
[ "$rejoined" = "$RIGHT" ] || echo "note: nodes of the winning side rejoined too: ${rejoined} (the right island is $RIGHT)"

for ((i = 0; i < N; i++)); do wait_exit $i 600; done
echo "ok: every node ran to round $ROUNDS and stopped cleanly"

# The reference: the same eight shards, no fault, run well past convergence by the simulator.
"$GOSSIPD" sim --out "$WORK/sim.json" --save-models "$WORK/sim" "${args[@]}" --set algorithm.rounds=$((2 * ROUNDS)) \
  --set sim.eval_every=$ROUNDS >/dev/null 2>"$WORK/sim.err" || { cat "$WORK/sim.err" >&2; fail "gossipd sim"; }
# The bound is the state's precision (docs/algorithms.md, "Precision and memory"): two runs of an exact method
# with different histories end at fixed points that agree to the state's rounding, 1e-8 apart with float64
# state and ~1e-5 with float32 (measured 7.4e-6, the reference itself 7.0e-6 from the solver's optimum).
BOUND=1e-8
"$GOSSIPD" --version | grep -q "state float32" && BOUND=1e-4
/usr/bin/python3 - "$WORK" $N $BOUND <<'EOF' || fail "the merged cluster did not reach the full optimum"
import json, sys
import numpy as np
work, n, bound = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ref = json.load(open(f"{work}/sim.json"))["records"][-1]
xs = np.mean([np.load(f"{work}/sim/node-{i}/model.npy") for i in range(n)], axis=0)
errs = [float(np.linalg.norm(np.load(f"{work}/node-{i}/model.npy") - xs) / np.linalg.norm(xs)) for i in range(n)]
print(f"info: reference run's own rel_error to the solver's optimum {ref.get('rel_error')}; "
      f"daemons' max relative distance to it {max(errs):.3g}")
if not max(errs) <= bound:
    print("FAIL: per node " + " ".join(f"{e:.3g}" for e in errs))
    sys.exit(1)
print(f"ok: every node ends at the full 8-node optimum (max relative distance {max(errs):.3g} <= {bound:g})")
EOF
