"""Torch side of gossipd: a module's parameters as views of the bridge's shared memory.

Imported by :meth:`gossipd.Trainer.bind` only, so that numpy users never import torch.
"""

from __future__ import annotations

from typing import Any, List

import os

import numpy as np
import torch

from .client import GossipdError

_TORCH_DTYPES = {np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}


class ModuleBinding:
    """The trainable parameters of `module` (``requires_grad``, in ``named_parameters()`` order), flattened.

    Frozen parameters (``requires_grad=False``) are left out: the daemon neither sends nor changes them, so a
    frozen layer stays bit for bit what the trainer made it (set the same frozen values on every node).
    """

    def __init__(self, module: Any, np_dtype: np.dtype):
        if not hasattr(module, "named_parameters"):
            raise TypeError(f"gossipd: bind needs a torch.nn.Module, not {type(module).__name__} "
                            "(numpy users: bind_array(n))")
        self.dtype = _TORCH_DTYPES[np.dtype(np_dtype)]
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("gossipd: the module has no trainable parameters (requires_grad) to mix")
        self.names = [n for n, _ in named]
        self.params: List[torch.nn.Parameter] = [p for _, p in named]
        for name, p in named:
            if p.device.type != "cpu":
                raise ValueError(f"gossipd: parameter {name!r} is on {p.device}; the shared memory is CPU memory "
                                 "(bind a CPU model)")
            if p.layout != torch.strided:
                raise ValueError(f"gossipd: parameter {name!r} is not a dense tensor")
            if p.dtype != self.dtype:
                raise ValueError(f"gossipd: parameter {name!r} is {p.dtype} but the bridge dtype is {self.dtype} "
                                 f"(attach(..., dtype=...) or convert the model before bind)")
        self.sizes = [p.numel() for p in self.params]
        self.dim = sum(self.sizes)
        # What the daemon checks against its own model and its neighbours' (docs/trainer.md, "Layout").
        self.layout = [[n, list(p.shape), str(p.dtype).replace("torch.", "")] for n, p in named]
        self.flat: torch.Tensor | None = None
        self.flat_grad: torch.Tensor | None = None

    def write_into(self, region: np.ndarray) -> None:
        """Copy the parameters' current values into `region` (the daemon asked for the initial model)."""
        flat = torch.from_numpy(region)
        off = 0
        with torch.no_grad():
            for p, n in zip(self.params, self.sizes):
                flat[off:off + n].copy_(p.detach().reshape(-1))
                off += n

    def attach_to(self, params: np.ndarray, grad: np.ndarray) -> None:
        """Make every p.data a view of `params`; the Parameter objects (an optimizer's references) stay."""
        self.flat = torch.from_numpy(params)
        self.flat_grad = torch.from_numpy(grad)
        off = 0
        for p, n in zip(self.params, self.sizes):
            p.data = self.flat[off:off + n].view(p.shape)
            off += n

    def check_bound(self) -> None:
        """Every parameter is still its view of the shared memory: ``model.double()``, ``.to()`` or
        ``p.data = ...`` after bind gives a parameter new storage, and the daemon would mix a model the
        trainer no longer trains (that node trained alone, silently)."""
        if self.flat is None:
            return
        base = self.flat.data_ptr()
        item = self.flat.element_size()
        off = 0
        for name, p, n in zip(self.names, self.params, self.sizes):
            if p.dtype != self.dtype or p.data.data_ptr() != base + off * item:
                raise GossipdError(f"gossipd: parameter {name!r} is no longer in the shared memory (its dtype or "
                                   "storage was replaced after bind: model.double(), .to(), p.data = ...); "
                                   "convert the model before bind, or detach and bind again")
            off += n

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def fill_grad(self) -> None:
        """Copy the parameters' .grad into the gradient region (zero where a parameter has none)."""
        off = 0
        with torch.no_grad():
            for p, n in zip(self.params, self.sizes):
                dst = self.flat_grad[off:off + n]
                g = p.grad
                if g is None:
                    dst.zero_()
                else:
                    dst.copy_((g.to_dense() if g.is_sparse else g).reshape(-1))
                off += n

    def release(self) -> None:
        """Detach: the parameters become private copies of their current values."""
        if self.flat is None:
            return
        with torch.no_grad():
            for p in self.params:
                p.data = p.data.clone()
        self.flat = self.flat_grad = None


def save_optimizer(optimizer: Any, path: str) -> None:
    """optimizer.state_dict() to `path`, atomically (a crash leaves the previous file whole)."""
    tmp = path + ".tmp"
    torch.save(optimizer.state_dict(), tmp)
    os.replace(tmp, path)


def load_optimizer(optimizer: Any, path: str) -> bool:
    """The state saved at `path` into `optimizer`; False when there is no file."""
    if not os.path.exists(path):
        return False
    try:
        optimizer.load_state_dict(torch.load(path))
    except (ValueError, KeyError, RuntimeError) as e:
        raise GossipdError(f"gossipd: the optimizer state in {path} does not fit this optimizer ({e}); "
                           "delete the file to start the optimizer afresh") from None
    return True
