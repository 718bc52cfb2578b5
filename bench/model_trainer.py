#!/usr/bin/python3
"""The trainer of bench/model_memory.sh: a flat float32 model of DIM parameters bound through gossipd's Python
client, with a step that costs one pass over the model (x *= 0.9999 in model mode, g = 1e-3 x in gradient
mode), so the round's time is the daemon's. Prints, once, the time of a memcpy of the model (np.copyto between
two float32 arrays of DIM, median of 5): the yardstick the daemon's work per round is compared with.
Usage: model_trainer.py DATA_DIR DIM"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import gossipd  # noqa: E402

data_dir, dim = sys.argv[1], int(sys.argv[2])
a, b = np.ones(dim, dtype=np.float32), np.empty(dim, dtype=np.float32)
times = []
for _ in range(5):
    t0 = time.perf_counter()
    np.copyto(b, a)
    times.append(time.perf_counter() - t0)
print(f"memcpy_ms {1000 * sorted(times)[2]:.3f}", flush=True)
del a, b
rng = np.random.default_rng(int(os.environ.get("SEED", "1")))
initial = (rng.standard_normal(dim, dtype=np.float32) * 0.01)
with gossipd.attach(data_dir, timeout=30.0, reconnect_timeout=120.0) as g:
    g.bind_array(dim, initial=initial)
    del initial
    while not g.done:
        x = g.params
        if g.mode == "model":
            x *= 0.9999
            g.mix(loss=1.0)
        else:
            np.multiply(x, 1e-3, out=g.grad)
            g.step_array(loss=1.0)
print(f"done at round {g.round}", flush=True)
