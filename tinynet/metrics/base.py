"""The metric base class (built-in and Keras-style metrics) and the label helpers every
metric shares."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from tinynet.keywords import KeywordChecked
from tinynet.metrics.variable import _AGGREGATIONS, Variable, check_dtype
from tinynet.reprs import plain_repr
from tinynet.tensor import Tensor, as_array, match_labels

__all__ = ["Metric"]


def _same_rank(owner: str, y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """float32 arrays of equal shape (Keras squeezes/expands a trailing axis of 1)."""
    p = as_array(y_pred, f"{owner}: y_pred")
    return match_labels(owner, y_true, p), p


def _sparse_labels(owner: str, y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer labels shaped like ``y_pred`` without its last axis (a trailing axis of 1
    dropped), and ``y_pred``."""
    p = as_array(y_pred)
    t = y_true.data if isinstance(y_true, Tensor) else np.asarray(y_true)
    if t.ndim == p.ndim and t.ndim > 0 and t.shape[-1] == 1:
        t = t.reshape(t.shape[:-1])
    if t.shape != p.shape[:-1]:
        raise ValueError(f"{owner}: y_true shape {np.shape(y_true)} does not match y_pred "
                         f"shape {p.shape}")
    return t, p


def _snake_case(name: str) -> str:
    intermediate = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


class Metric(KeywordChecked):
    """Base class of every metric.

    Two ways to write one:

    * **Keras style** (a subclass that defines ``update_state`` and ``result`` and not
      ``values``): the state lives in variables made with :meth:`add_variable` (or
      :meth:`add_weight`), ``update_state(y_true, y_pred, sample_weight=None)`` updates
      them (``v.assign_add(...)``), ``result()`` returns the value (a tensor, a variable
      or a float) and ``reset_state()`` defaults to zeroing every variable, as
      ``keras.metrics.Metric``. ``metric(y_true, y_pred)`` updates, then returns
      ``result()`` (Keras). In ``fit`` and ``evaluate`` such a metric is *stateful*: every
      batch goes to ``update_state``, the logged value is ``result()`` so far, and the
      state is reset at the start of each epoch and of each ``evaluate`` (so a count
      restarts each epoch, as in Keras). Metrics passed to ``compile(metrics=...)`` get
      no sample weights (Keras's ``metrics``, not ``weighted_metrics``).
    * **tinynet's built-ins** define ``values(y_true, y_pred)`` (per-entry values); the
      metric is their mean, ``metric(y_true, y_pred)`` the batch mean (stateless) and
      ``update_state`` / ``result`` / ``reset_state`` the running mean.

    Args:
        dtype: The dtype of the metric's variables (``"float32"`` by default, as Keras).
        name: The metric's name (its key in ``History.history``); defaults to the snake
            case of the class name (``BinaryTruePositives`` -> ``binary_true_positives``).
    """

    _default_name: str | None = None
    #: Whether the logged value is ``result()`` over the batches so far (metrics of counts,
    #: Keras-style subclasses), rather than the mean of per-batch values.
    stateful = False
    #: A Keras-style subclass (``update_state``/``result`` and variables; set per class).
    _keras_style = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        keras_style = (cls.values is Metric.values
                       and cls.update_state is not Metric.update_state)
        cls._keras_style = keras_style
        if keras_style and "stateful" not in cls.__dict__:
            cls.stateful = True

    def __init__(self, dtype: Any = None, name: str | None = None) -> None:
        owner = type(self).__name__
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"{owner}: name must be a non-empty str, got {name!r}")
        self.name = name if name is not None else (self._default_name
                                                   or _snake_case(type(self).__name__))
        if dtype is not None or "dtype" not in self.__dict__:
            self.dtype = check_dtype(dtype, owner)
        self._variables: list[Variable] = []
        self._metrics: list[Metric] = []
        if not self._keras_style:  # a Keras-style metric starts from its initializers
            self.reset_state()

    def __setattr__(self, name: str, value: Any) -> None:
        # metrics held as attributes are tracked (their variables and resets), as Keras
        if isinstance(value, Metric) and not name.startswith("_"):
            tracked = self.__dict__.get("_metrics")
            if tracked is not None and all(value is not m for m in tracked):
                tracked.append(value)
        object.__setattr__(self, name, value)

    # -- variables (Keras style) ------------------------------------------------------------
    def add_variable(self, shape: Any = (), initializer: Any = "zeros", dtype: Any = None,
                     aggregation: str = "sum", name: str | None = None) -> Variable:
        """Creates a state variable (Keras 3's ``Metric.add_variable``): ``shape`` a tuple
        of ints, ``initializer`` ``"zeros"``, ``"ones"``, a number or a callable
        ``(shape, dtype) -> array``, ``dtype`` defaulting to the metric's.

        Raises:
            RuntimeError: called before ``super().__init__()``.
            TypeError, ValueError: a bad shape, initializer, dtype, aggregation or name.
        """
        owner = f"{type(self).__name__}.add_variable"
        if "_variables" not in self.__dict__:
            raise RuntimeError(f"{type(self).__name__}: call super().__init__() in "
                               f"__init__ before add_variable()")
        shape = _variable_shape(shape, owner)
        dtype = check_dtype(dtype, owner, default=self.dtype or "float32")
        if aggregation not in _AGGREGATIONS:
            raise ValueError(f"{owner}: aggregation must be one of "
                             f"{', '.join(map(repr, _AGGREGATIONS))}, got {aggregation!r}")
        if name is None:
            name = "variable" if not self._variables else f"variable_{len(self._variables)}"
        if not isinstance(name, str) or not name:
            raise TypeError(f"{owner}: name must be a non-empty str or None, got {name!r}")
        value = _initial_value(initializer, shape, dtype, owner)
        variable = Variable(value, name, aggregation)
        variable.path = f"{self.name}/{name}"
        self._variables.append(variable)
        return variable

    def add_weight(self, shape: Any = (), initializer: Any = None, dtype: Any = None,
                   name: str | None = None) -> Variable:
        """Keras 3's alias of :meth:`add_variable` (``initializer=None``: zeros)."""
        return self.add_variable(shape=shape,
                                 initializer="zeros" if initializer is None else initializer,
                                 dtype=dtype, name=name)

    @property
    def variables(self) -> list[Variable]:
        """The state variables, this metric's then those of metrics held as attributes."""
        out = list(self.__dict__.get("_variables", ()))
        for m in self.__dict__.get("_metrics", ()):
            out += m.variables
        return out

    # -- the protocol ----------------------------------------------------------------------
    def values(self, y_true: Any, y_pred: Any) -> np.ndarray:  # pragma: no cover - abstract
        """Per-entry metric values (float64) of a built-in metric."""
        raise NotImplementedError(f"{type(self).__name__}.values")

    def __call__(self, y_true: Any, y_pred: Any, *args: Any, **kwargs: Any) -> Any:
        """A built-in metric: the batch mean of :meth:`values` (stateless). A Keras-style
        metric: ``update_state(...)``, then ``result()`` (as Keras)."""
        if self._keras_style:
            self.update_state(y_true, y_pred, *args, **kwargs)
            return self.result()
        v = np.ascontiguousarray(self.values(y_true, y_pred), dtype=np.float64).reshape(-1)
        return float(np.sum(v) / v.size) if v.size else 0.0

    def update_state(self, y_true: Any, y_pred: Any) -> None:
        """Adds a batch to the running mean."""
        v = np.ascontiguousarray(self.values(y_true, y_pred), dtype=np.float64).reshape(-1)
        self._total += float(np.sum(v))
        self._count += v.size

    def result(self) -> Any:
        """The running mean since the last :meth:`reset_state` (0.0 when empty)."""
        if self._keras_style:
            raise NotImplementedError(f"{type(self).__name__} must define result(), which "
                                      f"returns the metric's value from its variables")
        return self._total / self._count if self._count else 0.0

    def reset_state(self) -> None:
        """Back to the start: a Keras-style metric zeroes every variable (Keras's default)
        and resets the metrics it holds."""
        if self._keras_style:
            for v in self.__dict__.get("_variables", ()):
                v.assign(np.zeros(v.shape, dtype=v.dtype))
            for m in self.__dict__.get("_metrics", ()):
                m.reset_state()
            return
        self._total = 0.0
        self._count = 0

    def get_config(self) -> dict:
        if self._keras_style:
            return {"name": self.name, "dtype": self.dtype}
        return {"name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "Metric":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


def _variable_shape(shape: Any, owner: str) -> tuple[int, ...]:
    if shape is None:
        shape = ()
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or any(
            isinstance(d, bool) or not isinstance(d, (int, np.integer)) for d in shape):
        raise TypeError(f"{owner}: shape must be a tuple of ints, got {shape!r}")
    if any(d < 0 for d in shape):
        raise ValueError(f"{owner}: shape must hold non-negative ints, got {tuple(shape)!r}")
    return tuple(int(d) for d in shape)


def _initial_value(initializer: Any, shape: tuple, dtype: str, owner: str) -> np.ndarray:
    if isinstance(initializer, str):
        key = initializer.lower()
        if key == "zeros":
            return np.zeros(shape, dtype=dtype)
        if key == "ones":
            return np.ones(shape, dtype=dtype)
        raise ValueError(f"{owner}: initializer must be 'zeros', 'ones', a number or a "
                         f"callable (shape, dtype) -> array, got {initializer!r}")
    if isinstance(initializer, (int, float, np.integer, np.floating)) and not isinstance(
            initializer, bool):
        return np.full(shape, initializer, dtype=dtype)
    if callable(initializer):
        try:
            value = initializer(shape, dtype=dtype)
        except TypeError:
            value = initializer(shape)
        value = np.asarray(getattr(value, "data", value))
        if value.dtype.kind not in "biuf":
            raise TypeError(f"{owner}: initializer {initializer!r} returned dtype "
                            f"{value.dtype}, not numbers")
        try:
            return np.broadcast_to(value, shape).astype(dtype)
        except ValueError:
            raise ValueError(f"{owner}: initializer {initializer!r} returned shape "
                             f"{value.shape}, not {shape}") from None
    raise TypeError(f"{owner}: initializer must be 'zeros', 'ones', a number or a callable "
                    f"(shape, dtype) -> array, got {plain_repr(initializer)}")
