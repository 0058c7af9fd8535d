"""``Tensor``: a thin float32 wrapper over a C-contiguous ndarray (no autograd)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Tensor", "as_array", "match_labels"]

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
        return x.data
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        return np.ascontiguousarray(x, dtype=np.float32)
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
        return np.ascontiguousarray(arr, dtype=np.float32)
    except OverflowError as exc:  # a Python int beyond float range
        raise ValueError(f"{arg} must be {_EXPECTED}, got {_brief(x)}: {exc}") from None
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{arg} must be {_EXPECTED}, got {_brief(x)}: {exc}") from None


class Tensor:
    """A float32, C-contiguous array with a small NumPy-like surface.

    ``Tensor`` exists so layers have one input and output type; it carries no
    gradient graph (tinynet's layers write their backward by hand).

    Args:
        data: Anything ``np.asarray`` accepts; converted to C-contiguous float32,
            copying only when the input is not already such an array.

    Shape:
        Any shape; channels-last by convention (``[batch, *spatial, channels]``).
    """

    __slots__ = ("data",)
    __array_priority__ = 1000

    def __init__(self, data: Any) -> None:
        self.data = as_array(data, "Tensor: data")

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
        if dtype is not None and np.dtype(dtype) != self.data.dtype:
            return self.data.astype(dtype)
        if copy:
            return self.data.copy()
        return self.data

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index) -> "Tensor":
        return Tensor(self.data[index])

    def __repr__(self) -> str:
        body = np.array2string(self.data, precision=4, separator=", ", threshold=20)
        return f"Tensor({body}, shape={self.shape})"

    # -- arithmetic (elementwise, returns Tensor) -------------------------------
    def _binary(self, other: Any, op) -> "Tensor":
        other = other.data if isinstance(other, Tensor) else other
        return Tensor(op(self.data, other))

    def __add__(self, other):
        return self._binary(other, np.add)

    def __radd__(self, other):
        return self._binary(other, lambda a, b: np.add(b, a))

    def __sub__(self, other):
        return self._binary(other, np.subtract)

    def __rsub__(self, other):
        return self._binary(other, lambda a, b: np.subtract(b, a))

    def __mul__(self, other):
        return self._binary(other, np.multiply)

    def __rmul__(self, other):
        return self._binary(other, lambda a, b: np.multiply(b, a))

    def __truediv__(self, other):
        return self._binary(other, np.divide)

    def __rtruediv__(self, other):
        return self._binary(other, lambda a, b: np.divide(b, a))

    def __matmul__(self, other):
        return self._binary(other, np.matmul)

    def __pow__(self, other):
        return self._binary(other, np.power)

    def __neg__(self) -> "Tensor":
        return Tensor(-self.data)

    def __eq__(self, other):  # elementwise, as NumPy
        return self.data == (other.data if isinstance(other, Tensor) else other)

    __hash__ = None


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

