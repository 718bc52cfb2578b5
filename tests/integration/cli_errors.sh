#!/usr/bin/env bash
# Bad input never crashes gossipd: every case below must exit with code 2 and print exactly one line on
# stderr that names the problem (a key, a flag or a file). Usage: cli_errors.sh path/to/gossipd
set -u
GOSSIPD=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

# expect NAME PATTERN -- ARGS...: exit 2 (or $EXPECT_RC: 3 for a refusal), one stderr line matching PATTERN
expect() {
  local name=$1 pattern=$2
  shift 3
  "$GOSSIPD" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$? lines want=${EXPECT_RC:-2}
  lines=$(wc -l <"$TMP/err")
  if [ "$rc" -eq "$want" ] && [ "$lines" -eq 1 ] && grep -qE -- "$pattern" "$TMP/err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: exit $rc, $lines stderr lines, expected /$pattern/:"
    sed 's/^/  | /' "$TMP/err"
  fi
}

# expect_ok NAME PATTERN -- ARGS...: exit 0 within 20 s, stdout matching PATTERN
expect_ok() {
  local name=$1 pattern=$2
  shift 3
  timeout 20 "$GOSSIPD" "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [ "$rc" -eq 0 ] && { [ -z "$pattern" ] || grep -qE -- "$pattern" "$TMP/out"; }; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL $name: exit $rc, expected stdout /$pattern/:"
    head -3 "$TMP/out" "$TMP/err" | sed 's/^/  | /'
  fi
}

printf 'a,b,label\n1,2,0\n3,4,1\n' >"$TMP/ok.csv"
printf 'a,b,c,label\n1,2,3,0\n3,4,5,1\n' >"$TMP/wide.csv"
printf 'a,b,label\n1,2,0\n3,oops,1\n' >"$TMP/bad.csv"
printf '[algorithm]\nname = "dpsgd"\nrounds = \n' >"$TMP/syntax.toml"
printf 'not an idx file' >"$TMP/bad.idx"
CSV=(--set data.format=csv --set data.header=true --set data.label_column=-1 --set model.kind=logistic
     --set cluster.nodes=2 --set algorithm.rounds=2)

expect "no command" "usage|command" -- 
expect "unknown command" "unknown command" -- frobnicate
expect "missing config" "nope.toml" -- sim --config "$TMP/nope.toml"
expect "toml syntax" "syntax.toml" -- sim --config "$TMP/syntax.toml"
expect "unknown key" "algorithm.lrr" -- sim --set algorithm.lrr=0.1
expect "unknown section" "bogus" -- sim --set bogus.key=1
expect "bad value" "algorithm.lr" -- sim --set algorithm.lr=-1
expect "wrong type" "algorithm.rounds" -- sim --set algorithm.rounds=many
expect "bad algorithm" "algorithm.name" -- sim --set algorithm.name=sgdx
expect "bad compressor" "compressor.name" -- sim --set compressor.name=zip
expect "malformed --set" "--set" -- sim --set algorithm.lr
expect "unknown sim flag" "--frob" -- sim --frob
expect "unreadable data" "nope-images" -- sim --set data.format=idx --set "data.train=$TMP/nope-images-idx3-ubyte.gz"
expect "idx labels not derivable" "train_labels" -- sim --set data.format=idx --set "data.train=$TMP/nope.gz"
expect "malformed idx" "bad.idx" -- sim --set data.format=idx --set "data.train=$TMP/bad.idx" --set "data.train_labels=$TMP/bad.idx"
expect "malformed csv" "bad.csv" -- sim "${CSV[@]}" --set "data.train=$TMP/bad.csv"
cp "$TMP/ok.csv" "$TMP/node0.csv"; cp "$TMP/ok.csv" "$TMP/node1.csv"
expect "missing node file" "node2.csv" -- sim "${CSV[@]}" --set cluster.nodes=3 --set "data.train=$TMP/node{id}.csv"
expect "dimension mismatch" "ok.csv|wide.csv|dimension|features" -- sim "${CSV[@]}" --set "data.train=$TMP/ok.csv" --set "data.test=$TMP/wide.csv"
expect "drop with replica" "drop" -- sim --set data.format=synthetic --set model.kind=logistic --set algorithm.name=lead --set compressor.name=fp32 --set faults.drop=0.1
expect "topo unknown kind" "topology|blob" -- topo --topology blob --nodes 4
expect "topo bad nodes" "nodes" -- topo --topology ring --nodes -3
expect "topo odd regular" "degree|regular" -- topo --topology random_regular --nodes 5 --degree 3
expect "unwritable out" "out" -- sim --set data.format=synthetic --set model.kind=logistic --out /nonexistent-dir/r.json
expect "absurd node count" "cluster.nodes" -- sim --set data.format=synthetic --set model.kind=logistic --set cluster.nodes=2000000
expect "absurd join id" "faults.join\[0\].node" -- sim --set data.format=synthetic --set model.kind=logistic --set 'faults.join=[{node=2000000,round=1}]'
expect "run beyond a membership" "cluster.nodes must be in \[1,65536\] for gossipd run" -- run --set cluster.nodes=100000
expect "run larger than memory" "cluster.nodes = 60000.*MemAvailable" -- sim --set data.format=synthetic --set model.kind=logistic --set cluster.nodes=60000 --set data.synthetic_dim=1000000
# --out is checked before the run, and nothing is written until the run completes (an interrupted run
# leaves no file; SIGTERM because a background job of a script ignores SIGINT).
SYN=(sim --set data.format=synthetic --set model.kind=logistic)
expect "out is a directory" "--out: .* is a directory" -- "${SYN[@]}" --out "$TMP"
expect "out parent missing" "--out: directory .* does not exist" -- "${SYN[@]}" --out "$TMP/no/such/r.json"
mkdir "$TMP/ro" && chmod 555 "$TMP/ro"
if [ "$(id -u)" -ne 0 ]; then
  expect "out parent read-only" "--out: cannot write in directory" -- "${SYN[@]}" --out "$TMP/ro/r.json"
fi
"$GOSSIPD" "${SYN[@]}" --set algorithm.rounds=10000000 --set cluster.nodes=64 --set data.synthetic_dim=5000 --out "$TMP/int.json" 2>"$TMP/int.err" &
simpid=$!
# Interrupt only once the run is under way (its header line is printed after set-up), so the check below
# is about an interrupted run, not one that never started. Deadline 60 s.
for _ in $(seq 600); do grep -q "^gossipd sim: 64 nodes" "$TMP/int.err" 2>/dev/null && break; sleep 0.1; done
grep -q "^gossipd sim: 64 nodes" "$TMP/int.err" || { fail=$((fail + 1)); echo "FAIL interrupted run: never started"; cat "$TMP/int.err"; }
kill -TERM "$simpid" 2>/dev/null
wait "$simpid" 2>/dev/null
if ls "$TMP"/int.json* >/dev/null 2>&1; then
  fail=$((fail + 1)); echo "FAIL interrupted run left a file: $(ls "$TMP"/int.json*)"
else
  pass=$((pass + 1))
fi
expect_ok "out written" "" -- "${SYN[@]}" --set algorithm.rounds=3 --out "$TMP/done.json"
[ -s "$TMP/done.json" ] && [ ! -e "$TMP/done.json.partial" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL out not written"; }

# Help, repeated flags, names that sim and topo share.
expect_ok "sim --help" "usage: gossipd sim" -- sim --help
expect_ok "sim -h" "usage: gossipd sim" -- sim -h
expect_ok "topo --help" "usage: gossipd topo" -- topo --help
expect_ok "help" "usage: gossipd" -- help
expect "config twice" "--config given twice" -- sim --config "$TMP/a.toml" --config "$TMP/b.toml"
expect_ok "topo mh" "weights metropolis" -- topo --topology ring --nodes 5 --weights mh
expect_ok "sim mh" "" -- "${SYN[@]}" --set algorithm.rounds=2 --set cluster.weights=mh
expect "sim bad weights" "^gossipd sim: cluster.weights: unknown rule 'mhh'" -- sim --set cluster.weights=mhh
expect "sim odd regular" "^gossipd sim: cluster.degree: " -- "${SYN[@]}" --set cluster.nodes=5 --set cluster.topology=random_regular --set cluster.degree=3
expect_ok "topo large n is fast" "not computed above" -- topo --topology random-regular --degree 4 --nodes 16384
printf 'a,b,label\n1,2,0\n3,4,1\n5,6,255\n' >"$TMP/gap.csv"
printf 'a,b,label\n1,2,0\n3,4,2\n' >"$TMP/test3.csv"
printf 'a,b,label\n1,2,0\n3,4,1\n5,6,2\n' >"$TMP/three.csv"
expect "label gap" "gap.csv: label 255 occurs but label 2 does not" -- sim "${CSV[@]}" --set model.kind=softmax --set "data.train=$TMP/gap.csv"
expect "test-only label" "test3.csv: label 2 does not occur" -- sim "${CSV[@]}" --set "data.train=$TMP/ok.csv" --set "data.test=$TMP/test3.csv"
# lgc and codistill's reference set: a missing block, a method without error feedback, a reference file for
# another method, one that is not there, and a sparsifier for predictions.
expect "lgc no block" "compressor.block: lgc needs" -- "${SYN[@]}" --set algorithm.name=choco --set compressor.name=lgc
expect "lgc with dpsgd" "compressor.name: lgc works with algorithm choco or deepsqueeze" -- "${SYN[@]}" --set compressor.name=lgc --set compressor.block=4 --set compressor.codes=2
printf 'a,b,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n' >"$TMP/ok2.csv"
REF=(sim "${CSV[@]}" --set model.kind=softmax --set "data.train=$TMP/ok2.csv" --set algorithm.estimator=sgd)
expect "reference for choco" "algorithm.distill_reference applies to algorithm.name = 'codistill'" -- "${REF[@]}" --set algorithm.name=choco --set "algorithm.distill_reference=$TMP/ok2.csv"
expect "reference missing" "algorithm.distill_reference \($TMP/none.csv\)" -- "${REF[@]}" --set algorithm.name=codistill --set "algorithm.distill_reference=$TMP/none.csv"
expect "reference sparsified" "codistill with a reference set sends class probabilities" -- "${REF[@]}" --set algorithm.name=codistill --set "algorithm.distill_reference=$TMP/ok2.csv" --set compressor.name=topk
expect_ok "reference ok" "" -- "${REF[@]}" --set algorithm.name=codistill --set "algorithm.distill_reference=$TMP/ok2.csv" --set algorithm.rounds=3 --set cluster.nodes=2
# Separable data, no L2: no finite optimum. A warning, and a run without rel.err, in seconds. Only with float64
# state: with float32 (core/real.h) the reference solver's steps fall below the iterate's rounding and it cannot
# tell this from an optimum (docs/algorithms.md, "Precision and memory"); the run must still end in seconds.
printf 'a,label\n-2,0\n-1,0\n1,1\n2,1\n-3,0\n3,1\n' >"$TMP/sep.csv"
if "$GOSSIPD" --version | grep -q "state float32"; then
  if timeout 60 "$GOSSIPD" sim "${CSV[@]}" --set algorithm.rounds=20 --set "data.train=$TMP/sep.csv" >"$TMP/out" 2>"$TMP/err"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL separable data (float32):"; sed 's/^/  | /' "$TMP/err"
  fi
elif timeout 60 "$GOSSIPD" sim "${CSV[@]}" --set algorithm.rounds=20 --set "data.train=$TMP/sep.csv" >"$TMP/out" 2>"$TMP/err" &&
   grep -q "reference optimum not found (data may be separable; set model.l2 > 0)" "$TMP/err" && ! grep -q "rel\.err " "$TMP/err"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL separable data:"; sed 's/^/  | /' "$TMP/err"
fi

# Security: keygen's flags, and a node whose keys are missing or not listed.
expect "keygen no out" "^gossipd keygen: --out DIR is required" -- keygen --nodes 3
expect "keygen bad count" "^gossipd keygen: --nodes must be in" -- keygen --out "$TMP/keys" --nodes 0
expect "keys dir missing" "cannot read $TMP/nokeys/cluster.key" -- run --set data.format=synthetic --set security.enable=true --set "security.keys_dir=$TMP/nokeys" --set "node.data_dir=$TMP/sec"
"$GOSSIPD" keygen --out "$TMP/keys" --nodes 2 >/dev/null
expect "node key missing" "node-5.key" -- run --set data.format=synthetic --set security.enable=true --set "security.keys_dir=$TMP/keys" --set node.id=5 --set "node.data_dir=$TMP/sec"
cp "$TMP/keys/node-1.key" "$TMP/keys/node-4.key"
expect "key not listed" "is not listed for node 4" -- run --set data.format=synthetic --set security.enable=true --set "security.keys_dir=$TMP/keys" --set node.id=4 --set "node.data_dir=$TMP/sec"

expect "seed without tcp://" "^gossipd run: cluster.seeds\[0\] must be tcp://HOST:PORT \(got '127.0.0.1:17000'\)" -- \
  run --set data.format=synthetic --set cluster.seeds=127.0.0.1:17000 --set "node.data_dir=$TMP/seedless"
# Operator safety: a second daemon on a data directory in use is refused before it touches anything there.
"$GOSSIPD" run --set data.format=synthetic --set cluster.nodes=1 --set algorithm.rounds=100000000 \
  --set "node.data_dir=$TMP/busy" --set node.listen=tcp://127.0.0.1:0 --set node.http= >"$TMP/busy.log" 2>&1 &
BUSY=$!
# status.json: written once the node runs (its endpoint file comes before the incarnation file, so
# waiting for the endpoint raced with the read of `incarnation` below: CI failed on it once).
for _ in $(seq 1 200); do [ -s "$TMP/busy/status.json" ] || ! kill -0 $BUSY 2>/dev/null && break; sleep 0.05; done
if [ -s "$TMP/busy/status.json" ]; then
  before=$(cat "$TMP/busy/incarnation")
  EXPECT_RC=3 expect "data_dir in use" "^gossipd run: node.data_dir '$TMP/busy' is in use by another gossipd \(pid $BUSY\)" -- \
    run --set data.format=synthetic --set cluster.nodes=1 --set "node.data_dir=$TMP/busy" --set node.listen=tcp://127.0.0.1:0
  [ "$(cat "$TMP/busy/incarnation")" = "$before" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the refused daemon rewrote incarnation"; }
else
  fail=$((fail + 1)); echo "FAIL data_dir in use: the first daemon wrote no status.json within 10 s:"; sed 's/^/  | /' "$TMP/busy.log"
fi
kill $BUSY 2>/dev/null; wait $BUSY 2>/dev/null
# A restart with another algorithm cannot resume the checkpoints: refused, and they stay (they were skipped,
# training began at round 0 and rotation deleted them).
ONE=(run --set data.format=synthetic --set cluster.nodes=1 --set algorithm.rounds=20 --set node.listen=tcp://127.0.0.1:0
     --set node.http= --set "node.data_dir=$TMP/kept")
expect_ok "first run writes checkpoints" "" -- "${ONE[@]}"
n=$(ls "$TMP/kept/checkpoints" | wc -l)
EXPECT_RC=3 expect "restart with another algorithm" "^gossipd run: node.data_dir: this node cannot resume (the checkpoint|any of the $n checkpoints) in '$TMP/kept/checkpoints' with this configuration \(newest, ckpt-[0-9]+.gsc: .*\); restart with" -- \
  "${ONE[@]}" --set algorithm.name=choco
[ "$n" -ge 1 ] && [ "$(ls "$TMP/kept/checkpoints" | wc -l)" = "$n" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL checkpoints after the refused restart: $n before, $(ls "$TMP/kept/checkpoints" | wc -l) after"; }
# The same run again on its finished directory: refused, the final model untouched; more rounds train on.
sum=$(md5sum <"$TMP/kept/model.npy")
EXPECT_RC=3 expect "rerun of a finished run" "^gossipd run: node.data_dir: the run in '$TMP/kept' is finished \(its newest checkpoint is at round 20, algorithm.rounds = 20" -- "${ONE[@]}"
[ "$(md5sum <"$TMP/kept/model.npy")" = "$sum" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL the refused rerun changed model.npy"; }
expect_ok "more rounds train on" "resumed at round 20" -- "${ONE[@]}" --set algorithm.rounds=30
# A directory an earlier gossipd wrote (another frame version in its identity) goes on: the versions decide
# who can talk, not what the directory holds. The file then names this version.
sed -i 's/^\(protocol\.frame_version="\?\)[0-9]*/\13/' "$TMP/kept/cluster"
grep -qE '^protocol\.frame_version="?3' "$TMP/kept/cluster" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL no frame version line to change in $TMP/kept/cluster"; }
expect_ok "a directory of an earlier wire version goes on" "written by another version of the wire protocol \(protocol\.frame_version is \"?[0-9]+\"? now, \"?3\"? before\)" -- \
  "${ONE[@]}" --set algorithm.rounds=32
grep -qE '^protocol\.frame_version="?3' "$TMP/kept/cluster" && { fail=$((fail + 1)); echo "FAIL the cluster file still names the earlier frame version"; } || pass=$((pass + 1))
# The directory belongs to the cluster that ran in it: another cluster.nodes (a re-cut of every shard), or
# here another name, is refused with the keys that differ, though its checkpoints would load.
EXPECT_RC=3 expect "another cluster on the directory" "^gossipd run: node.data_dir '$TMP/kept' belongs to another cluster: cluster.name is \"other\" in this configuration, \"gossipd\" in the directory\. .*delete '$TMP/kept/cluster' to take the directory over" -- \
  "${ONE[@]}" --set algorithm.rounds=40 --set cluster.name=other
# ...and to the node that ran in it: another node.id is refused even where no checkpoint says so.
rm -f "$TMP/kept/checkpoints/"*
EXPECT_RC=3 expect "another node on the directory" "^gossipd run: node.data_dir '$TMP/kept' belongs to another node: node.id is 5 in this configuration, 0 in the directory\." -- \
  "${ONE[@]}" --set algorithm.rounds=40 --set node.id=5
# --fresh: a new run in the same directory, another cluster name included; the earlier run is moved to
# previous/<UTC time>/, byte for byte, and `gossipd inspect` tells the two apart.
old_sums=$(cd "$TMP/kept" && md5sum cluster model.npy status.json)
expect_ok "--fresh starts a new run" "moved the earlier run in '$TMP/kept' \([0-9]+ entries\) to '$TMP/kept/previous/[0-9T]+Z'" -- \
  "${ONE[@]}" --set algorithm.rounds=40 --set cluster.name=other --fresh
prev=$(ls -d "$TMP/kept/previous/"*/ 2>/dev/null | head -n 1)
if [ -n "$prev" ] && [ "$(cd "$prev" && md5sum cluster model.npy status.json)" = "$old_sums" ] &&
   [ -f "$TMP/kept/checkpoints/ckpt-40.gsc" ] && grep -q 'cluster.name="other"' "$TMP/kept/cluster"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL --fresh: previous run in '$prev': $(ls "$prev" 2>&1 | tr '\n' ' '), new checkpoints: $(ls "$TMP/kept/checkpoints" | tr '\n' ' ')"
fi
expect_ok "inspect the finished fresh run" '"finished": true' -- inspect "$TMP/kept" --json
expect_ok "inspect says so in words" "the run is finished" -- inspect "$TMP/kept"
expect "inspect a directory no node ran in" "holds none of the files a node writes" -- inspect "$TMP"

# SIGTERM and SIGHUP while the node waits for its trainer (during construction): a clean stop, exit 0 (the
# handlers were installed after construction, so the signal killed it: exit 143 / 129).
for sig in TERM HUP; do
  "$GOSSIPD" run --set trainer.enable=true --set cluster.nodes=1 --set "node.data_dir=$TMP/wait-$sig" \
    --set node.listen=tcp://127.0.0.1:0 --set node.http= >"$TMP/wait-$sig.log" 2>&1 &
  W=$!
  for _ in $(seq 1 200); do grep -q "waiting for a trainer" "$TMP/wait-$sig.log" 2>/dev/null || ! kill -0 $W 2>/dev/null && break; sleep 0.05; done
  kill -$sig $W
  wait $W
  rc=$?
  if [ $rc -eq 0 ] && grep -q "stopped before a trainer attached" "$TMP/wait-$sig.log"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL SIG$sig while waiting for a trainer: exit $rc"; sed 's/^/  | /' "$TMP/wait-$sig.log"
  fi
done

# Seeds that never answer (a closed port, a host that does not resolve): a line per unanswered join
# attempt, then exit 4 after cluster.start_timeout_ms with one line naming the seeds (issue 28: the node
# stayed joining forever with nothing logged).
timeout 20 "$GOSSIPD" run --set data.format=synthetic --set model.kind=logistic --set "node.data_dir=$TMP/noseed" \
  --set node.listen=tcp://127.0.0.1:0 --set node.http= --set cluster.start_timeout_ms=1500 \
  --set 'cluster.seeds=["tcp://127.0.0.1:1", "tcp://no-such-host.invalid:7000"]' >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 4 ] && tail -n 1 "$TMP/err" | grep -qE '^gossipd run: no seed answered within cluster.start_timeout_ms \(1500 ms; tried tcp://127.0.0.1:1, tcp://no-such-host.invalid:7000 [0-9]+ times\)' &&
   grep -q "no answer yet from tcp://127.0.0.1:1, tcp://no-such-host.invalid:7000 (1 unanswered join attempts)" "$TMP/out" "$TMP/err"; then
  pass=$((pass + 1))
else
  fail=$((fail + 1)); echo "FAIL unreachable seeds: exit $rc (expected 4):"; tail -n 4 "$TMP/out" "$TMP/err" | sed 's/^/  | /'
fi

# data.max_test: the test set is cut to its first rows (it was parsed and ignored). With 7 test rows every
# accuracy is a multiple of 1/7.
FM=/usr/share/datasets/fashion-mnist
if [ -r "$FM/t10k-images-idx3-ubyte.gz" ]; then
  out=$("$GOSSIPD" sim --set data.format=idx --set "data.train=$FM/train-images-idx3-ubyte.gz" \
          --set "data.test=$FM/t10k-images-idx3-ubyte.gz" --set data.max_train=2000 --set data.max_test=7 \
          --set cluster.nodes=2 --set algorithm.rounds=5 --set sim.eval_every=5 2>&1 | grep -o 'acc *[0-9.]*%' | tail -n 1 | grep -o '[0-9.]*')
  if [ -n "$out" ] && python3 -c "import sys; a=float(sys.argv[1])*7/100; sys.exit(abs(a-round(a)) > 0.01)" "$out"; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1)); echo "FAIL data.max_test=7: accuracy '$out'% is not a multiple of 1/7"
  fi
fi
expect_ok "version" "^gossipd [0-9]+\.[0-9]+\.[0-9]+ \(frame protocol [0-9]+, membership protocol [0-9]+, state float(32|64)\)$" -- --version

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
