"""The callback base class and the argument check of ``callbacks=``."""

from __future__ import annotations

from typing import Any

from tinynet.keywords import KeywordChecked

__all__ = ["Callback", "check_callbacks", "overrides", "HOOKS"]

HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
          "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
          "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
          "on_predict_batch_begin", "on_predict_batch_end")


_BATCH_ALIASES = {"on_train_batch_begin": "on_batch_begin", "on_train_batch_end": "on_batch_end"}


class Callback(KeywordChecked):
    """Base class: override the hooks you need, as ``keras.callbacks.Callback``.

    Every hook receives a ``logs`` dict (never ``None``): empty at the ``*_begin`` hooks,
    the running means of the loss and metrics after each train or test batch, the epoch's
    logs (with ``val_*`` entries) at ``on_epoch_end`` and ``on_train_end``, the test logs
    at ``on_test_end`` and ``{"outputs": ...}`` after each predict batch. As in Keras,
    ``on_train_batch_begin``/``on_train_batch_end`` call ``on_batch_begin``/
    ``on_batch_end`` unless overridden. Set ``self.model.stop_training = True`` to end
    ``fit`` after the current batch.

    Attributes:
        model: The model (set through :meth:`set_model` by ``fit``, ``evaluate`` and
            ``predict``).
        params: ``{"verbose": ..., "epochs": ..., "steps": ...}`` of the current call
            (``steps`` is ``None`` for a generator of unknown length).
    """

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        """Called first by ``fit``, ``evaluate`` and ``predict`` with the model."""
        self.model = model

    def set_params(self, params: dict) -> None:
        """Called after :meth:`set_model` with the call's parameters."""
        self.params = params

    def resume_epoch(self) -> int | None:
        """The 0-based epoch ``fit`` should start from after ``on_train_begin`` (when
        later than its ``initial_epoch``), or ``None``. ``BackupAndRestore`` returns the
        epoch after the one it restored; other callbacks leave ``fit`` where it is."""
        return None

    def on_train_begin(self, logs: dict | None = None) -> None:
        """Called once at the start of ``fit``."""

    def on_train_end(self, logs: dict | None = None) -> None:
        """Called once at the end of ``fit`` with the last epoch's logs."""

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the start of each epoch (0-based)."""

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Called at the end of each epoch with its loss, metrics and ``val_*`` values."""

    def on_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Keras's alias of :meth:`on_train_batch_begin` (called by it)."""

    def on_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Keras's alias of :meth:`on_train_batch_end` (called by it)."""

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each training step (batch index within the epoch, 0-based)."""
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each training step with the running means of the epoch."""
        self.on_batch_end(batch, logs=logs)

    def on_test_begin(self, logs: dict | None = None) -> None:
        """Called at the start of ``evaluate`` and of ``fit``'s validation."""

    def on_test_end(self, logs: dict | None = None) -> None:
        """Called at the end of ``evaluate`` and of ``fit``'s validation with its logs."""

    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each test batch."""

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each test batch with the running means."""

    def on_predict_begin(self, logs: dict | None = None) -> None:
        """Called at the start of ``predict``."""

    def on_predict_end(self, logs: dict | None = None) -> None:
        """Called at the end of ``predict``."""

    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        """Called before each ``predict`` batch."""

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        """Called after each ``predict`` batch with ``{"outputs": <the batch's outputs>}``."""


def overrides(cb: Callback, hook: str) -> bool:
    """Whether ``cb`` has its own ``hook`` (or, for a train-batch hook, its Keras alias):
    in its class, or set on the instance (``LambdaCallback``)."""
    names = (hook, _BATCH_ALIASES[hook]) if hook in _BATCH_ALIASES else (hook,)
    return any(name in vars(cb) or getattr(type(cb), name, None) is not getattr(Callback, name)
               for name in names)


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
