#!/usr/bin/python3
"""The dashboard (docs/monitoring.md#dashboard) in headless Chromium through Selenium; run by
dashboard_browser.sh. One scenario, against either of two servers:

  --fake            an in-process server: the files of --dashboard-dir plus a made-up /cluster that changes
                    over time and has the awkward cases (a member without a summary, accuracy and spectral
                    gap null at first, a member joining late); `kill` turns a member suspect then dead,
                    `disconnect` answers 503 until `reconnect`.
  --url URL         a real node's dashboard; `kill` is kill -9 of --victim-pid, `disconnect` kill -9 of
                    --server-pid (both started by the calling script). The embedded files must be
                    byte for byte the ones in --dashboard-dir.

The scenario: 4 member circles, loss points for every node, join events; the victim shown dead (graph,
header, event list); no JavaScript error in the console; then "disconnected" once /cluster fails. Every
wait has a deadline and names what it awaited. DASHBOARD_SCREENSHOT=path saves a PNG of the whole page
(real nodes only) once the victim is shown dead; the victim is killed DASHBOARD_SCREENSHOT_WAIT seconds
(default 30) later than otherwise, so that the curves have some length.
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
JS = "/usr/share/javascript"
ASSETS = {  # path -> (file under the dashboard dir or absolute, content type)
    "/": ("index.html", "text/html; charset=utf-8"),
    "/dashboard.js": ("dashboard.js", "application/javascript"),
    "/dashboard.css": ("dashboard.css", "text/css; charset=utf-8"),
    "/chart.min.js": (JS + "/chart.js/chart.min.js", "application/javascript"),
    "/d3.min.js": (JS + "/d3/d3.min.js", "application/javascript"),
}


def fail(msg):
    sys.exit("FAIL: " + msg)


class FakeCluster:
    """A 4-node cluster in /cluster's schema whose rounds advance with time (40 rounds/s)."""

    def __init__(self):
        self.t0 = time.time()
        self.killed_at = None  # when the victim (node 3) was "killed"
        self.failing = False
        self.lock = threading.Lock()

    def snapshot(self):
        with self.lock:
            now = time.time()
            t = now - self.t0
            ms = lambda s: int((self.t0 + s) * 1000)
            joined = {0: 0.0, 1: 0.1, 2: 0.2, 3: 1.5}  # node 3 joins late
            members, events = [], []
            for i, at in joined.items():
                if t < at:
                    continue
                state, rnd = "alive", int(40 * (t - at))
                if i == 3 and self.killed_at is not None:
                    gone = now - self.killed_at
                    state = "dead" if gone > 1.0 else "suspect"
                    rnd = int(40 * (self.killed_at - self.t0 - at))  # its last summary, growing stale
                status = None if (i == 2 and t < 2.5) else {  # node 2: no summary yet at first
                    "round": rnd, "rounds": 100000, "state": "training",
                    "loss": 2.3 / (1 + rnd / 200) + 0.05 * i,
                    "disagreement": 1.0 / (1 + rnd / 100) + 0.01 * i,
                    "accuracy": None if t < 3 else min(0.95, 0.5 + rnd / 2000),
                    "bytes_sent": 20000 * rnd, "compression_ratio": 33.1 if rnd else 0,
                    "rounds_per_second": 40.0, "neighbors": 2, "states_sent": 0, "states_received": 0,
                    "age_s": 0.5}
                members.append({"id": i, "incarnation": 0, "state": state,
                                "endpoint": "tcp://127.0.0.1:%d" % (40001 + i), "status": status})
                if i:
                    events.append({"time_ms": ms(at), "node": i, "incarnation": 0, "kind": "joined",
                                   "text": "member %d (incarnation 0) joined" % i})
            if self.killed_at is not None:
                k = self.killed_at - self.t0
                events.append({"time_ms": ms(k + 0.3), "node": 3, "incarnation": 0, "kind": "suspected",
                               "text": "member 3 (incarnation 0) suspected"})
                if now - self.killed_at > 1.0:
                    events.append({"time_ms": ms(k + 1.0), "node": 3, "incarnation": 0, "kind": "dead",
                                   "text": "member 3 (incarnation 0) declared dead"})
            up = sorted(m["id"] for m in members if m["state"] in ("alive", "suspect"))
            edges = [] if len(up) < 2 else [{"a": min(a, b), "b": max(a, b), "weight": 1 / 3}
                                            for a, b in zip(up, up[1:] + up[:1]) if a != b]
            edges = [dict(t) for t in {tuple(sorted(e.items())) for e in edges}]  # a ring of 2 has one edge
            return {"self": 0, "time_ms": int(now * 1000), "algorithm": "deepsqueeze", "compressor": "topk",
                    "topology": "ring", "rounds": 100000, "spectral_gap": None if t < 1 else 0.12,
                    "members": members, "edges": edges,
                    "self_weights": {str(i): 1 / 3 for i in up}, "events": events}


def serve_fake(dashboard_dir):
    fake = FakeCluster()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?")[0]
            if path == "/cluster":
                if fake.failing:
                    return self.answer(503, "text/plain", b"unavailable\n")
                return self.answer(200, "application/json", json.dumps(fake.snapshot()).encode())
            if path not in ASSETS:
                return self.answer(404, "text/plain", b"not found\n")
            name, ctype = ASSETS[path]
            with open(os.path.join(dashboard_dir, name), "rb") as f:
                self.answer(200, ctype, f.read())

        def answer(self, code, ctype, body):
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, fake


def check_assets(url, dashboard_dir):
    """The daemon serves the embedded files byte for byte, with their content types."""
    for path, (name, ctype) in ASSETS.items():
        with urllib.request.urlopen(url.rstrip("/") + path, timeout=10) as r:
            body, got = r.read(), r.headers.get("Content-Type")
        with open(os.path.join(dashboard_dir, name), "rb") as f:
            want = f.read()
        if body != want:
            fail("GET %s: %d bytes, not the %d of %s (a stale build?)" % (path, len(body), len(want), name))
        if got != ctype:
            fail("GET %s: Content-Type %r, expected %r" % (path, got, ctype))
    print("ok: the daemon serves %s byte for byte" % ", ".join(ASSETS))


class Page:
    def __init__(self, driver):
        self.d = driver

    def js(self, script):
        return self.d.execute_script(script)

    def wait(self, what, script, timeout):
        end = time.monotonic() + timeout
        while True:
            try:
                value = self.js(script)
            except WebDriverException:
                value = None
            if value:
                return value
            if time.monotonic() > end:
                conn = self.js("return document.getElementById('conn').textContent")
                fail("timed out after %ds waiting for: %s (page status: %r)" % (timeout, what, conn))
            time.sleep(0.2)

    def console_errors(self, allowed=()):
        errors = [e["message"] for e in self.d.get_log("browser") if e["level"] == "SEVERE"]
        return [m for m in errors if not any(a in m for a in allowed)]


def shoot(page, artefacts, name):
    """A screenshot kept as a test artefact (the viewport as it is)."""
    if artefacts:
        os.makedirs(artefacts, exist_ok=True)
        path = os.path.join(artefacts, name)
        page.d.save_screenshot(path) or fail("could not save the screenshot to %s" % path)
        print("   screenshot: %s" % path)


def scenario(page, url, n, victim, kill, disconnect, reconnect=None, screenshot=None, restart=None, edges=None,
             artefacts=None):
    page.d.get(url)
    page.wait("%d member circles in the graph" % n,
              "return document.querySelectorAll('#graph circle.member').length === %d" % n, 60)
    if edges is not None:
        page.wait("%d edges in the graph" % edges, "return document.querySelectorAll('#graph line').length === %d" % edges, 30)
    page.wait("loss points for all %d nodes and the cluster mean" % n, """
        const c = Chart.getChart('loss');
        return c && c.data.datasets.filter(d => d.data.length > 0).length === %d
                 && c.data.datasets[0].data.length >= 2""" % (n + 1), 60)
    page.wait("disagreement points for all %d nodes and the cluster mean" % n, """
        const c = Chart.getChart('disagreement');
        return c && c.data.datasets.filter(d => d.data.length > 0).length === %d""" % (n + 1), 60)
    joins = page.wait("%d join events in the event list" % (n - 1), """
        const j = [...document.querySelectorAll('#events li')].filter(li => li.dataset.kind === 'joined');
        return j.length >= %d && j.length""" % (n - 1), 30)
    page.wait("the header to count %d of %d alive" % (n, n),
              "return document.getElementById('alive').textContent.startsWith('%d of %d')" % (n, n), 30)
    page.wait("a bytes-sent curve", "return Chart.getChart('bytes').data.datasets[0].data.length >= 2", 30)
    print("ok: %d members drawn, loss and disagreement curves for all, %d join events, the header counts %d alive" % (n, joins, n))
    # The curves grow as rounds pass: the cluster-mean loss series gains points, at later rounds.
    before = page.js("const d = Chart.getChart('loss').data.datasets[0].data; return [d.length, d[d.length - 1].x]")
    page.wait("the cluster-mean loss curve to grow past round %s" % before[1], """
        const d = Chart.getChart('loss').data.datasets[0].data;
        return d.length > %d && d[d.length - 1].x > %s""" % (before[0], before[1]), 30)
    print("ok: the loss curve grew from %d points (round %s) to %d" % (
        before[0], before[1], page.js("return Chart.getChart('loss').data.datasets[0].data.length")))
    shoot(page, artefacts, "1-all-alive.png")
    errors = page.console_errors()
    if errors:
        fail("JavaScript errors in the console: %s" % errors)

    if screenshot:
        wait = float(os.environ.get("DASHBOARD_SCREENSHOT_WAIT", "30"))
        print("(training %g s longer, for curves worth a picture)" % wait)
        time.sleep(wait)
    kill()
    t0 = time.monotonic()
    sel = "document.querySelector('#graph circle.member[data-id=\"%d\"]')" % victim
    page.wait("node %d shown dead in the graph" % victim, "const e = %s; return e && e.dataset.state === 'dead'" % sel, 60)
    page.wait("a 'dead' event for node %d" % victim,
              "return [...document.querySelectorAll('#events li')].some(li => li.dataset.kind === 'dead')", 30)
    page.wait("the header to count %d of %d alive" % (n - 1, n),
              "return document.getElementById('alive').textContent.startsWith('%d of %d')" % (n - 1, n), 30)
    print("ok: node %d shown dead %.1f s after the kill (graph, event list, header)" % (victim, time.monotonic() - t0))
    shapes = page.js("return [document.querySelectorAll('#graph circle').length, document.querySelectorAll('#graph line').length]")
    if shapes[0] != n:
        fail("the graph holds %d circles for %d members (elements not reused?)" % (shapes[0], n))
    errors = page.console_errors()
    if errors:
        fail("JavaScript errors in the console: %s" % errors)
    print("ok: no JavaScript error in the console; the graph holds %d nodes and %d edges" % tuple(shapes))
    shoot(page, artefacts, "2-node-%d-dead.png" % victim)
    if restart:
        restart()
        t0 = time.monotonic()
        page.wait("node %d shown alive again after its restart" % victim,
                  "const e = %s; return e && e.dataset.state === 'alive'" % sel, 90)
        page.wait("the header to count %d of %d alive again" % (n, n),
                  "return document.getElementById('alive').textContent.startsWith('%d of %d')" % (n, n), 30)
        print("ok: node %d shown alive again %.1f s after its restart (process start included)" % (victim, time.monotonic() - t0))
        # Its new life counts its bytes from 0: the cluster's total must not drop (it did before the
        # dashboard kept each node's earlier lives).
        grown = page.js("return Chart.getChart('bytes').data.datasets[0].data.length") + 5
        page.wait("5 more points on the bytes-sent curve", "return Chart.getChart('bytes').data.datasets[0].data.length >= %d" % grown, 60)
        drops = page.js("""const d = Chart.getChart('bytes').data.datasets[0].data;
            return d.map((p, i) => i && p.y < d[i - 1].y ? [d[i - 1].y, p.y] : null).filter(x => x)""")
        if drops:
            fail("the bytes-sent total dropped after node %d restarted (MB before, after): %s" % (victim, drops))
        print("ok: the bytes-sent total never dropped across the restart")
        shoot(page, artefacts, "3-node-%d-back.png" % victim)
    if screenshot:
        # The whole page in one picture: the viewport made as tall as the page (measured again once the
        # charts have redrawn at the new size).
        for _ in range(2):
            height = page.js("return document.documentElement.scrollHeight")
            page.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": 1400, "height": height, "deviceScaleFactor": 1, "mobile": False})
            time.sleep(1.5)
        page.d.save_screenshot(screenshot) or fail("could not save the screenshot to %s" % screenshot)
        print("ok: screenshot saved to %s" % screenshot)

    disconnect()
    page.wait("the page to show 'disconnected'",
              "return document.getElementById('conn').classList.contains('disconnected')", 15)
    # The failed requests themselves are logged by the browser (net::ERR_..., or the 503); nothing else may be.
    errors = page.console_errors(allowed=("/cluster",))
    if errors:
        fail("JavaScript errors in the console after the disconnect: %s" % errors)
    print("ok: 'disconnected' shown: %r" % page.js("return document.getElementById('conn').textContent"))
    if reconnect:
        reconnect()
        page.wait("the page to show 'live' again after the server came back",
                  "return document.getElementById('conn').classList.contains('live')", 15)
        print("ok: live again once /cluster answers")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dashboard-dir", required=True)
    ap.add_argument("--work", help="a directory for the browser profile (default: a temp dir)")
    ap.add_argument("--fake", action="store_true")
    ap.add_argument("--url")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--victim", type=int, default=3)
    ap.add_argument("--victim-pid", type=int)
    ap.add_argument("--server-pid", type=int)
    ap.add_argument("--edges", type=int, help="edges the graph must show")
    ap.add_argument("--restart-cmd", help="shell command that restarts the victim after it was shown dead")
    ap.add_argument("--artefacts", help="directory for screenshots of each stage")
    a = ap.parse_args()
    # The calling script's `timeout` sends SIGTERM: leave through `finally`, which ends the browser.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("FAIL: terminated (overall deadline)"))

    work = tempfile.mkdtemp(prefix="dashboard-", dir=a.work)
    opts = Options()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--user-data-dir=" + os.path.join(work, "profile")):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = None
    server = None
    try:
        # An explicit driver path: Selenium never looks for (or downloads) one itself.
        driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
        driver.set_page_load_timeout(30)
        driver.set_script_timeout(10)
        page = Page(driver)
        if a.fake:
            server, fake = serve_fake(a.dashboard_dir)
            url = "http://127.0.0.1:%d/" % server.server_address[1]

            def kill():
                with fake.lock:
                    fake.killed_at = time.time()

            def set_failing(v):
                fake.failing = v
            scenario(page, url, 4, 3, kill, lambda: set_failing(True), lambda: set_failing(False))
        else:
            check_assets(a.url, a.dashboard_dir)
            scenario(page, a.url, a.nodes, a.victim,
                     lambda: os.kill(a.victim_pid, signal.SIGKILL), lambda: os.kill(a.server_pid, signal.SIGKILL),
                     screenshot=os.environ.get("DASHBOARD_SCREENSHOT"), edges=a.edges, artefacts=a.artefacts,
                     restart=(lambda: subprocess.run(["bash", "-c", a.restart_cmd], check=True)) if a.restart_cmd else None)
    finally:
        if driver:
            driver.quit()
        if server:
            server.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
