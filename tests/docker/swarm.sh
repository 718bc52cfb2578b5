#!/usr/bin/env bash
# The 8-node ring file deployed unchanged with `docker stack deploy` on a single-node swarm (made by the test
# when the engine is not in a swarm yet, and left again afterwards): it trains, and survives
# `docker service scale` of one node to 0 (seen as a leave or a death) and back to 1 (the new task resumes from the
# checkpoint on the node's volume and rejoins).
#   tests/docker/swarm.sh [FILE]
source "$(dirname "$0")/lib.sh"
FILE=${1:-docker/ring8.yaml}
export GOSSIPD_ROUNDS=100000000   # trains until the stack is removed
export GOSSIPD_HTTP_PORT=$(free_port)
STACK=gossipd-swarm-$$
need_image

if [ "$(docker info -f '{{.Swarm.LocalNodeState}}')" != active ]; then
  log "initialising a single-node swarm on 127.0.0.1"
  docker swarm init --advertise-addr 127.0.0.1 >/dev/null
  CLEANUPS+=("docker swarm leave --force")
fi
N=$(grep -c '^  node-[0-9]*:$' "$ROOT/$FILE")
remove_stack() {
  docker stack rm "$STACK"
  local end=$((SECONDS + 60))
  while [ -n "$(docker ps -aq --filter label=com.docker.stack.namespace=$STACK)" ] && [ $SECONDS -lt $end ]; do sleep 1; done
  docker network rm "${STACK}_gossip" 2>/dev/null || true
  docker volume ls -q --filter label=com.docker.stack.namespace=$STACK | xargs -r docker volume rm
}
CLEANUPS+=("remove_stack")
dump_logs() {
  echo "--- stack $STACK ---"
  docker stack ps --no-trunc "$STACK" 2>&1 | head -30
  for ((i = 0; i < N; i++)); do
    local c; c=$(task $i) || continue
    [ -n "$c" ] && { echo "== node-$i (first lines, membership events, then the last)"; docker logs "$c" 2>&1 | head -n 6; echo "..."
                     docker logs "$c" 2>&1 | grep -E ' member [0-9]+ | declared dead by' | tail -n 20 || true; echo "..."
                     docker logs --tail 8 "$c" 2>&1; }
    # The whole logs, when the caller asked for them (DOCKER_ARTEFACTS=DIR).
    [ -n "$c" ] && [ -n "${DOCKER_ARTEFACTS:-}" ] && { mkdir -p "$DOCKER_ARTEFACTS"; docker logs "$c" >"$DOCKER_ARTEFACTS/swarm-node-$i.log" 2>&1; }
  done
}
# The running container of service node-I.
task() { docker ps -q --filter "label=com.docker.swarm.service.name=${STACK}_node-$1" | sed -n 1p; }
has_task() { [ -n "$(task "$1")" ]; }
no_task() { [ -z "$(task "$1")" ]; }

log "docker stack deploy -c $FILE $STACK"
docker stack deploy -c "$ROOT/$FILE" "$STACK" >/dev/null 2>&1 || { docker stack deploy -c "$ROOT/$FILE" "$STACK"; fail "stack deploy failed"; }
for ((i = 0; i < N; i++)); do
  wait_for 180 "service node-$i to run a task" has_task $i
  wait_for 180 "node-$i to be healthy" healthy "$(task $i)"
done
C0=$(task 0)
# A function, so that wait_for reads the status on every poll (an argument would be expanded once).
alive_is() { [ "$(status_field "$1" alive)" = "$2" ]; }
wait_for 120 "node-0 to see all $N members alive" alive_is "$C0" "$N"
for ((i = 0; i < N; i++)); do wait_for 180 "node-$i to pass round 500" round_at_least "$(task $i)" 500; done
log "all $N services train ($(status_field "$C0" neighbors) neighbours at node-0, round $(round_of "$C0"))"

S=3
# node-0's lines about member S leaving or dying, in any incarnation: on a loaded machine S can be declared
# dead once while the cluster starts and rejoin as incarnation 1 without a restart (the likely cause of a CI
# failure whose log was cut too short to tell), so the stop shows as the first such line that appears after
# the scale command, whatever its incarnation.
departures() { docker logs "$C0" 2>&1 | grep -E "member $S \(incarnation [0-9]+\) (left|declared dead)" || true; }
before=$(departures | wc -l)
docker service scale -d "${STACK}_node-$S=0" >/dev/null
# Swarm stops the task with SIGTERM (a leave), but may detach it from the overlay network first, so that
# its leave announcement is lost and the others detect a death: either way node-0 must see it go.
gone() { [ "$(departures | wc -l)" -gt "$before" ]; }
wait_for 60 "node-0 to see node-$S leave or die after scaling it to 0 ($before such lines before)" gone
how=$(departures | sed -n "$((before + 1))p" | grep -q ' left' && echo "a graceful leave" || echo "a death (the leave was lost)")
wait_for 60 "node-$S's task to be gone" no_task $S
r=$(round_of "$C0") || fail "cannot read node-0's round"
wait_for 60 "node-0 to keep training with node-$S at 0 replicas" round_at_least "$C0" $((r + 200))
log "scaled node-$S to 0: node-0 saw $how; the others train on"

docker service scale -d "${STACK}_node-$S=1" >/dev/null
wait_for 120 "node-$S to run a task again" has_task $S
CS=$(task $S)
# Usually incarnation 1; a later one if its first life was declared dead and rejoined before the stop (the
# swarm may detach the task from the network before its SIGTERM). What matters is the resume.
# (The logs are read whole first: grep -m1 on the pipe would end docker logs with SIGPIPE, fatal under pipefail.)
resumed_line() { local l; l=$(docker logs "$CS" 2>&1) && grep -m1 -E "incarnation [0-9]+ listening.*resumed at round" <<<"$l"; }
wait_for 90 "node-$S to resume from its volume's checkpoint" resumed_line
inc=$(resumed_line | sed -E 's/.*incarnation ([0-9]+) listening.*/\1/')
[ "$inc" -ge 1 ] || fail "node-$S resumed as incarnation $inc, not as a later life"
wait_for 60 "node-0 to see node-$S join as incarnation $inc" logs_have "$C0" "member $S (incarnation $inc) joined"
r=$(round_of "$CS") || fail "cannot read node-$S's round"
wait_for 60 "node-$S to train after scaling back" round_at_least "$CS" $((r + 200))
wait_for 60 "node-0 to see all $N members alive again" alive_is "$C0" "$N"
read -r first last < <(accuracy_first_last "$C0") || fail "node-0 printed no accuracy"
# Not "last > first": node-0's first evaluation comes with its first progress line, after hundreds of rounds,
# when this softmax model is already near its plateau (76.5% in one CI run), so two plateau readings differ by
# noise (that run read 76.5% -> 76.0% and failed). What the test must show is that the stack trains (far
# above the 10% of an untrained 10-class model) and that the scale to 0 and back did not set node-0 back.
$PY -c 'import sys; f, l = map(float, sys.argv[1:]); sys.exit(0 if l > 50 and l >= f - 5 else 1)' "$first" "$last" ||
  fail "node-0 did not train on: accuracy $first% at its first evaluation, $last% at the end (want above 50% and at most 5 points below the first)"
echo "ok: swarm: $FILE deployed unchanged, trained (node-0 accuracy $first% at its first evaluation, $last% at the end), survived scaling node-$S to 0 and back (it resumed from its checkpoint as incarnation $inc)"
