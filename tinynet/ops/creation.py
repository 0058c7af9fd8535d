"""Construction and conversion ops (``keras.ops`` names): ``ones``, ``zeros``, ``arange``,
``one_hot``, ``convert_to_tensor``, ``convert_to_numpy``, ``shape``, ``stop_gradient``, ..."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.ops.autodiff import record
from tinynet.ops.core import OpError, axes, default_dtype, unwrap
from tinynet.tensor import Tensor

__all__ = ["ones", "zeros", "full", "ones_like", "zeros_like", "full_like", "arange", "eye",
           "identity", "linspace", "one_hot", "multi_hot", "convert_to_tensor",
           "convert_to_numpy", "shape", "ndim", "size", "is_tensor", "stop_gradient",
           "copy", "standardize_dtype"]

_ALIASES = {None: None, "float": "float32", "int": "int32", "bfloat16": "float32"}


def standardize_dtype(dtype: Any, op: str | None = None) -> np.dtype | None:
    """A dtype name or NumPy dtype as a NumPy dtype (``None`` stays ``None``); errors
    name ``op`` when given."""
    dtype = _ALIASES.get(dtype, dtype) if isinstance(dtype, (str, type(None))) else dtype
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        prefix = f"{op}: " if op else ""
        raise TypeError(f"{prefix}dtype must be a dtype name such as 'float32' or 'int32', got "
                        f"{dtype!r}") from None


def _shape(shape: Any, op: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in out):
        raise OpError(f"{op}: shape must hold non-negative sizes, got {shape!r}")
    return out


def ones(shape: Any, dtype: Any = None) -> Tensor:
    """A tensor of ones (float32 by default)."""
    return Tensor._wrap(np.ones(_shape(shape, "ones"), standardize_dtype(dtype, "ones") or np.float32))


def zeros(shape: Any, dtype: Any = None) -> Tensor:
    """A tensor of zeros (float32 by default)."""
    return Tensor._wrap(np.zeros(_shape(shape, "zeros"), standardize_dtype(dtype, "zeros") or np.float32))


def full(shape: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype by default: int32 or float32)."""
    dt = standardize_dtype(dtype, "full") or default_dtype(np.asarray(fill_value)).dtype
    return Tensor._wrap(np.full(_shape(shape, "full"), fill_value, dtype=dt))


def _like(x: Any, op: str) -> np.ndarray:
    return np.asarray(unwrap(x, op, "x")[0])


def ones_like(x: Any, dtype: Any = None) -> Tensor:
    """Ones shaped (and by default typed) like ``x``."""
    a = _like(x, "ones_like")
    return Tensor._wrap(np.ones(a.shape, standardize_dtype(dtype, "ones_like") or default_dtype(a).dtype))


def zeros_like(x: Any, dtype: Any = None) -> Tensor:
    """Zeros shaped (and by default typed) like ``x``."""
    a = _like(x, "zeros_like")
    return Tensor._wrap(np.zeros(a.shape, standardize_dtype(dtype, "zeros_like") or default_dtype(a).dtype))


def full_like(x: Any, fill_value: Any, dtype: Any = None) -> Tensor:
    """``fill_value`` shaped (and by default typed) like ``x``."""
    a = _like(x, "full_like")
    return Tensor._wrap(np.full(a.shape, fill_value,
                                standardize_dtype(dtype, "full_like") or default_dtype(a).dtype))


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: Any = None) -> Tensor:
    """``[start, stop)`` in steps of ``step``; int32 for int arguments, else float32."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise OpError("arange: step must not be 0")
    values = np.arange(start, stop, step)
    dt = standardize_dtype(dtype, "arange") or default_dtype(values).dtype
    return Tensor._wrap(values.astype(dt))


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Tensor:  # noqa: N803
    """The ``N x M`` identity with ones on the ``k``-th diagonal."""
    return Tensor._wrap(np.eye(N, M, k, dtype=standardize_dtype(dtype, "eye") or np.float32))


def identity(n: int, dtype: Any = None) -> Tensor:
    """The ``n x n`` identity."""
    return eye(n, dtype=dtype)


def linspace(start: float, stop: float, num: int = 50, endpoint: bool = True,
             dtype: Any = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    return Tensor._wrap(np.linspace(start, stop, num, endpoint=endpoint).astype(
        standardize_dtype(dtype, "linspace") or np.float32))


def one_hot(x: Any, num_classes: int, axis: int = -1, dtype: Any = None) -> Tensor:
    """One-hot encoding of integer ``x`` on a new ``axis``; values outside
    ``[0, num_classes)`` give all-zero rows (as Keras)."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
            or num_classes <= 0:
        raise OpError(f"one_hot: num_classes must be a positive int, got {num_classes!r}")
    a = np.asarray(unwrap(x, "one_hot", "x")[0])
    if a.dtype.kind not in "iu":
        if a.dtype.kind == "f" and np.all(a == np.floor(a)):
            a = a.astype(np.int64)
        else:
            raise TypeError(f"one_hot: x must hold integer class ids, got dtype {a.dtype}")
    axis = axes(axis, a.ndim + 1, "one_hot")[0]
    out = (a[..., None] == np.arange(num_classes)).astype(standardize_dtype(dtype, "one_hot") or np.float32)
    if axis != a.ndim:
        out = np.moveaxis(out, -1, axis)
    return Tensor._wrap(np.asarray(out, order="C"))


def multi_hot(inputs: Any, num_classes: int, axis: int = -1, dtype: Any = None) -> Tensor:
    """Multi-hot encoding: a 1 at every class id of each sample (the last axis)."""
    oh = one_hot(inputs, num_classes, dtype=dtype).data
    return Tensor._wrap(np.asarray(oh.max(axis=-2) if oh.ndim > 1 else oh, order="C"))


def convert_to_tensor(x: Any, dtype: Any = None, sparse: Any = None) -> Tensor:
    """``x`` as a Tensor: floats become float32 and ints int32 unless ``dtype`` says
    otherwise; a Tensor is returned as it is (or cast)."""
    dt = standardize_dtype(dtype, "convert_to_tensor")
    if isinstance(x, Tensor):
        if dt is None or dt == x.data.dtype:
            return x
        from tinynet.ops.elementwise import cast

        return cast(x, dt)
    a = np.asarray(unwrap(x, "convert_to_tensor", "x")[0])
    a = default_dtype(a) if dt is None else a.astype(dt, copy=False)
    return Tensor._wrap(np.asarray(a, order="C"))


def convert_to_numpy(x: Any) -> np.ndarray:
    """``x`` as a NumPy array (no copy for a Tensor). Inside a ``call()`` layer this
    leaves the record: gradients do not flow through what is computed from it."""
    if isinstance(x, Tensor):
        return np.asarray(x)
    return np.asarray(unwrap(x, "convert_to_numpy", "x")[0])


def shape(x: Any) -> tuple[int, ...]:
    """``x``'s shape as a tuple of ints."""
    return tuple(np.shape(unwrap(x, "shape", "x")[0]))


def ndim(x: Any) -> int:
    """``x``'s rank."""
    return len(shape(x))


def size(x: Any) -> int:
    """Number of entries of ``x``."""
    return int(np.prod(shape(x), dtype=np.int64))


def is_tensor(x: Any) -> bool:
    """Whether ``x`` is a tinynet Tensor."""
    return isinstance(x, Tensor)


def stop_gradient(variable: Any) -> Tensor:
    """``variable``'s value, with no gradient flowing back through it."""
    a = unwrap(variable, "stop_gradient", "variable")[0]
    return Tensor._wrap(np.asarray(a))


def copy(x: Any) -> Tensor:
    """A copy of ``x`` (the gradient passes through)."""
    a, t = unwrap(x, "copy", "x")
    return record(np.array(a, copy=True), (t,), lambda g: (g,), "copy")
