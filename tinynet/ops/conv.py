"""Convolution and pooling ops: ``conv``, ``depthwise_conv``, ``conv_transpose``,
``max_pool``, ``average_pool`` (``keras.ops`` names, arguments and semantics, channels-last).

1-D ops take ``[batch, width, channels]`` and 2-D ops ``[batch, height, width, channels]``;
the rank of ``inputs`` picks which. Window sizes follow TF/Keras: "valid" keeps the windows
inside the input; "same" gives ``ceil(size / stride)`` outputs and puts the odd padding
cell at the end (:func:`tinynet.ops.arrays.windows.window_axis`, the window being the dilated
kernel ``(k - 1) * dilation + 1``).

float32 inputs run on the kernels of the built-in layers, called exactly as those layers
call them, so an op gives the same bits as the layer with the same weights and no bias:
``conv`` as ``Conv1D``/``Conv2D`` (the layer's ``convolution.conv_forward`` /
``conv_backward``: a 1x1 stride-1 kernel one GEMM, its kernel gradient
``matmul.weight_gradient``), ``depthwise_conv`` as
``DepthwiseConv2D`` (:mod:`tinynet.ops.arrays.depthwise`), ``conv_transpose`` as
``Conv2DTranspose``, the pools as ``MaxPooling1D/2D`` and ``AveragePooling1D/2D``
(:mod:`tinynet.ops.arrays.pooling`). A 1-D op runs as the 2-D one on a view, as the 1-D layers
do: a convolution on ``[batch, 1, width, channels]`` with a one-row kernel, a pool on
``[batch, width, 1, channels]`` with ``(pool, 1)`` windows. float64 inputs (finite-difference
gradient checks) run on a plain NumPy path (strided window views and ``einsum``).

Gradients: the VJP of a convolution is the layer's backward (input and kernel gradients,
each computed only when its input is tracked); ``max_pool`` routes each output gradient
to the maximum of its window, the **first** one in row-major window order on ties, as
``MaxPooling2D`` (and as JAX, whose max-pool gradient is XLA's select-and-scatter with a
``>=`` selection: the first maximum keeps the gradient); padded cells never win.
``average_pool`` spreads ``g / count`` over the in-bounds cells of each window ("same"
counts only cells inside the input, as Keras on JAX).

Grouped convolutions (``conv`` with a kernel whose input channels are a proper divisor of
the inputs' channels, Keras's ``feature_group_count``) run as one convolution per group.
Unlike the layers, and like ``keras.ops``, strides > 1 may go with dilation > 1.

Differences from Keras: channels-last only (any other ``data_format`` raises); integer
inputs give float32 results; ``conv_transpose``'s ``output_padding`` must be below the
stride (as the ``Conv2DTranspose`` layer).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from tinynet.ops.arrays.windows import window_axis
from tinynet.ops.autodiff import record
from tinynet.ops.core import OpError, as_float, float_of, unwrap
from tinynet.tensor import Tensor

__all__ = ["conv", "depthwise_conv", "conv_transpose", "max_pool", "average_pool"]


# -- argument checks ---------------------------------------------------------------------
def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check_format(op: str, data_format: Any) -> None:
    if data_format is not None and data_format != "channels_last":
        raise OpError(f"{op}: data_format must be None or 'channels_last' (tinynet is "
                      f"channels-last only), got {data_format!r}")


def _check_padding(op: str, padding: Any) -> str:
    what = f"{op}: padding must be 'valid' or 'same', got {padding!r}"
    if not isinstance(padding, str):
        raise TypeError(what)
    value = padding.lower()
    if value not in ("valid", "same"):
        raise OpError(what)
    return value


def _check_ints(op: str, arg: str, value: Any, n: int, minimum: int = 1) -> tuple[int, ...]:
    """An int or a tuple/list of ``n`` ints, each ``>= minimum``, as an ``n``-tuple."""
    kind = "positive" if minimum == 1 else "non-negative"
    what = f"{op}: {arg} must be a {kind} int or a tuple of {n} {kind} ints, got {value!r}"
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise OpError(what)
        items = tuple(value)
    elif _is_int(value):
        items = (value,) * n
    else:
        raise TypeError(what)
    if not all(_is_int(v) for v in items):
        raise TypeError(what)
    if any(v < minimum for v in items):
        raise OpError(what)
    return tuple(int(v) for v in items)


def _inputs(op: str, inputs: Any) -> tuple[np.ndarray, Any, int]:
    """The inputs' array, tracked tensor and number of spatial axes (1 or 2)."""
    x, tx = unwrap(inputs, op, "inputs")
    x = np.asarray(x)
    if x.ndim not in (3, 4):
        raise OpError(f"{op}: inputs must have rank 3 (batch, width, channels) or 4 (batch, "
                      f"height, width, channels), got shape {x.shape}")
    return x, tx, x.ndim - 2


def _kernel(op: str, kernel: Any, x: np.ndarray) -> tuple[np.ndarray, Any]:
    k, tk = unwrap(kernel, op, "kernel")
    k = np.asarray(k)
    if k.ndim != x.ndim:
        raise OpError(f"{op}: kernel must have rank {x.ndim} for inputs of rank {x.ndim}, got "
                      f"kernel {k.shape} (inputs {x.shape})")
    if 0 in k.shape:
        raise OpError(f"{op}: kernel must not have an empty axis, got kernel {k.shape}")
    return k, tk


def _as_2d(x: np.ndarray, k: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A 1-D convolution's operands as the 2-D ones (Conv1D's view): ``[B, 1, W, C]`` and a
    one-row kernel."""
    if n == 2:
        return x, k
    return x[:, None], (None if k is None else k[None])


def _pair(t: tuple, n: int) -> tuple[int, int]:
    return t if n == 2 else (1, t[0])


def _tracked(t: Any) -> bool:
    return isinstance(t, Tensor) and t._node is not None


# -- geometry ----------------------------------------------------------------------------
class _Geom:
    """One 2-D window geometry: window taps, strides, dilations, output size, pads."""

    __slots__ = ("k", "s", "d", "out", "before", "after", "size")

    def __init__(self, size: tuple, k: tuple, s: tuple, d: tuple, out: tuple,
                 before: tuple) -> None:
        self.size, self.k, self.s, self.d = tuple(size), tuple(k), tuple(s), tuple(d)
        self.out, self.before = tuple(out), tuple(before)
        # the padding after the input that the last window reaches (0 if it stops inside)
        self.after = tuple(max((o - 1) * st + (kk - 1) * dd + 1 - n - b, 0) for
                           o, st, kk, dd, n, b in zip(out, s, k, d, size, before))

    def tiling(self) -> tuple:
        """The geometry tuple of :mod:`tinynet.ops.arrays.conv2d` and :mod:`tinynet.ops.arrays.depthwise`."""
        return (*self.k, *self.s, *self.d, *self.before, *self.out)


def _window_geom(op: str, x_shape: tuple, k: tuple, s: tuple, d: tuple, padding: str,
                 what: str, shapes: str) -> _Geom:
    """The geometry of windows ``k`` (taps) over ``x_shape`` ``[B, H, W, C]``; raises when
    a "valid" output would be empty."""
    out, before = [], []
    for a in (0, 1):
        o, b = window_axis(int(x_shape[1 + a]), (k[a] - 1) * d[a] + 1, s[a], padding)
        out.append(o)
        before.append(b)
    if min(out) < 1:
        raise OpError(f"{op}: the {what} does not fit the inputs with padding 'valid' (the "
                      f"output would be empty) ({shapes})")
    return _Geom(x_shape[1:3], k, s, d, out, before)


# -- the NumPy path (float64) ------------------------------------------------------------
def _windows(x: np.ndarray, g: _Geom, fill: float = 0.0) -> np.ndarray:
    """``x`` ``[B, H, W, C]`` padded with ``fill`` as a read-only window view
    ``[B, OH, OW, KH, KW, C]``."""
    (pt, pl), (pb, pr) = g.before, g.after
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=fill)
    s0, s1, s2, s3 = xp.strides
    shape = (x.shape[0], *g.out, *g.k, x.shape[3])
    strides = (s0, s1 * g.s[0], s2 * g.s[1], s1 * g.d[0], s2 * g.d[1], s3)
    return as_strided(xp, shape=shape, strides=strides, writeable=False)


def _fold(cols: np.ndarray, g: _Geom, x_shape: tuple) -> np.ndarray:
    """The adjoint of :func:`_windows`: sums ``cols`` ``[B, OH, OW, KH, KW, C]`` back into
    the (cropped) input ``x_shape``."""
    (pt, pl), (pb, pr) = g.before, g.after
    b, h, w, c = x_shape
    dxp = np.zeros((b, pt + h + pb, pl + w + pr, c), dtype=cols.dtype)
    (oh, ow), (sh, sw), (dh, dw) = g.out, g.s, g.d
    for i in range(g.k[0]):
        for j in range(g.k[1]):
            dxp[:, i * dh:i * dh + (oh - 1) * sh + 1:sh,
                j * dw:j * dw + (ow - 1) * sw + 1:sw] += cols[:, :, :, i, j]
    return dxp[:, pt:pt + h, pl:pl + w]


def _conv64(x: np.ndarray, k: np.ndarray, g: _Geom, groups: int) -> np.ndarray:
    """Grouped convolution: ``x`` ``[B, H, W, G * Cg]``, ``k`` ``[KH, KW, Cg, G * Fg]``."""
    cols = _windows(x, g)
    b, oh, ow, kh, kw, c = cols.shape
    f = k.shape[-1]
    cols = cols.reshape(b, oh, ow, kh, kw, groups, c // groups)
    k5 = k.reshape(kh, kw, c // groups, groups, f // groups)
    return np.einsum("byxijgc,ijcgf->byxgf", cols, k5, optimize=True).reshape(b, oh, ow, f)


def _conv64_dx(dy: np.ndarray, k: np.ndarray, g: _Geom, groups: int,
               x_shape: tuple) -> np.ndarray:
    b, oh, ow, f = dy.shape
    kh, kw, cg, _ = k.shape
    dy5 = dy.reshape(b, oh, ow, groups, f // groups)
    k5 = k.reshape(kh, kw, cg, groups, f // groups)
    cols = np.einsum("byxgf,ijcgf->byxijgc", dy5, k5, optimize=True)
    return _fold(cols.reshape(b, oh, ow, kh, kw, groups * cg), g, x_shape)


def _conv64_dk(x: np.ndarray, dy: np.ndarray, g: _Geom, groups: int,
               k_shape: tuple) -> np.ndarray:
    cols = _windows(x, g)
    b, oh, ow, kh, kw, c = cols.shape
    f = dy.shape[-1]
    cols = cols.reshape(b, oh, ow, kh, kw, groups, c // groups)
    dy5 = dy.reshape(b, oh, ow, groups, f // groups)
    dk = np.einsum("byxijgc,byxgf->ijcgf", cols, dy5, optimize=True)
    return dk.reshape(k_shape)


# -- the float32 path (the layers' kernels) ----------------------------------------------
def _conv32(x: np.ndarray, w2: np.ndarray, g: _Geom) -> np.ndarray:
    """``Conv2D.forward`` without bias: ``[B * OH * OW, F]`` (the layer's operation)."""
    from tinynet.ops.arrays.convolution import conv_forward

    return conv_forward(x, w2, None, None, g.tiling())[0]


def _conv32_grads(x: np.ndarray, w2: np.ndarray, dz: np.ndarray, g: _Geom, want_dx: bool,
                  want_dw: bool) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``Conv2D._gradients`` without bias: ``(dx [B, H, W, C], dw2 [KH * KW * C, F])``
    (the layer's operation)."""
    from tinynet.ops.arrays.convolution import conv_backward

    dx, dw2, _ = conv_backward(x, w2, None, None, dz, None, g.tiling(), want_input=want_dx,
                               want_kernel=want_dw, want_bias=False)
    return dx, dw2


def _c(a: np.ndarray, dtype: Any = np.float32) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


# -- conv --------------------------------------------------------------------------------
def _kernel_args(op: str, inputs: Any, kernel: Any, strides: Any, padding: Any,
                 data_format: Any, dilation_rate: Any) -> tuple:
    """The checks every convolution op starts with: ``(x, tracked x, kernel, tracked
    kernel, spatial rank, strides, dilation, padding)``."""
    _check_format(op, data_format)
    x, tx, n = _inputs(op, inputs)
    k, tk = _kernel(op, kernel, x)
    s = _check_ints(op, "strides", strides, n)
    d = _check_ints(op, "dilation_rate", dilation_rate, n)
    return x, tx, k, tk, n, s, d, _check_padding(op, padding)


def _float_views(x: np.ndarray, k: np.ndarray, n: int) -> tuple:
    """``(dtype, x4, k4)``: both operands in the op's float dtype (float64 if one is),
    C-contiguous, a 1-D convolution's as 2-D with height 1."""
    dt = float_of(x, k)
    x4, k4 = _as_2d(as_float(x).astype(dt, copy=False), as_float(k).astype(dt, copy=False), n)
    return dt, _c(x4, dt), _c(k4, dt)


def conv(inputs: Any, kernel: Any, strides: Any = 1, padding: str = "valid",
         data_format: str | None = None, dilation_rate: Any = 1) -> Tensor:
    """N-D convolution (cross-correlation), N = 1 or 2, channels-last.

    Args:
        inputs: ``[batch, width, C]`` (1-D) or ``[batch, height, width, C]`` (2-D).
        kernel: ``[kw, C / groups, F]`` or ``[kh, kw, C / groups, F]``; when the kernel's
            input channels are a divisor of ``C``, the convolution is grouped
            (``C / kernel_in`` groups, each of ``F / groups`` output channels, as Keras's
            ``feature_group_count``).
        strides: Int or a tuple of N ints.
        padding: ``"valid"`` or ``"same"`` (case-insensitive; TF/Keras "same").
        data_format: ``None`` or ``"channels_last"``.
        dilation_rate: Int or a tuple of N ints.

    Returns:
        ``[batch, *out_spatial, F]``, float32 (float64 if an operand is float64).

    VJP: the input gradient (the transposed convolution of ``g``) and the kernel gradient
    (the windows of ``inputs`` against ``g``), as ``Conv1D``/``Conv2D``'s backward.
    """
    op = "conv"
    x, tx, k, tk, n, s, d, pad = _kernel_args(op, inputs, kernel, strides, padding,
                                              data_format, dilation_rate)
    shapes = f"inputs {x.shape}, kernel {k.shape}"
    c, kin, f = x.shape[-1], k.shape[-2], k.shape[-1]
    if c % kin:
        raise OpError(f"{op}: kernel has {kin} input channels but inputs have {c} ({shapes})")
    groups = c // kin
    if f % groups:
        raise OpError(f"{op}: inputs have {c} channels, {groups} groups of the kernel's {kin}, "
                      f"so the kernel's {f} output channels must be a multiple of {groups} "
                      f"({shapes})")
    dt, x4, k4 = _float_views(x, k, n)
    g = _window_geom(op, x4.shape, k4.shape[:2], _pair(s, n), _pair(d, n), pad,
                     "dilated kernel", shapes)
    b, (oh, ow) = x4.shape[0], g.out
    out_shape = (b, oh, ow, f) if n == 2 else (b, ow, f)
    need_x, need_k = _tracked(tx), _tracked(tk)

    if dt == np.float64:
        out = _conv64(x4, k4, g, groups)

        def vjp(gy):
            dy = _c(gy, dt).reshape(b, oh, ow, f)
            dx = _conv64_dx(dy, k4, g, groups, x4.shape).reshape(x.shape) if need_x else None
            dk = _conv64_dk(x4, dy, g, groups, k4.shape).reshape(k.shape) if need_k else None
            return dx, dk

        return record(out.reshape(out_shape), (tx, tk), vjp, op)

    cg, fg = kin, f // groups
    parts = ([(x4, k4.reshape(-1, f))] if groups == 1 else
             [(_c(x4[..., i * cg:(i + 1) * cg]), _c(k4[..., i * fg:(i + 1) * fg]).reshape(-1, fg))
              for i in range(groups)])
    zs = [_conv32(xg, wg, g) for xg, wg in parts]
    z = zs[0] if groups == 1 else np.concatenate(zs, axis=-1)

    def vjp32(gy):
        dz = _c(gy).reshape(-1, f)
        if groups == 1:
            dx, dw2 = _conv32_grads(x4, parts[0][1], dz, g, need_x, need_k)
            dx = dx.reshape(x.shape) if need_x else None
            return dx, (dw2.reshape(k.shape) if need_k else None)
        dx = np.empty(x4.shape, np.float32) if need_x else None
        dk = np.empty(k4.shape, np.float32) if need_k else None
        for i, (xg, wg) in enumerate(parts):
            dxg, dwg = _conv32_grads(xg, wg, _c(dz[:, i * fg:(i + 1) * fg]), g, need_x, need_k)
            if need_x:
                dx[..., i * cg:(i + 1) * cg] = dxg
            if need_k:
                dk[..., i * fg:(i + 1) * fg] = dwg.reshape(*k4.shape[:3], fg)
        return (dx.reshape(x.shape) if need_x else None,
                dk.reshape(k.shape) if need_k else None)

    return record(z.reshape(out_shape), (tx, tk), vjp32, op)


# -- depthwise_conv ----------------------------------------------------------------------
def depthwise_conv(inputs: Any, kernel: Any, strides: Any = 1, padding: str = "valid",
                   data_format: str | None = None, dilation_rate: Any = 1) -> Tensor:
    """Depthwise convolution: input channel ``c`` convolved with ``M`` kernels of its own
    gives output channels ``c * M + m``.

    Args:
        inputs: ``[batch, width, C]`` (1-D) or ``[batch, height, width, C]`` (2-D).
        kernel: ``[kw, C, M]`` or ``[kh, kw, C, M]`` (``M`` the depth multiplier).
        strides, padding, data_format, dilation_rate: As :func:`conv`.

    Returns:
        ``[batch, *out_spatial, C * M]``.

    VJP: as ``DepthwiseConv2D``'s backward (input and kernel gradients).
    """
    op = "depthwise_conv"
    x, tx, k, tk, n, s, d, pad = _kernel_args(op, inputs, kernel, strides, padding,
                                              data_format, dilation_rate)
    shapes = f"inputs {x.shape}, kernel {k.shape}"
    c, kin, m = x.shape[-1], k.shape[-2], k.shape[-1]
    if kin != c:
        raise OpError(f"{op}: kernel has {kin} input channels but inputs have {c} ({shapes})")
    dt, x4, k4 = _float_views(x, k, n)
    g = _window_geom(op, x4.shape, k4.shape[:2], _pair(s, n), _pair(d, n), pad,
                     "dilated kernel", shapes)
    b, (oh, ow), cm = x4.shape[0], g.out, c * m
    out_shape = (b, oh, ow, cm) if n == 2 else (b, ow, cm)
    need_x, need_k = _tracked(tx), _tracked(tk)

    if dt == np.float64:
        # a grouped convolution with one group per channel: kernel [KH, KW, 1, C * M]
        kg = _c(k4, dt).reshape(*k4.shape[:2], 1, cm)
        out = _conv64(x4, kg, g, c)

        def vjp(gy):
            dy = _c(gy, dt).reshape(b, oh, ow, cm)
            dx = _conv64_dx(dy, kg, g, c, x4.shape).reshape(x.shape) if need_x else None
            dk = _conv64_dk(x4, dy, g, c, kg.shape).reshape(k.shape) if need_k else None
            return dx, dk

        return record(out.reshape(out_shape), (tx, tk), vjp, op)

    from tinynet.ops.arrays.depthwise import depthwise_backward, depthwise_forward

    w3 = _c(k4).reshape(k4.shape[0], k4.shape[1], -1)
    y = depthwise_forward(x4, w3, g.tiling())

    def vjp32(gy):
        g4 = _c(gy).reshape(b, oh, ow, cm)
        dx, dw3, _ = depthwise_backward(x4, w3, g4, g.tiling(), want_dx=need_x, want_dw=need_k)
        return (dx.reshape(x.shape) if need_x else None,
                dw3.reshape(k.shape) if need_k else None)

    return record(y.reshape(out_shape), (tx, tk), vjp32, op)


# -- conv_transpose ----------------------------------------------------------------------
def conv_transpose(inputs: Any, kernel: Any, strides: Any = 1, padding: str = "valid",
                   output_padding: Any = None, data_format: str | None = None,
                   dilation_rate: Any = 1) -> Tensor:
    """Transposed convolution (the input gradient of a convolution), N = 1 or 2.

    Args:
        inputs: ``[batch, width, C]`` or ``[batch, height, width, C]``.
        kernel: ``[kw, F, C]`` or ``[kh, kw, F, C]`` (Keras: output channels, then input).
        strides, padding, data_format, dilation_rate: As :func:`conv`.
        output_padding: ``None``, or an int or a tuple of N ints, each below its stride:
            extra cells at the end of each spatial axis.

    Returns:
        ``[batch, *out_spatial, F]``; sizes and crop as Keras 3 on JAX
        (:func:`tinynet.ops.arrays.windows.transpose_axis`): "same" without
        ``output_padding`` gives ``in * stride``, "valid" ``in * stride + max(k - stride, 0)``
        with ``k`` the dilated kernel.

    VJP: as ``Conv2DTranspose``'s backward (the input gradient is the convolution of
    ``g``, the kernel gradient that convolution's kernel gradient).
    """
    from tinynet.ops.arrays.windows import transpose_axis

    op = "conv_transpose"
    x, tx, k, tk, n, s, d, pad = _kernel_args(op, inputs, kernel, strides, padding,
                                              data_format, dilation_rate)
    ops_ = (None,) * n if output_padding is None else _check_ints(
        op, "output_padding", output_padding, n, minimum=0)
    if output_padding is not None and any(p >= st for p, st in zip(ops_, s)):
        raise OpError(f"{op}: output_padding must be less than the strides, got "
                      f"output_padding={output_padding!r} and strides={strides!r}")
    shapes = f"inputs {x.shape}, kernel {k.shape}"
    c, f = x.shape[-1], k.shape[-2]
    if k.shape[-1] != c:
        raise OpError(f"{op}: kernel has {k.shape[-1]} input channels (its last axis) but "
                      f"inputs have {c} ({shapes})")
    dt, x4, k4 = _float_views(x, k, n)
    s2, d2 = _pair(s, n), _pair(d, n)
    op2 = ops_ if n == 2 else (None, ops_[0])
    axes = [transpose_axis(int(x4.shape[1 + a]), int(k4.shape[a]), s2[a], d2[a], pad, op2[a])
            for a in (0, 1)]
    (oh, pt), (ow, pl) = axes
    if oh < 1 or ow < 1:
        raise OpError(f"{op}: the output would be empty ({shapes})")
    b = x4.shape[0]
    y_shape = (b, oh, ow, f)
    # the equivalent convolution: y [B, OH, OW, F] -> x [B, H, W, C], kernel [KH, KW, F, C]
    g = _Geom((oh, ow), k4.shape[:2], s2, d2, x4.shape[1:3], (pt, pl))
    out_shape = y_shape if n == 2 else (b, ow, f)
    need_x, need_k = _tracked(tx), _tracked(tk)

    if dt == np.float64:
        out = _conv64_dx(x4, k4, g, 1, y_shape)

        def vjp(gy):
            dy = _c(gy, dt).reshape(y_shape)
            dx = _conv64(dy, k4, g, 1).reshape(x.shape) if need_x else None
            dk = _conv64_dk(dy, x4, g, 1, k4.shape).reshape(k.shape) if need_k else None
            return dx, dk

        return record(_c(out, dt).reshape(out_shape), (tx, tk), vjp, op)

    from tinynet.ops.arrays.conv2d import conv2d_backward, conv2d_forward, conv2d_input_grad

    w2 = k4.reshape(-1, c)
    tiling = g.tiling()
    z = conv2d_input_grad(x4.reshape(-1, c), w2, tiling, y_shape)

    def vjp32(gy):
        dz4 = _c(gy).reshape(y_shape)
        dx = conv2d_forward(dz4, w2, tiling).reshape(x.shape) if need_x else None
        dk = None
        if need_k:
            dw2 = conv2d_backward(dz4, w2, x4.reshape(-1, c), tiling, want_dx=False)[1]
            dk = dw2.reshape(k.shape)
        return dx, dk

    return record(z.reshape(out_shape), (tx, tk), vjp32, op)


# -- pooling -----------------------------------------------------------------------------
def _pool_args(op: str, inputs: Any, pool_size: Any, strides: Any, padding: str,
               data_format: Any) -> tuple:
    """The checked pooling arguments and the 2-D view: ``(x, tracked, x4, pool, strides,
    padding, geometry, out_shape)``. A 1-D pool runs on ``[B, W, 1, C]`` with ``(p, 1)``
    windows, as ``MaxPooling1D``/``AveragePooling1D``."""
    _check_format(op, data_format)
    x, tx, n = _inputs(op, inputs)
    p = _check_ints(op, "pool_size", pool_size, n)
    s = p if strides is None else _check_ints(op, "strides", strides, n)
    pad = _check_padding(op, padding)
    dt = float_of(x)
    x4 = _c(as_float(x).astype(dt, copy=False), dt)
    if n == 1:
        x4, p, s = x4[:, :, None, :], (p[0], 1), (s[0], 1)
    g = _window_geom(op, x4.shape, p, s, (1, 1), pad, f"pool_size {pool_size!r}",
                     f"inputs {x.shape}")
    out_shape = ((x4.shape[0], *g.out, x4.shape[3]) if n == 2
                 else (x4.shape[0], g.out[0], x4.shape[3]))
    return x, tx, x4, p, s, pad, g, out_shape


def _valid_taps(g: _Geom) -> np.ndarray:
    """``[OH, OW, KH * KW]``: whether each window tap is inside the input."""
    rows = [np.arange(g.out[a])[:, None] * g.s[a] + np.arange(g.k[a])[None, :] - g.before[a]
            for a in (0, 1)]
    ok = [(r >= 0) & (r < g.size[a]) for a, r in enumerate(rows)]
    return (ok[0][:, None, :, None] & ok[1][None, :, None, :]).reshape(*g.out, -1)


def max_pool(inputs: Any, pool_size: Any, strides: Any = None, padding: str = "valid",
             data_format: str | None = None) -> Tensor:
    """Max pooling over windows of ``pool_size`` (1-D or 2-D, from ``inputs``' rank).

    Args:
        inputs: ``[batch, width, C]`` or ``[batch, height, width, C]``.
        pool_size: Int or a tuple of N ints.
        strides: Int, a tuple of N ints, or ``None`` (``pool_size``).
        padding: ``"valid"`` or ``"same"`` (padded cells never win).
        data_format: ``None`` or ``"channels_last"``.

    VJP: each output's gradient goes to the maximum of its window, the first in row-major
    window order on ties (``MaxPooling2D``'s rule); overlapping windows add up.
    """
    op = "max_pool"
    x, tx, x4, p, s, pad, g, out_shape = _pool_args(op, inputs, pool_size, strides, padding,
                                                    data_format)
    if x4.dtype == np.float64:
        cols = _windows(x4, g, -np.inf)
        b, oh, ow, ph, pw, c = cols.shape
        cols = cols.reshape(b, oh, ow, ph * pw, c)
        idx = np.argmax(cols, axis=3)  # the first maximum (padded cells are -inf)
        valid = _valid_taps(g)
        first = np.argmax(valid, axis=2)  # an all -inf window: its first in-bounds cell
        hit = np.take_along_axis(np.broadcast_to(valid[None, :, :, :, None], cols.shape),
                                 idx[:, :, :, None], axis=3)[:, :, :, 0]
        idx = np.where(hit, idx, first[None, :, :, None])
        out = np.take_along_axis(cols, idx[:, :, :, None], axis=3)[:, :, :, 0]

        def vjp(gy):
            dcols = np.zeros((b, oh, ow, ph * pw, c), dtype=np.float64)
            np.put_along_axis(dcols, idx[:, :, :, None],
                              _c(gy, np.float64).reshape(b, oh, ow, 1, c), axis=3)
            return (_fold(dcols.reshape(b, oh, ow, ph, pw, c), g, x4.shape).reshape(x.shape),)

        return record(_c(out, np.float64).reshape(out_shape), (tx,), vjp, op)

    from tinynet.ops.arrays.pooling import max_pool2d_backward, max_pool2d_forward

    out, argmax = max_pool2d_forward(x4, p, s, pad)

    def vjp32(gy):
        g4 = _c(gy).reshape(argmax.shape)
        return (max_pool2d_backward(g4, argmax, x4.shape, p, s, pad).reshape(x.shape),)

    return record(out.reshape(out_shape), (tx,), vjp32, op)


def average_pool(inputs: Any, pool_size: Any, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None) -> Tensor:
    """Average pooling over windows of ``pool_size`` (1-D or 2-D, from ``inputs``' rank):
    the mean of each window's in-bounds cells ("same" padding divides by the count of cells
    inside the input, as Keras on JAX).

    Args:
        inputs, pool_size, strides, padding, data_format: As :func:`max_pool`.

    VJP: each output's gradient divided by its window's cell count, spread over the window.
    """
    op = "average_pool"
    x, tx, x4, p, s, pad, g, out_shape = _pool_args(op, inputs, pool_size, strides, padding,
                                                    data_format)
    if x4.dtype == np.float64:
        count = _valid_taps(g).sum(axis=2).astype(np.float64)[None, :, :, None]
        cols = _windows(x4, g, 0.0)
        out = cols.sum(axis=(3, 4)) / count

        def vjp(gy):
            share = _c(gy, np.float64).reshape(out.shape) / count
            cols_g = np.broadcast_to(share[:, :, :, None, None, :], cols.shape)
            return (_fold(cols_g, g, x4.shape).reshape(x.shape),)

        return record(_c(out, np.float64).reshape(out_shape), (tx,), vjp, op)

    from tinynet.ops.arrays.pooling import avg_pool2d_backward, avg_pool2d_forward

    out = avg_pool2d_forward(x4, p, s, pad)

    def vjp32(gy):
        g4 = _c(gy).reshape(out.shape)
        return (avg_pool2d_backward(g4, x4.shape, p, s, pad).reshape(x.shape),)

    return record(out.reshape(out_shape), (tx,), vjp32, op)
