"""The kernel gradient's rows of the depthwise convolution (:mod:`tinynet.kernels.depthwise`).

For one output-gradient row, each tap's share of the kernel gradient: the sum over the
output columns whose tap lies inside the image of the input vector times the gradient
vector, even and odd columns in two chains from zero, added at the end
(:func:`kernel_row`); for 3-wide kernels with unit column steps, three kernel rows' nine
taps and the bias gradient's row in one pass over the gradient row (:func:`kernel_rows3`:
each gradient vector loaded once for all of them, each input vector once per two output
columns; the same chains, so the same bits); the bias gradient's row alone
(:func:`bias_row`). :func:`kernel_row` and :func:`kernel_rows3` are kernels of their own,
which :func:`tinynet.kernels.depthwise.backward_serial` calls through their addresses
(:func:`tinynet.kernels.address.call_at`): linked into it, their code would be optimized
again at each level of the backward, which then took over 10 s to compile.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.simd import vload, vsplat, vstore

__all__ = ["kernel_row", "kernel_rows3", "bias_row"]


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _chain(xflat, xq, xstep, gflat, gq, cp, lo, hi, a, b):
    """``(a, b)`` with ``xflat[xq + ox * xstep] * gflat[gq + ox * cp]`` added for
    ``lo <= ox < hi`` in order, even ``ox`` to ``a``, odd ``ox`` to ``b``."""
    for ox in range(lo, hi):
        p = vload(xflat, xq + ox * xstep) * vload(gflat, gq + ox * cp)
        if ox % 2 == 0:
            a = a + p
        else:
            b = b + p
    return a, b


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _span(j, dw, pl, sw, cols, ow):
    """The output columns ``[lo, hi)`` whose tap column ``j`` lies inside the image."""
    lo = min(max(-((j * dw - pl) // sw), 0), ow)
    return lo, max(min((cols - 1 + pl - j * dw) // sw + 1, ow), lo)


@njit(cache=True, nogil=True, error_model="numpy")
def kernel_row(xflat, xrow, cols, cp, sw, dw, pl, kw, gflat, grow, ow, pflat, prow):
    """Adds to ``pflat[prow + j * CP + k]``, for each tap column ``j``, the sum over the
    output columns ``ox`` whose tap lies inside the image of ``xflat[xrow + (ox * sw + j *
    dw - pl) * CP + k] * gflat[grow + ox * CP + k]``: even and odd ``ox`` in two chains
    from zero, added at the end. Three taps at a time share each loaded gradient vector
    over the columns all three reach."""
    xstep = sw * cp
    for c in range(0, cp, 16):
        gc = grow + c
        j = 0
        while j + 3 <= kw:
            l0, h0 = _span(j, dw, pl, sw, cols, ow)
            l1, h1 = _span(j + 1, dw, pl, sw, cols, ow)
            l2, h2 = _span(j + 2, dw, pl, sw, cols, ow)
            lo = max(l0, l1, l2)
            hi = max(min(h0, h1, h2), lo)
            o0 = xrow + (j * dw - pl) * cp + c
            o1 = o0 + dw * cp
            o2 = o1 + dw * cp
            zero = vsplat(0.0)
            a0, b0 = _chain(xflat, o0, xstep, gflat, gc, cp, l0, min(lo, h0), zero, zero)
            a1, b1 = _chain(xflat, o1, xstep, gflat, gc, cp, l1, min(lo, h1), zero, zero)
            a2, b2 = _chain(xflat, o2, xstep, gflat, gc, cp, l2, min(lo, h2), zero, zero)
            ox = lo
            if ox < hi and ox % 2 == 1:
                gb = vload(gflat, gc + ox * cp)
                q = ox * xstep
                b0 = b0 + vload(xflat, o0 + q) * gb
                b1 = b1 + vload(xflat, o1 + q) * gb
                b2 = b2 + vload(xflat, o2 + q) * gb
                ox += 1
            while ox + 2 <= hi:
                ga = vload(gflat, gc + ox * cp)
                gb = vload(gflat, gc + (ox + 1) * cp)
                qa = ox * xstep
                qb = qa + xstep
                a0 = a0 + vload(xflat, o0 + qa) * ga
                b0 = b0 + vload(xflat, o0 + qb) * gb
                a1 = a1 + vload(xflat, o1 + qa) * ga
                b1 = b1 + vload(xflat, o1 + qb) * gb
                a2 = a2 + vload(xflat, o2 + qa) * ga
                b2 = b2 + vload(xflat, o2 + qb) * gb
                ox += 2
            if ox < hi:
                ga = vload(gflat, gc + ox * cp)
                qa = ox * xstep
                a0 = a0 + vload(xflat, o0 + qa) * ga
                a1 = a1 + vload(xflat, o1 + qa) * ga
                a2 = a2 + vload(xflat, o2 + qa) * ga
            a0, b0 = _chain(xflat, o0, xstep, gflat, gc, cp, max(hi, l0), h0, a0, b0)
            a1, b1 = _chain(xflat, o1, xstep, gflat, gc, cp, max(hi, l1), h1, a1, b1)
            a2, b2 = _chain(xflat, o2, xstep, gflat, gc, cp, max(hi, l2), h2, a2, b2)
            p = prow + j * cp + c
            vstore(pflat, p, vload(pflat, p) + (a0 + b0))
            vstore(pflat, p + cp, vload(pflat, p + cp) + (a1 + b1))
            vstore(pflat, p + 2 * cp, vload(pflat, p + 2 * cp) + (a2 + b2))
            j += 3
        while j < kw:
            l0, h0 = _span(j, dw, pl, sw, cols, ow)
            a0, b0 = _chain(xflat, xrow + (j * dw - pl) * cp + c, xstep, gflat, gc, cp, l0,
                            h0, vsplat(0.0), vsplat(0.0))
            p = prow + j * cp + c
            vstore(pflat, p, vload(pflat, p) + (a0 + b0))
            j += 1


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def bias_row(gflat, grow, ow, cp, pflat, p0):
    """Adds one output row's sum over its columns of ``gflat[grow + ox * CP + k]`` (the
    bias gradient) to ``pflat[p0 + k]``: even and odd columns in two chains from zero,
    added at the end."""
    for c in range(0, cp, 16):
        a0 = vsplat(0.0)
        b0 = vsplat(0.0)
        ox = 0
        while ox + 2 <= ow:
            a0 = a0 + vload(gflat, grow + ox * cp + c)
            b0 = b0 + vload(gflat, grow + (ox + 1) * cp + c)
            ox += 2
        if ox < ow:
            a0 = a0 + vload(gflat, grow + ox * cp + c)
        p = p0 + c
        vstore(pflat, p, vload(pflat, p) + (a0 + b0))


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _gsum(gflat, gq, cp, lo, hi, a, b):
    """``(a, b)`` with ``gflat[gq + ox * cp]`` added for ``lo <= ox < hi`` in order, even
    ``ox`` to ``a``, odd ``ox`` to ``b``."""
    for ox in range(lo, hi):
        if ox % 2 == 0:
            a = a + vload(gflat, gq + ox * cp)
        else:
            b = b + vload(gflat, gq + ox * cp)
    return a, b


@njit(cache=True, nogil=True, error_model="numpy")
def kernel_rows3(xflat, x0, x1, x2, cols, cp, pl, gflat, grow, ow, pflat, prow, pdb, want_db):
    """:func:`kernel_row` for three kernel rows of a 3-wide kernel with unit column steps
    (``sw == dw == 1``), whose image rows start at ``x0``, ``x1`` and ``x2``: tap ``(k, j)``
    adds to ``pflat[prow + (k * 3 + j) * CP + ch]``, and with ``want_db`` the row's bias
    gradient (:func:`bias_row`) goes to ``pflat[pdb + ch]``; the same chains and sums, so
    the same bits. Over the columns all taps reach, each gradient vector is loaded once
    for the nine taps and the bias, each input vector once per two output columns. The
    caller ensures ``0 <= pl <= 1`` and ``ow <= cols + pl - 1`` (Keras's 'same' and
    'valid'), so at most one column lies before and one after that block."""
    # tap column j reaches the output columns [max(pl - j, 0), min(cols + pl - j, ow)); with
    # pl 0 or 1 and ow <= cols + pl - 1, the block [lo, hi) all three reach leaves at most
    # column 0 before it (taps 1, 2) and column hi after it (taps 0, 1)
    lo = min(pl, ow)
    h0 = min(cols + pl, ow)
    h1 = min(cols + pl - 1, ow)
    h2 = min(cols + pl - 2, ow)
    hi = max(h2, lo)
    zero = vsplat(0.0)
    izero = np.int64(0)  # not a literal: _gsum compiles once, for this call and the last
    for c in range(0, cp, 16):
        gc = grow + c
        e0 = x0 - pl * cp + c  # tap column 0 of output column 0, kernel row k at ek
        e1 = x1 - pl * cp + c
        e2 = x2 - pl * cp + c
        a00, a01, a02, a10, a11, a12 = zero, zero, zero, zero, zero, zero
        a20, a21, a22, b00, b01, b02 = zero, zero, zero, zero, zero, zero
        b10, b11, b12, b20, b21, b22 = zero, zero, zero, zero, zero, zero
        if lo == 1:  # column 0, even, before the block: the taps 1 and 2 reach it
            ga = vload(gflat, gc)
            a01 = a01 + vload(xflat, e0 + cp) * ga
            a11 = a11 + vload(xflat, e1 + cp) * ga
            a21 = a21 + vload(xflat, e2 + cp) * ga
            if h2 > 0:
                a02 = a02 + vload(xflat, e0 + 2 * cp) * ga
                a12 = a12 + vload(xflat, e1 + 2 * cp) * ga
                a22 = a22 + vload(xflat, e2 + 2 * cp) * ga
        ad, bd = _gsum(gflat, gc, cp, izero, lo, zero, zero)
        ox = lo
        if ox < hi and ox % 2 == 1:
            gb = vload(gflat, gc + ox * cp)
            q = ox * cp
            b00 = b00 + vload(xflat, e0 + q) * gb
            b01 = b01 + vload(xflat, e0 + q + cp) * gb
            b02 = b02 + vload(xflat, e0 + q + 2 * cp) * gb
            b10 = b10 + vload(xflat, e1 + q) * gb
            b11 = b11 + vload(xflat, e1 + q + cp) * gb
            b12 = b12 + vload(xflat, e1 + q + 2 * cp) * gb
            b20 = b20 + vload(xflat, e2 + q) * gb
            b21 = b21 + vload(xflat, e2 + q + cp) * gb
            b22 = b22 + vload(xflat, e2 + q + 2 * cp) * gb
            bd = bd + gb
            ox += 1
        while ox + 2 <= hi:  # even ox to the a chains, ox + 1 to the b chains
            ga = vload(gflat, gc + ox * cp)
            gb = vload(gflat, gc + (ox + 1) * cp)
            q = ox * cp
            v0 = vload(xflat, e0 + q)
            v1 = vload(xflat, e0 + q + cp)
            v2 = vload(xflat, e0 + q + 2 * cp)
            v3 = vload(xflat, e0 + q + 3 * cp)
            a00 = a00 + v0 * ga
            a01 = a01 + v1 * ga
            a02 = a02 + v2 * ga
            b00 = b00 + v1 * gb
            b01 = b01 + v2 * gb
            b02 = b02 + v3 * gb
            v0 = vload(xflat, e1 + q)
            v1 = vload(xflat, e1 + q + cp)
            v2 = vload(xflat, e1 + q + 2 * cp)
            v3 = vload(xflat, e1 + q + 3 * cp)
            a10 = a10 + v0 * ga
            a11 = a11 + v1 * ga
            a12 = a12 + v2 * ga
            b10 = b10 + v1 * gb
            b11 = b11 + v2 * gb
            b12 = b12 + v3 * gb
            v0 = vload(xflat, e2 + q)
            v1 = vload(xflat, e2 + q + cp)
            v2 = vload(xflat, e2 + q + 2 * cp)
            v3 = vload(xflat, e2 + q + 3 * cp)
            a20 = a20 + v0 * ga
            a21 = a21 + v1 * ga
            a22 = a22 + v2 * ga
            b20 = b20 + v1 * gb
            b21 = b21 + v2 * gb
            b22 = b22 + v3 * gb
            ad = ad + ga
            bd = bd + gb
            ox += 2
        if ox < hi:
            ga = vload(gflat, gc + ox * cp)
            q = ox * cp
            a00 = a00 + vload(xflat, e0 + q) * ga
            a01 = a01 + vload(xflat, e0 + q + cp) * ga
            a02 = a02 + vload(xflat, e0 + q + 2 * cp) * ga
            a10 = a10 + vload(xflat, e1 + q) * ga
            a11 = a11 + vload(xflat, e1 + q + cp) * ga
            a12 = a12 + vload(xflat, e1 + q + 2 * cp) * ga
            a20 = a20 + vload(xflat, e2 + q) * ga
            a21 = a21 + vload(xflat, e2 + q + cp) * ga
            a22 = a22 + vload(xflat, e2 + q + 2 * cp) * ga
            ad = ad + ga
        if hi < h0:  # column hi after the block: the taps 0 and 1 reach it
            q = hi * cp
            gv = vload(gflat, gc + q)
            if hi % 2 == 0:
                a00 = a00 + vload(xflat, e0 + q) * gv
                a10 = a10 + vload(xflat, e1 + q) * gv
                a20 = a20 + vload(xflat, e2 + q) * gv
                if hi < h1:
                    a01 = a01 + vload(xflat, e0 + q + cp) * gv
                    a11 = a11 + vload(xflat, e1 + q + cp) * gv
                    a21 = a21 + vload(xflat, e2 + q + cp) * gv
            else:
                b00 = b00 + vload(xflat, e0 + q) * gv
                b10 = b10 + vload(xflat, e1 + q) * gv
                b20 = b20 + vload(xflat, e2 + q) * gv
                if hi < h1:
                    b01 = b01 + vload(xflat, e0 + q + cp) * gv
                    b11 = b11 + vload(xflat, e1 + q + cp) * gv
                    b21 = b21 + vload(xflat, e2 + q + cp) * gv
        ad, bd = _gsum(gflat, gc, cp, hi, ow, ad, bd)
        p = prow + c
        vstore(pflat, p, vload(pflat, p) + (a00 + b00))
        vstore(pflat, p + cp, vload(pflat, p + cp) + (a01 + b01))
        vstore(pflat, p + 2 * cp, vload(pflat, p + 2 * cp) + (a02 + b02))
        vstore(pflat, p + 3 * cp, vload(pflat, p + 3 * cp) + (a10 + b10))
        vstore(pflat, p + 4 * cp, vload(pflat, p + 4 * cp) + (a11 + b11))
        vstore(pflat, p + 5 * cp, vload(pflat, p + 5 * cp) + (a12 + b12))
        vstore(pflat, p + 6 * cp, vload(pflat, p + 6 * cp) + (a20 + b20))
        vstore(pflat, p + 7 * cp, vload(pflat, p + 7 * cp) + (a21 + b21))
        vstore(pflat, p + 8 * cp, vload(pflat, p + 8 * cp) + (a22 + b22))
        if want_db:
            vstore(pflat, pdb + c, vload(pflat, pdb + c) + (ad + bd))
