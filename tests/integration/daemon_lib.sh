# Helpers for the multi-process daemon tests (sourced). Every wait has a deadline and says what it awaited;
# every process started is killed on exit; every test works in its own temp dir with ephemeral ports.
set -euo pipefail
GOSSIPD=${GOSSIPD:?set GOSSIPD to the gossipd binary}
WORK=$(mktemp -d /tmp/gossipd-test.XXXXXX)
PIDS=()
# fd 3 is the test's stderr for good: a fail() inside a wait_for predicate (whose output wait_for sends to
# /dev/null) and the cleanup that follows it still print what failed.
exec 3>&2
cleanup() {
  local rc=$?
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$rc" != 0 ]; then
    echo "--- logs (test failed, rc=$rc) ---" >&3
    for f in "$WORK"/*/log; do [ -f "$f" ] && { echo "== $f" >&3; tail -n ${LOG_LINES:-15} "$f" >&3; }; done
  fi
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $WORK (KEEP_WORK)" >&3; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&3; exit 1; }

# wait_for DEADLINE_S DESCRIPTION COMMAND...: polls COMMAND every 50 ms until it succeeds.
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || fail "timed out after ${limit}s waiting for: $what"
    sleep 0.05
  done
}

# start_node ID SEED_ENDPOINT ARGS...: starts `gossipd run` for node ID in $WORK/node-ID; sets NODE_PID[ID].
declare -A NODE_PID
start_node() {
  local id=$1 seed=$2; shift 2
  local dir="$WORK/node-$id"
  mkdir -p "$dir"
  local seeds=()
  [ -n "$seed" ] && seeds=(--set "cluster.seeds=[\"$seed\"]")
  "$GOSSIPD" run "$@" --set node.id="$id" --set node.data_dir="$dir" --set node.listen=tcp://127.0.0.1:0 \
    "${seeds[@]}" >>"$dir/log" 2>&1 3>&- &
  NODE_PID[$id]=$!
  PIDS+=($!)
}

endpoint_of() { cat "$WORK/node-$1/endpoint" 2>/dev/null; }
status_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$WORK/node-$1/status.json" "$2" 2>/dev/null; }
exited() { ! kill -0 "$1" 2>/dev/null; }

# start_cluster N ARGS...: node 0 first, then the others through its endpoint.
start_cluster() {
  local n=$1; shift
  start_node 0 "" "$@"
  wait_for 20 "node 0 to write its endpoint" test -s "$WORK/node-0/endpoint"
  local seed; seed=$(endpoint_of 0)
  for ((i = 1; i < n; i++)); do start_node "$i" "$seed" "$@"; done
}

# wait_exit ID DEADLINE_S: waits for node ID to exit and checks its exit code is 0.
wait_exit() {
  local id=$1 limit=$2
  wait_for "$limit" "node $id to finish" exited "${NODE_PID[$id]}"
  local rc=0
  wait "${NODE_PID[$id]}" || rc=$?
  [ "$rc" = 0 ] || fail "node $id exited with code $rc"
}

# wait_for_quiet DEADLINE_S COMMAND...: like wait_for, but returns 1 instead of failing (the caller says
# what was wrong).
wait_for_quiet() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $end ] || return 1; sleep 0.05; done
}

# reasons ID: node ID's rejected_by_reason from status.json as "reason=count ..." (sorted); checks that
# `rejected` is their sum.
reasons() {
  /usr/bin/python3 - "$WORK/node-$1/status.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
r = j["rejected_by_reason"]
assert sum(r.values()) == j["rejected"], "rejected is not the sum of rejected_by_reason"
print(" ".join("%s=%d" % kv for kv in sorted(r.items())))
EOF
}

# delta_is ID "BEFORE" "EXPECTED": node ID's counts grew by exactly EXPECTED ("reason=n ...") since
# BEFORE (an earlier `reasons ID`), nothing else. "a|b=n" means reasons a and b grew by n together (a
# replay is a duplicate if it arrives before its round is mixed and late after: both are right).
# "a=+" means a grew by any amount above 0, "a>=n" by n or more.
delta_is() {
  /usr/bin/python3 - "$2" "$3" "$(reasons "$1")" <<'EOF'
import sys
parse = lambda s: dict(x.replace(">=", "=>").split("=") for x in s.split())
before, want, now = (parse(a) for a in sys.argv[1:4])
got = {k: int(now[k]) - int(before.get(k, 0)) for k in now if now[k] != before.get(k, "0")}
for group, n in want.items():
    total = sum(got.pop(k, 0) for k in group.split("|"))
    if n == "+": ok = total > 0
    elif n.startswith(">"): ok = total >= int(n[1:])
    else: ok = total == int(n)
    if not ok:
        sys.exit(1)
sys.exit(0 if not got else 1)
EOF
}
