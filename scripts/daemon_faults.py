#!/usr/bin/python3
"""Fault runs of real `gossipd run` processes on loopback, for docs/results.md (the daemon issue's
"Must show" 2-7). Each scenario starts its own daemons in a temp dir, injects faults with signals,
reads the daemons' logs (event lines carry wall-clock [t=ms]) and status.json files, and writes one
summary JSON. Usage:

    scripts/daemon_faults.py GOSSIPD OUT.json [scenario ...]

scenarios: sigterm sigstop exact join no_false_deaths kill9 (default: all). Timings are of this machine
(2 cores shared by all daemons); detection times are measured from the signal to each survivor's log line.
"""
import glob
import gzip
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

GOSSIPD = os.path.abspath(sys.argv[1])
OUT = sys.argv[2]
WANT = sys.argv[3:] or ["sigterm", "sigstop", "exact", "join", "join_exact", "no_false_deaths", "kill9"]
SYNTH = ["data.format=synthetic", "model.kind=logistic", "model.l2=0.01", "monitor.eval_every=0",
         "monitor.status_every_ms=100"]
PROBE_MS, SUSPICION_MULT = 200, 4


def suspicion_ms(n):
    return SUSPICION_MULT * max(1.0, np.log10(n)) * PROBE_MS


def now_ms():
    return int(time.time() * 1000)


class Cluster:
    def __init__(self, n, sets, name):
        self.dir = tempfile.mkdtemp(prefix=f"gossipd-{name}-")
        self.sets = sets
        self.n = n
        self.procs = {}
        self.start(0, None)
        self.wait(lambda: os.path.exists(self.path(0, "endpoint")), 60, "node 0's endpoint")
        self.seed = open(self.path(0, "endpoint")).read().strip()
        for i in range(1, n):
            self.start(i, self.seed)

    def path(self, i, f):
        return os.path.join(self.dir, f"node-{i}", f)

    def start(self, i, seed, extra=()):
        d = os.path.join(self.dir, f"node-{i}")
        os.makedirs(d, exist_ok=True)
        args = [GOSSIPD, "run"]
        for s in list(self.sets) + [f"node.id={i}", f"node.data_dir={d}", "node.listen=tcp://127.0.0.1:0",
                                    f"cluster.nodes={self.n}"] + list(extra):
            args += ["--set", s]
        if seed:
            args += ["--set", f'cluster.seeds=["{seed}"]']
        self.procs[i] = subprocess.Popen(args, stdout=open(os.path.join(d, "log"), "a"), stderr=subprocess.STDOUT)

    def status(self, i):
        try:
            return json.load(open(self.path(i, "status.json")))
        except (OSError, ValueError):
            return {}

    def log(self, i):
        try:
            return open(self.path(i, "log")).read()
        except OSError:
            return ""

    def wait(self, cond, limit, what):
        end = time.time() + limit
        while not cond():
            if time.time() > end:
                raise TimeoutError(f"timed out after {limit}s waiting for {what}")
            time.sleep(0.05)

    def rounds_at_least(self, ids, r, limit=120):
        self.wait(lambda: all(self.status(i).get("round", 0) >= r for i in ids), limit, f"round {r} on {ids}")

    def event_times(self, i, pattern):
        return [int(t) for t in re.findall(pattern + r" \[t=(\d+)\]", self.log(i))]

    def stop_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()

    def kill_all(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()

    def model(self, i):
        return np.load(self.path(i, "model.npy"))


def detection(c, victim_inc, victim, killed_at, survivors, what="declared dead"):
    times = []
    for s in survivors:
        t = c.event_times(s, rf"member {victim} \(incarnation {victim_inc}\) {what}")
        if t:
            times.append(t[0] - killed_at)
    return times


def sigterm():
    """Must show 6: SIGTERM -> checkpoint, leave; neighbours reweight without a suspicion delay."""
    c = Cluster(8, SYNTH + ["algorithm.name=choco", "compressor.name=topk", "compressor.ratio=0.2",
                            "algorithm.gamma=0.4", "algorithm.rounds=100000000"], "sigterm")
    try:
        c.rounds_at_least(range(8), 300)
        t0 = now_ms()
        c.procs[5].send_signal(signal.SIGTERM)
        code = c.procs[5].wait(20)
        c.wait(lambda: all(c.event_times(s, r"member 5 \(incarnation 0\) left") for s in (4, 6)), 10, "neighbours see the leave")
        times = detection(c, 0, 5, t0, [4, 6], "left")
        rounds = [c.status(i)["round"] for i in (4, 6)]
        c.rounds_at_least([4, 6], max(rounds) + 100, 30)
        dead = sum(len(c.event_times(s, r"member 5 \(incarnation 0\) declared dead")) for s in range(8) if s != 5)
        return {"exit_code": code, "sigterm_to_new_weights_ms": times, "deaths_recorded": dead,
                "checkpoint_written": bool(glob.glob(c.path(5, "checkpoints/*.gsc"))),
                "neighbours_kept_training": True}
    finally:
        c.kill_all()


def sigstop():
    """Must show 5: SIGSTOP for 2x the suspicion timeout -> declared dead, comes back as a new incarnation;
    a short stop (well inside the window) is refuted."""
    c = Cluster(8, SYNTH + ["algorithm.name=prox_lead", "compressor.name=lead", "algorithm.estimator=full",
                            "algorithm.lr=0.2", "algorithm.rounds=100000000"], "sigstop")
    out = {}
    try:
        c.rounds_at_least(range(8), 300)
        c.procs[3].send_signal(signal.SIGSTOP)
        time.sleep(0.15)  # the fault itself: a pause well inside the suspicion window
        c.procs[3].send_signal(signal.SIGCONT)
        r = c.status(3)["round"]
        c.rounds_at_least([3], r + 200, 30)
        out["short_pause_ms"] = 150
        out["short_pause_deaths"] = sum(len(c.event_times(s, r"member 3 \(incarnation 0\) declared dead")) for s in range(8))
        pause = 2 * suspicion_ms(8) / 1000
        r = {i: c.status(i)["round"] for i in range(8)}
        c.procs[3].send_signal(signal.SIGSTOP)
        time.sleep(pause)  # the fault itself: a pause of twice the suspicion timeout
        rounds_while_stopped = {i: c.status(i)["round"] - r[i] for i in range(8) if i != 3}
        c.procs[3].send_signal(signal.SIGCONT)
        c.wait(lambda: "rejoining as incarnation 1" in c.log(3), 20, "node 3 to rejoin")
        c.wait(lambda: all(c.event_times(s, r"member 3 \(incarnation 1\) joined") for s in (2, 4)), 20, "neighbours see incarnation 1")
        r3 = c.status(3).get("round", 0)
        c.rounds_at_least(range(8), r3 + 200, 60)
        out.update({"long_pause_s": round(pause, 2), "declared_dead": True, "rejoined_as_incarnation": 1,
                    "rounds_others_ran_while_it_was_stopped": rounds_while_stopped,
                    "all_training_after": True, "crashes": [i for i, p in c.procs.items() if p.poll() is not None]})
        return out
    finally:
        c.kill_all()


def exact():
    """Must show 3: Prox-LEAD 2-bit over 8 daemons; kill -9 one, then two more; the survivors reach the optimum
    of their own objective with no reset of duals. The optimum is taken from `gossipd sim` with the same data
    and the same nodes crashed, run to its reported rel_error (the simulator's reference solver)."""
    sets = SYNTH + ["algorithm.name=prox_lead", "compressor.name=lead", "algorithm.estimator=full",
                    "algorithm.lr=0.2", "model.l1=0.001", "node.checkpoint_every=0"]
    rounds = 6000
    c = Cluster(8, sets + [f"algorithm.rounds={rounds}"], "exact")
    try:
        c.rounds_at_least(range(8), 500)
        c.procs[2].kill()
        c.rounds_at_least([1, 3], 1500)
        c.procs[5].kill()
        c.procs[6].kill()
        survivors = [0, 1, 3, 4, 7]
        for i in survivors:
            c.procs[i].wait(300)
        with tempfile.TemporaryDirectory() as d:
            res = os.path.join(d, "sim.json")
            args = [GOSSIPD, "sim", "--out", res, "--save-models", os.path.join(d, "m")]
            for s in sets + ["cluster.nodes=8", f"algorithm.rounds={rounds}", "sim.eval_every=1000",
                             'faults.crash=[{node=2, round=500}, {node=5, round=1500}, {node=6, round=1500}]']:
                args += ["--set", s]
            subprocess.run(args, check=True, capture_output=True)
            simrec = json.load(open(res))["records"][-1]
            xs = {i: np.load(os.path.join(d, "m", f"node-{i}", "model.npy")) for i in survivors}
        errs = {i: float(np.linalg.norm(c.model(i) - xs[i]) / np.linalg.norm(xs[i])) for i in survivors}
        return {"rounds": rounds, "killed": "node 2 at ~round 500, nodes 5 and 6 at ~round 1500",
                "sim_rel_error_to_reference_optimum": simrec.get("rel_error"),
                "daemon_vs_sim_optimum_rel_error": errs, "max": max(errs.values())}
    finally:
        c.kill_all()


def join():
    """Must show 4 (functional part): a 9th daemon given only a seed joins mid-run, gets the model by state
    transfer, the graph re-forms (ring of 9)."""
    sets = SYNTH + ["algorithm.name=prox_lead", "compressor.name=lead", "algorithm.estimator=full",
                    "algorithm.lr=0.2", "algorithm.rounds=100000000"]
    c = Cluster(8, sets, "join")
    try:
        c.rounds_at_least(range(8), 300)
        t0 = now_ms()
        c.start(8, c.seed)
        c.wait(lambda: "state transfer done" in c.log(8), 60, "node 8's state transfer")
        joined_ms = now_ms() - t0
        r8 = int(re.search(r"continuing at round (\d+)", c.log(8)).group(1))
        c.rounds_at_least(range(9), r8 + 200, 60)
        time.sleep(0.3)
        nbrs = {i: c.status(i)["neighbors"] for i in (0, 7, 8)}
        return {"join_to_state_transfer_ms": joined_ms, "continued_from_round": r8,
                "neighbors_of_0_7_8_after": nbrs, "all_9_training": True}
    finally:
        c.kill_all()


def join_exact():
    """Must show 4 (exactness): with one data file per node (data.train with {id}), a 9th daemon joining a
    running 8-daemon Prox-LEAD cluster brings exactly its own data, so the survivors-plus-joiner optimum is
    the 9-node one. Compared with `gossipd sim` running the same join (faults.join), which reports its
    distance to the reference solver's optimum."""
    d = tempfile.mkdtemp(prefix="gossipd-joinx-data-")
    rng = np.random.default_rng(5)
    w = rng.normal(size=20)
    for i in range(9):
        A = rng.normal(loc=0.3 * i / 9, size=(40, 20))
        yv = (A @ w + rng.normal(size=40) > 0).astype(int)
        np.savetxt(os.path.join(d, f"node{i}.csv"), np.column_stack([yv, A]), delimiter=",", fmt="%.17g")
    sets = ["data.format=csv", f"data.train={d}/node{{id}}.csv", "model.kind=logistic", "model.l2=0.01",
            "model.l1=0.001", "monitor.eval_every=0", "monitor.status_every_ms=100", "algorithm.name=prox_lead",
            "compressor.name=lead", "algorithm.estimator=full", "algorithm.lr=0.2", "node.checkpoint_every=0"]
    rounds = 8000
    c = Cluster(8, sets + [f"algorithm.rounds={rounds}"], "joinx")
    try:
        c.rounds_at_least(range(8), 500)
        c.start(8, c.seed)
        c.wait(lambda: "state transfer done" in c.log(8), 60, "node 8's state transfer")
        joined_at = int(re.search(r"continuing at round (\d+)", c.log(8)).group(1))
        for i in range(9):
            c.procs[i].wait(300)
        with tempfile.TemporaryDirectory() as sd:
            res = os.path.join(sd, "sim.json")
            args = [GOSSIPD, "sim", "--out", res, "--save-models", os.path.join(sd, "m")]
            for s in sets + ["cluster.nodes=8", f"algorithm.rounds={rounds}", "sim.eval_every=1000",
                             f"faults.join=[{{node=8, round={joined_at}}}]"]:
                args += ["--set", s]
            subprocess.run(args, check=True, capture_output=True)
            simrec = json.load(open(res))["records"][-1]
            xs = {i: np.load(os.path.join(sd, "m", f"node-{i}", "model.npy")) for i in range(9)}
        errs = {i: float(np.linalg.norm(c.model(i) - xs[i]) / np.linalg.norm(xs[i])) for i in range(9)}
        return {"rounds": rounds, "joined_at_round": joined_at, "alive_in_sim_at_end": simrec.get("alive"),
                "sim_rel_error_to_reference_optimum": simrec.get("rel_error"),
                "daemon_vs_sim_optimum_rel_error": errs, "max": max(errs.values())}
    finally:
        c.kill_all()


def no_false_deaths():
    """Must show 7 (and the membership traffic of Must show 8): 16 and 32 daemons, 1000 rounds, no faults:
    suspicions raised/refuted, deaths (must be 0), membership messages per node per second."""
    out = {}
    for n in (16, 32):
        c = Cluster(n, SYNTH + ["algorithm.name=deepsqueeze", "compressor.name=topk", "compressor.ratio=0.1",
                                "algorithm.eta=0.5", "algorithm.rounds=1000", "cluster.start_timeout_ms=120000"], "nofalse")
        try:
            t0 = time.time()
            for p in c.procs.values():
                p.wait(600)
            secs = time.time() - t0
            st = [c.status(i) for i in range(n)]
            msgs = [s.get("membership_messages_sent", 0) / s.get("seconds", 1) for s in st]
            out[str(n)] = {"daemons": n, "rounds": 1000, "done": sum(s.get("state") == "done" for s in st),
                           "deaths": sum(s.get("deaths", 0) for s in st),
                           "suspicion_events_seen": sum(s.get("suspicions", 0) for s in st),
                           "refutation_events_seen": sum(len(re.findall(r"alive again \(refuted\)", c.log(i))) for i in range(n)),
                           "wall_s": round(secs, 1), "membership_msgs_per_node_per_s": round(statistics.mean(msgs), 1)}
        finally:
            c.kill_all()
    return out


def fmnist_test():
    base = "/usr/share/datasets/fashion-mnist/"
    with gzip.open(base + "t10k-images-idx3-ubyte.gz") as f:
        X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float64) / 255.0
    with gzip.open(base + "t10k-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    return X, y


def softmax_acc(x, X, y):
    W, b = x[:7840].reshape(10, 784), x[7840:]
    return float(((X @ W.T + b).argmax(1) == y).mean())


def kill9():
    """Must show 2: 16 daemons, DeepSqueeze top-1% on Fashion-MNIST, ring with one extra successor each side and
    random 4-regular; kill -9 four at random times; detection times; survivors' average model against a
    fault-free run; two of the killed restart from their checkpoints."""
    X, y = fmnist_test()
    out = {}
    for topo in (["cluster.topology=ring", "cluster.extra=1"], ["cluster.topology=random_regular", "cluster.degree=4"]):
        name = topo[0].split("=")[1]
        sets = ["data.format=idx", "data.train=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz",
                "data.test=/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", "model.kind=softmax",
                "model.l2=0.0001", "algorithm.name=deepsqueeze", "algorithm.eta=0.02", "algorithm.lr=0.05",
                "compressor.name=topk", "compressor.ratio=0.01", "algorithm.rounds=2000", "node.checkpoint_every=100",
                "monitor.eval_every=0", "monitor.status_every_ms=100", "cluster.start_timeout_ms=300000"] + topo
        accs = {}
        for faults in (False, True):
            c = Cluster(16, sets, "kill9")
            try:
                rec = {}
                if faults:
                    rng = random.Random(7)
                    victims = rng.sample(range(1, 16), 4)
                    at = sorted(rng.sample(range(200, 1200, 50), 4))
                    kills = []
                    for v, r in zip(victims, at):
                        c.rounds_at_least([s for s in range(16) if s not in [k[0] for k in kills] + [v]], r, 300)
                        t0 = now_ms()
                        c.procs[v].kill()
                        kills.append((v, t0, r))
                    survivors = [s for s in range(16) if s not in victims]
                    det = []
                    time.sleep(4)  # detection happens within ~1.5 s; leave room before reading the logs
                    for v, t0, r in kills:
                        det += detection(c, 0, v, t0, [s for s in survivors])
                    for v in victims[:2]:
                        c.start(v, c.seed)
                    c.wait(lambda: all("state transfer done" in c.log(v) for v in victims[:2]), 120, "restarts to sync")
                    rec["restarted_resumed_from_checkpoint"] = all("resumed at round" in c.log(v) for v in victims[:2])
                    rec["killed"] = [{"node": v, "round": r} for v, _, r in kills]
                    rec["detection_ms"] = {"p50": statistics.median(det), "max": max(det), "count": len(det),
                                           "bound": round(PROBE_MS * 3 + suspicion_ms(16))}
                    alive = survivors + victims[:2]
                else:
                    alive = list(range(16))
                for i in alive:
                    c.procs[i].wait(900)
                xbar = np.mean([c.model(i) for i in alive], axis=0)
                rec["average_model_accuracy"] = softmax_acc(xbar, X, y)
                rec["nodes_at_end"] = len(alive)
                accs["with_faults" if faults else "fault_free"] = rec
            finally:
                c.kill_all()
        out[name] = accs
    return out


results = {}
for name in WANT:
    print(f"== {name}", flush=True)
    t = time.time()
    results[name] = globals()[name]()
    results[name]["script_seconds"] = round(time.time() - t, 1)
    print(json.dumps(results[name], indent=1), flush=True)
    json.dump(results, open(OUT, "w"), indent=1)
