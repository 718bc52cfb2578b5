#!/usr/bin/env bash
# Logging on real daemons (docs/daemon.md#logging): node 0 writes text lines (timestamp, level, logger,
# then today's "node 0: ..." message) with node.log_levels muting its membership logger; node 1 writes
# JSON lines. PUT /loglevel on node 0's loopback HTTP server turns its node logger to debug (its
# per-round "round N mixed" lines appear) and everything back to info; bad requests get 400, other
# methods 405; a node whose HTTP server is not on loopback refuses PUT with 403.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
command -v curl >/dev/null || { echo "SKIP: curl is not installed (make deps installs it)"; exit 77; }
N=2
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=$N --set cluster.topology=ring
      --set algorithm.name=dpsgd --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=100)
start_node 0 "" "${args[@]}" --set node.log_levels=membership=warn
wait_for 20 "node 0 to write its endpoint" test -s "$WORK/node-0/endpoint"
start_node 1 "$(endpoint_of 0)" "${args[@]}" --set node.log_format=json
training() { [ "$(status_field "$1" state)" = training ] && [ "$(status_field "$1" alive)" = $N ]; }
for i in 0 1; do
  wait_for 30 "node $i to write its http_port file" test -s "$WORK/node-$i/http_port"
  wait_for 30 "node $i to train with both members alive" training $i
done
url() { echo "http://127.0.0.1:$(cat "$WORK/node-$1/http_port")$2"; }
LOG0=$WORK/node-0/log LOG1=$WORK/node-1/log

# Text: every line is "<UTC timestamp> <level> [<logger>] node 0: <message>".
TS='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z'
bad=$(grep -cvE "^$TS (trace|debug|info |warn |error) \[[a-z]+\] node 0: " "$LOG0" || true)
[ "$bad" = 0 ] || fail "node 0: $bad lines not in the text format: $(grep -vE "^$TS " "$LOG0" | head -3)"
grep -qE "^$TS info  \[node\] node 0: training from round 0 with 2 members$" "$LOG0" ||
  fail "node 0: no text line 'training from round 0 with 2 members': $(head -5 "$LOG0")"
# Its membership logger is at warn: node 1's join (an info line) is not written.
if grep -q "member 1 (incarnation 0) joined" "$LOG0"; then fail "node 0 logged a membership info line at membership=warn"; fi
echo "ok: text lines with timestamp, level and logger; membership=warn hides the join: $(grep -m1 'training from' "$LOG0")"

# JSON lines: each one object with ts, level, logger, node and msg; the message without "node 1: ".
python3 - "$LOG1" <<'EOF' || fail "node 1's JSON lines: see above"
import json, re, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]
for o in objs:
    assert list(o) == ["ts", "level", "logger", "node", "msg"], o
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["ts"]), o
    assert o["node"] == 1 and o["level"] in ("info", "warn", "error", "debug", "trace"), o
msgs = [o["msg"] for o in objs]
assert "training from round 0 with 2 members" in msgs, msgs[:5]
assert any(o["logger"] == "membership" and re.fullmatch(r"member 0 \(incarnation 0\) joined \[t=\d+\]", o["msg"]) for o in objs), msgs[:5]
print("ok: %d JSON lines, e.g. %s" % (len(objs), lines[0]))
EOF

# GET /loglevel shows the levels; PUT changes them while the node runs.
levels=$(curl -sf "$(url 0 /loglevel)") || fail "GET /loglevel failed"
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); assert j["node"]=="info" and j["membership"]=="warn", j' "$levels" ||
  fail "GET /loglevel: $levels"
mixed() { grep -qE "^$TS debug \[node\] node 0: round [0-9]+ mixed: loss " "$LOG0"; }
if mixed; then fail "node 0 wrote debug lines at level info"; fi
out=$(curl -sf -X PUT "$(url 0 '/loglevel?logger=node&level=debug')") || fail "PUT /loglevel?logger=node&level=debug failed"
[[ "$out" == *'"node":"debug"'* && "$out" == *'"membership":"warn"'* ]] || fail "PUT answered '$out'"
wait_for 10 "node 0 to write its per-round debug lines" mixed
grep -q 'log levels set by PUT /loglevel?logger=node&level=debug' "$LOG0" || fail "node 0 did not log the change"
[[ "$(curl -sf "$(url 0 /loglevel)")" == *'"node":"debug"'* ]] || fail "GET /loglevel after PUT: $(curl -s "$(url 0 /loglevel)")"
out=$(curl -sf -X PUT "$(url 0 '/loglevel?level=info')") || fail "PUT /loglevel?level=info failed"
[[ "$out" != *debug* && "$out" != *warn* ]] || fail "PUT level=info for all answered '$out'"
echo "ok: PUT /loglevel: node=debug shows the round lines ($(grep -cE 'round [0-9]+ mixed' "$LOG0") so far), then all info: $out"

code() { curl -s -o "$WORK/body" -w '%{http_code}' "$@"; }
[ "$(code -X PUT "$(url 0 '/loglevel?level=loud')")" = 400 ] || fail "level=loud: $(cat "$WORK/body")"
grep -q "level must be one of trace, debug, info, warn, error, off (got 'loud')" "$WORK/body" || fail "400 body: $(cat "$WORK/body")"
[ "$(code -X PUT "$(url 0 '/loglevel?logger=nope&level=info')")" = 400 ] || fail "logger=nope: $(cat "$WORK/body")"
[ "$(code -X PUT "$(url 0 '/loglevel')")" = 400 ] || fail "no level: $(cat "$WORK/body")"
[ "$(code -X PUT "$(url 0 /status)")" = 405 ] || fail "PUT /status: $(cat "$WORK/body")"
curl -s -D - -o /dev/null -X POST "$(url 0 /loglevel)" | grep -qi '^allow: GET, HEAD, PUT' || fail "POST /loglevel: no 405 with Allow: GET, HEAD, PUT"
echo "ok: bad level, unknown logger, no level -> 400; PUT elsewhere and POST -> 405"

# Not on loopback: a lone node serving every interface reads but refuses PUT.
start_node 2 "" "${args[@]}" --set cluster.nodes=1 --set node.http=0.0.0.0:0
wait_for 30 "node 2 to write its http_port file" test -s "$WORK/node-2/http_port"
[ "$(code -X PUT "$(url 2 '/loglevel?level=debug')")" = 403 ] || fail "PUT on a wildcard-bound server: $(cat "$WORK/body")"
[[ "$(curl -sf "$(url 2 /loglevel)")" == *'"node":"info"'* ]] || fail "node 2's levels changed or cannot be read"
echo "ok: a node whose HTTP server is not on loopback refuses PUT /loglevel with 403"

for i in 0 1 2; do kill -TERM "${NODE_PID[$i]}"; done
for i in 0 1 2; do wait_exit $i 30; done
grep -qE "^$TS info  \[node\] node 0: stopped at round [0-9]+, loss " "$LOG0" || fail "node 0's last line: $(tail -1 "$LOG0")"
echo "ok: nodes stopped; node 0's last line: $(tail -1 "$LOG0")"
