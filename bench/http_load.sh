#!/usr/bin/env bash
# Does bad HTTP slow the round loop? Two daemons (D-PSGD, logistic regression on synthetic data) run on
# CPU 0; a load generator on CPU 1 hits node 0's HTTP server with what docs/monitoring.md lists as hostile:
# a thousand idle connections (4x the cap: the server evicts), slow readers taking /chart.min.js one byte
# a second, and a stream of bad requests (unknown paths, a DELETE, 20 kB headers). Node 0's mean round time
# and CPU time per round are measured in three windows of the same run: quiet, under load, quiet again.
# Pinning keeps the generator's own CPU out of the daemons' core, so what is left is the cost of node 0's
# HTTP thread (which shares the daemons' core) and of the kernel's work for its sockets.
#   bench/http_load.sh BUILD_DIR [OUT.json]; env WINDOW (15 s per window)
set -euo pipefail
BUILD=$(realpath "$1")
GOSSIPD=$BUILD/daemon/gossipd
OUT=${2:-bench/results/http_load.json}
WINDOW=${WINDOW:-15}
[ "$(nproc)" -ge 2 ] || { echo "http_load: needs 2 CPUs (daemons on one, the load on the other)"; exit 1; }
W=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$W"' EXIT
taskset -c 0 "$GOSSIPD" cluster --nodes 2 --http-port 0 --dir "$W/cl" --set data.format=synthetic \
  --set model.kind=logistic --set algorithm.name=dpsgd --set algorithm.rounds=1000000000 \
  --set monitor.eval_every=0 --set node.checkpoint_every=0 --set monitor.status_every_ms=100 >"$W/cl.log" 2>&1 &
cluster=$!
for _ in $(seq 300); do [ -s "$W/cl/node-0/http_port" ] && grep -q '"state":"training"' "$W/cl/node-0/status.json" 2>/dev/null && break; sleep 0.1; done
grep -q '"state":"training"' "$W/cl/node-0/status.json" || { echo "http_load: node 0 did not start training"; exit 1; }
node0=$(pgrep -P $cluster -f 'node\.id=0' | head -1)
mkdir -p "$(dirname "$OUT")"
taskset -c 1 /usr/bin/python3 - "$W/cl/node-0/status.json" "$node0" "$(cat "$W/cl/node-0/http_port")" "$WINDOW" "$OUT" <<'PY'
import json, os, socket, sys, threading, time
status, pid, port, window, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]

def sample():
    d = json.load(open(status))
    st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return d["round"], d["seconds"], (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")

def measure(name):
    r0, t0, c0 = sample()
    time.sleep(window)
    r1, t1, c1 = sample()
    rounds = r1 - r0
    return {"window": name, "rounds": rounds, "ms_per_round": 1000 * (t1 - t0) / rounds,
            "cpu_ms_per_round": 1000 * (c1 - c0) / rounds}

stop = threading.Event()
counts = {"idle_opened": 0, "idle_closed_by_server": 0, "slow_readers": 0, "bad_requests": 0, "bad_answers": {}}
lock = threading.Lock()

def idle_connections():
    socks = []
    for _ in range(1000):
        try:
            socks.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            counts["idle_opened"] += 1
        except OSError:
            pass
    stop.wait()
    for s in socks:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                counts["idle_closed_by_server"] += 1
        except BlockingIOError:
            pass
        except OSError:
            counts["idle_closed_by_server"] += 1
        s.close()

def slow_reader():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /chart.min.js HTTP/1.1\r\nHost: x\r\n\r\n")
    with lock:
        counts["slow_readers"] += 1
    while not stop.is_set():
        try:
            if not s.recv(1):
                break
        except OSError:
            break
        stop.wait(1.0)
    s.close()

def bad_requests():
    reqs = [b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", b"DELETE /status HTTP/1.1\r\nHost: x\r\n\r\n",
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", b"BREW / HTCPCP/1.0\r\n\r\n"]
    k = 0
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(reqs[k % len(reqs)])
                line = s.recv(64).split(b"\r\n")[0].decode(errors="replace")
            code = line.split(" ")[1] if line.startswith("HTTP/") else "closed"
        except OSError:
            code = "error"
        counts["bad_requests"] += 1
        counts["bad_answers"][code] = counts["bad_answers"].get(code, 0) + 1
        k += 1

results = [measure("quiet")]
threads = [threading.Thread(target=idle_connections)] + [threading.Thread(target=slow_reader) for _ in range(20)] + \
          [threading.Thread(target=bad_requests)]
for t in threads:
    t.start()
time.sleep(2)  # the idle connections are open
results.append(measure("load"))
stop.set()
for t in threads:
    t.join()
results.append(measure("quiet again"))
quiet = (results[0]["ms_per_round"] + results[2]["ms_per_round"]) / 2
summary = {"windows": results, "load": counts,
           "load_over_quiet_ms_per_round": results[1]["ms_per_round"] / quiet,
           "load_over_quiet_cpu_ms_per_round": results[1]["cpu_ms_per_round"] /
                                               ((results[0]["cpu_ms_per_round"] + results[2]["cpu_ms_per_round"]) / 2),
           "window_seconds": window}
json.dump(summary, open(out, "w"), indent=1)
print(json.dumps(summary, indent=1))
PY
kill -INT $cluster; wait $cluster || true
