"""Client of the gossipd trainer bridge, protocol version 1 (docs/trainer.md).

The daemon binds a ZeroMQ ROUTER at ``ipc://<data_dir>/trainer.sock``; this client connects a DEALER and
speaks one-frame JSON messages. Parameters and gradient live in a shared-memory file the daemon creates
(``2 * dim * itemsize`` bytes: parameters at offset 0, gradient at ``dim * itemsize``).

Only numpy and pyzmq are needed here; torch is imported by :mod:`gossipd.torch_helper`, and only when
:meth:`Trainer.bind` is given a module.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import sys
import time
from typing import Any, Callable, Iterable, Optional

import numpy as np
import zmq

PROTOCOL_VERSION = 1
# The shared memory's element type per attach dtype. numpy has no bfloat16: its regions are int16 arrays of
# the raw 16 bits, which bind(module) views as torch.bfloat16 (bind_array refuses bfloat16).
_DTYPES = {"float32": np.dtype(np.float32), "float64": np.dtype(np.float64), "bfloat16": np.dtype(np.int16)}
_SUN_PATH_MAX = 107  # sizeof(sockaddr_un.sun_path) - 1 on Linux
# The error code with which the daemon says it does not know this trainer (a restarted daemon, or one that
# dropped us): the client re-attaches instead of failing. "replaced" is not one of them: another trainer
# took this node over, and fighting it back would only make the two replace each other.
_NOT_ATTACHED = "not_attached"
# A daemon from before the codes sends only the text: these fragments of it mean not_attached.
_NOT_ATTACHED_TEXTS = ("not attached", "before attach", "send attach first")


class GossipdError(RuntimeError):
    """Base class of the errors this package raises."""


class BridgeError(GossipdError):
    """The daemon answered {"op":"error"} (the message is the daemon's text), or its reply made no sense.

    ``code`` is the daemon's error code, a stable snake_case name to match on (docs/trainer.md, "Errors":
    ``dim_mismatch``, ``wrong_mode``, ``replaced``...); None when the client found the fault itself or the
    daemon predates the codes. The text may change between releases, the codes do not.
    """

    def __init__(self, message: str, code: Optional[str] = None):
        super().__init__(message)
        self.code = code


class DaemonUnavailable(GossipdError, TimeoutError):
    """The daemon did not answer (or did not come back after a restart) within reconnect_timeout."""


class _Lost(Exception):
    """Internal: no message within `timeout`, or the daemon does not know us: reconnect."""


class _Finished(Exception):
    """Internal: while we were away the daemon ended its training and exited; it will not come back."""


def attach(data_dir: "str | os.PathLike[str]", timeout: float = 5.0, reconnect_timeout: float = 120.0,
           dtype: str = "float32") -> "Trainer":
    """The trainer end of the bridge of the daemon whose node.data_dir is `data_dir`.

    Nothing is sent yet: the daemon needs the number of parameters, so the `attach` message goes out at
    :meth:`Trainer.bind` (a torch module) or :meth:`Trainer.bind_array` (numpy). Use it as a context
    manager: leaving the block detaches (also on an exception)::

        with gossipd.attach(data_dir) as g:
            g.bind(model)
            while not g.done:
                loss = train_step(model, next(batches))
                g.mix(loss=loss)

    timeout: seconds without any message from the daemon (replies and `wait` keepalives alike) after which
    it is taken for dead and the client reconnects. reconnect_timeout: how long to keep trying to attach
    (at bind, and after a restart) before raising :class:`DaemonUnavailable`. dtype: float32 or float64,
    the element type of the shared memory (a bound module's parameters must have it).
    """
    return Trainer(data_dir, timeout=timeout, reconnect_timeout=reconnect_timeout, dtype=dtype)


def _number(x: Any, what: str) -> Optional[float]:
    """float(x) for JSON, None for None or a non-finite value (JSON has no NaN; the daemon reads a missing
    value as 'none')."""
    if x is None:
        return None
    try:
        v = float(x)  # also a 0-d torch tensor or a numpy scalar
    except (TypeError, ValueError):
        raise TypeError(f"gossipd: {what} must be a number, not {type(x).__name__}") from None
    return v if math.isfinite(v) else None


class _ArrayBinding:
    """bind_array(): the parameters are the shared-memory region itself."""

    def __init__(self, dim: int, initial: Optional[np.ndarray]):
        self.dim = dim
        self.initial = initial  # values offered as the initial model at the first attach
        self.params: Optional[np.ndarray] = None  # the current region

    def write_into(self, region: np.ndarray) -> None:
        if self.params is not None:  # a re-attach: our current model
            region[:] = self.params
        elif self.initial is not None:
            region[:] = self.initial
        else:
            region[:] = 0

    def attach_to(self, params: np.ndarray, grad: np.ndarray) -> None:
        self.params = params
        self.initial = None

    def release(self) -> None:
        pass  # the caller's arrays stay views of the mapping; it goes when the last of them does


class Trainer:
    """A trainer attached (or about to attach) to one gossipd daemon; see :func:`attach`."""

    def __init__(self, data_dir: "str | os.PathLike[str]", timeout: float = 5.0, reconnect_timeout: float = 120.0,
                 dtype: str = "float32"):
        if dtype not in _DTYPES:
            raise ValueError(f"gossipd: dtype {dtype!r} is not supported (float32, float64 or bfloat16)")
        if not timeout > 0 or not reconnect_timeout > 0:
            raise ValueError("gossipd: timeout and reconnect_timeout must be positive")
        self.data_dir = os.path.abspath(os.fspath(data_dir))
        if os.path.exists(self.data_dir) and not os.path.isdir(self.data_dir):
            raise GossipdError(f"gossipd: {self.data_dir} is not a directory (expected the daemon's node.data_dir)")
        sock_path = os.path.join(self.data_dir, "trainer.sock")
        if len(os.fsencode(sock_path)) > _SUN_PATH_MAX:
            raise GossipdError(f"gossipd: {sock_path} is too long for a unix socket ({_SUN_PATH_MAX} bytes at most)")
        self.endpoint = "ipc://" + sock_path
        self.timeout = float(timeout)
        self.reconnect_timeout = float(reconnect_timeout)
        self.dtype = dtype
        self._np_dtype = _DTYPES[dtype]
        self._ctx = zmq.Context()
        self._sock: Optional[zmq.Socket] = None
        self._poller: Optional[zmq.Poller] = None
        self._binding: Any = None
        self._mm: Optional[mmap.mmap] = None
        self._params: Optional[np.ndarray] = None
        self._grad: Optional[np.ndarray] = None
        self._info: dict = {}
        self._round: Optional[int] = None
        self._done = False
        self._closed = False
        self._attached_wall = 0.0  # time.time() of the last attach: status.json older than this is not news
        self._optimizer: Any = None  # bind(module, optimizer): saved on checkpoint rounds
        self.reconnects = 0  # how many times the client re-attached after losing the daemon

    # ----------------------------------------------------------------- what the daemon told us
    @property
    def node(self) -> Optional[int]:
        """This daemon's node id (None before bind)."""
        return self._info.get("node")

    @property
    def nodes(self) -> Optional[int]:
        """The cluster's number of nodes (None before bind)."""
        return self._info.get("nodes")

    @property
    def shard(self) -> Optional[int]:
        """This trainer's part of the data, in [0, shards): the node id, or for a node that joined beyond
        cluster.nodes the id modulo it (it then shares that node's part). None before bind."""
        s, n = self._info.get("shard"), self._info.get("shards")
        if isinstance(s, int) and isinstance(n, int):
            return s
        node, nodes = self.node, self.nodes  # a daemon from before shards
        return node % nodes if isinstance(node, int) and isinstance(nodes, int) and nodes > 0 else None

    @property
    def shards(self) -> Optional[int]:
        """The number of parts the data is cut into (cluster.nodes); None before bind."""
        n = self._info.get("shards")
        return n if isinstance(n, int) else self.nodes

    @property
    def mode(self) -> Optional[str]:
        """'model' (call mix) or 'gradient' (call step); None before bind."""
        return self._info.get("mode")

    @property
    def algorithm(self) -> Optional[str]:
        return self._info.get("algorithm")

    @property
    def rounds(self) -> Optional[int]:
        """The number of rounds the daemon runs (None before bind)."""
        return self._info.get("rounds")

    @property
    def round(self) -> Optional[int]:
        """The daemon's next round: the number of rounds over (None before bind). It never goes back, also
        across daemon restarts: a node that rejoined at a lower round keeps the highest it reported."""
        return self._round

    @property
    def done(self) -> bool:
        """True once the daemon has finished its last round."""
        return self._done

    @property
    def dim(self) -> Optional[int]:
        return None if self._binding is None else self._binding.dim

    @property
    def params(self) -> np.ndarray:
        """The parameter region of the shared memory (numpy view). After a reconnect it is a new array."""
        self._need_bound()
        return self._params

    @property
    def grad(self) -> np.ndarray:
        """The gradient region of the shared memory (numpy view). After a reconnect it is a new array."""
        self._need_bound()
        return self._grad

    # ----------------------------------------------------------------- binding (sends attach)
    def bind(self, module: Any, optimizer: Any = None, local_buffers: Any = ()) -> Any:
        """Attach with the parameters of a torch module and make them views of the shared memory.

        The parameters that require a gradient are taken, in ``named_parameters()`` order; frozen ones
        (``requires_grad=False``) are neither sent nor changed. Their names, shapes and dtypes go with the
        attach: the daemon refuses a module whose layout differs from its model's (``layout_mismatch``) and
        a neighbour whose trainer bound another. Afterwards each ``p.data`` is a view into the parameter
        region: optimizers (created before or after) keep working on the same
        Parameter objects, and the daemon's mixed model shows in the module with no copy. If the daemon
        already has a model (a restart, a re-attach) the module shows it; the module's own values are then
        dropped, never written over the daemon's. Do not replace ``p.data`` later (``module.to()``,
        ``.float()``, ``.double()``): mix and step check that every parameter is still its view and raise
        GossipdError if not. The parameters must be on the CPU with the attach dtype. Returns the module.

        Buffers: when the daemon runs ``trainer.mode = "model"`` the module's floating-point buffers
        (BatchNorm's running mean and variance) are bound and mixed with the parameters, as DDP synchronises
        them; ``local_buffers`` (a list of buffer names, or True for all) keeps some on this node. Integer
        buffers (``num_batches_tracked``) and every buffer in gradient mode stay local.

        `optimizer` (optional): its ``state_dict()`` is saved to ``<data_dir>/trainer_optimizer.pt`` on the
        rounds the daemon checkpoints (``node.checkpoint_every``) and at detach, and loaded here when the
        daemon already has a model: a restarted trainer continues with its momentum or Adam moments.
        """
        self._need_unbound()
        from .torch_helper import ModuleBinding, load_optimizer  # torch only for torch users
        self._binding = b = ModuleBinding(module, self.dtype, local_buffers)
        try:
            init = self._first_attach()
        except BridgeError as e:
            if e.code in ("dim_mismatch", "layout_mismatch") and b.chosen and len(b.tensors) > b.n_params:
                # A run this daemon began before buffers were mixed (or with them kept local) has none.
                raise BridgeError(f"{e} (this bind mixes the module's buffers; to continue a run made without "
                                  "them: bind(module, local_buffers=True))", e.code) from None
            raise
        if optimizer is not None and not init and load_optimizer(optimizer, self._optimizer_path()):
            print(f"gossipd: restored the optimizer's state from {self._optimizer_path()}", file=sys.stderr, flush=True)
        self._optimizer = optimizer  # only once its state loaded (or there was none)
        return module

    def bind_array(self, n: int, initial: Any = None) -> np.ndarray:
        """Attach with `n` parameters and return the parameter region (a numpy view; see also `grad`).

        `initial` (n values) is offered as the initial model if the daemon asks for one (init: true;
        zeros if not given); if the daemon already has a model, the returned array holds it. After a
        reconnect the regions are new arrays: read ``g.params`` / ``g.grad`` again after each mix/step.
        """
        self._need_unbound()
        if isinstance(n, bool) or int(n) != n or int(n) <= 0:
            raise ValueError(f"gossipd: bind_array needs a positive number of parameters, not {n!r}")
        if self.dtype == "bfloat16":
            raise ValueError("gossipd: numpy has no bfloat16: bind a torch module with dtype='bfloat16', or use "
                             "float32 arrays")
        n = int(n)
        init = None
        if initial is not None:
            init = np.asarray(initial, dtype=self._np_dtype).reshape(-1)
            if init.size != n:
                raise ValueError(f"gossipd: initial has {init.size} values, not {n}")
            init = init.copy()
        self._binding = _ArrayBinding(n, init)
        self._first_attach()
        return self._params

    # ----------------------------------------------------------------- rounds
    def mix(self, loss: Any = None) -> None:
        """Model mode: hand the parameters to the daemon and return once they hold the mixed model.

        `loss` (optional) is shown in the daemon's status. After the last round (`done`) it returns at
        once. If the daemon restarted meanwhile, the client re-attaches and returns with the parameters
        holding the daemon's model (the round is taken as done).
        """
        self._need_bound()
        if self.mode != "model":
            raise GossipdError(f"gossipd: this daemon runs trainer.mode = {self.mode!r}: use step(closure) "
                               "(numpy: step_array), not mix")
        if self._done:
            return
        self._check_bound()
        msg: dict = {"op": "mix"}
        v = _number(loss, "loss")
        if v is not None:
            msg["loss"] = v
        try:
            reply = self._request(msg, ("mixed",))
        except _Lost as e:
            self._recover(str(e))
            return
        self._on_mixed(reply)

    def step(self, closure: Callable[[], Any]) -> Any:
        """Gradient mode (bound module): one round with gradients from `closure`.

        closure() computes the loss and fills ``.grad`` of the module's parameters (``loss.backward()``),
        like ``torch.optim.Optimizer.step(closure)``; the client sets every ``.grad`` to None before each
        call, so the closure need not zero them. The gradients go to the daemon, which applies its update
        to the parameters; if the method first moves the parameters (LEAD, `grad_at`), the closure is
        called again at the new point. Returns the loss of the last closure call (None once `done`).
        """
        self._need_bound()
        if self.mode != "gradient":
            raise GossipdError(f"gossipd: this daemon runs trainer.mode = {self.mode!r}: use mix(loss=...), not step")
        if not hasattr(self._binding, "fill_grad"):
            raise GossipdError("gossipd: step(closure) needs a module bound with bind(module); "
                               "with bind_array fill g.grad and call step_array(loss)")
        if self._done:
            return None
        self._check_bound()
        while True:
            self._binding.zero_grad()
            loss = closure()
            self._binding.fill_grad()
            msg: dict = {"op": "grad"}
            v = _number(loss, "the closure's loss")
            if v is not None:
                msg["loss"] = v
            try:
                reply = self._request(msg, ("mixed", "grad_at"))
            except _Lost as e:
                self._recover(str(e))
                return loss
            if reply["op"] == "mixed":
                self._on_mixed(reply)
                return loss
            self._on_grad_at(reply)

    def step_array(self, loss: Any = None) -> bool:
        """Gradient mode (numpy): send the gradient the caller put in ``g.grad`` (at ``g.params``).

        Returns True once the round is over (``g.params`` holds the daemon's new model), False if the
        daemon moved the parameters and wants a gradient there (`grad_at`, LEAD's start step): fill
        ``g.grad`` at the new ``g.params`` and call step_array again, which the usual
        ``while not g.done:`` loop does by itself.
        """
        self._need_bound()
        if self.mode != "gradient":
            raise GossipdError(f"gossipd: this daemon runs trainer.mode = {self.mode!r}: use mix(loss=...), "
                               "not step_array")
        if self._done:
            return True
        msg: dict = {"op": "grad"}
        v = _number(loss, "loss")
        if v is not None:
            msg["loss"] = v
        try:
            reply = self._request(msg, ("mixed", "grad_at"))
        except _Lost as e:
            self._recover(str(e))
            return True
        if reply["op"] == "mixed":
            self._on_mixed(reply)
            return True
        self._on_grad_at(reply)
        return False

    def report(self, accuracy: Any = None, loss: Any = None) -> None:
        """Show an accuracy and/or a loss in the daemon's status.json, /metrics and dashboard."""
        self._need_bound()
        msg: dict = {"op": "report"}
        for key, value in (("accuracy", accuracy), ("loss", loss)):
            v = _number(value, key)
            if v is not None:
                msg[key] = v
        if len(msg) == 1:
            if accuracy is None and loss is None:
                raise ValueError("gossipd: report needs accuracy= or loss=")
            return  # only non-finite values: nothing JSON can carry
        for attempt in range(3):
            try:
                self._request(msg, ("ok",))
                return
            except _Lost as e:
                if self._done:  # the daemon exits shortly after its last round: no reason to wait for it
                    print(f"gossipd: report not delivered ({e}; the daemon finished its rounds)",
                          file=sys.stderr, flush=True)
                    return
                self._recover(str(e))
        raise GossipdError("gossipd: the daemon took the report three times without answering it")

    # ----------------------------------------------------------------- leaving
    def detach(self) -> None:
        """Tell the daemon we leave (it goes on without a trainer) and release everything. Idempotent.

        A bound module keeps its current values (copied out of the shared memory); numpy arrays from
        bind_array/params/grad stay valid (the mapping goes with the last of them).
        """
        if self._closed:
            return
        self._closed = True
        if self._optimizer is not None and self._info:
            try:
                self._save_optimizer()  # the newest state for a trainer that comes back
            except (OSError, RuntimeError) as e:  # leaving must not fail: the last checkpoint round's is kept
                print(f"gossipd: could not save the optimizer's state at detach ({e})", file=sys.stderr, flush=True)
        try:
            if self._sock is not None and self._info:
                self._send({"op": "detach"})
                # Best effort: the daemon may be gone (it exits shortly after its last round). Anything
                # but "ok" (a late reply, a keepalive) is skipped.
                end = time.monotonic() + min(self.timeout, 1.0)
                while (left := end - time.monotonic()) > 0:
                    if not self._poller.poll(math.ceil(left * 1000)):
                        break
                    try:
                        if json.loads(self._sock.recv()).get("op") == "ok":
                            break
                    except (ValueError, AttributeError):
                        pass
        except zmq.ZMQError:
            pass
        finally:
            if self._binding is not None:
                self._binding.release()
            self._close_socket()
            self._params = self._grad = self._mm = None
            self._ctx.term()

    close = detach

    def __enter__(self) -> "Trainer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.detach()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self._close_socket()
                self._ctx.term()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("attached" if self._info else "not bound")
        return (f"<gossipd.Trainer {self.endpoint} {state} node={self.node} mode={self.mode} "
                f"round={self.round}/{self.rounds}>")

    # ----------------------------------------------------------------- internals
    def _need_unbound(self) -> None:
        if self._closed:
            raise GossipdError("gossipd: this trainer is detached")
        if self._binding is not None:
            raise GossipdError("gossipd: already bound (one bind or bind_array per attach)")

    def _need_bound(self) -> None:
        if self._closed:
            raise GossipdError("gossipd: this trainer is detached")
        if self._binding is None or not self._info:
            raise GossipdError("gossipd: call bind(module) or bind_array(n) first")

    def _check_bound(self) -> None:
        if hasattr(self._binding, "check_bound"):
            self._binding.check_bound()

    def _set_round(self, r: Any) -> None:
        """g.round never goes back (an LR schedule reads it): a node that rejoined its cluster may continue
        at a lower round than it reached alone (docs/trainer.md)."""
        if isinstance(r, int) and not isinstance(r, bool):
            self._round = r if self._round is None else max(self._round, r)

    def _optimizer_path(self) -> str:
        return os.path.join(self.data_dir, "trainer_optimizer.pt")

    def _save_optimizer(self) -> None:
        from .torch_helper import save_optimizer
        save_optimizer(self._optimizer, self._optimizer_path())

    def _on_mixed(self, reply: dict) -> None:
        self._set_round(reply.get("round"))
        every = self._info.get("checkpoint_every")
        r = reply.get("round")
        if self._optimizer is not None and isinstance(every, int) and every > 0 and isinstance(r, int) and r % every == 0:
            self._save_optimizer()
        if reply.get("done"):
            self._done = True

    def _on_grad_at(self, reply: dict) -> None:
        self._set_round(reply.get("round"))

    def _close_socket(self) -> None:
        if self._sock is not None:
            self._sock.close(linger=0)
        self._sock = None
        self._poller = None

    def _open_socket(self) -> None:
        self._close_socket()
        s = self._ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.connect(self.endpoint)  # ipc connects in the background: the file may not exist yet
        self._sock = s
        self._poller = zmq.Poller()
        self._poller.register(s, zmq.POLLIN)

    def _send(self, msg: dict) -> None:
        try:
            self._sock.send(json.dumps(msg).encode(), zmq.NOBLOCK)
        except zmq.Again:
            raise _Lost("cannot queue a message to the daemon") from None

    def _receive(self, expect: Iterable[str], budget: float) -> dict:
        """The next reply whose op is in `expect`. `wait` keepalives restart the clock; {"op":"error"}
        raises BridgeError with the daemon's code (or _Lost if the code is not_attached: the daemon does not
        know us); `budget` seconds of silence raise _Lost."""
        deadline = time.monotonic() + budget
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Lost(f"no message from the daemon for {budget:g} s")
            if not self._poller.poll(math.ceil(left * 1000)):
                continue
            raw = self._sock.recv()
            try:
                msg = json.loads(raw)
            except ValueError:
                raise BridgeError(f"gossipd: the daemon sent a message that is not JSON: {raw[:80]!r}") from None
            op = msg.get("op") if isinstance(msg, dict) else None
            if op == "wait":
                deadline = time.monotonic() + budget
                continue
            if op == "error":
                why = " ".join(str(msg.get("error", "(no message)")).split())
                code = msg.get("code")
                code = code if isinstance(code, str) and code else None
                if code == _NOT_ATTACHED or (code is None and any(s in why for s in _NOT_ATTACHED_TEXTS)):
                    raise _Lost(f"the daemon does not know this trainer ({why})")
                raise BridgeError(f"gossipd daemon: {why}", code)
            if op in expect:
                return msg
            raise BridgeError(f"gossipd: unexpected reply {op!r} from the daemon (expected {' or '.join(expect)})")

    def _request(self, msg: dict, expect: Iterable[str], budget: Optional[float] = None) -> dict:
        self._send(msg)
        return self._receive(expect, self.timeout if budget is None else budget)

    def _first_attach(self) -> bool:
        """Attaches; returns whether the daemon took our parameters as its initial model (init)."""
        deadline = time.monotonic() + self.reconnect_timeout
        try:
            while True:
                try:
                    return self._attach(deadline)
                except _Lost:
                    continue  # lost between attached and ready: attach again (until the deadline)
        except BaseException:
            self._binding = None
            self._info = {}
            self._close_socket()
            raise

    def _recover(self, reason: str) -> None:
        """The daemon is gone or forgot us: attach again with the same dim and dtype, map its new shared
        memory and point the parameters at it, then return as if the round were over."""
        deadline = time.monotonic() + self.reconnect_timeout
        self._close_socket()
        while True:
            try:
                init = self._attach(deadline, reason)
                break
            except _Lost:
                continue
            except _Finished:
                self._finish_without_daemon(reason)
                return
        self.reconnects += 1
        print(f"gossipd: reconnected to the daemon at {self.endpoint} ({reason}); round {self._round}, "
              + ("gave it our parameters as its initial model" if init else "continuing from its model"),
              file=sys.stderr, flush=True)

    def _daemon_finished(self) -> bool:
        """status.json, rewritten since we last attached, says the daemon finished its rounds."""
        path = os.path.join(self.data_dir, "status.json")
        try:
            if os.stat(path).st_mtime < self._attached_wall:
                return False
            with open(path, encoding="utf-8") as f:
                return json.load(f).get("state") == "done"
        except (OSError, ValueError, AttributeError):
            return False

    def _finish_without_daemon(self, reason: str) -> None:
        """The daemon finished without us: take its final model (model.npy, written at its end) if it is
        there and ours in size, else keep the last model it gave us; either way we are done."""
        self._done = True
        took = "kept the last model it gave us"
        path = os.path.join(self.data_dir, "model.npy")
        try:
            if self._params is not None and os.stat(path).st_mtime >= self._attached_wall:
                final = np.load(path)
                if final.shape == self._params.shape and np.isfinite(final).all():
                    if self.dtype == "bfloat16":  # model.npy is float32: round it as torch would
                        import torch
                        final = torch.from_numpy(np.ascontiguousarray(final, dtype=np.float32)).to(torch.bfloat16)
                        final = final.view(torch.int16).numpy()
                    self._params[:] = final
                    took = "took its final model (model.npy)"
        except (OSError, ValueError):
            pass
        print(f"gossipd: the daemon at {self.endpoint} finished its rounds while this trainer was away "
              f"({reason}); {took}", file=sys.stderr, flush=True)

    def _attach(self, deadline: float, reason: Optional[str] = None) -> bool:
        """attach (retrying on fresh sockets until `deadline`), map the shared memory, bind the parameters
        to it and, if the daemon asks for it, send init. Returns the reply's init."""
        b = self._binding
        msg: Optional[dict] = None
        while True:
            # A daemon that ran its last round while this trainer was busy (or not answering) has exited:
            # retrying for reconnect_timeout would only keep the trainer (and `gossipd cluster`) waiting.
            if reason is not None and self._daemon_finished():
                raise _Finished()
            left = deadline - time.monotonic()
            if left <= 0:
                why = f" after {reason}" if reason else ""
                raise DaemonUnavailable(f"gossipd: the daemon at {self.endpoint} did not answer within "
                                        f"{self.reconnect_timeout:g} s{why}; is it running with trainer.enable = true?")
            # A fresh socket per try: an attach queued towards a daemon that died is dropped with it.
            self._open_socket()
            try:
                if not getattr(b, "chosen", True):
                    self._choose_tensors(b, min(self.timeout, left))
                if msg is None:
                    msg = {"op": "attach", "version": PROTOCOL_VERSION, "dim": b.dim, "dtype": self.dtype,
                           "pid": os.getpid()}
                    if getattr(b, "layout", None) is not None:
                        msg["layout"] = b.layout
                reply = self._request(msg, ("attached",), budget=min(self.timeout, left))
                break
            except _Lost:
                continue
        self._check_attached(reply, b.dim)
        self._attached_wall = time.time()
        mm, params, grad = self._map(reply["shm"], b.dim)
        init = bool(reply.get("init"))
        if init:
            b.write_into(params)  # our current values become the daemon's initial model
        b.attach_to(params, grad)  # if not init, the region already holds the daemon's model
        self._mm, self._params, self._grad = mm, params, grad  # the previous mapping goes with its last view
        self._info = {k: reply.get(k) for k in ("node", "nodes", "shard", "shards", "mode", "algorithm", "rounds",
                                                "checkpoint_every")}
        self._set_round(reply.get("round"))
        rounds = self._info.get("rounds")
        self._done = isinstance(rounds, int) and self._round is not None and self._round >= rounds
        if init:
            ready = self._request({"op": "init"}, ("ready",))
            self._set_round(ready.get("round"))
        return init

    def _choose_tensors(self, b: Any, budget: float) -> None:
        """Asks the daemon its trainer mode (hello) and fixes which of the module's tensors are bound: its
        buffers are mixed in model mode only. A daemon from before hello (unknown_op) keeps them local."""
        try:
            mode = self._request({"op": "hello"}, ("hello",), budget=budget).get("mode")
        except BridgeError as e:
            if e.code != "unknown_op":
                raise
            mode = None
        note = b.choose(mode if isinstance(mode, str) else None)
        if note:
            print(note, file=sys.stderr, flush=True)

    def _check_attached(self, reply: dict, dim: int) -> None:
        if reply.get("dim") != dim:
            raise BridgeError(f"gossipd: the daemon attached {reply.get('dim')} parameters, not {dim}")
        if reply.get("dtype", self.dtype) != self.dtype:
            raise BridgeError(f"gossipd: the daemon attached dtype {reply.get('dtype')!r}, not {self.dtype!r}")
        if reply.get("mode") not in ("model", "gradient"):
            raise BridgeError(f"gossipd: the daemon runs an unknown trainer mode {reply.get('mode')!r}")
        if not isinstance(reply.get("shm"), str) or not reply["shm"]:
            raise BridgeError("gossipd: the daemon's attached reply names no shared memory (shm)")

    def _map(self, path: str, dim: int):
        if not path.startswith("/dev/shm/") and not os.path.isabs(path):
            path = "/dev/shm/" + path
        size = 2 * dim * self._np_dtype.itemsize
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError as e:
            raise GossipdError(f"gossipd: cannot open the daemon's shared memory {path}: {e.strerror}") from None
        try:
            have = os.fstat(fd).st_size
            if have < size:
                raise GossipdError(f"gossipd: the daemon's shared memory {path} has {have} bytes, not {size}")
            mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        params = np.frombuffer(mm, dtype=self._np_dtype, count=dim, offset=0)
        grad = np.frombuffer(mm, dtype=self._np_dtype, count=dim, offset=dim * self._np_dtype.itemsize)
        return mm, params, grad
