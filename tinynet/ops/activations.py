"""Activation ops with ``keras.ops`` names and defaults (``gelu`` approximates by default,
``leaky_relu`` slope 0.2, ``elu`` alpha 1.0), each with its VJP."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.ops.autodiff import record
from tinynet.ops.core import as_float, axes, unwrap
from tinynet.ops.elementwise import _ERF64
from tinynet.tensor import Tensor

__all__ = ["relu", "relu6", "sigmoid", "tanh", "softplus", "softsign", "silu", "swish", "gelu",
           "elu", "selu", "leaky_relu", "hard_sigmoid", "hard_silu", "softmax", "log_softmax",
           "log_sigmoid"]


_FUSED: Any = None  # tinynet.ops.fused's activations by name, once imported


def _kernel(op: str, x: Any, name: str) -> Tensor | None:
    """float32 through tinynet's activation kernel (the built-in layers' own pass, its
    bits and its speed), or ``None`` for other dtypes."""
    a, t = unwrap(x, op, "x")
    if not isinstance(a, np.ndarray) or a.dtype != np.float32:
        return None
    global _FUSED
    if _FUSED is None:  # imported on first use: `import tinynet` loads no Numba
        from tinynet.ops.fused import _REGISTRY

        _FUSED = _REGISTRY
    fn = _FUSED[name]
    a = np.ascontiguousarray(a)
    out = fn.forward(a)
    return record(out, (t,), lambda g: (fn.backward(a if fn.uses_input else None,
                                                    out if fn.uses_output else None, g),), op)


def _act(op: str, x: Any, fn: Any, vjp: Any) -> Tensor:
    a, t = unwrap(x, op, "x")
    a = as_float(a)
    with np.errstate(all="ignore"):
        out = np.asarray(fn(a), dtype=a.dtype)
    return record(out, (t,), lambda g: (vjp(g, a, out),), op)


def relu(x: Any) -> Tensor:
    """``max(x, 0)``; derivative 0 at 0."""
    fast = _kernel("relu", x, "relu")
    if fast is not None:
        return fast
    return _act("relu", x, lambda a: np.maximum(a, 0), lambda g, a, o: g * (a > 0))


def relu6(x: Any) -> Tensor:
    """``min(max(x, 0), 6)``."""
    return _act("relu6", x, lambda a: np.clip(a, 0, 6),
                lambda g, a, o: g * ((a > 0) & (a < 6)))


def _sigmoid(a: np.ndarray) -> np.ndarray:
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e)).astype(a.dtype)


def sigmoid(x: Any) -> Tensor:
    """``1 / (1 + exp(-x))`` (stable for large ``|x|``)."""
    return _act("sigmoid", x, _sigmoid, lambda g, a, o: g * o * (1 - o))


def log_sigmoid(x: Any) -> Tensor:
    """``log(sigmoid(x)) = -softplus(-x)``."""
    return _act("log_sigmoid", x, lambda a: -_softplus(-a), lambda g, a, o: g * _sigmoid(-a))


def tanh(x: Any) -> Tensor:
    """Hyperbolic tangent."""
    return _act("tanh", x, np.tanh, lambda g, a, o: g * (1 - o * o))


def _softplus(a: np.ndarray) -> np.ndarray:
    return (np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a)))).astype(a.dtype)


def softplus(x: Any) -> Tensor:
    """``log(1 + exp(x))`` (stable)."""
    return _act("softplus", x, _softplus, lambda g, a, o: g * _sigmoid(a))


def softsign(x: Any) -> Tensor:
    """``x / (1 + |x|)``."""
    return _act("softsign", x, lambda a: a / (1 + np.abs(a)),
                lambda g, a, o: g / np.square(1 + np.abs(a)))


def silu(x: Any) -> Tensor:
    """``x * sigmoid(x)`` (Keras's ``swish``)."""
    def vjp(g, a, o):
        s = _sigmoid(a)
        return g * (s + a * s * (1 - s))
    return _act("silu", x, lambda a: a * _sigmoid(a), vjp)


swish = silu


def hard_sigmoid(x: Any) -> Tensor:
    """``relu6(x + 3) / 6`` (Keras 3)."""
    return _act("hard_sigmoid", x, lambda a: np.clip(a / 6 + 0.5, 0, 1),
                lambda g, a, o: g * ((a > -3) & (a < 3)) / 6)


def hard_silu(x: Any) -> Tensor:
    """``x * hard_sigmoid(x)``."""
    def vjp(g, a, o):
        hs = np.clip(a / 6 + 0.5, 0, 1)
        return g * (hs + a * ((a > -3) & (a < 3)) / 6)
    return _act("hard_silu", x, lambda a: a * np.clip(a / 6 + 0.5, 0, 1), vjp)


_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def gelu(x: Any, approximate: bool = True) -> Tensor:
    """Gaussian error linear unit: the tanh approximation (Keras's default) or, with
    ``approximate=False``, the exact ``x * Phi(x)``."""
    if approximate:
        def fn(a):
            inner = _SQRT_2_OVER_PI * (a + 0.044715 * a ** 3)
            return 0.5 * a * (1 + np.tanh(inner))

        def vjp(g, a, o):
            inner = _SQRT_2_OVER_PI * (a + 0.044715 * a ** 3)
            th = np.tanh(inner)
            d_inner = _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * a * a)
            return g * (0.5 * (1 + th) + 0.5 * a * (1 - th * th) * d_inner)
        return _act("gelu", x, fn, vjp)

    fast = _kernel("gelu", x, "gelu")  # float32: the GELU layer's exact pass
    if fast is not None:
        return fast

    def fn_exact(a):
        return 0.5 * a * (1 + _ERF64(a / math.sqrt(2)).astype(a.dtype))

    def vjp_exact(g, a, o):
        cdf = 0.5 * (1 + _ERF64(a / math.sqrt(2)).astype(a.dtype))
        pdf = np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi)
        return g * (cdf + a * pdf)
    return _act("gelu", x, fn_exact, vjp_exact)


def elu(x: Any, alpha: float = 1.0) -> Tensor:
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    return _act("elu", x, lambda a: np.where(a > 0, a, alpha * np.expm1(a)),
                lambda g, a, o: g * np.where(a > 0, 1, o + alpha))


_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def selu(x: Any) -> Tensor:
    """Scaled ELU with Keras's constants."""
    return _act("selu", x,
                lambda a: _SELU_SCALE * np.where(a > 0, a, _SELU_ALPHA * np.expm1(a)),
                lambda g, a, o: g * np.where(a > 0, _SELU_SCALE, o + _SELU_SCALE * _SELU_ALPHA))


def leaky_relu(x: Any, negative_slope: float = 0.2) -> Tensor:
    """``x`` for ``x >= 0``, else ``negative_slope * x``."""
    return _act("leaky_relu", x, lambda a: np.where(a >= 0, a, negative_slope * a),
                lambda g, a, o: g * np.where(a >= 0, 1, negative_slope).astype(g.dtype))


def softmax(x: Any, axis: int = -1) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``axis`` (shifted by the maximum).
    VJP: ``s * (g - sum(g * s))``."""
    def fn(a):
        e = np.exp(a - np.max(a, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)
    axes(axis, np.ndim(unwrap(x, "softmax", "x")[0]), "softmax")
    return _act("softmax", x, fn,
                lambda g, a, o: o * (g - np.sum(g * o, axis=axis, keepdims=True)))


def log_softmax(x: Any, axis: int = -1) -> Tensor:
    """``x - logsumexp(x)`` along ``axis``. VJP: ``g - softmax(x) * sum(g)``."""
    def fn(a):
        s = a - np.max(a, axis=axis, keepdims=True)
        return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
    axes(axis, np.ndim(unwrap(x, "log_softmax", "x")[0]), "log_softmax")
    return _act("log_softmax", x, fn,
                lambda g, a, o: g - np.exp(o) * np.sum(g, axis=axis, keepdims=True))
