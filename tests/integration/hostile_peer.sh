#!/usr/bin/env bash
# A hostile peer against a running daemon (tests/integration/hostile_peer.py over ZeroMQ): every bad
# input is refused and counted under its reason in status.json's rejected_by_reason, nothing else is
# counted, training goes on, and the daemon's memory stays bounded under a flood of valid-looking frames.
#
# Two daemons (D-PSGD, fp32, synthetic data); node 0 is attacked with frames that claim to come from its
# neighbour, node 1. For the payload attacks node 1 is stopped (SIGSTOP), so node 0 is waiting for node
# 1's message of a known round and the forged frames are the ones it mixes: each is refused by the
# decoder (bad_payload) and mixed as missing. Membership timeouts are long, so the stop is no death.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
HOSTILE=(/usr/bin/python3 "$(dirname "$0")/hostile_peer.py")
/usr/bin/python3 -c "import zmq" 2>/dev/null || fail "python3-zmq is missing (make deps installs it)"
args=(--set data.format=synthetic --set model.kind=logistic --set model.l2=0.01 --set cluster.nodes=2
      --set cluster.topology=ring --set algorithm.name=dpsgd --set compressor.name=fp32
      --set algorithm.rounds=100000000 --set algorithm.lr=0.1 --set algorithm.round_timeout_ms=60000
      --set cluster.suspicion_mult=300 --set node.checkpoint_every=20 --set monitor.eval_every=0
      --set monitor.status_every_ms=50)
start_cluster 2 "${args[@]}"
round_of() { status_field "$1" round; }
at_least() { local r; r=$(round_of "$1") && [ "$r" -ge "$2" ]; }
for i in 0 1; do wait_for 30 "node $i to pass round 100" at_least $i 100; done
wait_for 10 "node 0 to write model.json" test -s "$WORK/node-0/model.json"
EP=$(endpoint_of 0)
DIM=$(/usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['dim'])" "$WORK/node-0/model.json")
PID0=${NODE_PID[0]}

# attack NAME EXPECTED ARGS...: runs one attack and waits until exactly EXPECTED was counted.
attack() {
  local name=$1 want=$2; shift 2
  local before; before=$(reasons 0)
  "${HOSTILE[@]}" "$EP" "$name" --sender 1 --target 0 --dim "$DIM" "$@"
  if ! wait_for_quiet 60 delta_is 0 "$before" "$want"; then
    fail "$name: expected the counts to grow by exactly '$want'; before: '$before', now: '$(reasons 0)'"
  fi
  echo "ok: $name -> $want"
}

# While both nodes train: inputs refused whatever the round.
# 20 random messages: 15 of 1-4 parts other than a frame's 2 (malformed_message), 5 of 2 parts whose
# random header fails the magic or the length check; how those 5 split depends on the random bytes.
attack random_bytes "malformed_message=15 bad_magic|short=5"
attack truncated "length_mismatch=1 short=5"
attack huge_length "too_large=2"
attack wrong_version "bad_version=4"
attack bad_checksums "bad_header_crc=1 bad_payload_crc=1"
attack impersonation "unknown_sender=3"
attack bad_membership "bad_membership=4"
R=$(round_of 0)
# The far-ahead frames, taken as node 1's latest, let node 0 mix rounds without waiting for node 1 until
# node 1's next real frame (docs/engine.md); node 1's frames of those rounds then arrive late, hence "late"
# at least the forged round-0 one. How many depends on the machine's load (524 once in CI, after this
# attack's counts had gone quiet), so this runs after every attack that counts exactly; the flood below
# allows any number of late frames.
attack far_rounds "bad_round=2 late>=1" --round "$R"

# A flood of valid-looking frames (checksummed, the neighbour's id, rounds far ahead): all refused,
# and memory stays bounded (the transport's inbox is capped; refused frames are freed at once).
FLOOD=200000
rss() { awk '/^VmRSS/ {print $2}' "/proc/$PID0/status"; }
rss_before=$(rss)
before=$(reasons 0)
"${HOSTILE[@]}" "$EP" flood --sender 1 --dim "$DIM" --round "$R" --count $FLOOD --hold "$WORK/flood.done" &
FLOODER=$!
PIDS+=($FLOODER)
# Each frame is refused by the engine (bad_round) or, when the node's inbox is full, dropped on arrival;
# node 1's own frames that arrive while the inbox is full are dropped too, hence "at least"; and node 0
# may mix rounds without node 1 while forged far-ahead frames are node 1's latest, so node 1's real frames
# of those rounds are refused as late (any number).
wait_for_quiet 120 delta_is 0 "$before" "bad_round|inbox_full>=$FLOOD late>=0" ||
  fail "flood: expected bad_round and inbox_full to grow by $FLOOD together; before: '$before', now: '$(reasons 0)'"
touch "$WORK/flood.done"
wait $FLOODER || fail "the flooding client failed"
echo "ok: flood -> bad_round|inbox_full=$FLOOD ($(reasons 0 | grep -o 'inbox_full=[0-9]*' || echo inbox_full=0))"
rss_after=$(rss)
echo "flood of $FLOOD frames: node 0 RSS ${rss_before} kB before, ${rss_after} kB after"
# Were the frames kept, they would take over 60 MB: 200,000 x (224 payload bytes and the 52-byte header,
# each in its own allocation, plus a shared_ptr's control block). What does grow is libzmq's receive pipe,
# unbounded by design (rcvhwm 0, transport/zmq/sockets.cc), which holds the part of the flood the node has
# not drained yet: 5-10 MB on a quiet machine, 22-25 MB when the machine is busy, and 35 MB once in a
# 20-run loop at load 12.6 (which failed the earlier 32 MB bound). The bound is set below what keeping the
# frames would take, not at what a quiet machine shows; a finite rcvhwm is the fix (docs/design.md,
# "libzmq 4.3.4"), not yet made.
[ $((rss_after - rss_before)) -lt 49152 ] || fail "RSS grew by $((rss_after - rss_before)) kB under the flood"

# Payloads: stop node 1; node 0 then waits in round m for node 1's message, so the forged frames for
# rounds m, m+1, m+2 are the ones it mixes: each refused by the decoder and mixed as missing.
kill -STOP "${NODE_PID[1]}"
stable() { local a; a=$(round_of 0); sleep 0.3; [ "$a" = "$(round_of 0)" ]; }
wait_for 20 "node 0 to stop advancing while node 1 is stopped" stable
M=$(( $(round_of 0) - 1 ))  # status.json's round is the next round; node 0 is mixing the one before
missing_before=$(status_field 0 messages_missing)
attack bad_payloads "bad_payload=3" --round "$M"
wait_for 10 "node 0 to mix rounds $M..$((M + 2)) without node 1" at_least 0 $((M + 4))
attack wrong_dimension "bad_payload=1" --round $((M + 3))
wait_for 10 "node 0 to mix round $((M + 3)) without node 1" at_least 0 $((M + 5))
missing=$(( $(status_field 0 messages_missing) - missing_before ))
[ "$missing" = 4 ] || fail "expected 4 messages mixed as missing, got $missing"
# Replays: the same frame three times for the round node 0 now waits in: one is mixed, two are refused.
attack replayed "duplicate|late=2" --round $((M + 4))
wait_for 10 "node 0 to mix round $((M + 4))" at_least 0 $((M + 6))
kill -CONT "${NODE_PID[1]}"

# Training goes on at both nodes, and neither died.
r0=$(round_of 0); r1=$(round_of 1)
for i in 0 1; do wait_for 30 "node $i to train 100 more rounds" at_least $i $(( (i == 0 ? r0 : r1) + 100 )); done
for i in 0 1; do kill -0 "${NODE_PID[$i]}" 2>/dev/null || fail "node $i died"; done
[ "$(status_field 0 deaths)" = 0 ] || fail "node 0 declared a death"
echo "ok: both nodes trained on; rejected by reason at node 0: $(reasons 0)"
