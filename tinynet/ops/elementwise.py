"""Elementwise ops with NumPy broadcasting, comparisons and logic (``keras.ops`` names).

Each op computes in NumPy and, inside a recording (a ``call()`` layer), records its
vector-Jacobian product; a broadcast input's gradient is summed back to its shape.
Derivatives at kinks follow JAX (Keras's reference backend): ``abs`` has 1 at 0,
``maximum``/``minimum`` split a tie evenly, and so ``clip`` (``minimum(maximum(x, lo), hi)``
in JAX) passes half the gradient on its bounds.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tinynet.ops.autodiff import record
from tinynet.ops.core import OpError, as_float, canon, check_broadcast, unbroadcast, unwrap
from tinynet.tensor import Tensor

__all__ = [
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "mod", "negative",
    "abs", "absolute", "square", "sqrt", "rsqrt", "reciprocal", "exp", "expm1", "log", "log1p",
    "log2", "log10", "power", "maximum", "minimum", "clip", "where", "erf", "cast", "sign",
    "floor", "ceil", "round", "sin", "cos", "tan", "arctan", "sinh", "cosh", "isnan",
    "isinf", "isfinite", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_not", "logical_xor", "nan_to_num",
]


def _binary(op: str, x1: Any, x2: Any, fn: Callable, vjp: Callable | None) -> Tensor:
    a, ta = unwrap(x1, op, "x1")
    b, tb = unwrap(x2, op, "x2")
    try:
        with np.errstate(all="ignore"):
            out = canon(fn(a, b), a, b)
    except ValueError:
        check_broadcast(op, ("x1", a), ("x2", b))  # the error naming the op and shapes
        raise
    if vjp is None:
        return Tensor._wrap(out)
    sa, sb = np.shape(a), np.shape(b)

    def back(g):
        ga, gb = vjp(g, a, b, out)
        return (None if ga is None else unbroadcast(np.asarray(ga), sa),
                None if gb is None else unbroadcast(np.asarray(gb), sb))

    return record(out, (ta, tb), back, op)


def _unary(op: str, x: Any, fn: Callable, vjp: Callable | None, *, floats: bool = True) -> Tensor:
    a, ta = unwrap(x, op, "x")
    if floats:
        a = as_float(a)
    with np.errstate(all="ignore"):
        out = canon(fn(a), a)
    if vjp is None:
        return Tensor._wrap(out)
    return record(out, (ta,), lambda g: (vjp(g, a, out),), op)


# -- arithmetic -----------------------------------------------------------------------
def add(x1: Any, x2: Any) -> Tensor:
    """``x1 + x2``. VJP: the gradient itself, summed over broadcast axes."""
    return _binary("add", x1, x2, np.add, lambda g, a, b, o: (g, g))


def subtract(x1: Any, x2: Any) -> Tensor:
    """``x1 - x2``."""
    return _binary("subtract", x1, x2, np.subtract, lambda g, a, b, o: (g, -g))


def multiply(x1: Any, x2: Any) -> Tensor:
    """``x1 * x2``."""
    return _binary("multiply", x1, x2, np.multiply, lambda g, a, b, o: (g * b, g * a))


def divide(x1: Any, x2: Any) -> Tensor:
    """``x1 / x2`` (true division; integers give float32)."""
    return _binary("divide", x1, x2, np.true_divide, lambda g, a, b, o: (g / b, -g * o / b))


true_divide = divide


def floor_divide(x1: Any, x2: Any) -> Tensor:
    """``x1 // x2`` (no gradient, as in JAX)."""
    return _binary("floor_divide", x1, x2, np.floor_divide, None)


def mod(x1: Any, x2: Any) -> Tensor:
    """``x1 % x2`` (sign of the divisor). VJP: 1 for ``x1``, ``-floor(x1 / x2)`` for ``x2``."""
    return _binary("mod", x1, x2, np.mod,
                   lambda g, a, b, o: (g, -g * np.floor_divide(a, b)))


def negative(x: Any) -> Tensor:
    """``-x``."""
    return _unary("negative", x, np.negative, lambda g, a, o: -g, floats=False)


def abs(x: Any) -> Tensor:  # noqa: A001 - Keras's name
    """``|x|``. VJP: ``g`` where ``x >= 0``, else ``-g`` (1 at 0, as JAX)."""
    return _unary("abs", x, np.abs, lambda g, a, o: np.where(a >= 0, g, -g), floats=False)


absolute = abs


def square(x: Any) -> Tensor:
    """``x * x``."""
    return _unary("square", x, np.square, lambda g, a, o: g * 2 * a, floats=False)


def sqrt(x: Any) -> Tensor:
    """``sqrt(x)``. VJP: ``g / (2 sqrt(x))``."""
    return _unary("sqrt", x, np.sqrt, lambda g, a, o: g / (2 * o))


def rsqrt(x: Any) -> Tensor:
    """``1 / sqrt(x)``."""
    return _unary("rsqrt", x, lambda a: 1 / np.sqrt(a), lambda g, a, o: -0.5 * g * o / a)


def reciprocal(x: Any) -> Tensor:
    """``1 / x``."""
    return _unary("reciprocal", x, np.reciprocal, lambda g, a, o: -g * o * o)


def exp(x: Any) -> Tensor:
    """``e ** x``."""
    return _unary("exp", x, np.exp, lambda g, a, o: g * o)


def expm1(x: Any) -> Tensor:
    """``e ** x - 1``."""
    return _unary("expm1", x, np.expm1, lambda g, a, o: g * (o + 1))


def log(x: Any) -> Tensor:
    """Natural logarithm."""
    return _unary("log", x, np.log, lambda g, a, o: g / a)


def log1p(x: Any) -> Tensor:
    """``log(1 + x)``."""
    return _unary("log1p", x, np.log1p, lambda g, a, o: g / (1 + a))


def log2(x: Any) -> Tensor:
    """Base-2 logarithm."""
    return _unary("log2", x, np.log2, lambda g, a, o: g / (a * np.log(2.0).astype(a.dtype)))


def log10(x: Any) -> Tensor:
    """Base-10 logarithm."""
    return _unary("log10", x, np.log10, lambda g, a, o: g / (a * np.log(10.0).astype(a.dtype)))


def power(x1: Any, x2: Any) -> Tensor:
    """``x1 ** x2``. VJP: ``x2 x1^(x2-1)`` for ``x1``; ``x1^x2 log(x1)`` for ``x2``
    (0 where ``x1 <= 0``)."""
    def vjp(g, a, b, o):
        a = np.asarray(a)
        ga = g * b * np.power(a, np.asarray(b) - 1) if np.ndim(b) or b != 0 else None
        with np.errstate(all="ignore"):
            gb = g * np.where(a > 0, o * np.log(np.where(a > 0, a, 1)), 0)
        return ga, gb
    return _binary("power", x1, x2, np.power, vjp)


def maximum(x1: Any, x2: Any) -> Tensor:
    """Elementwise maximum. VJP: to the larger input; a tie splits it evenly (JAX)."""
    return _binary("maximum", x1, x2, np.maximum, _pick(np.greater))


def minimum(x1: Any, x2: Any) -> Tensor:
    """Elementwise minimum. VJP: to the smaller input; a tie splits it evenly."""
    return _binary("minimum", x1, x2, np.minimum, _pick(np.less))


def _pick(better: Callable) -> Callable:
    def vjp(g, a, b, o):
        first = better(a, b).astype(g.dtype)
        tie = np.equal(a, b).astype(g.dtype) * g.dtype.type(0.5)
        return g * (first + tie), g * (1 - first - tie)
    return vjp


def clip(x: Any, x_min: Any, x_max: Any) -> Tensor:
    """``min(max(x, x_min), x_max)``. VJP: ``g`` where ``x_min < x < x_max``, 0 outside,
    ``g / 2`` on a bound (the tie of JAX's ``maximum``/``minimum``)."""
    a, ta = unwrap(x, "clip", "x")
    lo = unwrap(x_min, "clip", "x_min")[0]
    hi = unwrap(x_max, "clip", "x_max")[0]
    check_broadcast("clip", ("x", a), ("x_min", lo), ("x_max", hi))
    out = canon(np.minimum(np.maximum(a, lo), hi), a)
    if np.asarray(a).dtype.kind != "f" and out.dtype.kind == "f":
        out = out.astype(np.float32)
    def vjp(g):
        half = g.dtype.type(0.5)
        m = np.maximum(a, lo)
        d_max = (a > lo).astype(g.dtype) + half * (a == lo)
        d_min = (m < hi).astype(g.dtype) + half * (m == hi)
        return (g * d_max * d_min,)

    return record(out, (ta,), vjp, "clip")


def where(condition: Any, x1: Any = None, x2: Any = None) -> Tensor:
    """``x1`` where ``condition`` holds, else ``x2``; with one argument, the indices of
    the true entries (as ``np.nonzero``; not differentiable)."""
    c = np.asarray(unwrap(condition, "where", "condition")[0]).astype(bool)
    if x1 is None and x2 is None:
        return tuple(Tensor._wrap(i.astype(np.int32)) for i in np.nonzero(c))
    if x1 is None or x2 is None:
        raise OpError("where: give both x1 and x2, or neither")
    a, ta = unwrap(x1, "where", "x1")
    b, tb = unwrap(x2, "where", "x2")
    check_broadcast("where", ("condition", c), ("x1", a), ("x2", b))
    out = canon(np.where(c, a, b), a, b)
    sa, sb = np.shape(a), np.shape(b)
    return record(out, (ta, tb), lambda g: (unbroadcast(np.where(c, g, 0).astype(g.dtype), sa),
                                            unbroadcast(np.where(c, 0, g).astype(g.dtype), sb)),
                  "where")


_ERF64 = np.vectorize(math.erf, otypes=[np.float64])


def erf(x: Any) -> Tensor:
    """The error function. VJP: ``2/sqrt(pi) exp(-x^2)``."""
    return _unary("erf", x, lambda a: _ERF64(a).astype(a.dtype),
                  lambda g, a, o: g * (2 / math.sqrt(math.pi)) * np.exp(-a * a))


def cast(x: Any, dtype: Any) -> Tensor:
    """``x`` as ``dtype`` (a float-to-float cast passes the gradient through)."""
    try:
        dt = np.dtype(_DTYPES.get(dtype, dtype))
    except TypeError:
        raise TypeError(f"cast: dtype must be a NumPy dtype name such as 'float32', "
                        f"got {dtype!r}") from None
    a, ta = unwrap(x, "cast", "x")
    out = np.asarray(a).astype(dt)
    if dt.kind != "f":
        return Tensor._wrap(out)
    src = np.asarray(a).dtype
    return record(out, (ta,), lambda g: (g.astype(src) if src.kind == "f" else None,), "cast")


_DTYPES = {"bfloat16": "float32", "float": "float32", "int": "int32"}


def sign(x: Any) -> Tensor:
    """-1, 0 or 1 (zero gradient)."""
    return _unary("sign", x, np.sign, lambda g, a, o: np.zeros_like(g), floats=False)


def floor(x: Any) -> Tensor:
    """Round down (zero gradient)."""
    return _unary("floor", x, np.floor, lambda g, a, o: np.zeros_like(g))


def ceil(x: Any) -> Tensor:
    """Round up (zero gradient)."""
    return _unary("ceil", x, np.ceil, lambda g, a, o: np.zeros_like(g))


def round(x: Any, decimals: int = 0) -> Tensor:  # noqa: A001 - Keras's name
    """Round half to even (zero gradient)."""
    return _unary("round", x, lambda a: np.round(a, decimals), lambda g, a, o: np.zeros_like(g))


def sin(x: Any) -> Tensor:
    """Sine."""
    return _unary("sin", x, np.sin, lambda g, a, o: g * np.cos(a))


def cos(x: Any) -> Tensor:
    """Cosine."""
    return _unary("cos", x, np.cos, lambda g, a, o: -g * np.sin(a))


def tan(x: Any) -> Tensor:
    """Tangent."""
    return _unary("tan", x, np.tan, lambda g, a, o: g * (1 + o * o))


def arctan(x: Any) -> Tensor:
    """Arc tangent."""
    return _unary("arctan", x, np.arctan, lambda g, a, o: g / (1 + a * a))


def sinh(x: Any) -> Tensor:
    """Hyperbolic sine."""
    return _unary("sinh", x, np.sinh, lambda g, a, o: g * np.cosh(a))


def cosh(x: Any) -> Tensor:
    """Hyperbolic cosine."""
    return _unary("cosh", x, np.cosh, lambda g, a, o: g * np.sinh(a))


def nan_to_num(x: Any, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Tensor:
    """Replaces NaN and infinities. VJP: ``g`` where ``x`` was finite, else 0."""
    return _unary("nan_to_num", x,
                  lambda a: np.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf),
                  lambda g, a, o: np.where(np.isfinite(a), g, 0).astype(g.dtype), floats=False)


# -- predicates, comparisons and logic (bool results, no gradient) ------------------
def _pred(op: str, x: Any, fn: Callable) -> Tensor:
    return Tensor._wrap(np.asarray(fn(unwrap(x, op, "x")[0])))


def isnan(x: Any) -> Tensor:
    """Where ``x`` is NaN (bool, no gradient)."""
    return _pred("isnan", x, np.isnan)


def isinf(x: Any) -> Tensor:
    """Where ``x`` is infinite (bool, no gradient)."""
    return _pred("isinf", x, np.isinf)


def isfinite(x: Any) -> Tensor:
    """Where ``x`` is finite (bool, no gradient)."""
    return _pred("isfinite", x, np.isfinite)


def _compare(op: str, fn: Callable) -> Callable:
    def compare(x1: Any, x2: Any) -> Tensor:
        return _binary(op, x1, x2, lambda a, b: np.asarray(fn(a, b)), None)
    compare.__name__ = op
    compare.__qualname__ = op
    compare.__doc__ = f"Elementwise ``{op}`` as a bool tensor (no gradient)."
    return compare


equal = _compare("equal", np.equal)
not_equal = _compare("not_equal", np.not_equal)
less = _compare("less", np.less)
less_equal = _compare("less_equal", np.less_equal)
greater = _compare("greater", np.greater)
greater_equal = _compare("greater_equal", np.greater_equal)
logical_and = _compare("logical_and", np.logical_and)
logical_or = _compare("logical_or", np.logical_or)
logical_xor = _compare("logical_xor", np.logical_xor)


def logical_not(x: Any) -> Tensor:
    """Elementwise not, as a bool tensor."""
    return _pred("logical_not", x, np.logical_not)
