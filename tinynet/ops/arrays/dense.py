"""The Dense layer's passes, one operation each: forward the product, the bias and the
activation (fused where the activation allows, :func:`tinynet.ops.fused.bias_act_forward`);
backward the activation's derivative, the weight products and the bias fold, each only
when asked for."""

from __future__ import annotations

import numpy as np

from tinynet.ops.arrays.matmul import matmul
from tinynet.ops.fused import ActivationFn, bias_act_backward, bias_act_forward, bias_grad

__all__ = ["dense_forward", "dense_backward"]


def dense_forward(x2: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None,
                  fn: ActivationFn | None) -> tuple[np.ndarray, np.ndarray | None]:
    """``fn(x2 @ kernel + bias)`` for float32 ``x2`` ``[rows, fan_in]``.

    Returns:
        ``(y, pre)``: the output ``[rows, units]`` and the pre-activation when ``fn``'s
        backward reads it (else ``None``), as :func:`tinynet.ops.fused.bias_act_forward`.
    """
    return bias_act_forward(matmul(x2, kernel), bias, fn)


def dense_backward(x2: np.ndarray, kernel: np.ndarray, pre: np.ndarray | None, y: np.ndarray,
                   grad: np.ndarray, fn: ActivationFn | None, *, want_kernel: bool,
                   want_bias: bool, want_input: bool
                   ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """The gradients of :func:`dense_forward` from dL/dy ``grad`` (``[rows, units]``).

    Returns:
        ``(dx, dkernel, dbias)``, each ``None`` unless its flag asks for it.
    """
    dz = bias_act_backward(fn, pre, y, grad)
    dkernel = matmul(x2, dz, trans_a=True) if want_kernel else None
    dbias = bias_grad(dz) if want_bias else None
    dx = matmul(dz, kernel, trans_b=True) if want_input else None
    return dx, dkernel, dbias
