"""``LearningRateScheduler``: set the optimizer's learning rate at each epoch's start."""

from __future__ import annotations

import inspect
import math
import numbers
from typing import Any, Callable

from tinynet.callbacks.base import Callback

__all__ = ["LearningRateScheduler"]


class LearningRateScheduler(Callback):
    """Sets ``optimizer.learning_rate = schedule(epoch, lr)`` at the start of each epoch.

    Args:
        schedule: ``schedule(epoch, lr) -> float`` (0-based epoch, current rate); a
            one-argument ``schedule(epoch)`` also works, as in Keras.
        verbose: 1 prints the new rate each epoch.

    The rate in force is logged as ``learning_rate`` at each epoch's end (so it appears
    in ``History.history``), as Keras does.

    Raises:
        TypeError: (during ``fit``) the optimizer's rate is a schedule, which a number
            cannot replace (Keras's optimizer refuses it too).
    """

    def __init__(self, schedule: Callable[..., float], verbose: int = 0) -> None:
        super().__init__()
        if not callable(schedule):
            raise TypeError(f"LearningRateScheduler: schedule must be callable, got {schedule!r}")
        if isinstance(verbose, bool) or not isinstance(verbose, numbers.Integral) or verbose < 0:
            raise ValueError(f"LearningRateScheduler: verbose must be a non-negative int, "
                             f"got {verbose!r}")
        self.schedule = schedule
        self.verbose = int(verbose)
        self._two_args = _accepts_two_args(schedule)

    def _optimizer(self) -> Any:
        optimizer = getattr(self.model, "optimizer", None)
        if optimizer is None or not hasattr(optimizer, "learning_rate"):
            raise ValueError('LearningRateScheduler: the optimizer must have a "learning_rate" '
                             'attribute')
        return optimizer

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        optimizer = self._optimizer()
        if self._two_args:
            lr = self.schedule(epoch, float(optimizer.learning_rate))
        else:
            lr = self.schedule(epoch)
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not math.isfinite(lr):
            raise ValueError(f"LearningRateScheduler: schedule must return a finite float, "
                             f"got {lr!r} at epoch {epoch}")
        optimizer.learning_rate = float(lr)
        if self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{float(lr)}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = float(self._optimizer().learning_rate)


def _accepts_two_args(fn: Callable) -> bool:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
        return True
    return len(positional) >= 2
