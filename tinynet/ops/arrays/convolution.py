"""The convolution layers' passes, one operation each (as :mod:`tinynet.ops.arrays.dense`
for Dense): a forward is the convolution, the bias and the activation; a backward is the
activation's derivative, then the input, kernel and bias gradients, each only when asked
for.

* ``conv_*``: Conv2D and Conv1D (a one-row image). A 1x1 stride-1 kernel is one GEMM
  (:func:`~tinynet.ops.arrays.matmul.matmul`; its kernel gradient
  :func:`~tinynet.ops.arrays.matmul.weight_gradient`), the bias added in the activation pass;
  any other runs on :mod:`tinynet.ops.arrays.conv2d`, the bias added (and its gradient
  summed) tile by tile.
* ``conv_transpose_*``: Conv2DTranspose, the input gradient of the convolution from its
  output's shape back to its input's (the forward is that convolution's input gradient,
  with the bias added to each sample as it is finished; the input gradient its forward,
  the kernel gradient its kernel gradient with the roles of ``x`` and the output
  gradient swapped).
* ``depthwise_conv_*``: DepthwiseConv2D (:mod:`tinynet.ops.arrays.depthwise`, the bias
  added and its gradient summed in the depthwise pass).
* ``separable_conv_*``: SeparableConv2D, the depthwise convolution without bias (its
  output given a channel of ones when the layer has a bias), then the pointwise kernel,
  with the bias as its last row, as one GEMM: the bias is the GEMM's last product (the
  bits of a bias added after it), and its gradient the kernel gradient GEMM's last row.

``geometry`` is ``(kh, kw, sh, sw, dh, dw, pad_top, pad_left, oh, ow)`` of the
convolution that runs (for Conv2DTranspose, the equivalent convolution whose input has
the layer's output shape and whose output has the layer's input shape). Activations are
:class:`~tinynet.ops.fused.ActivationFn` objects (or ``None``); ``pre`` is what
:func:`~tinynet.ops.fused.bias_act_forward` keeps for the activation's backward.
"""

from __future__ import annotations

import numpy as np

from tinynet.ops.arrays.conv2d import conv2d_backward, conv2d_forward, conv2d_input_grad
from tinynet.ops.arrays.depthwise import POOL_FROM_BYTES, depthwise_backward, depthwise_forward
from tinynet.ops.arrays.matmul import matmul, weight_gradient
from tinynet.ops.arrays.streaming import empty_aligned
from tinynet.ops.fused import ActivationFn, bias_act_backward, bias_act_forward, bias_grad

__all__ = ["conv_forward", "conv_backward", "conv_transpose_forward",
           "conv_transpose_backward", "depthwise_conv_forward", "depthwise_conv_backward",
           "separable_conv_forward", "separable_conv_backward"]

_Grads3 = tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]


def _pointwise(geometry: tuple) -> bool:
    """Whether the convolution is a 1x1 kernel at stride 1: one GEMM over the pixels."""
    kh, kw, sh, sw = geometry[:4]
    return kh == kw == sh == sw == 1


# -- Conv2D / Conv1D -------------------------------------------------------------------

def conv_forward(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None,
                 fn: ActivationFn | None, geometry: tuple
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """``fn(conv(x, kernel) + bias)``.

    Args:
        x: float32 C-contiguous ``[B, H, W, C]``.
        kernel: float32 ``[KH * KW * C, F]``.
        bias: float32 ``[F]`` or ``None``.
        fn: The activation, or ``None`` (linear).
        geometry: The convolution's geometry (see the module docstring).

    Returns:
        ``(y, pre)``: the output ``[B * OH * OW, F]`` and the pre-activation when ``fn``'s
        backward reads it (else ``None``).
    """
    if _pointwise(geometry):
        z = matmul(x.reshape(-1, x.shape[-1]), kernel)
    else:  # the bias is added tile by tile
        z, bias = conv2d_forward(x, kernel, geometry, bias), None
    return bias_act_forward(z, bias, fn)


def conv_backward(x: np.ndarray, kernel: np.ndarray, pre: np.ndarray | None, y: np.ndarray,
                  grad: np.ndarray, fn: ActivationFn | None, geometry: tuple, *,
                  want_input: bool, want_kernel: bool, want_bias: bool) -> _Grads3:
    """The gradients of :func:`conv_forward` from dL/dy ``grad`` (``[B * OH * OW, F]``).

    Returns:
        ``(dx [B, H, W, C], dkernel [KH * KW * C, F], dbias [F])``, each ``None`` unless
        its flag asks for it.
    """
    dz = bias_act_backward(fn, pre, y, grad)
    if not _pointwise(geometry):  # the bias gradient is summed tile by tile
        return conv2d_backward(x, kernel, dz, geometry, want_dx=want_input,
                               want_dw=want_kernel, want_db=want_bias)
    dkernel = weight_gradient(x.reshape(-1, x.shape[-1]), dz) if want_kernel else None
    dx = matmul(dz, kernel, trans_b=True).reshape(x.shape) if want_input else None
    dbias = bias_grad(dz) if want_bias else None
    return dx, dkernel, dbias


# -- Conv2DTranspose -------------------------------------------------------------------

def conv_transpose_forward(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None,
                           fn: ActivationFn | None, geometry: tuple, out_shape: tuple
                           ) -> tuple[np.ndarray, np.ndarray | None]:
    """``fn(conv_transpose(x, kernel) + bias)``: the input gradient of the convolution of
    ``geometry`` for the output gradient ``x``.

    Args:
        x: float32 C-contiguous ``[B, H, W, C]``.
        kernel: float32 ``[KH * KW * F, C]`` (Keras's ``[kh, kw, filters, in_channels]``).
        bias: float32 ``[F]`` or ``None``.
        fn: The activation, or ``None`` (linear).
        geometry: The equivalent convolution's geometry (its output is ``[H, W]``).
        out_shape: The layer's output shape ``(B, OH, OW, F)``.

    Returns:
        ``(y, pre)``: the output ``[B * OH * OW, F]`` and the pre-activation when ``fn``'s
        backward reads it (else ``None``).
    """
    # the bias joins each output sample as it leaves the col2im buffer, still in cache
    z = conv2d_input_grad(x.reshape(-1, x.shape[-1]), kernel, geometry, out_shape, bias)
    return bias_act_forward(z.reshape(-1, out_shape[-1]), None, fn)


def conv_transpose_backward(x: np.ndarray, kernel: np.ndarray, pre: np.ndarray | None,
                            y: np.ndarray, grad: np.ndarray, fn: ActivationFn | None,
                            geometry: tuple, out_shape: tuple, *, want_input: bool,
                            want_kernel: bool, want_bias: bool) -> _Grads3:
    """The gradients of :func:`conv_transpose_forward` from dL/dy ``grad``
    (``[B * OH * OW, F]``).

    Returns:
        ``(dx [B, H, W, C], dkernel [KH * KW * F, C], dbias [F])``, each ``None`` unless
        its flag asks for it.
    """
    dz = bias_act_backward(fn, pre, y, grad)
    dz4 = np.ascontiguousarray(dz).reshape(out_shape)
    dx = conv2d_forward(dz4, kernel, geometry).reshape(x.shape) if want_input else None
    dkernel = (conv2d_backward(dz4, kernel, x.reshape(-1, x.shape[-1]), geometry,
                               want_dx=False)[1] if want_kernel else None)
    dbias = bias_grad(dz) if want_bias else None
    return dx, dkernel, dbias


# -- DepthwiseConv2D -------------------------------------------------------------------

def depthwise_conv_forward(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None,
                           fn: ActivationFn | None, geometry: tuple
                           ) -> tuple[np.ndarray, np.ndarray | None]:
    """``fn(depthwise_conv(x, kernel) + bias)``, the bias added in the depthwise pass.

    Args:
        x: float32 C-contiguous ``[B, H, W, C]``.
        kernel: float32 C-contiguous ``[KH, KW, C * M]`` (output channel ``c * M + m``).
        bias: float32 ``[C * M]`` or ``None``.
        fn: The activation, or ``None`` (linear).
        geometry: The convolution's geometry.

    Returns:
        ``(y, pre)``: the output ``[B * OH * OW, C * M]`` and the pre-activation when
        ``fn``'s backward reads it (else ``None``).
    """
    z = depthwise_forward(x, kernel, geometry, bias)
    return bias_act_forward(z.reshape(-1, z.shape[-1]), None, fn)


def depthwise_conv_backward(x: np.ndarray, kernel: np.ndarray, pre: np.ndarray | None,
                            y: np.ndarray, grad: np.ndarray, fn: ActivationFn | None,
                            geometry: tuple, *, want_input: bool, want_kernel: bool,
                            want_bias: bool) -> _Grads3:
    """The gradients of :func:`depthwise_conv_forward` from dL/dy ``grad``
    (``[B * OH * OW, C * M]``), the bias gradient summed in the depthwise pass.

    Returns:
        ``(dx [B, H, W, C], dkernel [KH, KW, C * M], dbias [C * M])``, each ``None``
        unless its flag asks for it.
    """
    dz = bias_act_backward(fn, pre, y, grad)
    return _depthwise_grads(x, kernel, dz, geometry, want_input, want_kernel, want_bias)


def _depthwise_grads(x: np.ndarray, kernel: np.ndarray, dz: np.ndarray, geometry: tuple,
                     want_dx: bool, want_dw: bool, want_db: bool) -> _Grads3:
    """:func:`~tinynet.ops.arrays.depthwise.depthwise_backward` for the depthwise output's
    gradient ``dz`` given as ``[B * OH * OW, C * M]``."""
    # the sizes, not -1: the batch may be empty
    g = np.ascontiguousarray(dz, dtype=np.float32).reshape(
        x.shape[0], geometry[8], geometry[9], dz.shape[-1])
    return depthwise_backward(x, kernel, g, geometry, want_dx=want_dx, want_dw=want_dw,
                              want_db=want_db)


# -- SeparableConv2D -------------------------------------------------------------------

def separable_conv_forward(x: np.ndarray, depthwise: np.ndarray, pointwise: np.ndarray,
                           bias: np.ndarray | None, fn: ActivationFn | None, geometry: tuple
                           ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """``fn(depthwise_conv(x, depthwise) @ pointwise + bias)``.

    Args:
        x: float32 C-contiguous ``[B, H, W, C]``.
        depthwise: float32 C-contiguous ``[KH, KW, C * M]``.
        pointwise: float32 ``[C * M, F]``.
        bias: float32 ``[F]`` or ``None``.
        fn: The activation, or ``None`` (linear).
        geometry: The depthwise convolution's geometry.

    Returns:
        ``(y, pre, d)``: the output ``[B * OH * OW, F]``, the pre-activation when ``fn``'s
        backward reads it (else ``None``) and the depthwise output ``[B, OH, OW, C * M]``
        with, when there is a bias, a last channel of ones (``C * M + 1`` channels), which
        the backward reads.
    """
    # With a bias, d's channel of ones meets the bias as the pointwise kernel's last row:
    # each output's chain ends with 1 * bias, one rounded add, the bits of a bias pass.
    d = depthwise_forward(x, depthwise, geometry, ones=bias is not None)
    if bias is not None:
        pointwise = np.concatenate(
            (pointwise, np.asarray(bias, dtype=np.float32).reshape(1, -1)))
    z = matmul(d.reshape(-1, d.shape[-1]), pointwise,
               empty_aligned((d.size // d.shape[-1], pointwise.shape[1]),
                             pool_from=POOL_FROM_BYTES))
    y, pre = bias_act_forward(z, None, fn)
    return y, pre, d


def separable_conv_backward(x: np.ndarray, depthwise: np.ndarray, pointwise: np.ndarray,
                            d: np.ndarray, pre: np.ndarray | None, y: np.ndarray,
                            grad: np.ndarray, fn: ActivationFn | None, geometry: tuple, *,
                            want_input: bool, want_depthwise: bool, want_pointwise: bool,
                            want_bias: bool
                            ) -> tuple[np.ndarray | None, np.ndarray | None,
                                       np.ndarray | None, np.ndarray | None]:
    """The gradients of :func:`separable_conv_forward` from dL/dy ``grad``
    (``[B * OH * OW, F]``); ``d`` is the forward's depthwise output.

    With a bias, ``d``'s channel of ones makes the bias gradient the pointwise kernel
    gradient's last row (:func:`~tinynet.ops.arrays.matmul.weight_gradient`'s sums over the
    rows, as the kernel gradient's); without one the bias gradient, if asked, is a column
    fold.

    Returns:
        ``(dx [B, H, W, C], ddepthwise [KH, KW, C * M], dpointwise [C * M, F],
        dbias [F])``, each ``None`` unless its flag asks for it.
    """
    dz = bias_act_backward(fn, pre, y, grad)
    cm = pointwise.shape[0]
    ones = d.shape[-1] == cm + 1
    dpointwise = dbias = None
    if want_pointwise or (want_bias and ones):
        dwe = weight_gradient(d.reshape(-1, d.shape[-1]), dz)  # [C * M (+1), F]
        dpointwise = dwe[:cm] if want_pointwise else None
        dbias = dwe[cm] if want_bias else None
    elif want_bias:
        dbias = bias_grad(dz)
    if not (want_input or want_depthwise):
        return None, None, dpointwise, dbias
    # dd, the depthwise backward's output gradient, on 64-byte lines: each of its 16-lane
    # loads then reads one cache line, not two (0.2 of that pass's time at 32x28x28x32)
    dd = matmul(dz, pointwise, empty_aligned((dz.shape[0], cm), pool_from=POOL_FROM_BYTES),
                trans_b=True)
    dx, ddepthwise, _ = _depthwise_grads(x, depthwise, dd, geometry, want_input,
                                         want_depthwise, False)
    return dx, ddepthwise, dpointwise, dbias
