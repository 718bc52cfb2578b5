#!/usr/bin/env python3
"""The baseline for train_cnn.py: the same CNN, data shards and batch size trained with torch DDP.

N processes on 127.0.0.1 (torch.multiprocessing spawn, gloo backend), each on the shard that gossipd's
node of the same rank would train on, all-reducing every gradient every step (exact averaging: what
gossip approximates with neighbours only). Prints the test accuracy against steps and the bytes a process
sends per step, and writes a JSON summary (--out).

    python3 examples/pytorch/ddp_baseline.py --nodes 8 --steps 1000 --out /tmp/ddp.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnn  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=8, help="processes (the world size)")
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--dataset", default=cnn.DEFAULT_DATA)
    p.add_argument("--batch-size", type=int, default=32, help="per process, as train_cnn.py")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--cosine", action="store_true", help="decay --lr to 0 over --steps on a cosine")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--eval-max", type=int, default=2000, help="first this many test images (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dirichlet", type=float, default=None, metavar="ALPHA")
    p.add_argument("--port", type=int, default=0, help="rendezvous port on 127.0.0.1 (0: a free one)")
    p.add_argument("--out", default=None, help="JSON summary file")
    a = p.parse_args(argv)
    if a.nodes < 1 or a.steps < 1 or a.batch_size < 1 or a.eval_every < 0:
        p.error("--nodes, --steps and --batch-size must be >= 1, --eval-every >= 0")
    return a


def ring_allreduce_bytes(params: int, nodes: int, itemsize: int = 4) -> float:
    """Bytes each process sends per step for an all-reduce of all gradients with the ring algorithm:
    reduce-scatter then all-gather, each moving (N-1)/N of the vector out of every process:
        2 * (N - 1) / N * itemsize * params  (itemsize 4: float32 gradients).
    gloo may pick another algorithm (halving-doubling, ...) and DDP buckets the gradients, but the ring
    volume is the bandwidth-optimal figure all-reduce is usually quoted at."""
    return 2 * (nodes - 1) / nodes * itemsize * params


def worker(rank: int, args, port: int, results):
    cnn.single_thread()
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.nodes)
    try:
        model = cnn.make_model(args.seed)  # the same initial model everywhere (DDP also broadcasts rank 0's)
        x_all, y_all = cnn.load_raw(args.dataset, "train")
        rows = cnn.shard_indices(y_all, rank, args.nodes, seed=args.seed, dirichlet=args.dirichlet)
        x, y = cnn.to_tensors(x_all[rows], y_all[rows])
        del x_all
        batches = cnn.Batches(x, y, args.batch_size, seed=args.seed * 100003 + rank + 1)  # as train_cnn.py
        test_x, test_y = cnn.load_split(args.dataset, "test", args.eval_max or None) if rank == 0 else (None, None)
        ddp = DDP(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
        nparams = cnn.num_params(model)
        per_step = ring_allreduce_bytes(nparams, args.nodes)
        if rank == 0:
            print(f"ddp: {args.nodes} processes, {nparams} parameters, batch {args.batch_size} per process; "
                  f"ring all-reduce sends {per_step / 1e6:.3f} MB per process per step "
                  f"(2*(N-1)/N * 4 B * params)", flush=True)
        curve = []
        loss_ema = None
        dist.barrier()
        t0 = time.monotonic()
        eval_s = 0.0
        for step in range(1, args.steps + 1):
            xb, yb = next(batches)
            if args.cosine:
                for group in opt.param_groups:
                    group["lr"] = cnn.cosine_lr(args.lr, step - 1, args.steps)
            opt.zero_grad()
            loss = F.cross_entropy(ddp(xb), yb)
            loss.backward()  # DDP all-reduces (averages) the gradients here
            opt.step()
            loss_ema = loss.item() if loss_ema is None else 0.9 * loss_ema + 0.1 * loss.item()
            if rank == 0 and (args.eval_every and step % args.eval_every == 0 or step == args.steps):
                te = time.monotonic()
                acc, tl = cnn.evaluate(model, test_x, test_y)
                eval_s += time.monotonic() - te
                wall = time.monotonic() - t0
                curve.append({"step": step, "test_accuracy": acc, "test_loss": tl, "train_loss_ema": loss_ema,
                              "seconds": wall, "mb_sent_per_process": step * per_step / 1e6})
                print(f"ddp: step {step}/{args.steps}  loss {loss_ema:.4f}  test acc {acc:.2%} (loss {tl:.4f})  "
                      f"{wall:.1f} s  sent {step * per_step / 1e6:.1f} MB per process", flush=True)
        wall = time.monotonic() - t0
        if rank == 0:
            results.put({"nodes": args.nodes, "params": nparams, "steps": args.steps, "batch_size": args.batch_size,
                         "lr": args.lr, "momentum": args.momentum, "seed": args.seed, "dirichlet": args.dirichlet,
                         "eval_images": len(test_x),
                         "bytes_per_step_per_process": per_step,
                         "bytes_formula": "2*(N-1)/N * 4 * params (ring all-reduce of float32 gradients)",
                         "total_bytes_per_process": per_step * args.steps,
                         "seconds": wall, "seconds_in_eval": eval_s,
                         "final_test_accuracy": curve[-1]["test_accuracy"], "curve": curve})
    finally:
        dist.destroy_process_group()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv=None):
    args = parse_args(argv)
    port = args.port or free_port()
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, port, results), nprocs=args.nodes, join=True)
    summary = results.get()
    print(f"ddp: final test accuracy {summary['final_test_accuracy']:.2%} after {args.steps} steps, "
          f"{summary['total_bytes_per_process'] / 1e6:.1f} MB sent per process, {summary['seconds']:.1f} s", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
        print(f"ddp: summary in {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
