#!/usr/bin/env bash
# Wall time of the 1,024-node scale run (docs/results.md, "Scale") for two gossipd binaries, alternated
# PAIRS times in one session so both see the same machine; JSON to bench/results/sim_speed.json.
#   bench/sim_speed.sh OLD_GOSSIPD NEW_GOSSIPD [PAIRS]
# e.g. OLD = a build of an earlier commit (git worktree add --detach DIR REV; cmake; build gossipd).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$1 new=$2 pairs=${3:-2}
F=experiments/fmnist_softmax.toml
SC=(--set cluster.nodes=1024 --set algorithm.rounds=100 --set sim.eval_every=25 --set algorithm.name=deepsqueeze
    --set algorithm.eta=0.02 --set compressor.name=topk --set compressor.ratio=0.01 --set cluster.topology=exponential
    --set cluster.weights=uniform --set sim.threads=1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rows=()
for i in $(seq "$pairs"); do
  for which in old new; do
    bin=$old
    [ $which = new ] && bin=$new
    /usr/bin/time -f "%e %M" -o "$tmp/t" "$bin" sim --config "$F" "${SC[@]}" --out "$tmp/$which.json" 2>/dev/null
    read -r wall rss <"$tmp/t"
    echo "pair $i $which: ${wall}s, peak ${rss} KiB" >&2
    rows+=("{\"pair\": $i, \"binary\": \"$which\", \"wall_s\": $wall, \"peak_rss_kib\": $rss}")
  done
done
# The final record's fields that both binaries write (a newer one may add fields), except wall time.
same=$(python3 -c "
import json, sys
a, b = (json.load(open(p))['records'][-1] for p in sys.argv[1:])
keys = (set(a) & set(b)) - {'seconds'}
print('true' if all(a[k] == b[k] for k in keys) else 'false')" "$tmp/old.json" "$tmp/new.json")
mkdir -p bench/results
{
  echo "{\"run\": \"sim 1024 nodes exponential, deepsqueeze top-1%, 100 rounds, 1 thread\","
  echo " \"same_final_record\": $same,"
  echo " \"runs\": ["
  (IFS=,; echo "  ${rows[*]}")
  echo " ]}"
} >bench/results/sim_speed.json
python3 -c "
import json; d=json.load(open('bench/results/sim_speed.json'))
for p in sorted({r['pair'] for r in d['runs']}):
    o,n=(next(r for r in d['runs'] if r['pair']==p and r['binary']==b) for b in ('old','new'))
    print(f'pair {p}: new/old wall {n[\"wall_s\"]/o[\"wall_s\"]:.3f}, rss {n[\"peak_rss_kib\"]/o[\"peak_rss_kib\"]:.3f}')
print('final record identical:', d['same_final_record'])"
