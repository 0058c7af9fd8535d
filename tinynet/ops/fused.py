"""Activations as fused Numba passes (:mod:`tinynet.kernels.elementwise`): the
:class:`ActivationFn` objects the built-in layers run, with hand-written derivatives, and
the bias + activation pass of Dense and Conv2D.

``tinynet.ops`` runs its float32 ``relu`` through the same kernel, so a ``call()`` layer
gets the built-in layers' bits and speed; :mod:`tinynet.activations` (Keras's namespace)
looks activations up here by name. The loops are gated by
``elementwise_parallel_min_elems``; results never depend on the gate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import tuning
from tinynet.kernels import elementwise as ek
from tinynet.ops.arrays.reduction import col_sum

__all__ = ["ActivationFn", "FORMS", "relu_fn", "elu_fn", "bias_act_forward", "bias_act_backward",
           "bias_grad"]

# The forms an ActivationFn computes, by name, and each form's kernel code
# (:mod:`tinynet.kernels.elementwise`): the codes stay inside ops; layers and the exporter
# read ``form``.
_CODES = {"linear": ek.LINEAR, "relu": ek.RELU, "leaky_relu": ek.LEAKY_RELU,
          "relu_general": ek.RELU_GENERAL, "sigmoid": ek.SIGMOID, "tanh": ek.TANH,
          "elu": ek.ELU, "gelu": ek.GELU, "silu": ek.SILU, "softmax": ek.SOFTMAX}
FORMS = (*_CODES, "function")

_EMPTY = np.empty(0, dtype=np.float32)
_FLAT_ROW = 4096  # row length used for purely elementwise passes without a bias


class ActivationFn:
    """An activation function with a hand-written derivative.

    Attributes:
        name: The Keras name (``"relu"``, ``"softmax"``, ...).
        form: What it computes, one of :data:`FORMS`: the name of a built-in activation,
            ``"relu_general"`` (Keras ``relu`` with ``params`` = negative slope, maximum,
            threshold), or ``"function"`` (a function of a tensor).
        params: Three float parameters (slope, maximum, threshold, or alpha).
        uses_input: ``backward`` reads ``x`` (else ``x`` may be ``None``).
        uses_output: ``backward`` reads ``y`` (else ``y`` may be ``None``).
    """

    __slots__ = ("name", "form", "_kind", "params", "uses_input", "uses_output")

    def __init__(self, name: str, form: str, params: tuple = (0.0, 0.0, 0.0), *,
                 uses_input: bool, uses_output: bool) -> None:
        if form not in FORMS:
            raise ValueError(f"ActivationFn: form must be one of {FORMS}, got {form!r}")
        self.name = name
        self.form = form
        self._kind = _CODES.get(form, -1)  # the kernel code; -1: no kernel (a function)
        self.params = tuple(np.float32(p) for p in params)
        self.uses_input = uses_input
        self.uses_output = uses_output

    def _row_len(self, arr: np.ndarray, bias: np.ndarray | None) -> int:
        if bias is not None or self._kind == ek.SOFTMAX:
            return max(arr.shape[-1], 1) if arr.ndim else 1
        return max(min(arr.size, _FLAT_ROW), 1)

    def _check_out(self, out: Any, shape: tuple) -> np.ndarray:
        if (not isinstance(out, np.ndarray) or out.dtype != np.float32 or out.shape != shape
                or not out.flags.c_contiguous):
            raise ValueError(f"activation {self.name}: out must be a C-contiguous float32 array "
                             f"of shape {shape}, got {getattr(out, 'shape', type(out).__name__)}")
        return out

    def forward(self, x: Any, *, bias: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        """Returns ``act(x + bias)`` as float32 (``bias`` runs along the last axis).

        Args:
            x: Input array (converted to C-contiguous float32 once).
            bias: Optional ``[x.shape[-1]]`` vector added before the activation.
            out: Optional C-contiguous float32 array shaped like ``x``; may be ``x`` itself.
        """
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.empty_like(x) if out is None else self._check_out(out, x.shape)
        if x.size == 0:
            return out
        b = _EMPTY if bias is None else np.ascontiguousarray(bias, dtype=np.float32).reshape(-1)
        row_len = self._row_len(x, bias)
        parallel = tuning.use_parallel("elementwise_parallel_min_elems", x.size)
        if self._kind == ek.LINEAR and not parallel:
            # One float32 add per element (or a copy): NumPy gives the kernel's bits, and
            # a model whose calls stay serial compiles no kernel for its bias adds.
            if b.size:
                np.add(x.reshape(-1, row_len), b, out=out.reshape(-1, row_len))
            elif out is not x:
                np.copyto(out, x)
            return out
        kernel = ek.act_forward_kernel(self._kind, parallel)
        kernel(x.reshape(-1), b, row_len, *self.params, out.reshape(-1))
        return out

    def backward(self, x: Any, y: Any, grad: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        """Returns dL/dx from the input ``x``, the output ``y`` and dL/dy ``grad``.

        ``x`` may be ``None`` unless :attr:`uses_input`; ``y`` may be ``None`` unless
        :attr:`uses_output`. ``out`` may be ``grad`` itself (in-place).
        """
        g = np.ascontiguousarray(grad, dtype=np.float32)
        xs = np.ascontiguousarray(x, dtype=np.float32) if self.uses_input else g
        ys = np.ascontiguousarray(y, dtype=np.float32) if self.uses_output else g
        if xs.shape != g.shape or ys.shape != g.shape:
            raise ValueError(
                f"activation {self.name}: x, y and grad must have one shape, got "
                f"{xs.shape}, {ys.shape} and {g.shape}")
        out = np.empty_like(g) if out is None else self._check_out(out, g.shape)
        if g.size == 0:
            return out
        kernel = ek.act_backward_kernel(
            self._kind, tuning.use_parallel("elementwise_parallel_min_elems", g.size))
        kernel(xs.reshape(-1), ys.reshape(-1), g.reshape(-1), self._row_len(g, None),
               *self.params, out.reshape(-1))
        return out

    def __call__(self, x: Any) -> np.ndarray:
        return self.forward(x)

    def __repr__(self) -> str:
        return f"ActivationFn({self.name!r})"


_LINEAR = ActivationFn("linear", "linear", uses_input=False, uses_output=False)

_REGISTRY: dict[str, ActivationFn] = {
    "relu": ActivationFn("relu", "relu", uses_input=False, uses_output=True),
    "sigmoid": ActivationFn("sigmoid", "sigmoid", uses_input=False, uses_output=True),
    "tanh": ActivationFn("tanh", "tanh", uses_input=False, uses_output=True),
    "softmax": ActivationFn("softmax", "softmax", uses_input=False, uses_output=True),
    "elu": ActivationFn("elu", "elu", (1.0, 0.0, 0.0), uses_input=True, uses_output=False),
    "leaky_relu": ActivationFn("leaky_relu", "leaky_relu", (0.2, 0.0, 0.0),
                               uses_input=False, uses_output=True),
    "gelu": ActivationFn("gelu", "gelu", uses_input=True, uses_output=False),
    "silu": ActivationFn("silu", "silu", uses_input=True, uses_output=False),
}


def relu_fn(negative_slope: float = 0.0, max_value: float | None = None,
            threshold: float = 0.0) -> ActivationFn:
    """Keras ``relu(x, negative_slope, max_value, threshold)`` as an :class:`ActivationFn`.

    ``f(x) = min(x, max_value)`` for ``x > threshold``, ``negative_slope * (x - threshold)``
    below it (and 0 at it). Arguments are assumed valid (non-negative), as the ReLU layer
    checks them. The default arguments give the plain ``"relu"``.
    """
    if max_value is None and threshold == 0.0:
        if negative_slope == 0.0:
            return _REGISTRY["relu"]
        return ActivationFn("leaky_relu", "leaky_relu", (negative_slope, 0.0, 0.0),
                            uses_input=False, uses_output=True)
    top = np.inf if max_value is None else max_value
    return ActivationFn("relu", "relu_general", (negative_slope, top, threshold),
                        uses_input=True, uses_output=False)


def elu_fn(alpha: float = 1.0) -> ActivationFn:
    """Keras ``elu(x, alpha)`` as an :class:`ActivationFn`: ``x`` for ``x > 0``,
    ``alpha * (exp(x) - 1)`` otherwise."""
    return ActivationFn("elu", "elu", (alpha, 0.0, 0.0), uses_input=True, uses_output=False)


# -- keras.activations: the activation functions of a tensor, through tinynet.ops ------------


# -- fused bias + activation for Dense / Conv2D -----------------------------------------

def bias_act_forward(z: np.ndarray, bias: np.ndarray | None,
                     fn: ActivationFn | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Applies ``fn(z + bias)`` in place where it can; ``z`` is a float32 ``[rows, C]`` buffer.

    Returns:
        ``(y, pre)``: the output, and the pre-activation ``z + bias`` when ``fn`` needs it
        for its backward (else ``None``). ``z`` is overwritten.
    """
    if fn is None:
        if bias is not None:
            _LINEAR.forward(z, bias=bias, out=z)
        return z, None
    if fn.uses_input:
        if bias is not None:
            _LINEAR.forward(z, bias=bias, out=z)
        return fn.forward(z), z
    return fn.forward(z, bias=bias, out=z), None


def bias_act_backward(fn: ActivationFn | None, pre: np.ndarray | None, y: np.ndarray,
                      grad: np.ndarray) -> np.ndarray:
    """dL/d(pre-activation) from :func:`bias_act_forward`'s results (``grad`` is not modified)."""
    if fn is None:
        return grad
    return fn.backward(pre, y, grad)


def bias_grad(dz: np.ndarray) -> np.ndarray:
    """Deterministic sum of ``dz`` (``[rows, C]``, float32) over rows: fixed row blocks."""
    dz = np.ascontiguousarray(dz, dtype=np.float32)
    cols = dz.shape[-1]
    if dz.size == 0:
        return np.zeros(cols, dtype=np.float32)
    # the shared column fold: blocks of rows_per_block(cols) rows, float64 merge in order
    return col_sum(dz, cols,
                   parallel=tuning.use_parallel("elementwise_parallel_min_elems", dz.size))
