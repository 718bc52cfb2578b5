#!/usr/bin/python3
"""Test accuracy of the nodes' final models and of their average (the cluster's consensus model).

    scripts/eval_models.py --test IMAGES.idx3-ubyte.gz DIR [DIR...]

Each DIR holds a node's model.npy and model.json (written by `gossipd run` at the end, and by
`gossipd sim --save-models`). Prints one JSON object: per-node accuracies, their mean, and the accuracy of
the uniform average of all models. The tests use the average as the cluster's accuracy: it is what the
decentralized methods converge to, and two fault-free runs of the docker cluster agree on it to a few
tenths of a point, while the mean of the per-node accuracies differs by up to a point between them
(docs/docker.md has the measurement).

Only the preprocessing the docker clusters use is reproduced: IDX pixels scaled to [0, 1] (as
training/idx_reader.cc does) and data.scaling = "none". Models: softmax and MLP (ReLU hidden layers), with
the layout model.json states.
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        sys.exit(f"eval_models: {path}: not an unsigned-byte IDX file")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def labels_path(images):
    path = images.replace("images-idx3", "labels-idx1")
    if path == images or not os.path.exists(path):
        sys.exit(f"eval_models: no labels file beside {images} (expected {path})")
    return path


def load_model(directory):
    try:
        with open(os.path.join(directory, "model.json")) as f:
            meta = json.load(f)
        w = np.load(os.path.join(directory, "model.npy")).astype(np.float64)
    except (OSError, ValueError) as e:
        sys.exit(f"eval_models: {directory}: {e}")
    if meta.get("model") not in ("softmax", "mlp") or w.size != meta["dim"]:
        sys.exit(f"eval_models: {directory}: unsupported model {meta.get('model')!r} or wrong size")
    return meta, w


def logits(meta, w, x):
    sizes = [meta["features"], *meta["hidden"], meta["classes"]]
    at = 0
    h = x
    for layer, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        weights = w[at:at + n_out * n_in].reshape(n_out, n_in)
        at += n_out * n_in
        bias = w[at:at + n_out]
        at += n_out
        h = h @ weights.T + bias
        if layer < len(sizes) - 2:
            h = np.maximum(h, 0.0)
    return h


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test", required=True, help="test images (IDX, .gz allowed); labels beside it")
    ap.add_argument("dirs", nargs="+", help="directories with model.npy and model.json")
    args = ap.parse_args()
    images = read_idx(args.test)
    x = images.reshape(images.shape[0], -1).astype(np.float64) / 255.0
    y = read_idx(labels_path(args.test))
    models = [load_model(d) for d in args.dirs]
    meta = models[0][0]
    if any(m["dim"] != meta["dim"] or m["hidden"] != meta["hidden"] for m, _ in models):
        sys.exit("eval_models: the models differ in shape")
    if x.shape[1] != meta["features"]:
        sys.exit(f"eval_models: the test set has {x.shape[1]} features, the models {meta['features']}")

    def accuracy(w):
        return float((logits(meta, w, x).argmax(axis=1) == y).mean() * 100)

    nodes = [accuracy(w) for _, w in models]
    average = accuracy(np.mean([w for _, w in models], axis=0))
    json.dump({"node_accuracy": [round(a, 2) for a in nodes],
               "mean_node_accuracy": round(float(np.mean(nodes)), 2),
               "average_model_accuracy": round(average, 2)}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
