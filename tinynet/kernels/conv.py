"""im2col / col2im Numba kernels for channels-last 2-D convolution.

``cols`` is the ``[B * OH * OW, KH * KW * C]`` patch matrix: row ``(b, oy, ox)`` holds
the receptive field of that output pixel in ``(i, j, c)`` order, matching a kernel
``[KH, KW, C, F]`` reshaped to ``[KH * KW * C, F]``. Out-of-image taps are zeros.
For dilation 1, the ``KW * C`` values of one kernel row are one contiguous span of the
input, copied (or, in col2im, accumulated) in one run.

im2col is a pure copy (any split gives the same bits); col2im accumulates each sample's
gradient in a fixed order (output pixels, then taps) and splits only over samples, so
the serial and parallel variants are bitwise identical.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit

__all__ = ["im2col_serial", "im2col_parallel", "col2im_serial", "col2im_parallel"]


@njit(cache=True, error_model="numpy")
def _im2col_row(x, b, oy, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols):
    """Fills the ``ow`` patch rows of output row ``(b, oy)``."""
    _, height, width, ch = x.shape
    span = kw * ch
    row0 = (b * oh + oy) * ow
    zero = np.float32(0.0)
    for ox in range(ow):
        dst = cols[row0 + ox]
        ix0 = ox * sw - pl
        inside_w = dw == 1 and ix0 >= 0 and ix0 + kw <= width
        for i in range(kh):
            iy = oy * sh - pt + i * dh
            base = i * span
            if iy < 0 or iy >= height:
                for t in range(span):
                    dst[base + t] = zero
            elif inside_w:
                src = x[b, iy].reshape(-1)
                s0 = ix0 * ch
                for t in range(span):
                    dst[base + t] = src[s0 + t]
            else:
                for j in range(kw):
                    ix = ix0 + j * dw
                    o = base + j * ch
                    if ix < 0 or ix >= width:
                        for c in range(ch):
                            dst[o + c] = zero
                    else:
                        for c in range(ch):
                            dst[o + c] = x[b, iy, ix, c]


@njit(cache=True, error_model="numpy")
def im2col_serial(x, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols):
    """Fills ``cols`` (``[B*OH*OW, KH*KW*C]``) from ``x`` (``[B, H, W, C]``, float32)."""
    nb = x.shape[0]
    for r in range(nb * oh):
        b = r // oh
        _im2col_row(x, b, r - b * oh, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols)


@njit(cache=True, parallel=True, error_model="numpy")
def im2col_parallel(x, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols):
    """Parallel twin of :func:`im2col_serial` (same bits: a pure copy)."""
    nb = x.shape[0]
    for r in prange(nb * oh):
        b = r // oh
        _im2col_row(x, b, r - b * oh, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols)


@njit(cache=True, error_model="numpy")
def _col2im_sample(dcols, b, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, dx):
    """Accumulates sample ``b``'s patch gradients into ``dx[b]`` in a fixed order."""
    _, height, width, ch = dx.shape
    span = kw * ch
    for oy in range(oh):
        for ox in range(ow):
            src = dcols[(b * oh + oy) * ow + ox]
            ix0 = ox * sw - pl
            inside_w = dw == 1 and ix0 >= 0 and ix0 + kw <= width
            for i in range(kh):
                iy = oy * sh - pt + i * dh
                if iy < 0 or iy >= height:
                    continue
                base = i * span
                if inside_w:
                    dst = dx[b, iy].reshape(-1)
                    d0 = ix0 * ch
                    for t in range(span):
                        dst[d0 + t] += src[base + t]
                else:
                    for j in range(kw):
                        ix = ix0 + j * dw
                        if ix < 0 or ix >= width:
                            continue
                        o = base + j * ch
                        for c in range(ch):
                            dx[b, iy, ix, c] += src[o + c]


@njit(cache=True, error_model="numpy")
def col2im_serial(dcols, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, dx):
    """Scatter-adds ``dcols`` (``[B*OH*OW, KH*KW*C]``) into zeroed ``dx`` (``[B, H, W, C]``)."""
    for b in range(dx.shape[0]):
        _col2im_sample(dcols, b, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, dx)


@njit(cache=True, parallel=True, error_model="numpy")
def col2im_parallel(dcols, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, dx):
    """Parallel twin of :func:`col2im_serial`: one sample per task (same bits)."""
    for b in prange(dx.shape[0]):
        _col2im_sample(dcols, b, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, dx)
