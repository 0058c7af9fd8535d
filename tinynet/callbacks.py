"""Training callbacks with Keras 3 hook names and semantics.

``Sequential.fit`` calls, in order: ``on_train_begin``, then per epoch
``on_epoch_begin(epoch)``, ``on_train_batch_begin(batch)`` /
``on_train_batch_end(batch, logs)`` around each step (``logs`` hold the running epoch
means), ``on_epoch_end(epoch, logs)`` (``logs`` hold the epoch's loss, metrics and
``val_*`` entries), and finally ``on_train_end(logs)``. Epochs and batches are 0-based,
as in Keras. Setting ``model.stop_training = True`` ends training after the current
batch (checked after each batch and each epoch).
"""

from __future__ import annotations

import inspect
import math
import numbers
import warnings
from typing import Any, Callable, Iterable

__all__ = ["Callback", "CallbackList", "History", "EarlyStopping", "LearningRateScheduler",
           "ModelCheckpoint"]

_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end")


class Callback:
    """Base class: override the hooks you need (each receives an optional ``logs`` dict).

    Attributes:
        model: The model being trained (set by ``fit`` through :meth:`set_model`).
        params: ``{"verbose": ..., "epochs": ..., "steps": ...}`` of the current ``fit``.
    """

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs: dict | None = None) -> None:
        """Called once at the start of ``fit``."""

    def on_train_end(self, logs: dict | None = None) -> None:
        """Called once at the end of ``fit`` with the last epoch's logs."""

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the start of each epoch (0-based)."""

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the end of each epoch with its loss, metrics and ``val_*`` values."""

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each training step (batch index within the epoch, 0-based)."""

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each training step with the running means of the epoch."""

    def on_test_begin(self, logs: dict | None = None) -> None:
        """Called at the start of ``evaluate``."""

    def on_test_end(self, logs: dict | None = None) -> None:
        """Called at the end of ``evaluate``."""

    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each ``evaluate`` batch."""

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each ``evaluate`` batch."""

    def on_predict_begin(self, logs: dict | None = None) -> None:
        """Called at the start of ``predict``."""

    def on_predict_end(self, logs: dict | None = None) -> None:
        """Called at the end of ``predict``."""

    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each ``predict`` batch."""

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each ``predict`` batch."""


class CallbackList:
    """Dispatches hooks to callbacks, calling only those that override each hook.

    The per-batch hooks cost nothing when no callback overrides them, which keeps
    ``fit``'s per-step overhead low.
    """

    def __init__(self, callbacks: Iterable[Callback], model: Any, params: dict) -> None:
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            cb.set_model(model)
            cb.set_params(params)
        self._listeners = {
            hook: [getattr(cb, hook) for cb in self.callbacks
                   if getattr(type(cb), hook, None) is not getattr(Callback, hook)]
            for hook in _HOOKS}

    def wants(self, hook: str) -> bool:
        """Whether any callback overrides ``hook``."""
        return bool(self._listeners[hook])

    def call(self, hook: str, *args: Any) -> None:
        for fn in self._listeners[hook]:
            fn(*args)


def check_callbacks(callbacks: Any, owner: str) -> list[Callback]:
    """Validates a ``callbacks=`` argument: ``None`` or a list of :class:`Callback`."""
    if callbacks is None:
        return []
    if not isinstance(callbacks, (list, tuple)):
        raise TypeError(f"{owner}: callbacks must be a list of Callback objects, "
                        f"got {type(callbacks).__name__}")
    for cb in callbacks:
        if not isinstance(cb, Callback):
            raise TypeError(f"{owner}: callbacks must be a list of Callback objects, "
                            f"got an element of type {type(cb).__name__}")
    return list(callbacks)


def _finite(value: numbers.Real) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range
        return False


class History(Callback):
    """Records each epoch's logs; ``fit`` returns it (and sets ``model.history``).

    Attributes:
        history: ``{"loss": [...], "<metric>": [...], "val_loss": [...], ...}``.
        epoch: The 0-based indices of the epochs run.
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        self.model.history = self


_UP_WORDS = ("acc", "auc", "precision", "recall", "iou", "f1")
_DOWN_WORDS = ("loss", "error", "crossentropy", "hinge", "mse", "mae", "mape", "msle",
               "divergence", "poisson")


def _metric_direction(model: Any, name: str) -> str | None:
    """``"up"``/``"down"`` for a compiled metric key (or metric name), else ``None``."""
    keys = list(getattr(model, "metrics_names", []) or [])[1:]
    for key, metric in zip(keys, getattr(model, "metrics", []) or []):
        if name not in (key, getattr(metric, "name", None)):
            continue
        direction = getattr(metric, "direction", None) or getattr(metric, "_direction", None)
        if direction in ("up", "down"):
            return direction
        lowered = f"{key} {getattr(metric, 'name', '')}".lower()
        if any(w in lowered for w in _UP_WORDS):
            return "up"
        if any(w in lowered for w in _DOWN_WORDS):
            return "down"
    return None


def _monitor_direction(model: Any, monitor: str, mode: str) -> str | None:
    """``"down"`` (lower is better), ``"up"``, or ``None`` when ``mode="auto"`` cannot tell:
    an explicit mode wins, then the loss, then the compiled metric's direction."""
    if mode != "auto":
        return "down" if mode == "min" else "up"
    name = monitor[4:] if monitor.startswith("val_") else monitor
    return "down" if name == "loss" else _metric_direction(model, name)


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
        if not isinstance(monitor, str) or not monitor:
            raise TypeError(f"EarlyStopping: monitor must be a non-empty str, got {monitor!r}")
        if isinstance(min_delta, bool) or not isinstance(min_delta, numbers.Real):
            raise TypeError(f"EarlyStopping: min_delta must be a float, got {min_delta!r}")
        if not _finite(min_delta):
            raise ValueError(f"EarlyStopping: min_delta must be a finite float, got {min_delta!r}")
        for arg, value in (("patience", patience), ("verbose", verbose),
                           ("start_from_epoch", start_from_epoch)):
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise TypeError(f"EarlyStopping: {arg} must be a non-negative int, got {value!r}")
            if value < 0:
                raise ValueError(f"EarlyStopping: {arg} must be a non-negative int, got {value}")
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"EarlyStopping: mode must be one of 'auto', 'min', 'max', "
                             f"got {mode!r}")
        if baseline is not None and (isinstance(baseline, bool)
                                     or not isinstance(baseline, numbers.Real)):
            raise TypeError(f"EarlyStopping: baseline must be None or a float, got {baseline!r}")
        if baseline is not None and not _finite(baseline):
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
        direction = _monitor_direction(self.model, self.monitor, self.mode)
        if direction is None:
            raise ValueError(
                f"EarlyStopping: cannot tell whether monitor={self.monitor!r} should be "
                f"minimized or maximized; pass mode='min' or mode='max'")
        self._lower_is_better = direction == "down"
        self.best = math.inf if self._lower_is_better else -math.inf

    def _is_improvement(self, value: float, reference: float) -> bool:
        if self._lower_is_better:
            return value + self.min_delta < reference
        return value - self.min_delta > reference

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


class LearningRateScheduler(Callback):
    """Sets ``optimizer.learning_rate = schedule(epoch, lr)`` at the start of each epoch.

    Args:
        schedule: ``schedule(epoch, lr) -> float`` (0-based epoch, current rate); a
            one-argument ``schedule(epoch)`` also works, as in Keras.
        verbose: 1 prints the new rate each epoch.

    The rate in force is logged as ``learning_rate`` at each epoch's end (so it appears
    in ``History.history``), as Keras does.
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


def __getattr__(name: str):
    # ModelCheckpoint lives in tinynet.model_checkpoint (it imports this module).
    if name == "ModelCheckpoint":
        from tinynet.model_checkpoint import ModelCheckpoint

        return ModelCheckpoint
    raise AttributeError(f"module 'tinynet.callbacks' has no attribute {name!r}")
