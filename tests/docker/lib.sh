# Helpers for the docker tests (sourced; `make docker-test` runs them). Each test uses its own compose
# project or stack name, waits on conditions with deadlines and says what it awaited, and removes its
# containers, networks, volumes and stacks on every exit path.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GOSSIPD_IMAGE=${GOSSIPD_IMAGE:-gossipd:latest}   # the compose files' image
IMAGE=$GOSSIPD_IMAGE
PY=/usr/bin/python3
CLEANUPS=()

on_exit() {
  local rc=$?
  if [ "$rc" != 0 ] && declare -F dump_logs >/dev/null; then dump_logs >&2 || true; fi
  for ((k = ${#CLEANUPS[@]} - 1; k >= 0; k--)); do eval "${CLEANUPS[$k]}" >/dev/null 2>&1 || true; done
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

fail() { echo "FAIL: $*" >&2; exit 1; }
log() { echo "[$(date -u +%H:%M:%S)] $*"; }

# wait_for DEADLINE_S DESCRIPTION COMMAND...: polls COMMAND every second until it succeeds.
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || fail "timed out after ${limit}s waiting for: $what"
    sleep 1
  done
}

# A host port nobody listens on, for node-0's published port.
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

need_image() {
  docker image inspect "$IMAGE" >/dev/null 2>&1 || fail "image $IMAGE is missing: build it first (make docker-image)"
}

# --- compose projects -------------------------------------------------------------------------------
# compose_start FILE: brings FILE up as project $PROJECT (set by the caller), removed on exit.
# Compose v1 (docker-compose) where it exists, else the v2 plugin: the files work with both.
if command -v docker-compose >/dev/null; then DC=(docker-compose); else DC=(docker compose); fi
compose() { "${DC[@]}" -p "$PROJECT" -f "$COMPOSE_FILE" "$@"; }
compose_start() {
  COMPOSE_FILE=$1
  export GOSSIPD_HTTP_PORT=${GOSSIPD_HTTP_PORT:-$(free_port)}
  CLEANUPS+=("${DC[*]} -p '$PROJECT' -f '$COMPOSE_FILE' down -v --remove-orphans -t 5")
  compose up -d --no-build >/dev/null 2>&1 || { compose up -d --no-build; fail "docker-compose up failed"; }
}
# Container id of service node-I (running or not).
ctr() { compose ps -q "node-$1"; }
nodes_in() { compose config --services | grep -c '^node-'; }

# status_json CONTAINER: the node's status.json (also from a stopped container: docker cp reads volumes).
status_json() { docker cp "$1:/var/lib/gossipd/status.json" - 2>/dev/null | tar -xO; }
# status_field CONTAINER KEY. The daemon replaces status.json (rename) every status tick, and `docker cp`
# can catch the replacement (its tar takes the size of one file and the bytes of the next: a cut JSON, seen
# in the chaos test): a read that does not parse is made again, up to 5 times.
status_field() {
  local k out
  for k in 1 2 3 4 5; do
    if out=$(status_json "$1" | $PY -c 'import json,sys; v=json.load(sys.stdin)[sys.argv[1]]; print("" if v is None else v)' "$2" 2>/dev/null); then
      echo "$out"
      return 0
    fi
    sleep 0.2  # a retry's backoff, not a synchronisation
  done
  echo "status_field: cannot read '$2' from status.json of container $1" >&2
  return 1
}
round_of() { status_field "$1" round; }
round_at_least() { local r; r=$(round_of "$1") && [ -n "$r" ] && [ "$r" -ge "$2" ]; }
exited() { [ "$(docker inspect -f '{{.State.Status}}' "$1")" = exited ]; }
exit_code() { docker inspect -f '{{.State.ExitCode}}' "$1"; }
healthy() { [ "$(docker inspect -f '{{.State.Health.Status}}' "$1")" = healthy ]; }
# Passed a health check at least once (also true after a node finished its rounds and exited).
was_healthy() { healthy "$1" || docker inspect -f '{{range .State.Health.Log}}{{.ExitCode}} {{end}}' "$1" | grep -cw 0 >/dev/null; }
# Reads the whole log: `grep -q` would stop at the first match, `docker logs` would then die of SIGPIPE and,
# under pipefail, a log that has the line would count as one that does not.
logs_have() { docker logs "$1" 2>&1 | grep -c -- "$2" >/dev/null; }

# The first and the last accuracy a node printed ("acc 71.3%" on its progress lines, "accuracy 80.12%"
# on its final line), as "first last".
accuracy_first_last() {
  docker logs "$1" 2>&1 | $PY -c '
import re, sys
accs = [float(m.group(1)) for line in sys.stdin for m in [re.search(r"\bacc(?:uracy)? ([0-9.]+)%", line)] if m]
print(accs[0], accs[-1]) if accs else sys.exit(1)'
}

dump_compose_logs() {
  [ -n "${PROJECT:-}" ] && [ -n "${COMPOSE_FILE:-}" ] || return 0
  echo "--- last log lines of each node (project $PROJECT) ---"
  for s in $(compose config --services 2>/dev/null); do
    local c; c=$(compose ps -q "$s" 2>/dev/null) || continue
    [ -n "$c" ] || continue
    echo "== $s ($(docker inspect -f '{{.State.Status}} exit={{.State.ExitCode}}' "$c"))"
    docker logs --tail "${LOG_LINES:-8}" "$c" 2>&1
  done
}
dump_logs() { dump_compose_logs; }
