"""Shared by train_cnn.py (gossipd) and ddp_baseline.py (torch DDP): the model, the data and the shards.

Fashion-MNIST from the gzipped IDX files (no torchvision), a small CNN (~114k parameters), and the split
of the training set into per-node shards (iid, or label skew by a Dirichlet(alpha) draw), both by a fixed
seed so that every process computes the same split.
"""

from __future__ import annotations

import gzip
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training-set pixel statistics


def read_idx(path: str) -> np.ndarray:
    """An IDX file (optionally gzipped) as a numpy array of its declared type and shape."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, kind, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0:
        raise ValueError(f"{path}: not an IDX file (magic {data[:4].hex()})")
    types = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    if kind not in types:
        raise ValueError(f"{path}: unknown IDX element type 0x{kind:02x}")
    shape = struct.unpack(f">{ndim}I", data[4:4 + 4 * ndim])
    dt = np.dtype(types[kind])
    need = int(np.prod(shape)) * dt.itemsize
    body = data[4 + 4 * ndim:]
    if len(body) != need:
        raise ValueError(f"{path}: {len(body)} bytes of data, the header says {need}")
    return np.frombuffer(body, dtype=dt).reshape(shape).astype(dt.newbyteorder("="))


def load_raw(data_dir: str, split: str, max_rows: int | None = None):
    """(images N x 28 x 28 uint8, labels N int64) as numpy arrays; split: train or test."""
    prefix = "train" if split == "train" else "t10k"
    x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz")).astype(np.int64)
    if len(x) != len(y):
        raise ValueError(f"{data_dir}: {len(x)} {split} images but {len(y)} labels")
    if max_rows:
        x, y = x[:max_rows], y[:max_rows]
    return x, y


def to_tensors(x: np.ndarray, y: np.ndarray):
    """uint8 images and labels as (N x 1 x 28 x 28 float32 normalised, N int64) torch tensors. Convert only
    the rows a process uses: 8 trainers with a float copy of all 60k images each would take 1.5 GB."""
    xs = (torch.from_numpy(x.astype(np.float32)) / 255.0 - MEAN) / STD
    return xs.unsqueeze(1).contiguous(), torch.from_numpy(np.ascontiguousarray(y))


def load_split(data_dir: str, split: str, max_rows: int | None = None):
    """load_raw + to_tensors."""
    return to_tensors(*load_raw(data_dir, split, max_rows))


def shard_indices(labels: np.ndarray, node: int, nodes: int, seed: int = 0, dirichlet: float | None = None) -> np.ndarray:
    """The training rows of `node` among `nodes`: a seeded permutation cut in equal parts (iid), or, with
    `dirichlet` = alpha, each class's rows divided among the nodes in Dirichlet(alpha) proportions (label
    skew: small alpha, few classes per node). Every process computes the same split."""
    if not 0 <= node < nodes:
        raise ValueError(f"node {node} is not in 0..{nodes - 1}")
    rng = np.random.default_rng(seed)
    if dirichlet is None:
        return np.sort(np.array_split(rng.permutation(len(labels)), nodes)[node])
    mine = []
    for c in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == c))
        p = rng.dirichlet(np.full(nodes, float(dirichlet)))
        cuts = (np.cumsum(p)[:-1] * len(rows)).astype(int)
        mine.append(np.split(rows, cuts)[node])
    out = np.sort(np.concatenate(mine))
    if len(out) == 0:  # a node with no rows at all cannot train
        raise ValueError(f"node {node} got no training rows from Dirichlet({dirichlet}); use a larger alpha")
    return out


class CNN(nn.Module):
    """conv5x5(16) - pool - conv5x5(32) - pool - fc(64) - fc(10): 114,314 parameters. With `batchnorm`, a
    BatchNorm2d after each convolution (+96 parameters, +96 running statistics): the model whose buffers
    gossipd mixes in model mode (docs/trainer.md, "Buffers")."""

    def __init__(self, batchnorm: bool = False):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(16) if batchnorm else nn.Identity()
        self.bn2 = nn.BatchNorm2d(32) if batchnorm else nn.Identity()
        self.fc1 = nn.Linear(32 * 7 * 7, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def make_model(seed: int = 0, batchnorm: bool = False) -> CNN:
    """The CNN with weights drawn from `seed`: the same initial model in every process."""
    torch.manual_seed(seed)
    return CNN(batchnorm)


def num_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


class Batches:
    """Endless minibatches of a shard, reshuffled each epoch with a per-node seed."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int):
        self.x, self.y, self.bs = x, y, batch_size
        self.g = torch.Generator().manual_seed(seed)
        self.order = torch.empty(0, dtype=torch.long)
        self.pos = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.pos + self.bs > len(self.order):
            self.order = torch.randperm(len(self.x), generator=self.g)
            self.pos = 0
        i = self.order[self.pos:self.pos + self.bs]
        self.pos += self.bs
        return self.x[i], self.y[i]


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int = 1000):
    """(accuracy, mean cross-entropy) of `model` on (x, y), in eval mode (BatchNorm uses its running
    statistics, and does not update them); the model's mode is restored after."""
    was_training = model.training
    model.eval()
    correct, loss = 0, 0.0
    try:
        for i in range(0, len(x), batch):
            out = model(x[i:i + batch])
            loss += F.cross_entropy(out, y[i:i + batch], reduction="sum").item()
            correct += (out.argmax(1) == y[i:i + batch]).sum().item()
    finally:
        model.train(was_training)
    return correct / len(x), loss / len(x)


def single_thread():
    """One torch thread per process: the trainers share a small machine."""
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or parallel work already ran
        pass


def cosine_lr(lr: float, step: int, total: int) -> float:
    """lr * (1 + cos(pi * step / total)) / 2: from lr at step 0 to 0 at step `total` (--cosine)."""
    return lr * (1.0 + math.cos(math.pi * min(step, total) / max(total, 1))) / 2.0
