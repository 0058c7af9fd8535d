"""``Parameter``: a named float32 weight, its gradient, and a Keras Variable's surface
(values, ``assign``, and operators that are :mod:`tinynet.ops` calls, recorded inside a
``call()`` layer); plus the checks ``Layer.add_weight`` applies to its arguments."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinynet.layers.hooks import weights_changed
from tinynet.random import check_shape
from tinynet.scalars import float_array
from tinynet.tensor import Operators, Tensor

__all__ = ["Parameter", "weight_shape", "initializer_fn", "regularizer_of"]


class Parameter(Operators):
    """A named float32 weight and its gradient.

    Attributes:
        value: The weight, a C-contiguous float32 ndarray (updated in place by optimizers).
        grad: The gradient from the last ``backward`` (same shape), or ``None``.
        name: The Keras weight name (``kernel``, ``bias``, ``gamma``, ...).
        trainable: Whether optimizers update it. Moving statistics are never trainable.
    """

    __slots__ = ("value", "grad", "name", "_trainable", "_always_frozen", "path",
                 "regularizer")

    def __init__(self, value: np.ndarray, name: str, trainable: bool = True) -> None:
        self.value = np.require(float_array(value, np.float32), requirements="C")  # 0-d stays 0-d
        self.grad: np.ndarray | None = None
        self.name = name
        self._always_frozen = not trainable
        self._trainable = bool(trainable)
        self.path = name
        self.regularizer = None

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value) and not self._always_frozen
        weights_changed()  # models' cached lists of trainable parameters

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def size(self) -> int:
        return self.value.size

    def assign(self, value: Any) -> Tensor:
        """Copies ``value`` into the weight in place, checking the shape; returns the new
        value (a Tensor holding a copy), as Keras's ``Variable.assign`` does.

        A state update, not an op: inside a ``call()`` it records nothing (as in Keras,
        no gradient flows through an assignment) and does not cut the record.
        """
        arr = float_array(_values(value), np.float32)
        if arr.shape != self.value.shape:
            raise ValueError(
                f"Parameter {self.path}: expected shape {self.value.shape}, got {arr.shape}")
        self.value[...] = arr
        return Tensor._wrap(self.value.copy())

    def assign_add(self, value: Any) -> Tensor:
        """``weight += value`` in place (Keras ``Variable.assign_add``); ``value``
        broadcasts to the weight's shape. A state update, like :meth:`assign`, returning
        the new value."""
        return self.assign(self.value + self._operand(value))

    def assign_sub(self, value: Any) -> Tensor:
        """``weight -= value`` in place (Keras ``Variable.assign_sub``); ``value``
        broadcasts to the weight's shape. A state update, like :meth:`assign`, returning
        the new value."""
        return self.assign(self.value - self._operand(value))

    def _operand(self, value: Any) -> np.ndarray:
        arr = np.asarray(_values(value), dtype=np.float32)
        try:
            fits = np.broadcast_shapes(arr.shape, self.value.shape) == self.value.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"Parameter {self.path}: expected shape {self.value.shape}, got {arr.shape}")
        return arr

    def __repr__(self) -> str:
        return f"Parameter({self.path}, shape={self.value.shape}, trainable={self.trainable})"

    # -- a Keras Variable's surface: values, and ops that record inside call() --------------
    @property
    def dtype(self) -> np.dtype:
        return self.value.dtype

    @property
    def ndim(self) -> int:
        return self.value.ndim

    def numpy(self) -> np.ndarray:
        """A copy of the weight's values."""
        return self.value.copy()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return self.value if dtype is None else self.value.astype(dtype)

    def __len__(self) -> int:
        return len(self.value)


def _values(value: Any) -> Any:
    """A Tensor's or a weight's array as it is (reading a tracked tensor's values for a
    state update is not an escape from the record); anything else unchanged."""
    if isinstance(value, Parameter):
        return value.value
    if isinstance(value, Tensor):
        return value.data
    return value


def weight_shape(shape: Any, owner: str) -> tuple[int, ...]:
    """``shape`` (an int, a tuple or a list of known sizes) as a tuple of ints."""
    return check_shape(shape, owner)


def initializer_fn(initializer: Any, layer: Any, owner: str) -> Callable[[tuple], Any]:
    """A name, a config dict, ``None`` (``glorot_uniform``, as Keras), or a callable
    ``shape -> array`` (an initializer object)."""
    if initializer is None:
        initializer = "glorot_uniform"
    if isinstance(initializer, (str, dict)):
        from tinynet.initializers import get as get_initializer

        try:
            return get_initializer(initializer, layer)
        except ValueError as exc:
            raise ValueError(f"{owner}: initializer: {exc}") from None
    if callable(initializer):
        return initializer
    raise TypeError(f"{owner}: initializer must be an initializer name, None or a callable "
                    f"shape -> array, got {initializer!r}")


def regularizer_of(regularizer: Any, owner: str) -> Any:
    if regularizer is None:
        return None
    from tinynet.regularizers import get

    return get(regularizer, f"{owner}: regularizer")
