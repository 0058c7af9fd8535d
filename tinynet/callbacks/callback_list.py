"""``CallbackList``: the one dispatcher of every hook of ``fit``, ``evaluate`` and
``predict``, as ``keras.callbacks.CallbackList``."""

from __future__ import annotations

from typing import Any, Iterable

from tinynet.callbacks.base import HOOKS, Callback, overrides
from tinynet.callbacks.history import History
from tinynet.callbacks.progbar_logger import ProgbarLogger

__all__ = ["CallbackList"]


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
                                  if overrides(cb, hook)] for hook in HOOKS}

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
