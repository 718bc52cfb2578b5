"""gossipd: the trainer client of the gossipd daemon (docs/trainer.md, protocol version 1).

    import gossipd
    with gossipd.attach(data_dir) as g:      # the local daemon's node.data_dir
        g.bind(model)                        # torch: params now live in shared memory
        while not g.done:
            loss = train_step(model, next(batches))
            g.mix(loss=loss)                 # mixed params written back in place

Gradient mode (trainer.mode = "gradient"): ``g.step(closure)`` instead of an optimizer step plus mix.
numpy: ``x = g.bind_array(n)``, then ``g.mix()`` or fill ``g.grad`` and ``g.step_array(loss)``.
After training: ``gossipd.load(model, data_dir)`` puts a node's model into the module by tensor name.
"""

import os

from .client import (PROTOCOL_VERSION, BridgeError, DaemonUnavailable, GossipdError, Trainer, attach)


def load(module, data_dir):
    """The model a node wrote (``<data_dir>/model.npy``, at each checkpoint and at the end) into a torch
    module, by tensor name through ``model_layout.json``; returns the names loaded. The module's tensors the
    node did not mix (frozen parameters, local buffers) are left as they are. GossipdError, naming the file or
    the tensor, when they do not fit; the module is then unchanged."""
    from .torch_helper import load_model  # torch only for torch users
    return load_model(module, os.fspath(data_dir))


__all__ = ["attach", "load", "Trainer", "GossipdError", "BridgeError", "DaemonUnavailable", "PROTOCOL_VERSION"]
__version__ = "0.1.0"
