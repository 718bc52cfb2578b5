#!/usr/bin/env python3
"""Summarize a train_cnn.py cluster run (one directory per node with evals.json and final.npy, as written by
scripts/pytorch_cnn.sh): every node's final model and the average of the 8 models on the whole test set,
and the accuracy curve against rounds and bytes (mean over nodes). Writes JSON to stdout or --out."""
import argparse
import glob
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnn  # noqa: E402


def load_flat(model, flat):
    off = 0
    with torch.no_grad():
        for p in model.parameters():
            n = p.numel()
            p.copy_(torch.from_numpy(flat[off:off + n].reshape(p.shape)))
            off += n
    assert off == len(flat), f"{len(flat)} values for a model of {off}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="the cluster's --dir (node-0, node-1, ...)")
    ap.add_argument("--dataset", default=cnn.DEFAULT_DATA)
    ap.add_argument("--label", default="")
    ap.add_argument("--out")
    a = ap.parse_args()
    cnn.single_thread()
    nodes = sorted(glob.glob(os.path.join(a.dir, "node-*")), key=lambda d: int(d.rsplit("-", 1)[1]))
    logs = [json.load(open(os.path.join(d, "evals.json"))) for d in nodes]
    flats = [np.load(os.path.join(d, "final.npy")).astype(np.float32) for d in nodes]
    test_x, test_y = cnn.load_split(a.dataset, "test")
    model = cnn.make_model(0)
    node_acc = []
    for f in flats:
        load_flat(model, f)
        node_acc.append(cnn.evaluate(model, test_x, test_y)[0])
    load_flat(model, np.mean(flats, axis=0))
    avg_acc = cnn.evaluate(model, test_x, test_y)[0]
    # The curve: evaluations happen at the same rounds on every node (every --eval-every rounds).
    by_round = {}
    for log in logs:
        for e in log["evals"]:
            by_round.setdefault(e["round"], []).append(e)
    curve = [{"round": r, "mean_node_accuracy": float(np.mean([e["accuracy"] for e in es])),
              "min_node_accuracy": float(min(e["accuracy"] for e in es)),
              "mean_bytes_per_node": float(np.mean([e["bytes_sent"] or 0 for e in es])),
              "seconds": float(np.mean([e["seconds"] for e in es])), "nodes": len(es)}
             for r, es in sorted(by_round.items())]
    out = {"label": a.label, "nodes": len(nodes), "algorithm": logs[0]["algorithm"], "rounds": logs[0]["rounds"],
           "params": int(len(flats[0])), "test_images": int(len(test_y)),
           "average_model_accuracy": avg_acc, "node_accuracy": node_acc,
           "node_accuracy_mean": float(np.mean(node_acc)), "node_accuracy_min": float(min(node_acc)),
           "bytes_per_node": float(np.mean([log["bytes_sent"] or 0 for log in logs])),
           "curve_eval_images": "first --eval-max test images of each node's evaluations", "curve": curve}
    text = json.dumps(out, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text + "\n")
    print(text if not a.out else f"{a.label}: average model {avg_acc:.2%}, nodes {min(node_acc):.2%}..{max(node_acc):.2%}, "
          f"{out['bytes_per_node'] / 1e6:.1f} MB per node")


if __name__ == "__main__":
    main()
