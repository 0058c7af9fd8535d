"""``LambdaCallback``: a callback made of plain functions."""

from __future__ import annotations

from typing import Any, Callable

from tinynet.callbacks.base import Callback

__all__ = ["LambdaCallback"]

_HOOKS = ("on_epoch_begin", "on_epoch_end", "on_train_begin", "on_train_end",
          "on_train_batch_begin", "on_train_batch_end")


class LambdaCallback(Callback):
    """A callback whose hooks are the functions given, as ``keras.callbacks.LambdaCallback``.

    Each function takes the hook's arguments: ``on_epoch_begin(epoch, logs)``,
    ``on_epoch_end(epoch, logs)``, ``on_train_begin(logs)``, ``on_train_end(logs)``,
    ``on_train_batch_begin(batch, logs)``, ``on_train_batch_end(batch, logs)``. Other
    keyword arguments become attributes (as Keras does).

    Args:
        on_epoch_begin, on_epoch_end, on_train_begin, on_train_end, on_train_batch_begin,
            on_train_batch_end: Callables or ``None``.
        **kwargs: Extra attributes.

    Raises:
        TypeError: A hook that is neither callable nor ``None``.
    """

    def __init__(self, on_epoch_begin: Callable | None = None,
                 on_epoch_end: Callable | None = None, on_train_begin: Callable | None = None,
                 on_train_end: Callable | None = None,
                 on_train_batch_begin: Callable | None = None,
                 on_train_batch_end: Callable | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.__dict__.update(kwargs)
        given = dict(zip(_HOOKS, (on_epoch_begin, on_epoch_end, on_train_begin, on_train_end,
                                  on_train_batch_begin, on_train_batch_end)))
        for hook, fn in given.items():
            if fn is None:
                continue
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {hook} must be callable or None, got {fn!r}")
            setattr(self, hook, fn)
