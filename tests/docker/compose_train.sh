#!/usr/bin/env bash
# `docker-compose up` of a ready-made cluster file trains Fashion-MNIST: every container becomes healthy,
# every node runs all its rounds and exits 0, and the cluster's accuracy rises from each node's first
# evaluation to its last (read from the daemons' logs; their status.json gives rounds and state).
#   tests/docker/compose_train.sh docker/ring8.yaml [ROUNDS]
source "$(dirname "$0")/lib.sh"
FILE=$1
ROUNDS=${2:-3000}
export GOSSIPD_ROUNDS=$ROUNDS
PROJECT=gossipd-train-$(basename "$FILE" .yaml)-$$
need_image
log "up: $FILE as project $PROJECT, $ROUNDS rounds"
compose_start "$ROOT/$FILE"
N=$(nodes_in)
for ((i = 0; i < N; i++)); do wait_for 240 "node-$i to be healthy (gossipd health)" was_healthy "$(ctr $i)"; done
log "all $N containers healthy"
for ((i = 0; i < N; i++)); do wait_for 900 "node-$i to finish $ROUNDS rounds and exit" exited "$(ctr $i)"; done

firsts=() lasts=()
for ((i = 0; i < N; i++)); do
  c=$(ctr $i)
  [ "$(exit_code "$c")" = 0 ] || fail "node-$i exited with code $(exit_code "$c")"
  [ "$(status_field "$c" state)" = done ] || fail "node-$i ended in state $(status_field "$c" state)"
  [ "$(round_of "$c")" = "$ROUNDS" ] || fail "node-$i stopped at round $(round_of "$c"), not $ROUNDS"
  read -r first last < <(accuracy_first_last "$c") || fail "node-$i printed no accuracy"
  firsts+=("$first") lasts+=("$last")
done
deaths=0
for ((i = 0; i < N; i++)); do deaths=$((deaths + $(docker logs "$(ctr $i)" 2>&1 | grep -c "declared dead" || true))); done
summary=$($PY - "${firsts[*]}" "${lasts[*]}" <<'PY'
import sys
first = [float(x) for x in sys.argv[1].split()]
last = [float(x) for x in sys.argv[2].split()]
mf, ml = sum(first) / len(first), sum(last) / len(last)
print(f"{mf:.2f} {ml:.2f} {min(last):.2f} {max(last):.2f}")
PY
)
read -r mean_first mean_last min_last max_last <<<"$summary"
log "accuracy (mean of $N nodes): first evaluation $mean_first%, final $mean_last% (nodes $min_last-$max_last%); $deaths false death verdicts in the logs"
$PY -c 'import sys; f,l=map(float,sys.argv[1:]); sys.exit(0 if l >= f + 1 and l > 50 else 1)' "$mean_first" "$mean_last" ||
  fail "accuracy did not rise: mean first $mean_first%, mean final $mean_last% (want +1 point and above 50%)"
if [ -n "${RESULT_JSON:-}" ]; then
  $PY -c 'import json,sys; json.dump({"file": sys.argv[1], "nodes": int(sys.argv[2]), "rounds": int(sys.argv[3]),
    "accuracy_first_mean": float(sys.argv[4]), "accuracy_final_mean": float(sys.argv[5]),
    "accuracy_final_min": float(sys.argv[6]), "accuracy_final_max": float(sys.argv[7]),
    "false_deaths": int(sys.argv[9])}, open(sys.argv[8], "w"), indent=1)' \
    "$FILE" "$N" "$ROUNDS" "$mean_first" "$mean_last" "$min_last" "$max_last" "$RESULT_JSON" "$deaths"
fi
echo "ok: $FILE trained: accuracy $mean_first% -> $mean_last%"
