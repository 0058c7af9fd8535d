"""``LossFunctionWrapper``: a loss from a plain function ``f(y_true, y_pred)`` written
with :mod:`tinynet.ops` (``compile(loss=f)`` wraps it), as in Keras."""

from __future__ import annotations

from typing import Any, Callable

from tinynet.losses.base import Loss

__all__ = ["LossFunctionWrapper"]


class LossFunctionWrapper(Loss):
    """A loss from a function ``fn(y_true, y_pred, **kwargs)`` written with
    :mod:`tinynet.ops` (Keras's ``LossFunctionWrapper``; ``compile(loss=fn)`` wraps it).

    Args:
        fn: Returns the per-sample losses (any tensor of losses).
        reduction: ``"sum_over_batch_size"`` (Keras's default), ``"sum"`` or ``"mean"``.
        name: Defaults to the function's name.
        **kwargs: Passed to ``fn`` on every call.
    """

    def __init__(self, fn: Callable, reduction: str = "sum_over_batch_size",
                 name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError(f"LossFunctionWrapper: fn must be callable, got {fn!r}")
        super().__init__(name=name or getattr(fn, "__name__", "loss"), reduction=reduction,
                         dtype=dtype)
        self.fn = fn
        self.fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> Any:
        return self.fn(y_true, y_pred, **self.fn_kwargs)

    def get_config(self) -> dict:
        from tinynet.custom_objects import registered_name

        config = super().get_config()
        config["fn"] = registered_name(self.fn)
        config.update(self.fn_kwargs)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "LossFunctionWrapper":
        from tinynet.custom_objects import lookup

        config = dict(config)
        fn = lookup(config.pop("fn"), "LossFunctionWrapper: fn")
        return cls(fn, **config)
