"""``TerminateOnNaN``: stop training at the first batch whose loss is not finite."""

from __future__ import annotations

import math

from tinynet.callbacks.base import Callback
from tinynet.layers.layer import check_bool

__all__ = ["TerminateOnNaN"]


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite, as
    ``keras.callbacks.TerminateOnNaN``.

    A non-finite batch loss never updates the weights (they stay those after the last
    finite step) and reaches the callbacks as ``nan``; ``fit`` then raises
    ``FloatingPointError`` unless a callback has set ``model.stop_training``. This one
    does: it prints ``Batch <b>: Invalid loss, terminating training`` and sets
    ``model.stop_training`` (the epoch ends, ``on_epoch_end`` and ``on_train_end`` run), or
    with ``raise_error=True`` raises ``RuntimeError`` at once.

    Args:
        raise_error: Raise instead of stopping gracefully. Defaults to ``False``.

    Raises:
        TypeError: ``raise_error`` is not a bool.
    """

    def __init__(self, raise_error: bool = False) -> None:
        super().__init__()
        self.raise_error = check_bool(raise_error, "raise_error", "TerminateOnNaN")

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is None or math.isfinite(loss):
            return
        if self.raise_error:
            raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. Loss value: "
                               f"{loss}. Terminating training immediately.")
        print(f"Batch {batch}: Invalid loss, terminating training")
        self.model.stop_training = True
