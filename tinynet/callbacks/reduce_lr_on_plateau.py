"""``ReduceLROnPlateau``: lower the learning rate when a monitored quantity stalls."""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from tinynet.callbacks.base import Callback
from tinynet.callbacks.monitor import (check_counts, check_monitor_args, finite, improves,
                                       lower_is_better)

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(Callback):
    """Multiplies the optimizer's learning rate by ``factor`` when ``monitor`` has not
    improved for ``patience`` epochs, as ``keras.callbacks.ReduceLROnPlateau``.

    An improvement beats the best value by more than ``min_delta`` (down for losses, up
    for accuracies; ``mode`` decides where ``"auto"`` cannot). After a reduction the
    callback waits ``cooldown`` epochs before counting again; the rate never goes below
    ``min_lr`` (a rate already at or below it, compared in float32 as Keras does, is left
    alone). Each epoch's logs get the rate in force as ``learning_rate``.

    Args:
        monitor: The logs key to watch. Defaults to ``"val_loss"``.
        factor: The multiplier, a float in ``[0, 1)``. Defaults to 0.1.
        patience: Epochs without improvement before a reduction. Defaults to 10.
        verbose: 1 prints each reduction. Defaults to 0.
        mode: ``"auto"``, ``"min"`` or ``"max"``.
        min_delta: The smallest change that counts as an improvement. Defaults to 1e-4.
        cooldown: Epochs to wait after a reduction. Defaults to 0.
        min_lr: The lowest rate. Defaults to 0.0.

    Raises:
        TypeError: An argument of the wrong type; during ``fit``, a reduction due while the
            optimizer's rate is a schedule (Keras's optimizer refuses it too).
        ValueError: ``factor`` outside ``[0, 1)``, a negative count or ``min_lr``, or an
            unknown ``mode``.
    """

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0) -> None:
        super().__init__()
        owner = "ReduceLROnPlateau"
        check_monitor_args(owner, monitor, min_delta, mode)
        check_counts(owner, patience=patience, verbose=verbose, cooldown=cooldown)
        for arg, value in (("factor", factor), ("min_lr", min_lr)):
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{owner}: {arg} must be a float, got {value!r}")
        if not (finite(factor) and 0.0 <= factor < 1.0):
            raise ValueError(f"{owner}: factor must be a float in [0, 1) (Keras does not "
                             f"support a factor >= 1.0), got {factor!r}")
        if not (finite(min_lr) and min_lr >= 0.0):
            raise ValueError(f"{owner}: min_lr must be a finite float >= 0, got {min_lr!r}")
        self.monitor = monitor
        self.factor = float(factor)
        self.patience = int(patience)
        self.verbose = int(verbose)
        self.mode = mode
        self.min_delta = abs(float(min_delta))
        self.cooldown = int(cooldown)
        self.min_lr = float(min_lr)
        self.best: float | None = None
        self.wait = 0
        self.cooldown_counter = 0
        self._lower_is_better: bool | None = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.best = None
        self.wait = 0
        self.cooldown_counter = 0

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self._lower_is_better is None:
            self._lower_is_better = lower_is_better("ReduceLROnPlateau", self.model,
                                                    self.monitor, self.mode)
        logs = logs if logs is not None else {}
        optimizer = self.model.optimizer
        logs["learning_rate"] = float(optimizer.learning_rate)
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric `{self.monitor}` "
                          f"which is not available. Available metrics are: {','.join(logs)}.",
                          stacklevel=2)
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if improves(current, self.best, self.min_delta, self._lower_is_better):
            self.best = current
            self.wait = 0
        elif self.cooldown_counter == 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(optimizer.learning_rate)
                if old > np.float32(self.min_lr):
                    new = max(old * self.factor, self.min_lr)
                    optimizer.learning_rate = new  # TypeError over a schedule, as in Keras
                    if self.verbose > 0:
                        print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                              f"to {new}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
