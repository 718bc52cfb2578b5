"""Torch side of gossipd: a module's parameters as views of the bridge's shared memory.

Imported by :meth:`gossipd.Trainer.bind` only, so that numpy users never import torch.
"""

from __future__ import annotations

from typing import Any, List, Optional

import os

import numpy as np
import torch

from .client import GossipdError

_TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}


def _as_tensor(region: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    """A shared-memory region as a tensor of the bridge dtype (a bfloat16 region is an int16 array)."""
    t = torch.from_numpy(region)
    return t.view(torch.bfloat16) if dtype == torch.bfloat16 else t


class ModuleBinding:
    """The tensors of `module` that the daemon mixes, flattened into the shared memory: the trainable
    parameters (``requires_grad``, in ``named_parameters()`` order), then, in model mode, the floating-point
    buffers (``named_buffers()`` order: BatchNorm's running mean and variance) not named in `local_buffers`.

    Frozen parameters (``requires_grad=False``) are left out: the daemon neither sends nor changes them, so a
    frozen layer stays bit for bit what the trainer made it (set the same frozen values on every node).
    Integer buffers (``num_batches_tracked``) always stay local. Buffers are mixed only in model mode: in
    gradient mode the daemon writes its model over the region every round and would erase the running
    statistics the trainer's forward passes update (docs/trainer.md, "Buffers"); which mode the daemon runs is
    asked with ``hello`` before the attach, so the set of tensors is fixed only then (:meth:`choose`).
    """

    def __init__(self, module: Any, dtype: str, local_buffers: Any = ()):
        if not hasattr(module, "named_parameters"):
            raise TypeError(f"gossipd: bind needs a torch.nn.Module, not {type(module).__name__} "
                            "(numpy users: bind_array(n))")
        self.dtype = _TORCH_DTYPES[dtype]
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("gossipd: the module has no trainable parameters (requires_grad) to mix")
        for name, p in named:
            self._check_tensor("parameter", name, p)
        self.n_params = len(named)
        self._named = named
        self._module = module  # check_bound looks the tensors up by name: an attribute may be reassigned
        self.candidate_buffers = self._buffers_to_mix(module, local_buffers)
        self.tensors: List[torch.Tensor] = []
        self.flat: torch.Tensor | None = None
        self.flat_grad: torch.Tensor | None = None
        self.chosen = False

    def _check_tensor(self, kind: str, name: str, t: torch.Tensor) -> None:
        if t.device.type != "cpu":
            raise ValueError(f"gossipd: {kind} {name!r} is on {t.device}; the shared memory is CPU memory "
                             "(bind a CPU model)")
        if t.layout != torch.strided:
            raise ValueError(f"gossipd: {kind} {name!r} is not a dense tensor")
        if t.dtype != self.dtype:
            hint = " or keep it local: bind(..., local_buffers=[name])" if kind == "buffer" else ""
            raise ValueError(f"gossipd: {kind} {name!r} is {t.dtype} but the bridge dtype is {self.dtype} "
                             f"(attach(..., dtype=...) or convert the model before bind{hint})")

    def _buffers_to_mix(self, module: Any, local_buffers: Any) -> list:
        """The floating-point buffers that are not to stay local; `local_buffers` True keeps all local,
        else it is a collection of buffer names (a name the module does not have is an error: a typo would
        otherwise mix what the trainer meant to keep)."""
        buffers = list(module.named_buffers())
        if local_buffers is True:
            return []
        if isinstance(local_buffers, str):
            local_buffers = [local_buffers]
        local = set(local_buffers or ())
        unknown = sorted(local - {n for n, _ in buffers})
        if unknown:
            have = ", ".join(n for n, _ in buffers) or "none"
            raise ValueError(f"gossipd: local_buffers names {unknown[0]!r}, which the module has no buffer of "
                             f"(its buffers: {have})")
        out = []
        for name, b in buffers:
            if name in local or not b.is_floating_point():
                continue  # integer buffers (num_batches_tracked) count this node's steps: they stay local
            self._check_tensor("buffer", name, b)
            out.append((name, b))
        return out

    def choose(self, mode: Optional[str]) -> Optional[str]:
        """Fixes the tensors for the daemon's trainer `mode` (None: a daemon too old to say; buffers stay
        local). Returns a line for the user when buffers that could be mixed stay local, else None."""
        if self.chosen:
            return None
        self.chosen = True
        named = list(self._named)
        note = None
        if mode == "model":
            named += self.candidate_buffers
        elif self.candidate_buffers:
            why = ("trainer.mode = 'gradient' (the daemon writes its model over the region every round)"
                   if mode == "gradient" else "the daemon is too old to mix them (no hello)")
            note = (f"gossipd: {len(self.candidate_buffers)} buffers ({self.candidate_buffers[0][0]}, ...) stay "
                    f"local: {why}")
        self.names = [n for n, _ in named]
        self.tensors = [t for _, t in named]
        self.kinds = ["parameter"] * self.n_params + ["buffer"] * (len(named) - self.n_params)
        self.sizes = [t.numel() for t in self.tensors]
        self.dim = sum(self.sizes)
        # What the daemon checks against its own model and its neighbours' (docs/trainer.md, "Layout").
        self.layout = [[n, list(t.shape), str(t.dtype).replace("torch.", "")] for n, t in named]
        return note

    @property
    def params(self) -> List[torch.Tensor]:
        return self.tensors[:self.n_params] if self.chosen else [p for _, p in self._named]

    def write_into(self, region: np.ndarray) -> None:
        """Copy the parameters' current values into `region` (the daemon asked for the initial model)."""
        flat = _as_tensor(region, self.dtype)
        off = 0
        with torch.no_grad():
            for t, n in zip(self.tensors, self.sizes):
                flat[off:off + n].copy_(t.detach().reshape(-1))
                off += n

    def attach_to(self, params: np.ndarray, grad: np.ndarray) -> None:
        """Make every tensor's .data a view of `params`; the Parameter and buffer objects (an optimizer's
        references, the module's attributes) stay, so BatchNorm's in-place updates land in the shared memory."""
        self.flat = _as_tensor(params, self.dtype)
        self.flat_grad = _as_tensor(grad, self.dtype)
        off = 0
        for t, n in zip(self.tensors, self.sizes):
            t.data = self.flat[off:off + n].view(t.shape)
            off += n

    def check_bound(self) -> None:
        """Every parameter is still its view of the shared memory: ``model.double()``, ``.to()`` or
        ``p.data = ...`` after bind gives a parameter new storage, and the daemon would mix a model the
        trainer no longer trains (that node trained alone, silently)."""
        if self.flat is None:
            return
        base = self.flat.data_ptr()
        item = self.flat.element_size()
        # The module's tensors now, by name: `module.bn.running_mean = t` (or a new Parameter) replaces the
        # module's tensor while the one bound still sits in the shared memory.
        now = dict(self._module.named_parameters())
        now.update(self._module.named_buffers())
        off = 0
        for kind, name, n in zip(self.kinds, self.names, self.sizes):
            t = now.get(name)
            if t is None or t.dtype != self.dtype or t.data.data_ptr() != base + off * item:
                raise GossipdError(f"gossipd: {kind} {name!r} is no longer in the shared memory (it, its dtype or "
                                   "its storage was replaced after bind: model.double(), .to(), p.data = ...); "
                                   "convert the model before bind, or detach and bind again")
            off += n

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def fill_grad(self) -> None:
        """Copy the parameters' .grad into the gradient region (zero where a parameter has none)."""
        off = 0
        with torch.no_grad():
            for t, n in zip(self.tensors, self.sizes):
                dst = self.flat_grad[off:off + n]
                g = t.grad  # None for a buffer
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
            for t in self.tensors:
                t.data = t.data.clone()
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


def load_model(module: Any, data_dir: str) -> List[str]:
    """A node's model (``<data_dir>/model.npy``) into `module`, tensor by tensor by name, through the index
    the daemon keeps beside it (``model_layout.json``: each bound tensor's name, shape and offset). Returns
    the names loaded; the module's other tensors (frozen parameters, local buffers) are left as they are.
    Raises GossipdError, naming the file or the tensor, when a file is missing or malformed, or when the
    module has no tensor of a name or has it in another shape; nothing is changed then."""
    import json as _json
    layout_path = os.path.join(data_dir, "model_layout.json")
    model_path = os.path.join(data_dir, "model.npy")
    try:
        with open(layout_path, encoding="utf-8") as f:
            layout = _json.load(f)
    except FileNotFoundError:
        raise GossipdError(f"gossipd: {layout_path} does not exist: the node's model has no names (trained "
                           "with bind_array, or before layouts); np.load(model.npy) gives the flat vector") from None
    except (OSError, ValueError) as e:
        raise GossipdError(f"gossipd: cannot read {layout_path}: {e}") from None
    try:
        flat = np.load(model_path, mmap_mode="r")
    except FileNotFoundError:
        raise GossipdError(f"gossipd: {model_path} does not exist: the node has not written a model yet "
                           "(it does at each checkpoint and at the end)") from None
    except (OSError, ValueError) as e:
        raise GossipdError(f"gossipd: cannot read {model_path}: {e}") from None
    tensors = layout.get("tensors") if isinstance(layout, dict) else None
    if not isinstance(tensors, list) or layout.get("dim") != flat.size or flat.ndim != 1:
        raise GossipdError(f"gossipd: {layout_path} does not describe {model_path} "
                           f"({flat.size} values, the index says {layout.get('dim') if isinstance(layout, dict) else '?'})")
    own = dict(module.state_dict(keep_vars=True))
    plan = []
    for t in tensors:
        name, shape, off = t.get("name"), t.get("shape"), t.get("offset")
        if name not in own:
            raise GossipdError(f"gossipd: the module has no tensor {name!r}, which the node's model has "
                               f"(load into the module the node trained)")
        dst = own[name]
        if list(dst.shape) != list(shape):
            raise GossipdError(f"gossipd: {name!r} is {list(dst.shape)} in the module, {list(shape)} in the node's model")
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not isinstance(off, int) or off < 0 or off + n > flat.size:
            raise GossipdError(f"gossipd: {layout_path}: tensor {name!r} lies outside model.npy")
        plan.append((name, dst, off, n, shape))
    with torch.no_grad():  # all checked: now change the module
        for name, dst, off, n, shape in plan:
            dst.copy_(torch.from_numpy(np.array(flat[off:off + n])).view(shape))
    return [p[0] for p in plan]
