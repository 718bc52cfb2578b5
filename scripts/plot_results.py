#!/usr/bin/python3
"""Plot `gossipd sim --out` result files: loss, accuracy, consensus distance and (when known)
relative error, each against rounds and against bytes on the wire.

    scripts/plot_results.py results/a.json results/b.json -o plot.png [--title T]

Each file becomes one line, labelled "<algorithm> + <compressor>" unless --labels is given. --node-accuracy
adds the mean and the worst node's own test accuracy (the models of methods that never average, such as
codistill, are judged by these).
Needs python3-matplotlib (Debian).
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

METRICS = [("loss", "train loss", "linear"), ("accuracy", "test accuracy", "linear"),
           ("consensus_distance", "consensus distance", "log"), ("rel_error", "max relative error", "log")]
NODE_METRICS = [("node_accuracy_mean", "mean node accuracy", "linear"), ("node_accuracy_min", "worst node accuracy", "linear")]


def label_of(cfg, path):
    try:
        a, c = cfg["algorithm"], cfg["compressor"]
        extra = ""
        if c.get("name") in ("topk", "randk", "cltk"):
            extra = f"({c.get('ratio')})"
        elif c.get("name") in ("qsgd", "dither"):
            extra = f"(s={c.get('levels')})"
        elif c.get("name") == "lead":
            extra = f"({c.get('bits')}b)"
        return f"{a['name']} + {c['name']}{extra}"
    except (KeyError, TypeError):
        return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("-o", "--out", required=True)
    ap.add_argument("--title", default="")
    ap.add_argument("--labels", nargs="*")
    ap.add_argument("--node-accuracy", action="store_true", help="also plot mean and worst node accuracy")
    args = ap.parse_args()

    runs = []
    for i, path in enumerate(args.files):
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"plot_results: {path}: {e}")
        label = args.labels[i] if args.labels and i < len(args.labels) else label_of(data.get("config"), path)
        runs.append((label, data.get("records", [])))

    wanted = METRICS + (NODE_METRICS if args.node_accuracy else [])
    metrics = [m for m in wanted if any(m[0] in r for _, recs in runs for r in recs)]
    if not metrics:
        sys.exit("plot_results: no metrics found in the given files")
    fig, axes = plt.subplots(len(metrics), 2, figsize=(11, 3.2 * len(metrics)), squeeze=False)
    for row, (key, name, scale) in enumerate(metrics):
        for col, xkey in enumerate(("round", "bytes_sent")):
            ax = axes[row][col]
            for label, recs in runs:
                pts = [(r[xkey], r[key]) for r in recs if key in r]
                if pts:
                    xs, ys = zip(*pts)
                    if xkey == "bytes_sent":
                        xs = [x / 1e6 for x in xs]
                    ax.plot(xs, ys, label=label)
            ax.set_yscale(scale)
            ax.set_xlabel("round" if xkey == "round" else "MB sent (all nodes)")
            if xkey == "bytes_sent":
                ax.set_xscale("log")
            ax.set_ylabel(name)
            ax.grid(True, alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if args.title:
        fig.suptitle(args.title)
    fig.tight_layout()
    fig.savefig(args.out, dpi=90)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
