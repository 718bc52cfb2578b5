#!/usr/bin/python3
"""Accuracy of the CNN runs of scripts/pytorch_cnn.sh against rounds and against bytes sent per node:
gossipd (mean over the 8 nodes' own models, first 2,000 test images) and DDP (its one model, all 10,000).
Usage: scripts/plot_pytorch_cnn.py [docs/results] [-o docs/img/pytorch_cnn.png] [--suffix _r3000]
(--suffix: the runs made with that TAG, e.g. ROUNDS=3000 TAG=_r3000 scripts/pytorch_cnn.sh)"""
import argparse
import json
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("dir", nargs="?", default="docs/results")
ap.add_argument("-o", "--out", default="docs/img/pytorch_cnn.png")
ap.add_argument("--suffix", default="")
a = ap.parse_args()
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
ddp = json.load(open(os.path.join(a.dir, f"pytorch_cnn_ddp{a.suffix}.json")))
steps = [c["step"] for c in ddp["curve"]]
acc = [100 * c["test_accuracy"] for c in ddp["curve"]]
ax1.plot(steps, acc, "k-o", label="PyTorch DDP (gloo)")
ax2.plot([c["mb_sent_per_process"] for c in ddp["curve"]], acc, "k-o", label="PyTorch DDP (gloo)")
labels = {"dpsgd": "gossipd D-PSGD fp32", "deepsqueeze": "gossipd DeepSqueeze top-1%",
          "deepsqueeze_fc": "DeepSqueeze top-1% + 50 fp32 averaging rounds"}
for name, label in labels.items():
    path = os.path.join(a.dir, f"pytorch_cnn_{name}{a.suffix}.json")
    if not os.path.exists(path):
        continue
    r = json.load(open(path))
    rounds = [c["round"] for c in r["curve"]]
    mean = [100 * c["mean_node_accuracy"] for c in r["curve"]]
    ax1.plot(rounds, mean, "-o", label=f"{label} (mean node)")
    ax2.plot([c["mean_bytes_per_node"] / 1e6 for c in r["curve"]], mean, "-o", label=f"{label} (mean node)")
ax1.set_xlabel("round (DDP: step)")
ax2.set_xlabel("MB sent per node (DDP: per process, ring all-reduce volume)")
ax2.set_xscale("log")
for ax in (ax1, ax2):
    ax.set_ylabel("test accuracy (%)")
    ax.set_ylim(75, 92)
    ax.grid(alpha=0.3)
ax1.legend(fontsize=8, loc="lower right")
fig.suptitle("Fashion-MNIST CNN (114,314 parameters), 8 nodes, batch 32 per node, SGD 0.05 + momentum 0.9")
fig.tight_layout()
fig.savefig(a.out, dpi=90)
print("wrote", a.out)
