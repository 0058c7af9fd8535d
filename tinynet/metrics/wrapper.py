"""``MeanMetricWrapper``: a metric from a function ``fn(y_true, y_pred)``, as Keras's.

``compile(metrics=[fn])`` wraps ``fn`` in it. ``fn`` returns per-sample values (or any
tensor of values, or a scalar) and may be written with :mod:`tinynet.ops` or NumPy; the
metric is the running mean of every value returned since the last ``reset_state``, each
counting once (Keras's ``Mean`` over the values, so a batch weighs by its size). The
function is saved by its registered name (:func:`tinynet.saving.register_keras_serializable`)
and looked up by that name on load; nothing is imported.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinynet.metrics.base import Metric
from tinynet.tensor import Tensor, align_labels, as_array

__all__ = ["MeanMetricWrapper"]


class MeanMetricWrapper(Metric):
    """Wraps ``fn(y_true, y_pred, **kwargs)`` as a metric: the mean of its values over the
    batches seen (Keras's ``MeanMetricWrapper``).

    Args:
        fn: Returns per-sample values (a tensor, an array or a scalar).
        name: Defaults to the function's name.
        dtype: Accepted for Keras compatibility (values are accumulated in float64).
        **kwargs: Passed to ``fn`` on every call (JSON-able, to be saved).

    Raises:
        TypeError: ``fn`` is not callable.
    """

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        if not callable(fn) or isinstance(fn, type):
            raise TypeError(f"MeanMetricWrapper: fn must be callable, got {fn!r}")
        self.fn = fn
        self.fn_kwargs = kwargs
        self.dtype = dtype
        super().__init__(name=name or getattr(fn, "__name__", "metric"))

    def values(self, y_true: Any, y_pred: Any) -> np.ndarray:
        from tinynet.ops import autodiff

        p = as_array(y_pred, f"{self.name}: y_pred")
        t = align_labels("MeanMetricWrapper", y_true, p)
        with autodiff.no_record():  # arrays in: the ops take them, and so does NumPy code
            out = self.fn(t, p, **self.fn_kwargs)
        try:
            return np.asarray(out.data if isinstance(out, Tensor) else out, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"MeanMetricWrapper {self.name!r}: fn must return numbers (a "
                            f"tensor, an array or a scalar), got {type(out).__name__}") from None

    def get_config(self) -> dict:
        from tinynet.custom_objects import registered_name

        return {"name": self.name, "dtype": self.dtype, "fn": registered_name(self.fn),
                **self.fn_kwargs}

    @classmethod
    def from_config(cls, config: dict) -> "MeanMetricWrapper":
        """Rebuilds the metric, looking ``fn`` up by its registered name (``custom_objects``
        scopes, then the registry).

        Raises:
            ValueError: ``fn`` names no registered function.
        """
        from tinynet.custom_objects import lookup

        config = dict(config)
        fn = lookup(config.pop("fn", None), "MeanMetricWrapper: fn")
        if not callable(fn) or isinstance(fn, type):
            raise ValueError(f"MeanMetricWrapper: fn {fn!r:.80} is not a function")
        return cls(fn, **config)
