"""``Tensor``: a thin float32 wrapper over a C-contiguous ndarray (no autograd)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Tensor", "Operators", "Comparisons", "as_array", "match_labels", "align_labels"]

_EXPECTED = "a real-valued numeric array (bool, int or float)"


def _brief(x: Any) -> str:
    text = repr(x)
    text = f"{text[:60]}..." if len(text) > 60 else text
    return f"{text} ({type(x).__name__})"


def as_array(x: Any, arg: str = "input") -> np.ndarray:
    """Returns ``x`` as a C-contiguous float32 ndarray, copying only when it must.

    Args:
        x: A ``Tensor``, an ndarray or anything ``np.asarray`` accepts.
        arg: How error messages name ``x``.

    Returns:
        The C-contiguous float32 view or copy.

    Raises:
        TypeError: ``x`` is ``None``, or holds strings, complex numbers or other objects.
        ValueError: ``x`` is ragged (not a rectangular array).
    """
    if isinstance(x, Tensor):
        d = x.data
        return d if d.dtype == np.float32 else np.asarray(d, dtype=np.float32, order="C")
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        return np.asarray(x, dtype=np.float32, order="C")
    if x is None:
        raise TypeError(f"{arg} must be {_EXPECTED}, got None")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{arg} must be {_EXPECTED}, got {_brief(x)}: {exc}") from None
    if arr.dtype.kind not in "biufO" or (arr.dtype.kind == "O"
                                         and any(v is None for v in arr.flat)):
        raise TypeError(f"{arg} must be {_EXPECTED}, got dtype {arr.dtype}: {_brief(x)}")
    try:
        return np.asarray(arr, dtype=np.float32, order="C")
    except OverflowError as exc:  # a Python int beyond float range
        raise ValueError(f"{arg} must be {_EXPECTED}, got {_brief(x)}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{arg} must be {_EXPECTED}, got {_brief(x)}: {exc}") from None


class Operators:
    """Python operators as :mod:`tinynet.ops` calls, shared by :class:`Tensor` and the
    weights (``Parameter``): ``+ - * / // % ** @``, unary ``-``, ``abs``, ``~ & | ^``,
    indexing; inside a ``call()`` layer they are recorded like any op. (Comparisons are
    elementwise on :class:`Tensor` only: a weight keeps identity equality and hashing.)"""

    __slots__ = ()
    __array_priority__ = 1000

    def __getitem__(self, index) -> "Tensor":
        return _ops().getitem(self, index)

    def __add__(self, other):
        return _ops().add(self, other)

    def __radd__(self, other):
        return _ops().add(other, self)

    def __sub__(self, other):
        return _ops().subtract(self, other)

    def __rsub__(self, other):
        return _ops().subtract(other, self)

    def __mul__(self, other):
        return _ops().multiply(self, other)

    def __rmul__(self, other):
        return _ops().multiply(other, self)

    def __truediv__(self, other):
        return _ops().divide(self, other)

    def __rtruediv__(self, other):
        return _ops().divide(other, self)

    def __floordiv__(self, other):
        return _ops().floor_divide(self, other)

    def __rfloordiv__(self, other):
        return _ops().floor_divide(other, self)

    def __mod__(self, other):
        return _ops().mod(self, other)

    def __rmod__(self, other):
        return _ops().mod(other, self)

    def __matmul__(self, other):
        return _ops().matmul(self, other)

    def __rmatmul__(self, other):
        return _ops().matmul(other, self)

    def __pow__(self, other):
        return _ops().power(self, other)

    def __rpow__(self, other):
        return _ops().power(other, self)

    def __neg__(self) -> "Tensor":
        return _ops().negative(self)

    def __pos__(self) -> "Tensor":
        return self

    def __abs__(self) -> "Tensor":
        return _ops().abs(self)

    def __invert__(self) -> "Tensor":
        return _ops().logical_not(self)

    def __and__(self, other):
        return _ops().logical_and(self, other)

    def __or__(self, other):
        return _ops().logical_or(self, other)

    def __xor__(self, other):
        return _ops().logical_xor(self, other)


class Comparisons:
    """Elementwise comparisons as :mod:`tinynet.ops` calls (bool tensors, no gradient),
    shared by :class:`Tensor` and metric variables."""

    __slots__ = ()

    def __eq__(self, other):  # elementwise, as NumPy and Keras
        return _ops().equal(self, other)

    def __ne__(self, other):
        return _ops().not_equal(self, other)

    def __lt__(self, other):
        return _ops().less(self, other)

    def __le__(self, other):
        return _ops().less_equal(self, other)

    def __gt__(self, other):
        return _ops().greater(self, other)

    def __ge__(self, other):
        return _ops().greater_equal(self, other)


class Tensor(Operators, Comparisons):
    """An array with a small NumPy-like surface; float32 and C-contiguous by default.

    ``Tensor(data)`` converts to C-contiguous float32 (copying only when it must). Ops
    (:mod:`tinynet.ops`) may also return integer or bool tensors (``argmax``,
    comparisons), and float64 ones when given float64 arrays (gradient checks).

    Python operators (``+ - * / // % ** @``, unary ``-``, comparisons, indexing) are
    :mod:`tinynet.ops` calls: inside a ``call()`` layer they are recorded for the
    automatic backward like any op.

    Args:
        data: Anything ``np.asarray`` accepts; converted to C-contiguous float32,
            copying only when the input is not already such an array.

    Shape:
        Any shape; channels-last by convention (``[batch, *spatial, channels]``).
    """

    __slots__ = ("data", "_node")

    def __init__(self, data: Any) -> None:
        self.data = as_array(data, "Tensor: data")
        self._node = None

    @classmethod
    def _wrap(cls, data: np.ndarray) -> "Tensor":
        """A Tensor over ``data`` as it is (any dtype; no copy, no check)."""
        t = cls.__new__(cls)
        t.data = data
        t._node = None
        return t

    # -- array facts ---------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    def numpy(self) -> np.ndarray:
        """Returns the underlying ndarray (no copy)."""
        return self.data

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if self._node is not None:
            _note_escape(self)
        if dtype is not None and np.dtype(dtype) != self.data.dtype:
            return self.data.astype(dtype)
        if copy:
            return self.data.copy()
        return self.data

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self):
        return (self[i] for i in range(len(self.data)))

    def __bool__(self) -> bool:
        return bool(self.data)

    def __float__(self) -> float:
        return float(self.data)

    def __int__(self) -> int:
        return int(self.data)

    def __index__(self) -> int:
        return self.data.__index__()

    def __repr__(self) -> str:
        body = np.array2string(self.data, precision=4, separator=", ", threshold=20)
        kind = "" if self.data.dtype == np.float32 else f", dtype={self.data.dtype}"
        return f"Tensor({body}, shape={self.shape}{kind})"

    __hash__ = None

    @property
    def T(self) -> "Tensor":
        return _ops().transpose(self)

    def reshape(self, *shape) -> "Tensor":
        return _ops().reshape(self, shape[0] if len(shape) == 1 else shape)


# tinynet.ops fills these when it loads (``import tinynet`` loads it): the operators above
# call its ops, and a tracked tensor turned into NumPy is reported to the active recording.
_OPS: Any = None
_ESCAPE: Any = None


def _ops() -> Any:
    return _OPS


def _note_escape(t: Tensor) -> None:
    """A tracked tensor went to NumPy: the active recording notes it (the record is cut)."""
    if _ESCAPE is not None:
        _ESCAPE(t)


def match_labels(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """``y_true`` as float32 in the shape of ``p`` (predictions): Keras squeezes or adds a
    trailing axis of 1; any other difference is an error naming both shapes."""
    t = as_array(y_true, f"{owner}: y_true")
    if t.shape != p.shape:
        if t.ndim == p.ndim + 1 and t.shape[-1] == 1 and t.shape[:-1] == p.shape:
            t = t.reshape(p.shape)
        elif p.ndim == t.ndim + 1 and p.shape[-1] == 1 and p.shape[:-1] == t.shape:
            t = t.reshape(p.shape)
        else:
            raise ValueError(f"{owner}: y_true shape {t.shape} is incompatible with y_pred "
                             f"shape {p.shape}")
    return t


def align_labels(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """``y_true`` as float32 with the rank of the predictions ``p``: Keras squeezes or
    expands a trailing axis of 1 (what a loss or metric written with ops receives; any
    other shape is left for its ops to broadcast or refuse).

    Raises:
        TypeError: ``y_true`` is not numeric.
    """
    t = np.asarray(y_true.data if isinstance(y_true, Tensor) else y_true)
    if t.dtype.kind not in "biuf":
        raise TypeError(f"{owner}: y_true must be numeric, got dtype {t.dtype}")
    t = np.ascontiguousarray(t, dtype=np.float32)
    if t.ndim == p.ndim + 1 and t.shape[-1] == 1:
        t = t.reshape(t.shape[:-1])
    elif p.ndim == t.ndim + 1 and p.shape[-1] == 1:
        t = t.reshape(t.shape + (1,))
    return t
