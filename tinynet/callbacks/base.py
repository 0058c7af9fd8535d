"""The callback base class, the list that dispatches every hook, and the argument check
of ``callbacks=``."""

from __future__ import annotations

from typing import Any, Iterable

from tinynet.keywords import KeywordChecked

__all__ = ["Callback", "CallbackList", "check_callbacks"]

_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
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


def _overrides(cb: Callback, hook: str) -> bool:
    """Whether ``cb`` has its own ``hook`` (or, for a train-batch hook, its Keras alias):
    in its class, or set on the instance (``LambdaCallback``)."""
    names = (hook, _BATCH_ALIASES[hook]) if hook in _BATCH_ALIASES else (hook,)
    return any(name in vars(cb) or getattr(type(cb), name, None) is not getattr(Callback, name)
               for name in names)


class CallbackList:
    """The one dispatcher of every hook of ``fit``, ``evaluate`` and ``predict``, as
    ``keras.callbacks.CallbackList``.

    It appends a :class:`~tinynet.callbacks.History` (``add_history``) and a
    :class:`~tinynet.callbacks.ProgbarLogger` (``add_progbar``) unless the list holds
    one, calls ``set_model`` then ``set_params`` on each callback, and passes every hook a
    fresh ``logs`` dict. A hook no callback overrides is skipped (so the per-batch hooks
    cost nothing when nobody listens); :meth:`wants` tells the loop whether to build the
    batch logs at all.

    Args:
        callbacks: The user's callbacks, in call order.
        model: The model, given to each callback.
        add_history: Append a ``History`` (``fit``).
        add_progbar: Append a ``ProgbarLogger`` (when ``verbose`` is not 0).
        **params: ``epochs``, ``steps``, ``verbose``: given to ``set_params``.
    """

    def __init__(self, callbacks: Iterable[Callback] = (), model: Any = None,
                 add_history: bool = False, add_progbar: bool = False, **params: Any) -> None:
        from tinynet.callbacks.history import History
        from tinynet.callbacks.progbar_logger import ProgbarLogger

        self.callbacks = list(callbacks)
        self.history = next((cb for cb in self.callbacks if isinstance(cb, History)), None)
        if self.history is None and add_history:
            self.history = History()
            self.callbacks.append(self.history)
        if add_progbar and not any(isinstance(cb, ProgbarLogger) for cb in self.callbacks):
            self.callbacks.append(ProgbarLogger())
        self.params = params
        for cb in self.callbacks:
            cb.set_model(model)
        for cb in self.callbacks:
            cb.set_params(dict(params))
        self._listeners = {hook: [getattr(cb, hook) for cb in self.callbacks
                                  if _overrides(cb, hook)] for hook in _HOOKS}

    def wants(self, hook: str) -> bool:
        """Whether any callback overrides ``hook``."""
        return bool(self._listeners[hook])

    def _call(self, hook: str, args: tuple, logs: dict | None) -> None:
        """Calls ``hook`` as Keras does: ``logs`` by keyword for the batch hooks,
        positionally for the others (so plain functions of ``LambdaCallback`` work)."""
        batch = hook.endswith(("batch_begin", "batch_end"))
        for fn in self._listeners[hook]:
            fresh = dict(logs) if logs else {}
            if batch:
                fn(*args, logs=fresh)
            else:
                fn(*args, fresh)

    def resume_epoch(self, initial_epoch: int) -> int:
        """The epoch ``fit`` starts from: the latest of ``initial_epoch`` and what any
        callback's :meth:`Callback.resume_epoch` asks for."""
        asked = [e for e in (cb.resume_epoch() for cb in self.callbacks) if e is not None]
        return max([initial_epoch, *asked])

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._call("on_train_begin", (), logs)

    def on_train_end(self, logs: dict | None = None) -> None:
        self._call("on_train_end", (), logs)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._call("on_epoch_begin", (epoch,), logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        """Every callback gets the same dict, as in Keras (a callback may add entries for
        those after it, e.g. the learning rate)."""
        logs = logs if logs is not None else {}
        for fn in self._listeners["on_epoch_end"]:
            fn(epoch, logs)

    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_train_batch_begin", (batch,), logs)

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_train_batch_end", (batch,), logs)

    def on_test_begin(self, logs: dict | None = None) -> None:
        self._call("on_test_begin", (), logs)

    def on_test_end(self, logs: dict | None = None) -> None:
        self._call("on_test_end", (), logs)

    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_test_batch_begin", (batch,), logs)

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_test_batch_end", (batch,), logs)

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._call("on_predict_begin", (), logs)

    def on_predict_end(self, logs: dict | None = None) -> None:
        self._call("on_predict_end", (), logs)

    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_predict_batch_begin", (batch,), logs)

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._call("on_predict_batch_end", (batch,), logs)


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
