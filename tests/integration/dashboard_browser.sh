#!/usr/bin/env bash
# The dashboard (docs/monitoring.md#dashboard) in a real browser, headless Chromium driven by Selenium
# (dashboard_browser.py). First against a fake /cluster (members without a summary, null accuracy and
# spectral gap, a late joiner, a 503 and the recovery from it), then against 8 real daemons on a ring:
# node 0 serves the embedded files byte for byte; its page draws 8 member circles and the ring's 8 edges,
# loss curves for every node that grow as rounds pass, and the join events; after kill -9 of node 3 it
# shows node 3 dead; after node 3 restarts it shows it alive again; no JavaScript error reaches the
# console; after kill -9 of node 0 itself the page says "disconnected". Screenshots of each stage are
# kept in $DASHBOARD_ARTEFACTS (default: dashboard-artefacts in the working directory, for ctest the
# build's tests/ directory). DASHBOARD_SCREENSHOT=path saves a full-page PNG of the real cluster's page
# (node 3 dead) for the README, with `make demo`'s configuration.
GOSSIPD=$1
source "$(dirname "$0")/daemon_lib.sh"
PY=/usr/bin/python3  # Debian's, which has python3-selenium (not a python3 earlier in PATH)
for f in /usr/bin/chromium /usr/bin/chromedriver; do
  [ -x "$f" ] || { echo "SKIP: $f is not installed (Debian packages chromium and chromium-driver; make deps installs them)"; exit 77; }
done
"$PY" -c 'import selenium' 2>/dev/null || { echo "SKIP: python3-selenium is not installed (make deps installs it)"; exit 77; }
HERE=$(cd "$(dirname "$0")" && pwd)
DASH="$HERE/../../daemon/monitor/dashboard"
# Each run has its own deadline on top of the waits inside (which name what they awaited); SIGTERM lets
# the script end its browser on the way out.
browser() { timeout -k 10 "$1" "$PY" "$HERE/dashboard_browser.py" --dashboard-dir "$DASH" --work "$WORK" "${@:2}"; }

browser 60 --fake || fail "the dashboard against a fake /cluster (see above)"

N=8
deadline=240
ARTEFACTS=${DASHBOARD_ARTEFACTS:-$PWD/dashboard-artefacts}
# Synthetic data: quick to start, but no test set (so no accuracy curve); CHOCO with gamma 0.2 converges
# (gamma 1 with top-10% diverges). For the screenshot, `make demo`'s Fashion-MNIST, DeepSqueeze + top-1%,
# which has accuracy curves too.
if [ -n "${DASHBOARD_SCREENSHOT:-}" ]; then
  args=(--config "$HERE/../../examples/demo_cluster.toml" --set cluster.nodes=$N --set algorithm.rounds=100000000
        --set node.checkpoint_every=0)
  deadline=$((deadline + ${DASHBOARD_SCREENSHOT_WAIT:-30}))
else
  args=(--set data.format=synthetic --set model.kind=logistic --set cluster.nodes=$N --set cluster.topology=ring
        --set algorithm.name=choco --set algorithm.gamma=0.2 --set compressor.name=topk --set compressor.ratio=0.1
        --set algorithm.rounds=100000000)
fi
start_cluster $N "${args[@]}"
for ((i = 0; i < N; i++)); do wait_for 30 "node $i to write its http_port file" test -s "$WORK/node-$i/http_port"; done
url="http://127.0.0.1:$(cat "$WORK/node-0/http_port")/"
echo "ok: $N daemons, node 0's dashboard at $url"
# The restart of node 3 (run by the browser script once node 3 is shown dead): the same command line as
# its first start, from its data directory (a new incarnation); its pid goes to a file for the cleanup.
{
  printf 'cd %q && ' "$PWD"
  printf '%q ' "$GOSSIPD" run "${args[@]}" --set node.id=3 --set node.data_dir="$WORK/node-3" --set node.listen=tcp://127.0.0.1:0 \
    --set "cluster.seeds=[\"$(endpoint_of 0)\"]"
  printf '>>%q 2>&1 & echo $! >%q\n' "$WORK/node-3/log" "$WORK/node-3.restarted.pid"
} >"$WORK/restart-3.sh"
rc=0
browser $deadline --url "$url" --nodes $N --edges $N --victim 3 --victim-pid "${NODE_PID[3]}" --server-pid "${NODE_PID[0]}" \
  --restart-cmd "bash $WORK/restart-3.sh" --artefacts "$ARTEFACTS" || rc=$?
[ -s "$WORK/node-3.restarted.pid" ] && PIDS+=("$(cat "$WORK/node-3.restarted.pid")")
[ "$rc" = 0 ] || fail "the dashboard of node 0 (see above)"
