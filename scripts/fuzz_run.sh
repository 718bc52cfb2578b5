#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each (build/fuzz from the fuzz preset), starting from the
# committed seeds and past crashes; new interesting inputs go to build/fuzz/corpus/<target> (not to the
# repo). Prints and writes a JSON summary (runs and executions per second per target); exits 1 when a
# target crashed, with the crashing input under build/fuzz/crashes/ (add it to fuzz/regressions/<target>/).
# Usage: scripts/fuzz_run.sh SECONDS [OUT.json]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:?usage: scripts/fuzz_run.sh SECONDS [OUT.json]}
OUT=${2:-build/fuzz/fuzz_summary.json}
mkdir -p build/fuzz/crashes
rows=(); failed=0
for t in frame codecs engine checkpoint config; do
  bin=build/fuzz/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz_run: $bin is missing (make fuzz builds it)"; exit 2; }
  work=build/fuzz/corpus/$t
  mkdir -p "$work"
  log=build/fuzz/$t.log
  echo "== fuzz $t for ${SECONDS_EACH}s"
  rc=0
  "$bin" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -artifact_prefix="build/fuzz/crashes/$t-" \
    -rss_limit_mb=2048 -timeout=10 "$work" "fuzz/corpus/$t" "fuzz/regressions/$t" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  if [ "$rc" != 0 ]; then
    failed=1
    echo "fuzz $t FAILED (exit $rc):"; grep -E "ERROR|fuzz target|SUMMARY|Test unit written" "$log" | head -8
  fi
  echo "   runs ${runs:-0} (${rate:-?}/s) in ${SECONDS_EACH} s, coverage ${cov:-?} edges, peak RSS ${rss:-?} MB"
  rows+=("{\"target\": \"$t\", \"seconds\": ${SECONDS_EACH}, \"runs\": ${runs:-0}, \"exec_per_sec\": ${rate:-0}, \"coverage_edges\": ${cov:-0}, \"peak_rss_mb\": ${rss:-0}, \"crashed\": $([ $rc = 0 ] && echo false || echo true)}")
done
mkdir -p "$(dirname "$OUT")"
( IFS=,; echo "[${rows[*]}]" ) | /usr/bin/python3 -m json.tool >"$OUT"
echo "summary: $OUT"
exit $failed
