#!/usr/bin/python3
"""A trainer for the bridge's integration tests: node i minimizes f_i(x) = 1/2 ||x - b_i||^2 with b_i = target
in every coordinate, through gossipd's Python client, so the cluster's answer is known (the mean target).
Usage: trainer_quadratic.py DATA_DIR TARGET OUT.npy [--dim N] [--lr LR] [--sleep S]
Prints one line per attach and every 200 rounds; writes the final parameters to OUT.npy."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import gossipd  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("data_dir")
ap.add_argument("target", type=float)
ap.add_argument("out")
ap.add_argument("--dim", type=int, default=16)
ap.add_argument("--lr", type=float, default=0.1)
ap.add_argument("--sleep", type=float, default=0.0, help="seconds of 'compute' per step")
a = ap.parse_args()

b = np.full(a.dim, a.target, dtype=np.float32)
with gossipd.attach(a.data_dir, timeout=3.0, reconnect_timeout=90.0) as g:
    g.bind_array(a.dim, initial=np.zeros(a.dim, dtype=np.float32))
    print(f"attached node {g.node} mode {g.mode} round {g.round} x0 {float(g.params[0]):.6f}", flush=True)
    steps = 0
    while not g.done:
        if a.sleep:
            time.sleep(a.sleep)
        x = g.params  # re-read: a reconnect maps a new shared-memory file
        loss = float(0.5 * ((x - b) ** 2).sum())
        if g.mode == "model":
            x -= a.lr * (x - b)
            g.mix(loss=loss)
        else:
            g.grad[:] = x - b
            g.step_array(loss=loss)
        steps += 1
        if steps % 200 == 0:
            print(f"step {steps} round {g.round} x {float(g.params[0]):.6f}", flush=True)
    np.save(a.out, np.array(g.params, dtype=np.float64))
    print(f"done at round {g.round} after {steps} steps, x {float(g.params[0]):.6f}", flush=True)
