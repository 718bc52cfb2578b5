"""gossipd: the trainer client of the gossipd daemon (docs/trainer.md, protocol version 1).

    import gossipd
    with gossipd.attach(data_dir) as g:      # the local daemon's node.data_dir
        g.bind(model)                        # torch: params now live in shared memory
        while not g.done:
            loss = train_step(model, next(batches))
            g.mix(loss=loss)                 # mixed params written back in place

Gradient mode (trainer.mode = "gradient"): ``g.step(closure)`` instead of an optimizer step plus mix.
numpy: ``x = g.bind_array(n)``, then ``g.mix()`` or fill ``g.grad`` and ``g.step_array(loss)``.
"""

from .client import (PROTOCOL_VERSION, BridgeError, DaemonUnavailable, GossipdError, Trainer, attach)

__all__ = ["attach", "Trainer", "GossipdError", "BridgeError", "DaemonUnavailable", "PROTOCOL_VERSION"]
__version__ = "0.1.0"
