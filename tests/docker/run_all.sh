#!/usr/bin/env bash
# make docker-test: every docker test, one after the other (they share the machine's cores). Needs the
# gossipd:latest image (make docker-image). RESULTS_DIR, when set, receives each test's figures as JSON.
set -euo pipefail
cd "$(dirname "$0")/../.."
R=${RESULTS_DIR:-}
run() {
  local name=$1 t0=$SECONDS
  shift
  echo "== docker test: $name"
  RESULT_JSON=${R:+$R/docker_$name.json} "$@"
  echo "== docker test: $name passed in $(( (SECONDS - t0) / 60 )) min $(( (SECONDS - t0) % 60 )) s"
}
run train_ring8 tests/docker/compose_train.sh docker/ring8.yaml
run train_grid3x3 tests/docker/compose_train.sh docker/grid3x3.yaml
run train_random12 tests/docker/compose_train.sh docker/random12.yaml
run chaos tests/docker/chaos.sh docker/ring8.yaml
run swarm tests/docker/swarm.sh docker/ring8.yaml
echo "== docker tests: all passed"
