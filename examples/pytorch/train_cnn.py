#!/usr/bin/env python3
"""Train a small CNN on Fashion-MNIST as the trainer of a local gossipd daemon (docs/trainer.md).

Start one daemon per node with trainer.enable = true, then one of these beside each:

    PYTHONPATH=python python3 examples/pytorch/train_cnn.py --data-dir /tmp/cl/node-0

Every trainer builds the model from the same seed (one initial model for the cluster), takes its shard of
the training set from the daemon's shard/shards (iid, or --dirichlet ALPHA label skew) and, in model mode,
takes SGD steps and hands its parameters to the daemon after each (g.mix); in gradient mode
(trainer.mode = "gradient") the daemon takes the step with algorithm.lr and the trainer only computes
gradients (g.step(closure)). Every --eval-every rounds it evaluates on the test set and reports the
accuracy to the daemon (status.json, /metrics, the dashboard).

--dry-run trains locally without a daemon (the same data path and model), to check the setup.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cnn  # noqa: E402

try:
    import gossipd
except ImportError:  # running from the repository without PYTHONPATH=python
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import gossipd


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=os.environ.get("GOSSIPD_DATA_DIR"),
                   help="the local daemon's node.data_dir (default: $GOSSIPD_DATA_DIR)")
    p.add_argument("--dataset", default=cnn.DEFAULT_DATA, help="directory of the Fashion-MNIST IDX .gz files")
    p.add_argument("--mode", choices=("auto", "model", "gradient"), default="auto",
                   help="expected trainer.mode of the daemon (auto: whatever it runs)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05, help="SGD step size (model mode; gradient mode: algorithm.lr)")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--cosine", action="store_true",
                   help="model mode: decay --lr to 0 over the daemon's rounds on a cosine (as ddp_baseline.py --cosine)")
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--local-steps", type=int, default=1, help="optimizer steps per mix (model mode)")
    p.add_argument("--eval-every", type=int, default=50, help="evaluate and report every this many rounds (0: never)")
    p.add_argument("--eval-max", type=int, default=2000, help="evaluate on the first this many test images (0: all)")
    p.add_argument("--log-every", type=int, default=10, help="a progress line every this many rounds")
    p.add_argument("--seed", type=int, default=0, help="model initialisation and shard split (same on every node)")
    p.add_argument("--batchnorm", action="store_true",
                   help="a BatchNorm2d after each convolution (model mode mixes its running statistics)")
    p.add_argument("--local-buffers", action="store_true",
                   help="keep the BatchNorm running statistics local instead of mixing them (for comparison)")
    p.add_argument("--dirichlet", type=float, default=None, metavar="ALPHA",
                   help="label-skewed shards: each class divided among nodes by Dirichlet(ALPHA)")
    p.add_argument("--timeout", type=float, default=5.0, help="seconds of daemon silence before reconnecting")
    p.add_argument("--reconnect-timeout", type=float, default=120.0)
    p.add_argument("--log-json", default=None, metavar="FILE",
                   help="write every evaluation (round, accuracy, loss, bytes this node sent) to FILE as JSON")
    p.add_argument("--save", default=None, metavar="FILE.npy",
                   help="at the end, save the node's final flat parameters (float32) to FILE.npy")
    p.add_argument("--save-state", default=None, metavar="FILE.pt",
                   help="at the end, save the module's state_dict (parameters and buffers) to FILE.pt")
    p.add_argument("--dry-run", action="store_true", help="no daemon: train locally for --steps steps")
    p.add_argument("--node", type=int, default=0, help="--dry-run: the shard to train on")
    p.add_argument("--nodes", type=int, default=1, help="--dry-run: the number of shards")
    p.add_argument("--steps", type=int, default=20, help="--dry-run: steps to take")
    a = p.parse_args(argv)
    if not a.dry_run and not a.data_dir:
        p.error("--data-dir (or GOSSIPD_DATA_DIR) is needed, or --dry-run")
    if a.batch_size < 1 or a.local_steps < 1 or a.eval_every < 0 or a.eval_max < 0:
        p.error("--batch-size and --local-steps must be >= 1, --eval-every and --eval-max >= 0")
    return a


class Run:
    """The data of one node, the model and the optimizer."""

    def __init__(self, args, model, node: int, nodes: int, train_raw):
        self.args, self.model, self.node, self.nodes = args, model, node, nodes
        x_all, y_all = train_raw
        rows = cnn.shard_indices(y_all, node, nodes, seed=args.seed, dirichlet=args.dirichlet)
        self.x, self.y = cnn.to_tensors(x_all[rows], y_all[rows])
        self.test_x, self.test_y = cnn.load_split(args.dataset, "test", args.eval_max or None)
        self.batches = cnn.Batches(self.x, self.y, args.batch_size, seed=args.seed * 100003 + node + 1)
        self.opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                   weight_decay=args.weight_decay)
        self.loss_ema = None
        self.t0 = time.monotonic()
        counts = torch.bincount(self.y, minlength=10).tolist()
        print(f"node {node}/{nodes}: {len(rows)} training images (per class {counts}), "
              f"{cnn.num_params(model)} parameters, {len(self.test_x)} test images", flush=True)

    def local_step(self) -> float:
        xb, yb = next(self.batches)
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(xb), yb)
        loss.backward()
        self.opt.step()
        return loss.item()

    def closure(self):
        """A gradient at the current parameters, on one minibatch (the same one if called again within a
        round: LEAD's second gradient is at a moved point, not on new data)."""
        xb, yb = self.batch

        def f():
            loss = F.cross_entropy(self.model(xb), yb)
            loss.backward()
            return loss
        return f

    def note(self, loss: float):
        self.loss_ema = loss if self.loss_ema is None else 0.9 * self.loss_ema + 0.1 * loss

    def evaluate(self):
        return cnn.evaluate(self.model, self.test_x, self.test_y)

    def line(self, done: int, total, extra: str = "", unit: str = "round") -> str:
        dt = time.monotonic() - self.t0
        tot = f"/{total}" if total is not None else ""
        return (f"node {self.node}/{self.nodes}: {unit} {done}{tot}  loss {self.loss_ema:.4f}{extra}  "
                f"{dt:.1f} s ({done / max(dt, 1e-9):.1f} {unit}s/s)")


def dry_run(args, train_raw):
    model = cnn.make_model(args.seed, args.batchnorm)
    run = Run(args, model, args.node, args.nodes, train_raw)
    acc, tl = run.evaluate()
    print(f"node {args.node}/{args.nodes}: dry run, initial test accuracy {acc:.2%} (loss {tl:.4f})", flush=True)
    for s in range(1, args.steps + 1):
        run.note(run.local_step())
        if args.eval_every and s % args.eval_every == 0 or s == args.steps:
            acc, tl = run.evaluate()
            print(run.line(s, args.steps, f"  test acc {acc:.2%} (loss {tl:.4f})", "step"), flush=True)
        elif args.log_every and s % args.log_every == 0:
            print(run.line(s, args.steps, unit="step"), flush=True)
    return 0


def bytes_sent(data_dir: str):
    """What this node's daemon has sent so far (model frames, control, membership; status.json)."""
    import json
    try:
        with open(os.path.join(data_dir, "status.json")) as f:
            return json.load(f).get("bytes_sent")
    except (OSError, ValueError):
        return None


def train(args, train_raw):
    model = cnn.make_model(args.seed, args.batchnorm)  # the same initial model on every node
    with gossipd.attach(args.data_dir, timeout=args.timeout, reconnect_timeout=args.reconnect_timeout) as g:
        g.bind(model, local_buffers=args.local_buffers)  # params (and buffers) now live in shared memory
        if args.mode != "auto" and args.mode != g.mode:
            raise SystemExit(f"train_cnn: --mode {args.mode}, but the daemon runs trainer.mode = {g.mode!r}")
        print(f"node {g.node}/{g.nodes}: attached to {g.endpoint}: {g.algorithm}, trainer.mode {g.mode}, "
              f"round {g.round}/{g.rounds}", flush=True)
        run = Run(args, model, g.shard, g.shards, train_raw)
        next_eval = (g.round // args.eval_every + 1) * args.eval_every if args.eval_every else None
        next_log = g.round + args.log_every if args.log_every else None
        evals = []
        while not g.done:
            if g.mode == "model":
                if args.cosine:
                    for group in run.opt.param_groups:
                        group["lr"] = cnn.cosine_lr(args.lr, g.round, g.rounds)
                for _ in range(args.local_steps):
                    loss = run.local_step()
                g.mix(loss=loss)
            else:
                run.batch = next(run.batches)
                loss = float(g.step(run.closure()))
            run.note(loss)
            r = g.round
            if next_eval is not None and (r >= next_eval or g.done):
                acc, tl = run.evaluate()
                g.report(accuracy=acc, loss=run.loss_ema)
                evals.append({"round": r, "accuracy": acc, "test_loss": tl, "train_loss": run.loss_ema,
                              "bytes_sent": bytes_sent(args.data_dir), "seconds": time.monotonic() - run.t0})
                print(run.line(r, g.rounds, f"  test acc {acc:.2%} (loss {tl:.4f})"), flush=True)
                next_eval = (r // args.eval_every + 1) * args.eval_every
            elif next_log is not None and r >= next_log:
                print(run.line(r, g.rounds), flush=True)
            if next_log is not None and r >= next_log:
                next_log = r + args.log_every
        acc, tl = run.evaluate()
        print(f"node {g.node}/{g.nodes}: done at round {g.round}: test accuracy {acc:.2%} (loss {tl:.4f})", flush=True)
        if args.save_state:
            torch.save(model.state_dict(), args.save_state)
        if args.save:
            import numpy as np
            np.save(args.save, torch.cat([p.detach().reshape(-1) for p in model.parameters()]).numpy())
        if args.log_json:
            import json
            with open(args.log_json, "w") as f:
                json.dump({"node": g.node, "nodes": g.nodes, "algorithm": g.algorithm, "rounds": g.rounds,
                           "final_accuracy": acc, "bytes_sent": bytes_sent(args.data_dir), "evals": evals}, f)
    return 0


def main(argv=None):
    args = parse_args(argv)
    cnn.single_thread()  # 8 trainers on 2 cores
    train_raw = cnn.load_raw(args.dataset, "train")
    try:
        return dry_run(args, train_raw) if args.dry_run else train(args, train_raw)
    except gossipd.GossipdError as e:
        print(f"train_cnn: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
