"""``Variable``: a metric's state (Keras 3's metric variables: not trainable, updated with
``assign``, ``assign_add`` and ``assign_sub``).

A ``Metric`` subclass creates them with ``add_variable`` (or ``add_weight``) and updates
them in ``update_state``; they take part in :mod:`tinynet.ops` and NumPy like an array
(``ops.sum(v)``, ``v + 1``, ``np.asarray(v)``, ``float(v)``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.tensor import Comparisons, Operators, Tensor

__all__ = ["Variable", "check_dtype"]

_AGGREGATIONS = ("none", "mean", "sum", "only_first_replica")


def check_dtype(dtype: Any, owner: str, default: str = "float32") -> str:
    """``dtype`` (a name or NumPy dtype; ``None``: ``default``) as a NumPy dtype name.

    Raises:
        ValueError: not a bool, integer or float dtype.
    """
    if dtype is None:
        return default
    name = getattr(dtype, "name", dtype)
    try:
        resolved = np.dtype(name)
    except TypeError:
        resolved = None
    if resolved is None or resolved.kind not in "biuf" or not isinstance(name, (str, type,
                                                                                np.dtype)):
        raise ValueError(f"{owner}: dtype must be a bool, integer or float dtype name "
                         f"(e.g. 'float32', 'int32'), got {dtype!r}")
    return resolved.name


class Variable(Operators, Comparisons):
    """One metric variable: a NumPy array of a fixed shape and dtype, and its name.

    Attributes:
        name: The name given to ``add_variable`` (``"variable"`` by default).
        aggregation: Keras's replica aggregation (kept for the config; one replica here).
        trainable: Always ``False`` (metric state, as Keras).
    """

    trainable = False

    def __init__(self, value: np.ndarray, name: str, aggregation: str = "sum") -> None:
        self._value = np.require(value, requirements="C")  # 0-d stays 0-d
        self.name = name
        self.path = name
        self.aggregation = aggregation

    # -- values -------------------------------------------------------------------------
    @property
    def value(self) -> Tensor:
        """The current value as a Tensor (a copy: later assigns do not change it)."""
        return Tensor._wrap(self._value.copy())

    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    def numpy(self) -> np.ndarray:
        """A copy of the value."""
        return self._value.copy()

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self._value if dtype is None else self._value.astype(dtype)
        return out.copy() if copy else out

    def __float__(self) -> float:
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __len__(self) -> int:
        return len(self._value)

    def __repr__(self) -> str:
        body = np.array2string(self._value, precision=4, separator=", ", threshold=20)
        return f"<Variable {self.name!r} shape={self.shape} dtype={self.dtype.name} value={body}>"

    # -- updates ------------------------------------------------------------------------
    def _converted(self, value: Any, method: str) -> np.ndarray:
        data = value._value if isinstance(value, Variable) else getattr(value, "data", value)
        try:
            arr = np.asarray(data)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"Variable {self.name!r}.{method}: expected a tensor, an array or "
                            f"a number, got {type(value).__name__}: {exc}") from None
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"Variable {self.name!r}.{method}: expected numbers, got "
                            f"{value!r:.60} (dtype {arr.dtype})")
        if arr.shape != self._value.shape:
            raise ValueError(f"Variable {self.name!r}.{method}: the value must have the "
                             f"variable's shape {self._value.shape}, got {arr.shape}")
        return arr

    def assign(self, value: Any) -> "Variable":
        """Sets the value (same shape; cast to the variable's dtype). Returns the variable."""
        self._value[...] = self._converted(value, "assign").astype(self._value.dtype,
                                                                   copy=False)
        return self

    def assign_add(self, value: Any) -> "Variable":
        """Adds ``value`` (same shape) to the variable."""
        arr = self._converted(value, "assign_add")
        self._value[...] = (self._value + arr).astype(self._value.dtype, copy=False)
        return self

    def assign_sub(self, value: Any) -> "Variable":
        """Subtracts ``value`` (same shape) from the variable."""
        arr = self._converted(value, "assign_sub")
        self._value[...] = (self._value - arr).astype(self._value.dtype, copy=False)
        return self

    __hash__ = object.__hash__  # a variable is an object with an identity (tracked by id)
