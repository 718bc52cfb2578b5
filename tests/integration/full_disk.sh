#!/usr/bin/env bash
# A full disk under a running node (node.data_dir on a 2 MB tmpfs, filled while it trains): the node
# leaves the cluster cleanly (its peer sees a leave, not a death), status.json says "failed" (and the error), it exits 2
# with one line naming the file, the cause and the newest checkpoint on disk; freed, it resumes from that
# checkpoint. Issue 28: "internal error", exit 1, no leave, status.json at "joining", health healthy.
# Needs root for the tmpfs mount: exits 77 (ctest SKIP) with a line saying so otherwise.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
MNT="$WORK/small"
mkdir -p "$MNT"
if [ "$(id -u)" != 0 ] || ! mount -t tmpfs -o size=2m tmpfs "$MNT" 2>/dev/null; then
  echo "SKIP: mounting a tmpfs needs root"; exit 77
fi
trap 'rc=$?; umount -l "$MNT" 2>/dev/null; (exit $rc); cleanup' EXIT
args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=2 --set cluster.topology=ring
      --set algorithm.name=dpsgd --set algorithm.rounds=100000000 --set monitor.eval_every=0
      --set monitor.status_every_ms=100 --set node.checkpoint_every=200)
start_node 0 "" "${args[@]}"
wait_for 20 "node 0 to write its endpoint" test -s "$WORK/node-0/endpoint"
seed=$(endpoint_of 0)
start_disk_node() {
  "$GOSSIPD" run "${args[@]}" --set node.id=1 --set node.data_dir="$MNT/node-1" --set node.listen=tcp://127.0.0.1:0 \
    --set "cluster.seeds=[\"$seed\"]" >>"$WORK/node-1.out" 2>>"$WORK/node-1.err" &
  NODE_PID[1]=$!
  PIDS+=($!)
}
start_disk_node
round_of() { status_field "$1" round; }
disk_round() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['round'])" "$MNT/node-1/status.json" 2>/dev/null; }
past() { local r; r=$(disk_round) && [ "$r" -ge "$1" ]; }
wait_for 30 "node 1 to pass round 500 (two checkpoints on its small disk)" past 500
dd if=/dev/zero of="$MNT/filler" bs=64k 2>/dev/null || true  # fills it: "No space left on device" is the point
wait_for 30 "node 1 to exit on its full disk" exited "${NODE_PID[1]}"
rc=0; wait "${NODE_PID[1]}" || rc=$?
[ "$rc" = 2 ] || fail "node 1 exited with code $rc on a full disk, expected 2: $(tail -n 2 "$WORK/node-1.err")"
line=$(tail -n 1 "$WORK/node-1.err")
[[ "$line" =~ ^gossipd\ run:\ .*No\ space\ left\ on\ device\;\ the\ node\ left\ the\ cluster\..*newest\ checkpoint\ it\ wrote\ is\ for\ round\ ([0-9]+)$ ]] ||
  fail "node 1's last line: $line"
newest=${BASH_REMATCH[1]}
state=$(python3 -c "import json,sys; s = json.load(open(sys.argv[1])); print(s['state'], 'space' in (s['error'] or ''))" "$MNT/node-1/status.json")
[ "$state" = "failed True" ] || fail "node 1's status.json says '$state' after leaving on a full disk (expected failed, with the error)"
rc=0; health=$("$GOSSIPD" health --dir "$MNT/node-1") || rc=$?
[ "$rc" = 1 ] || fail "gossipd health says $rc for the node that left on a full disk"
[[ "$health" == *"failed: "*"No space left on device"* ]] || fail "gossipd health does not say why: $health"
wait_for 10 "node 0 to see node 1 leave" grep -q "member 1 (incarnation 0) left" "$WORK/node-0/log"
if grep -q "member 1 (incarnation 0) declared dead" "$WORK/node-0/log"; then fail "node 0 took node 1's leave for a death"; fi
echo "ok: full disk: exit 2, left cleanly, status failed with the error, newest checkpoint round $newest"
rm -f "$MNT/filler"
start_disk_node
wait_for 30 "node 1 to resume from its checkpoint of round $newest" grep -q "resumed at round $newest" "$WORK/node-1.out"
echo "ok: space freed, node 1 resumed at round $newest"
for id in 0 1; do kill -TERM "${NODE_PID[$id]}"; done
for id in 0 1; do wait_exit $id 20; done
