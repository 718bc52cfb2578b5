#!/usr/bin/env bash
# Chaos on real containers (docker/README.md). The same cluster file runs twice: once without faults (the
# reference), once with
#   docker kill of two nodes  -> the survivors declare them dead and train on;
#   docker network disconnect of one node for a while -> both sides declare each other dead, the cut-off
#                                node holds its rounds; after reconnecting it learns it was declared dead and
#                                rejoins as a new incarnation (and only it: the others' verdicts outnumber its own);
#   docker restart of one node -> a graceful leave, then it resumes from the checkpoint on its volume;
#   docker-compose stop of one node -> graceful: exit 0 and a leave (not a death) at the others;
#   the killed and the stopped nodes started again -> they resume from their checkpoint volumes.
# Every node must then finish all rounds, and the cluster's final accuracy must be within one point of the
# reference run's. The cluster's accuracy is that of the average of the nodes' final models: two fault-free
# runs agree on it to a few tenths of a point, while the mean of the per-node accuracies moved by up to a
# point between them (docker/README.md), too much for a one-point gate. The mean is reported too.
# Figures (detection and rejoin times, accuracies) go to $RESULT_JSON.
#   tests/docker/chaos.sh [FILE] [ROUNDS]
source "$(dirname "$0")/lib.sh"
FILE=${1:-docker/ring8.yaml}
ROUNDS=${2:-50000}   # long enough that nobody finishes before the last fault (checked before each)
export GOSSIPD_ROUNDS=$ROUNDS
need_image
TEST_IMAGES=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
[ -r "$TEST_IMAGES" ] || fail "$TEST_IMAGES is missing (make deps installs dataset-fashion-mnist)"
WORK=$(mktemp -d); CLEANUPS+=("rm -rf '$WORK'")
now_ms() { date +%s%3N; }
# The [t=ms] wall-clock stamp of the first log line of container $1 matching $2.
# Every stage reads all its input (no grep -m1 or head: the writer would die of SIGPIPE, failing the
# pipeline under pipefail).
event_ms() { docker logs "$1" 2>&1 | grep -- "$2" | sed -n '1s/.*\[t=\([0-9]*\)\].*/\1/p' | grep .; }
# Whether container $1 logged a line matching $3 stamped [t=ms] at or after $2. Earlier lines do not count:
# the merge of step 2 can leave death verdicts about a member in a node's log (see incarnation_of below).
logged_since() { docker logs "$1" 2>&1 | grep -- "$3" | sed -n 's/.*\[t=\([0-9]*\)\].*/\1/p' | awk -v s="$2" '$1 >= s {f = 1} END {exit !f}'; }
# final_accuracy NAME: checks that every node finished cleanly, copies the nodes' final models out of their
# volumes and prints scripts/eval_models.py's JSON (per-node accuracies, their mean, and the accuracy of the
# average model). Each node's accuracy must match what the node itself reported (status.json), which keeps
# the evaluator honest.
final_accuracy() {
  local out="$WORK/$1" reported=() dirs=()
  for ((i = 0; i < N; i++)); do
    local c; c=$(ctr $i)
    [ "$(exit_code "$c")" = 0 ] || fail "$1: node-$i exited with code $(exit_code "$c")"
    [ "$(status_field "$c" state)" = done ] || fail "$1: node-$i ended in state $(status_field "$c" state)"
    [ "$(round_of "$c")" = "$ROUNDS" ] || fail "$1: node-$i stopped at round $(round_of "$c"), not $ROUNDS"
    reported+=("$(status_field "$c" accuracy)")
    mkdir -p "$out/node-$i"; dirs+=("$out/node-$i")
    for f in model.npy model.json; do
      docker cp "$c:/var/lib/gossipd/$f" "$out/node-$i/$f" >/dev/null || fail "$1: cannot copy node-$i's $f"
    done
  done
  local json; json=$("$ROOT/scripts/eval_models.py" --test "$TEST_IMAGES" "${dirs[@]}") || fail "$1: evaluating the models failed"
  $PY - "$json" "${reported[@]}" <<'PY' || fail "$1: the evaluator disagrees with the nodes' own accuracies"
import json, sys
mine = json.loads(sys.argv[1])["node_accuracy"]
theirs = [100 * float(a) for a in sys.argv[2:]]
bad = [(i, m, t) for i, (m, t) in enumerate(zip(mine, theirs)) if abs(m - t) > 0.2]
for i, m, t in bad: print(f"node-{i}: evaluated {m:.2f}%, reported {t:.2f}%", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
  echo "$json"
}
field() { $PY -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
wait_all_done() { for ((i = 0; i < N; i++)); do wait_for 1200 "$1: node-$i to finish $ROUNDS rounds" exited "$(ctr $i)"; done; }

# --- the reference run ----------------------------------------------------------------------------------
PROJECT=gossipd-chaosref-$$
log "reference run: $FILE, $ROUNDS rounds, no faults"
compose_start "$ROOT/$FILE"
N=$(nodes_in)
wait_all_done "reference"
ref=$(final_accuracy "reference")
ref_acc=$(field "$ref" average_model_accuracy); ref_mean=$(field "$ref" mean_node_accuracy)
log "reference: average model $ref_acc%, mean of the $N nodes $ref_mean% ($(field "$ref" node_accuracy))"
compose down -v -t 5 >/dev/null 2>&1

# --- the chaos run --------------------------------------------------------------------------------------
PROJECT=gossipd-chaos-$$
log "chaos run: project $PROJECT"
compose_start "$ROOT/$FILE"
NET="${PROJECT}_gossip"
C0=$(ctr 0)
for ((i = 0; i < N; i++)); do wait_for 180 "node-$i to be healthy" healthy "$(ctr $i)"; done
wait_for 300 "node-0 to pass round $((ROUNDS / 10))" round_at_least "$C0" $((ROUNDS / 10))
# Every fault must hit a training cluster: a node that finished its rounds would leave instead.
before_fault() {
  local r; r=$(round_of "$C0") || fail "cannot read node-0's round before fault '$1'"
  [ "$r" -lt $((ROUNDS * 7 / 10)) ] || fail "node-0 reached round $r of $ROUNDS before fault '$1': run with more rounds"
}
# trains_as C INC: container C trains as incarnation INC with at least one neighbour (after a rejoin or a
# restart its round can jump to its neighbour's, so progress is measured only from then on).
trains_as() {
  [ "$(status_field "$1" incarnation)" = "$2" ] && [ "$(status_field "$1" state)" = training ] &&
    [ "$(status_field "$1" neighbors)" -ge 1 ]
}
# survivor_trains C: container C's round goes up by 50 (it trains on).
survivor_trains() { local r; r=$(round_of "$1") || fail "cannot read the round of $2"; wait_for 60 "$2 to keep training past round $r" round_at_least "$1" $((r + 50)); }

# 1. docker kill two nodes.
before_fault "kill"
K1=2 K2=5
t_kill=$(now_ms)
docker kill "$(ctr $K1)" "$(ctr $K2)" >/dev/null
for k in $K1 $K2; do
  wait_for 30 "node-0 to declare killed node-$k dead" logs_have "$C0" "member $k (incarnation 0) declared dead"
done
kill_detect_ms=$(( $(event_ms "$C0" "member $K2 (incarnation 0) declared dead") - t_kill ))
survivor_trains "$C0" "node-0 after the kills"
log "1. killed node-$K1 and node-$K2: declared dead after $kill_detect_ms ms, survivors train on"

# 2. Cut node-7 off its network, then reconnect it (with its service name as DNS alias, as compose does).
before_fault "disconnect"
D=7; CD=$(ctr $D)
t_cut=$(now_ms)
docker network disconnect "$NET" "$CD"
wait_for 30 "node-0 to declare the cut-off node-$D dead" logs_have "$C0" "member $D (incarnation 0) declared dead"
wait_for 30 "the cut-off node-$D to declare node-0 dead" logs_have "$CD" "member 0 (incarnation 0) declared dead"
cut_detect_ms=$(( $(event_ms "$C0" "member $D (incarnation 0) declared dead") - t_cut ))
# Every other member dead to it, the cut-off node holds its rounds (docs/daemon.md, "Partitions and
# isolation"); it trained alone at compute speed before, and the state transfer of its rejoin replaced that.
wait_for 30 "the cut-off node-$D to hold its rounds (isolated)" logs_have "$CD" "every other member is dead: holding round"
t_reconnect=$(now_ms)
docker network connect --alias "node-$D" "$NET" "$CD"
wait_for 60 "node-$D to learn it was declared dead and rejoin" logs_have "$CD" "rejoining as incarnation 1"
wait_for 60 "node-0 to see node-$D join again as incarnation 1" logs_have "$C0" "member $D (incarnation 1) joined"
rejoin_ms=$(( $(event_ms "$C0" "member $D (incarnation 1) joined") - t_reconnect ))
wait_for 60 "node-$D to train with neighbours as incarnation 1" trains_as "$CD" 1
survivor_trains "$CD" "node-$D after rejoining"
# Only the cut-off node rejoined: its verdicts on the others lost the comparison of sides (issue 28: every
# healthy node took them and rejoined with a state transfer).
for ((i = 0; i < N; i++)); do
  [ "$i" = "$D" ] || [ "$i" = "$K1" ] || [ "$i" = "$K2" ] && continue
  if logs_have "$(ctr $i)" "declared dead by the cluster; rejoining"; then fail "node-$i rejoined after node-$D's reconnect: it took the cut-off node's verdict"; fi
done
log "2. cut node-$D off: declared dead after $cut_detect_ms ms; reconnected, back in the cluster after $rejoin_ms ms; no other node rejoined"

# Incarnations are read, not assumed (a node declared dead under load rejoins as a later incarnation,
# docs/daemon.md). A restart then comes back as the next one.
incarnation_of() { status_field "$1" incarnation || fail "cannot read the incarnation of $2"; }

# 3. docker restart: a graceful stop, then the same container resumes from its checkpoint volume.
before_fault "restart"
R=3; CR=$(ctr $R)
IR=$(incarnation_of "$CR" "node-$R"); NR=$((IR + 1))
t_restart=$(now_ms)
docker restart -t 20 "$CR" >/dev/null
wait_for 30 "node-0 to see restarted node-$R leave" logs_have "$C0" "member $R (incarnation $IR) left"
wait_for 90 "node-$R to resume from its checkpoint as incarnation $NR" logs_have "$CR" "incarnation $NR listening.*resumed at round"
wait_for 60 "node-0 to see node-$R join as incarnation $NR" logs_have "$C0" "member $R (incarnation $NR) joined"
restart_back_ms=$(( $(event_ms "$C0" "member $R (incarnation $NR) joined") - t_restart ))
wait_for 60 "node-$R to train with neighbours as incarnation $NR" trains_as "$CR" $NR
survivor_trains "$CR" "node-$R after its restart"
log "3. restarted node-$R (incarnation $IR): left, resumed from its checkpoint, back after $restart_back_ms ms"

# 4. docker-compose stop: graceful, exit 0, a leave at the others and never a death.
before_fault "stop"
S=4; CS=$(ctr $S)
IS=$(incarnation_of "$CS" "node-$S")
t_stop=$(now_ms)
compose stop -t 20 "node-$S" >/dev/null 2>&1
[ "$(exit_code "$CS")" = 0 ] || fail "node-$S exited with code $(exit_code "$CS") after docker-compose stop"
wait_for 30 "node-0 to see stopped node-$S leave" logs_have "$C0" "member $S (incarnation $IS) left"
leave_seen_ms=$(( $(event_ms "$C0" "member $S (incarnation $IS) left") - t_stop ))
if logged_since "$C0" "$t_stop" "member $S (incarnation $IS) declared dead"; then fail "node-$S's graceful stop was taken for a death"; fi
survivor_trains "$C0" "node-0 after the stop"
log "4. docker-compose stop node-$S (incarnation $IS): exit 0, leave seen after $leave_seen_ms ms"

# 5. The killed and the stopped nodes come back and resume from their checkpoint volumes (the killed ones
# died as incarnation 0 in step 1, before any merge).
before_fault "start again"
docker start "$(ctr $K1)" "$(ctr $K2)" >/dev/null
compose start "node-$S" >/dev/null 2>&1
for k in $K1 $K2 $S; do
  n=$([ "$k" = "$S" ] && echo $((IS + 1)) || echo 1)
  wait_for 90 "node-$k to resume from its checkpoint volume as incarnation $n" logs_have "$(ctr $k)" "incarnation $n listening.*resumed at round"
  wait_for 60 "node-0 to see node-$k join again as incarnation $n" logs_have "$C0" "member $k (incarnation $n) joined"
  wait_for 60 "node-$k to train with neighbours as incarnation $n" trains_as "$(ctr $k)" "$n"
done
log "5. node-$K1, node-$K2, node-$S resumed from their checkpoints and rejoined"

wait_all_done "chaos"
res=$(final_accuracy "chaos")
chaos_acc=$(field "$res" average_model_accuracy); chaos_mean=$(field "$res" mean_node_accuracy)
diff=$($PY -c 'import sys; print(f"{float(sys.argv[1]) - float(sys.argv[2]):+.2f}")' "$chaos_acc" "$ref_acc")
log "chaos: average model $chaos_acc%, mean of the $N nodes $chaos_mean% ($(field "$res" node_accuracy))"
log "final accuracy (average model): reference $ref_acc%, chaos $chaos_acc% ($diff points)"
if [ -n "${RESULT_JSON:-}" ]; then
  $PY - "$RESULT_JSON" <<PY
import json, sys
json.dump({"file": "$FILE", "nodes": $N, "rounds": $ROUNDS,
           "accuracy_reference": $ref_acc, "accuracy_chaos": $chaos_acc,
           "mean_node_accuracy_reference": $ref_mean, "mean_node_accuracy_chaos": $chaos_mean,
           "kill_detect_ms": $kill_detect_ms, "disconnect_detect_ms": $cut_detect_ms,
           "reconnect_rejoin_ms": $rejoin_ms, "restart_back_ms": $restart_back_ms,
           "stop_leave_seen_ms": $leave_seen_ms}, open(sys.argv[1], "w"), indent=1)
PY
fi
$PY -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) <= 1.0 else 1)' "$chaos_acc" "$ref_acc" ||
  fail "final accuracy $chaos_acc% is not within 1 point of the fault-free run's $ref_acc%"
echo "ok: chaos on $FILE: every fault detected, restarted nodes resumed, average-model accuracy $chaos_acc% vs $ref_acc% without faults"
