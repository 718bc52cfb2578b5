#!/usr/bin/env bash
# `gossipd health` and `node.advertise` on real processes. The nodes advertise "localhost" while they bind
# 127.0.0.1, so they can only find each other through the advertised name (membership records carry it).
# health: exit 1 before a node exists, 0 while it trains, 1 while it is frozen (SIGSTOP: its status file
# goes stale) and 0 again after SIGCONT, 1 once it stopped, 2 on a bad flag.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
N=3
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=$N --set cluster.topology=ring
      --set algorithm.name=dpsgd --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=100 --set node.advertise=localhost)
health() { "$GOSSIPD" health --dir "$WORK/node-$1" --max-age-ms 1500; }
unhealthy_because() { local out rc=0; out=$(health "$1") || rc=$?; [ "$rc" = 1 ] && [[ "$out" == *"$2"* ]]; }

rc=0; out=$(health 0) || rc=$?
[ "$rc" = 1 ] && [[ "$out" == "unhealthy: no status file"* ]] || fail "health of a missing node: rc $rc, '$out'"

start_cluster $N "${args[@]}"
ep=$(endpoint_of 0)
[[ "$ep" =~ ^tcp://localhost:[0-9]+$ ]] || fail "node 0's endpoint file holds '$ep', expected tcp://localhost:PORT"
alive_is() { [ "$(status_field "$1" alive)" = "$2" ]; }  # read on every poll of wait_for
for ((i = 0; i < N; i++)); do
  wait_for 30 "node $i to be healthy" health $i
  wait_for 30 "node $i to see all $N members alive" alive_is $i $N
done
[ "$(status_field 1 endpoint)" = "$(endpoint_of 1)" ] || fail "status.json endpoint differs from the endpoint file"
[[ "$(status_field 1 listen)" == tcp://127.0.0.1:* ]] || fail "status.json listen is '$(status_field 1 listen)'"
echo "ok: nodes advertise $(endpoint_of 1) (bound $(status_field 1 listen)), all $N joined, health: $(health 1)"

kill -STOP "${NODE_PID[1]}"
wait_for 10 "health to report frozen node 1's stale status file" unhealthy_because 1 "ms old"
kill -CONT "${NODE_PID[1]}"
wait_for 20 "node 1 to be healthy again after SIGCONT" health 1
echo "ok: a frozen node is unhealthy, healthy again once it runs"

kill -TERM "${NODE_PID[2]}"
wait_exit 2 20
unhealthy_because 2 "the node is stopped" || fail "health after SIGTERM: $(health 2 || true)"
echo "ok: a stopped node is unhealthy: $(health 2 || true)"

rc=0; "$GOSSIPD" health --dir "$WORK/node-0" --bogus >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad flag: expected exit 2, got $rc"
rc=0; "$GOSSIPD" health >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "missing --dir: expected exit 2, got $rc"
echo "ok: health usage errors exit 2"
