"""Reductions with ``axis`` and ``keepdims`` (``keras.ops`` names and semantics).

Sums run in NumPy's fixed pairwise order (single-threaded, so the bits never depend on
the thread count). Variances are biased (divide by n), as in Keras. ``max``/``min`` send
the gradient to every position holding the extreme, split evenly among ties (JAX).
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tinynet.ops.autodiff import record
from tinynet.ops.core import OpError, as_float, axes, canon, unwrap
from tinynet.tensor import Tensor

__all__ = ["sum", "mean", "max", "min", "amax", "amin", "var", "std", "logsumexp", "argmax",
           "argmin", "moments", "prod", "any", "all", "count_nonzero"]


def _expand(g: np.ndarray, ax: tuple | None, shape: tuple, keepdims: bool) -> np.ndarray:
    """``g`` (a reduction's gradient) with the reduced axes put back, broadcast to
    ``shape``."""
    if not keepdims and ax is not None:
        g = np.expand_dims(g, ax)
    elif not keepdims:
        g = np.reshape(g, (1,) * len(shape))
    return np.broadcast_to(g, shape)


def _count(shape: tuple, ax: tuple | None) -> int:
    if ax is None:
        return int(np.prod(shape, dtype=np.int64))
    return int(np.prod([shape[i] for i in ax], dtype=np.int64))


def sum(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Sum over ``axis`` (all axes when ``None``)."""
    a, t = unwrap(x, "sum", "x")
    a = np.asarray(a)
    ax = axes(axis, a.ndim, "sum")
    out = canon(np.sum(a, axis=ax, keepdims=keepdims), a)
    if out.dtype == np.bool_:
        out = out.astype(np.int32)
    return record(out, (t,), lambda g: (_expand(g, ax, a.shape, keepdims),), "sum")


def mean(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (integers give float32)."""
    a, t = unwrap(x, "mean", "x")
    a = as_float(a)
    ax = axes(axis, a.ndim, "mean")
    out = np.asarray(np.mean(a, axis=ax, keepdims=keepdims, dtype=a.dtype))
    n = a.dtype.type(builtins.max(_count(a.shape, ax), 1))
    return record(out, (t,), lambda g: (_expand(g / n, ax, a.shape, keepdims),), "mean")


def _extreme(op: str, fn: Any, x: Any, axis: Any, keepdims: bool, initial: Any) -> Tensor:
    a, t = unwrap(x, op, "x")
    a = np.asarray(a)
    ax = axes(axis, a.ndim, op)
    if a.size == 0 and initial is None:
        raise OpError(f"{op}: cannot reduce an empty tensor of shape {a.shape} without "
                      f"an initial value")
    kwargs = {} if initial is None else {"initial": initial}
    out = canon(fn(a, axis=ax, keepdims=keepdims, **kwargs), a)

    def vjp(g):
        o = _expand(out, ax, a.shape, keepdims)
        hit = (a == o).astype(g.dtype)
        counts = _expand(np.sum(hit, axis=ax, keepdims=keepdims), ax, a.shape, keepdims)
        return (_expand(g, ax, a.shape, keepdims) * hit / counts,)

    return record(out, (t,), vjp, op)


def max(x: Any, axis: Any = None, keepdims: bool = False, initial: Any = None) -> Tensor:  # noqa: A001
    """Maximum over ``axis``."""
    return _extreme("max", np.max, x, axis, keepdims, initial)


def min(x: Any, axis: Any = None, keepdims: bool = False, initial: Any = None) -> Tensor:  # noqa: A001
    """Minimum over ``axis``."""
    return _extreme("min", np.min, x, axis, keepdims, initial)


amax = max
amin = min


def var(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Biased variance over ``axis`` (divides by n, as Keras)."""
    a, t = unwrap(x, "var", "x")
    a = as_float(a)
    ax = axes(axis, a.ndim, "var")
    m = np.mean(a, axis=ax, keepdims=True, dtype=a.dtype)
    d = a - m
    out = np.asarray(np.mean(d * d, axis=ax, keepdims=keepdims, dtype=a.dtype))
    n = a.dtype.type(builtins.max(_count(a.shape, ax), 1))
    return record(out, (t,),
                  lambda g: (_expand(g, ax, a.shape, keepdims) * (2 / n) * d,), "var")


def std(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Biased standard deviation over ``axis``."""
    from tinynet.ops.elementwise import sqrt

    return sqrt(var(x, axis=axis, keepdims=keepdims))


def logsumexp(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, shifted by the maximum for stability.
    VJP: ``softmax(x) * g``."""
    a, t = unwrap(x, "logsumexp", "x")
    a = as_float(a)
    ax = axes(axis, a.ndim, "logsumexp")
    m = np.max(a, axis=ax, keepdims=True)
    m = np.where(np.isfinite(m), m, 0).astype(a.dtype)
    s = np.sum(np.exp(a - m), axis=ax, keepdims=True)
    with np.errstate(divide="ignore"):  # every entry -inf: log(0) = -inf, as JAX
        full = np.log(s) + m
    out = full if keepdims else (np.squeeze(full, ax) if ax is not None else full.reshape(()))
    out = np.asarray(out, dtype=a.dtype)
    return record(out, (t,),
                  lambda g: (_expand(g, ax, a.shape, keepdims) * np.exp(a - full),),
                  "logsumexp")


def _arg(op: str, fn: Any, x: Any, axis: Any, keepdims: bool) -> Tensor:
    a = np.asarray(unwrap(x, op, "x")[0])
    if axis is None:
        out = fn(a.reshape(-1))
        out = np.asarray(out).reshape((1,) * a.ndim if keepdims else ())
    else:
        ax = axes(axis, a.ndim, op)[0]
        out = fn(a, axis=ax)
        if keepdims:
            out = np.expand_dims(out, ax)
    return Tensor._wrap(np.asarray(out, dtype=np.int32))


def argmax(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Index of the maximum (the first of ties), int32; no gradient."""
    return _arg("argmax", np.argmax, x, axis, keepdims)


def argmin(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Index of the minimum (the first of ties), int32; no gradient."""
    return _arg("argmin", np.argmin, x, axis, keepdims)


def moments(x: Any, axes: Any, keepdims: bool = False, synchronized: bool = False
            ) -> tuple[Tensor, Tensor]:  # noqa: A002 - Keras's name shadows the helper
    """``(mean, variance)`` over ``axes`` (biased variance), as ``keras.ops.moments``."""
    return mean(x, axis=axes, keepdims=keepdims), var(x, axis=axes, keepdims=keepdims)


def prod(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
    """Product over ``axis``. VJP: the product of the others (by division; exact for
    inputs without zeros)."""
    a, t = unwrap(x, "prod", "x")
    a = np.asarray(a)
    ax = axes(axis, a.ndim, "prod")
    out = canon(np.prod(a, axis=ax, keepdims=keepdims), a)
    return record(out, (t,), lambda g: (
        _expand(g * out, ax, a.shape, keepdims) / a,), "prod")


def any(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether any entry is true over ``axis`` (bool)."""
    a = np.asarray(unwrap(x, "any", "x")[0])
    return Tensor._wrap(np.asarray(np.any(a, axis=axes(axis, a.ndim, "any"), keepdims=keepdims)))


def all(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every entry is true over ``axis`` (bool)."""
    a = np.asarray(unwrap(x, "all", "x")[0])
    return Tensor._wrap(np.asarray(np.all(a, axis=axes(axis, a.ndim, "all"), keepdims=keepdims)))


def count_nonzero(x: Any, axis: Any = None) -> Tensor:
    """Number of non-zero entries over ``axis`` (int32)."""
    a = np.asarray(unwrap(x, "count_nonzero", "x")[0])
    return Tensor._wrap(np.asarray(np.count_nonzero(a, axis=axes(axis, a.ndim, "count_nonzero")),
                                   dtype=np.int32))
