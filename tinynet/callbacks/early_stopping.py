"""``EarlyStopping``: stop training when a monitored quantity stops improving."""

from __future__ import annotations

import math
import numbers
import warnings

from tinynet.callbacks.base import Callback
from tinynet.callbacks.monitor import (check_counts, check_monitor_args, finite, improves,
                                       lower_is_better)

__all__ = ["EarlyStopping"]


class EarlyStopping(Callback):
    """Stops training when a monitored quantity has stopped improving (Keras semantics).

    Args:
        monitor: The logs key to watch, e.g. ``"val_loss"`` or ``"val_accuracy"``.
        min_delta: Changes smaller than this (in absolute value) are no improvement.
        patience: Epochs without improvement after which training stops.
        verbose: 1 prints a message when stopping / restoring.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (losses down, accuracies up).
        baseline: Training stops unless the quantity beats this within ``patience``.
        restore_best_weights: At the end, restore the weights of the best epoch.
        start_from_epoch: Epochs of warm-up before monitoring starts.

    Attributes:
        stopped_epoch: The 0-based epoch at which training stopped (0 if it did not).
        best: The best value seen; ``best_epoch`` its epoch; ``wait`` epochs since.

    Unlike Keras, ``best`` is also reset at ``on_train_begin``, so an instance reused
    for a second ``fit`` starts afresh.
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__()
        check_monitor_args("EarlyStopping", monitor, min_delta, mode)
        check_counts("EarlyStopping", patience=patience, verbose=verbose,
                     start_from_epoch=start_from_epoch)
        if baseline is not None and (isinstance(baseline, bool)
                                     or not isinstance(baseline, numbers.Real)):
            raise TypeError(f"EarlyStopping: baseline must be None or a float, got {baseline!r}")
        if baseline is not None and not finite(baseline):
            raise ValueError(f"EarlyStopping: baseline must be None or a finite float, "
                             f"got {baseline!r}")
        if not isinstance(restore_best_weights, bool):
            raise TypeError(f"EarlyStopping: restore_best_weights must be a bool, "
                            f"got {restore_best_weights!r}")
        self.monitor = monitor
        self.min_delta = abs(float(min_delta))
        self.patience = int(patience)
        self.verbose = int(verbose)
        self.mode = mode
        self.baseline = None if baseline is None else float(baseline)
        self.restore_best_weights = bool(restore_best_weights)
        self.start_from_epoch = int(start_from_epoch)
        self.wait = 0
        self.stopped_epoch = 0
        self.best_epoch = 0
        self.best_weights: list | None = None
        self.best = math.inf
        self._lower_is_better: bool | None = None

    def _resolve_mode(self) -> None:
        self._lower_is_better = lower_is_better("EarlyStopping", self.model, self.monitor,
                                                self.mode)
        self.best = math.inf if self._lower_is_better else -math.inf

    def _is_improvement(self, value: float, reference: float) -> bool:
        return improves(value, reference, self.min_delta, self._lower_is_better)

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        self.best_epoch = 0
        self._lower_is_better = None

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self._lower_is_better is None:
            self._resolve_mode()
        logs = logs or {}
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is not "
                          f"available. Available metrics are: {','.join(logs)}", stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print(f"Restoring model weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)
