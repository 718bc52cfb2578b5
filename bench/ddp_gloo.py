#!/usr/bin/python3
# Usage: start one process per rank, e.g. in each host's network namespace (rank 0 writes --out):
#   /usr/bin/python3 bench/ddp_gloo.py --rank R --world-size N --master 10.77.0.2:29500 --iface eth0 --steps 3000 --out ddp.json
# PyTorch DDP (gloo) baseline for gossipd's bandwidth benchmark: trains gossipd's model.kind = "mlp" on Fashion-MNIST,
# or with --model cnn the CNN of examples/pytorch (what train_cnn.py trains beside a daemon).
"""Synchronous data-parallel SGD with gradient all-reduce.

--model mlp (default): exactly the problem gossipd's "mlp" trains: 784-hidden...-10 ReLU MLP (He-normal
hidden weights, Glorot-uniform output, zero biases), mean softmax cross-entropy plus l2/2*||x||^2 over all
parameters (biases too), pixels /255 (data.scaling = "none"), a per-rank minibatch of --batch drawn without
replacement from the rank's shard, plain SGD x -= lr * g.

--model cnn: exactly what examples/pytorch/train_cnn.py does with its defaults, from examples/pytorch/cnn.py:
cnn.make_model(seed), the rank's shard by cnn.shard_indices (iid, seed 0 as train_cnn.py's --seed), cnn's
normalisation (cnn.to_tensors) and epoch-shuffled minibatches (cnn.Batches, train_cnn.py's per-node seed),
mean cross-entropy (no l2 unless --l2), SGD lr 0.05 momentum 0.9; evaluation with cnn.evaluate on the
first --test-max test images."""
import argparse
import datetime
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

DATA = "/usr/share/datasets/fashion-mnist"
CNN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "pytorch")
# Per model: what --seed, --l2 and --momentum mean when not given (mlp: gossipd's mlp runs of
# bandwidth_tta.sh; cnn: train_cnn.py's defaults).
DEFAULTS = {"mlp": {"seed": 1, "l2": 0.0001, "momentum": 0.0}, "cnn": {"seed": 0, "l2": 0.0, "momentum": 0.9}}


def fail(msg):
    print(f"ddp_gloo: {msg}", file=sys.stderr)
    sys.exit(2)


def read_idx(path):
    """uint8 IDX (gz) as gossipd's idx_reader reads it; kept uint8 so N ranks do not each hold 190 MB of floats."""
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e}")
    if len(data) < 4 or data[:3] != b"\0\0\x08":
        fail(f"{path}: not an unsigned-byte IDX file")
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(data[3])]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * len(dims)).reshape(dims[0], -1)


def partition(labels, n, kind, alpha, seed):
    """Shards of row indices, one per rank: iid (shuffle, contiguous chunks) or per-class Dirichlet(alpha)
    proportions as training/partition.cc does (numpy RNG, so not the same rows as gossipd)."""
    rng = np.random.default_rng([seed, 0x11D if kind == "iid" else 0xD1A])
    if kind == "iid":
        order, m = rng.permutation(len(labels)), len(labels)
        return [np.sort(order[k * m // n:(k + 1) * m // n]) for k in range(n)]
    shards = [[] for _ in range(n)]
    for c in range(int(labels.max()) + 1):
        # Gamma(a) = Gamma(a+1) * U^(1/a), in logs: for small alpha plain gamma draws underflow to 0.
        logg = np.log(rng.gamma(alpha + 1.0, size=n)) + np.log(rng.uniform(size=n)) / alpha
        prop = np.exp(logg - logg.max())
        prop /= prop.sum()
        rows = rng.permutation(np.flatnonzero(labels == c))
        cuts = np.minimum(len(rows), np.rint(np.cumsum(prop) * len(rows)).astype(int))
        cuts[-1] = len(rows)
        for k, part in enumerate(np.split(rows, cuts[:-1])):
            shards[k].extend(part.tolist())
    for node in shards:  # every rank needs data for a gradient: an empty one takes a row from the largest
        if not node:
            node.append(max(shards, key=len).pop())
    return [np.sort(np.array(s, dtype=np.int64)) for s in shards]


def make_mlp(sizes):
    """Linear layers store W (out x in) then b: the same flat layout as training/feedforward.h."""
    layers = []
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        lin = torch.nn.Linear(n_in, n_out)
        with torch.no_grad():
            if i + 2 < len(sizes):
                lin.weight.normal_(0.0, (2.0 / n_in) ** 0.5)  # He: keeps ReLU activations' scale
            else:
                lim = (6.0 / (n_in + n_out)) ** 0.5  # Glorot uniform for the softmax layer
                lin.weight.uniform_(-lim, lim)
            lin.bias.zero_()
        layers += [lin, torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def iface_bytes(iface):
    """This rank's own traffic when it has a namespace of its own (L2 bytes: Ethernet/IP/TCP headers and ACKs included)."""
    if not iface:
        return None
    base = f"/sys/class/net/{iface}/statistics/"
    return {k: int(open(base + k + "_bytes").read()) for k in ("tx", "rx")}


def diff(a, b):
    return None if a is None else {k: b[k] - a[k] for k in a}


def parse_args():
    ap = argparse.ArgumentParser(description="PyTorch DDP (gloo) baseline for gossipd's mlp (or the examples/pytorch "
                                             "CNN) on Fashion-MNIST")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world-size", type=int, required=True)
    ap.add_argument("--master", required=True, help="ADDR:PORT of rank 0's rendezvous")
    ap.add_argument("--iface", default="", help="sets GLOO_SOCKET_IFNAME; its counters give the measured bytes")
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp",
                    help="mlp: gossipd's model.kind = mlp; cnn: examples/pytorch/cnn.py as train_cnn.py trains it")
    ap.add_argument("--hidden", default="128", help="mlp: hidden widths, comma-separated (gossipd model.hidden)")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=None, help="SGD momentum (default: mlp 0, cnn 0.9)")
    ap.add_argument("--batch", type=int, default=32, help="minibatch per rank (gossipd algorithm.batch)")
    ap.add_argument("--l2", type=float, default=None, help="l2/2*||x||^2 in the loss (default: mlp 0.0001, cnn 0)")
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--target-accuracy", type=float, default=None, help="fraction in (0,1]; stop when reached")
    ap.add_argument("--partition", choices=["iid", "dirichlet"], default="iid")
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=None,
                    help="model init, shards and batches (default: mlp 1, cnn 0 as train_cnn.py)")
    ap.add_argument("--data", default=DATA, help="directory with the four Fashion-MNIST .gz files")
    ap.add_argument("--out", default="", help="JSON results (rank 0)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--test-max", type=int, default=0,
                    help="evaluate on the first N test images (gossipd monitor.eval_test_max); 0 = all 10,000")
    a = ap.parse_args()
    for k, v in DEFAULTS[a.model].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    checks = [(a.world_size >= 1, "--world-size must be >= 1"), (0 <= a.rank < a.world_size, "--rank must be in [0, world-size)"),
              (a.master.rpartition(":")[2].isdigit() and a.master.rpartition(":")[0], "--master must be ADDR:PORT"),
              (a.lr > 0, "--lr must be > 0"), (a.batch >= 1, "--batch must be >= 1"), (a.l2 >= 0, "--l2 must be >= 0"),
              (0 <= a.momentum < 1, "--momentum must be in [0,1)"),
              (a.steps >= 1, "--steps must be >= 1"), (a.eval_every >= 1, "--eval-every must be >= 1"),
              (a.alpha > 0, "--alpha must be > 0"), (a.threads >= 1, "--threads must be >= 1"),
              (a.target_accuracy is None or 0 < a.target_accuracy <= 1, "--target-accuracy is a fraction in (0,1]"),
              (not a.iface or os.path.isdir(f"/sys/class/net/{a.iface}"), f"no network interface '{a.iface}'")]
    for ok, msg in checks:
        if not ok:
            fail(msg)
    try:
        a.hidden = [int(h) for h in a.hidden.split(",")]
        assert all(h >= 1 for h in a.hidden)
    except (ValueError, AssertionError):
        fail(f"--hidden must be positive integers separated by commas, got '{a.hidden}'")
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        if not os.path.isfile(os.path.join(a.data, name)):
            fail(f"missing data file {os.path.join(a.data, name)}")
    return a


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)  # N ranks share the machine's cores; more threads only contend
    if a.iface:
        os.environ["GLOO_SOCKET_IFNAME"] = a.iface
    bytes0 = iface_bytes(a.iface)
    cnn = None
    if a.model == "cnn":
        sys.path.insert(0, CNN_DIR)
        import cnn  # examples/pytorch/cnn.py: the model, data and shards of train_cnn.py
        xtr, ytr = cnn.load_raw(a.data, "train")
        shard = cnn.shard_indices(ytr, a.rank, a.world_size, seed=a.seed,
                                  dirichlet=a.alpha if a.partition == "dirichlet" else None)
        x, y = cnn.to_tensors(xtr[shard], ytr[shard])  # normalised N x 1 x 28 x 28
        del xtr
        if a.rank == 0:
            xte, yte = cnn.load_split(a.data, "test", a.test_max or None)
    else:
        ytr = read_idx(os.path.join(a.data, "train-labels-idx1-ubyte.gz")).ravel().astype(np.int64)
        shard = partition(ytr, a.world_size, a.partition, a.alpha, a.seed)[a.rank]
        xtr = read_idx(os.path.join(a.data, "train-images-idx3-ubyte.gz"))
        x = torch.from_numpy(xtr[shard].astype(np.float32) / 255.0)  # scaling as training/idx_reader.cc
        y = torch.from_numpy(ytr[shard])
        del xtr
        if a.rank == 0:
            xte = torch.from_numpy(read_idx(os.path.join(a.data, "t10k-images-idx3-ubyte.gz")).astype(np.float32) / 255.0)
            yte = torch.from_numpy(read_idx(os.path.join(a.data, "t10k-labels-idx1-ubyte.gz")).ravel().astype(np.int64))
            if a.test_max > 0:
                xte, yte = xte[:a.test_max], yte[:a.test_max]

    dist.init_process_group("gloo", init_method=f"tcp://{a.master}", rank=a.rank, world_size=a.world_size,
                            timeout=datetime.timedelta(seconds=600))
    if cnn:
        model = cnn.make_model(a.seed)  # seeds torch itself: the same initial model as every train_cnn.py
        # train_cnn.py's minibatches: epochs of its shard, reshuffled with its per-node seed
        batches = cnn.Batches(x, y, a.batch, seed=a.seed * 100003 + a.rank + 1)
    else:
        torch.manual_seed(a.seed)
        model = make_mlp([x.shape[1], *a.hidden, 10])
        rng = np.random.default_rng([a.seed, a.rank])
        batch = min(a.batch, len(shard))  # as gossipd's estimator: a shard smaller than the batch is used whole
    num_params = sum(p.numel() for p in model.parameters())
    ddp = torch.nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's init; averages gradients
    # mlp: plain SGD (momentum 0), l2 is in the loss as in gossipd; cnn: train_cnn.py's SGD with momentum
    opt = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=a.momentum)
    # Ring all-reduce (gloo's default): each rank sends (and receives) 2(N-1)/N of the fp32 gradient per step.
    est_step = 2 * (a.world_size - 1) / a.world_size * 4 * num_params

    dist.barrier()
    bytes_start, t0 = iface_bytes(a.iface), time.perf_counter()  # setup (rendezvous, init broadcast) excluded
    records, losses, eval_s, target_at, step = [], [], 0.0, None, 0
    while True:
        if step % a.eval_every == 0 or step == a.steps:
            # Rank 0 evaluates; one tiny all-reduce then carries the loss sums and its stop decision to all.
            te = time.perf_counter()
            acc = 0.0
            if a.rank == 0 and cnn:
                acc = cnn.evaluate(model, xte, yte)[0]
            elif a.rank == 0:
                with torch.no_grad():
                    acc = (model(xte).argmax(1) == yte).float().mean().item()
            reached = a.target_accuracy is not None and acc >= a.target_accuracy
            ctl = torch.tensor([sum(losses), len(losses), float(a.rank == 0 and (reached or step == a.steps))], dtype=torch.float64)
            dist.all_reduce(ctl)
            eval_s += time.perf_counter() - te
            if a.rank == 0:
                secs = time.perf_counter() - t0
                rec = {"step": step, "seconds": round(secs, 3), "train_seconds": round(secs - eval_s, 3),
                       "test_accuracy": round(acc, 4), "train_loss": round(ctl[0].item() / ctl[1].item(), 4) if ctl[1] else None,
                       "bytes_measured": diff(bytes_start, iface_bytes(a.iface)), "bytes_estimated": int(est_step * step)}
                records.append(rec)
                if reached and target_at is None:
                    target_at = rec
                meas = rec["bytes_measured"]
                tx = f"tx {meas['tx'] / 1e6:.1f}MB rx {meas['rx'] / 1e6:.1f}MB " if meas else ""
                print(f"ddp step {step} {secs:.1f}s acc {acc:.4f} loss {rec['train_loss']} {tx}"
                      f"est {rec['bytes_estimated'] / 1e6:.1f}MB", file=sys.stderr, flush=True)
            losses = []
            if ctl[2].item() > 0:
                break
        if cnn:
            xb, yb = next(batches)
        else:
            rows = torch.from_numpy(rng.choice(len(shard), size=batch, replace=False))
            xb, yb = x[rows], y[rows]
        # gossipd's loss: mean cross-entropy + l2/2 * ||x||^2 over every parameter (biases included).
        loss = F.cross_entropy(ddp(xb), yb)
        if a.l2 > 0 or not cnn:  # the mlp's loss as before; the cnn's has no l2 unless asked for
            loss = loss + 0.5 * a.l2 * sum(p.pow(2).sum() for p in model.parameters())
        opt.zero_grad(set_to_none=True)
        loss.backward()  # DDP all-reduces (averages) the gradients during backward
        opt.step()
        losses.append(loss.item())
        step += 1

    total = time.perf_counter() - t0
    measured = diff(bytes_start, iface_bytes(a.iface))
    # Every rank's own counters, so the report shows whether rank 0's traffic is typical.
    per_rank = torch.tensor([measured["tx"], measured["rx"]] if measured else [-1, -1], dtype=torch.float64)
    gathered = [torch.zeros(2, dtype=torch.float64) for _ in range(a.world_size)]
    dist.all_gather(gathered, per_rank)
    dist.destroy_process_group()
    if a.rank != 0:
        return
    out = {"method": "pytorch_ddp_gloo", "config": {k: v for k, v in vars(a).items() if k != "out"},
           "torch": torch.__version__, "num_params": num_params, "records": records,
           "time_to_target_seconds": target_at["seconds"] if target_at else None,
           "train_time_to_target_seconds": target_at["train_seconds"] if target_at else None,
           "steps_to_target": target_at["step"] if target_at else None,
           "final_accuracy": records[-1]["test_accuracy"], "steps": step, "total_seconds": round(total, 3),
           "eval_seconds": round(eval_s, 3),
           "bytes": {"estimated_ring_allreduce_per_rank_tx": int(est_step * step),
                     "estimated_per_step": int(est_step),
                     "measured_iface": a.iface or None,
                     "measured_rank0": measured,
                     "measured_per_rank": [{"tx": int(t[0]), "rx": int(t[1])} for t in gathered] if measured else None,
                     "measured_setup_rank0": diff(bytes0, bytes_start)}}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
