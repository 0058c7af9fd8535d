"""Argument handling shared by every op: inputs to arrays, dtypes, broadcasting, errors.

Dtype rules (Keras 3 on JAX, where they matter in practice): Python scalars are weak
(``x * 2.0`` keeps ``x``'s float dtype; an int tensor times ``2.5`` is float32); lists and
NumPy float64 arrays passed to :func:`convert_to_tensor` become float32; float64 arrays
given directly to an op stay float64, so the same ops run the float64 gradient checks.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.ops import autodiff
from tinynet.scalars import to_float
from tinynet.tensor import Tensor

__all__ = ["unwrap", "canon", "unbroadcast", "axes", "check_broadcast", "OpError"]


class OpError(ValueError):
    """An op's argument error (a ``ValueError`` naming the op, argument and shapes)."""


_PARAM_TYPES: set = set()  # the Parameter class once met (ops sit below tinynet.layers)


def _is_param(x: Any) -> bool:
    if type(x).__name__ == "Parameter" and hasattr(x, "value") and hasattr(x, "path"):
        _PARAM_TYPES.add(type(x))
        return True
    return False


def unwrap(x: Any, op: str, arg: str) -> tuple[np.ndarray | int | float | bool, Any]:
    """``x`` as ``(value, tracked)``: the array (or Python scalar, kept weak) and what the
    op hands :func:`~tinynet.ops.autodiff.record` (the Tensor, or a parameter's leaf).

    Raises:
        TypeError: ``x`` is not a tensor, array, parameter or real number.
    """
    tx = type(x)
    if tx is Tensor or tx is np.ndarray and x.dtype.kind in "biuf":  # the common cases first
        return (x.data, x) if tx is Tensor else (x, None)
    if tx in _PARAM_TYPES or _is_param(x):
        graph = autodiff.current()
        if graph is None:
            return x.value, None
        t = graph.param_leaf(x)
        return t.data, t
    if isinstance(x, Tensor):
        return x.data, x
    if isinstance(x, np.ndarray):
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{op}: {arg} must be a real-valued tensor, got dtype {x.dtype}")
        return x, None
    if isinstance(x, (bool, np.bool_)):
        return bool(x), None
    if isinstance(x, (int, np.integer)):
        if not math.isfinite(to_float(x)):
            raise OpError(f"{op}: {arg} must be a number within the float range, got an int "
                          f"of {len(str(abs(int(x))))} digits")
        return int(x), None
    if isinstance(x, (float, np.floating)):
        return float(x), None
    if x is None:
        raise TypeError(f"{op}: {arg} must be a tensor, an array or a number, got None")
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{op}: {arg} must be a tensor, an array or a number, got "
                        f"{type(x).__name__}: {exc}") from None
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{op}: {arg} must be a real-valued tensor, got {type(x).__name__} "
                        f"of dtype {a.dtype}")
    return default_dtype(a), None


def default_dtype(a: np.ndarray) -> np.ndarray:
    """Keras's default dtypes for data that came without one: float32 and int32."""
    if a.dtype == np.float64:
        return a.astype(np.float32)
    if a.dtype == np.int64:
        return a.astype(np.int32)
    return a


def canon(out: Any, *values: Any) -> np.ndarray:
    """``out`` as an ndarray whose dtype follows the inputs: float64 or int64 only when
    an input array was float64 or int64 (NumPy widens Python scalars' results)."""
    out = np.asarray(out)
    if out.dtype == np.float64 and not any(
            isinstance(v, np.ndarray) and v.dtype == np.float64 for v in values):
        return out.astype(np.float32)
    if out.dtype == np.int64 and not any(
            isinstance(v, np.ndarray) and v.dtype == np.int64 for v in values):
        return out.astype(np.int32)
    return out


def float_of(*values: Any) -> np.dtype:
    """The float dtype of an op over ``values``: float64 if one is float64, else float32."""
    if any(isinstance(v, np.ndarray) and v.dtype == np.float64 for v in values):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def as_float(v: Any) -> np.ndarray:
    """``v`` as a float array (float32 unless it is float64)."""
    a = np.asarray(v)
    if a.dtype.kind == "f" and a.dtype.itemsize >= 4:
        return a
    return a.astype(np.float32)


def unbroadcast(g: np.ndarray, shape: tuple) -> np.ndarray:
    """Sums ``g`` down to ``shape`` (the VJP of NumPy broadcasting)."""
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    if lead > 0:
        g = g.sum(axis=tuple(range(lead)))
    keep = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    if keep:
        g = g.sum(axis=keep, keepdims=True)
    return g.reshape(shape)


def check_broadcast(op: str, *pairs: tuple[str, Any]) -> None:
    """Raises an error naming ``op`` and every argument's shape if they don't broadcast."""
    shapes = [np.shape(v) for _, v in pairs]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        listed = ", ".join(f"{name} {tuple(s)}" for (name, _), s in zip(pairs, shapes))
        raise OpError(f"{op}: shapes do not broadcast: {listed}") from None


def axes(axis: Any, ndim: int, op: str) -> tuple[int, ...] | None:
    """``axis`` (``None``, an int or a sequence of ints) as a sorted tuple of
    non-negative axes, or ``None`` for all."""
    if axis is None:
        return None
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in items:
        if isinstance(a, bool) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{op}: axis must be None, an int or a tuple of ints, got {axis!r}")
        if not -max(ndim, 1) <= a < max(ndim, 1):
            raise OpError(f"{op}: axis {a} is out of range for a tensor of rank {ndim}")
        out.append(int(a) % max(ndim, 1))
    if len(set(out)) != len(out):
        raise OpError(f"{op}: axis {axis!r} repeats an axis")
    return tuple(sorted(out))
