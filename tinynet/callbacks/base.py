"""The callback base class, the list that dispatches the hooks, and the argument check
of ``fit(callbacks=...)``."""

from __future__ import annotations

from typing import Any, Iterable

from tinynet.keywords import KeywordChecked

__all__ = ["Callback", "CallbackList", "check_callbacks"]

_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end")


class Callback(KeywordChecked):
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


def _overrides(cb: Callback, hook: str) -> bool:
    """Whether ``cb`` has its own ``hook``: in its class, or set on the instance
    (``LambdaCallback``)."""
    return hook in vars(cb) or getattr(type(cb), hook, None) is not getattr(Callback, hook)


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
            hook: [getattr(cb, hook) for cb in self.callbacks if _overrides(cb, hook)]
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
