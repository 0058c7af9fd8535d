"""Numba kernels of the depthwise 2-D convolution (channels-last, float32).

Each input channel ``c`` is convolved with its own ``depth_multiplier`` kernels; output
channel ``c * M + m`` is input channel ``c`` times kernel ``m``. The ``C * M`` output
channels are padded to ``CP``, a multiple of 16, so every pass works on whole 16-lane
vectors (:mod:`tinynet.kernels.simd`) running over the contiguous channel axis.

No pass makes a padded copy: a tap that falls in the padding is left out of its sum
(it would add a zero product, and adding ``+-0`` to a sum that started at ``+0`` changes
no bit for finite values). Where the channels are already whole vectors (``M == 1`` and
``C`` a multiple of 16) the kernels read ``x`` and the output gradient in place; otherwise
a sample is first widened to ``[rows, cols, CP]`` (channel ``c`` repeated ``M`` times,
zeros past ``C * M``).

- forward: ``y[b, oy, ox, k] = sum over the taps (i, j) in the image, row-major, of
  x[oy * sh + i * dh - pt, ox * sw + j * dw - pl, k] * w[i, j, k]``, a product added to
  the running sum tap by tap from zero, then the bias; four output pixels at a time (then
  two) share each loaded weight vector, pixels at the borders are summed one by one; with
  3-wide kernels at unit steps, on cores with 512-bit registers, runs of eight pixels
  first, each loaded source pixel shared by the up to three taps that read it;
- input gradient: the widened gradient of input pixel ``(iy, ix)`` gathers
  ``g[(iy + pt - i * dh) / sh, (ix + pl - j * dw) / sw, k] * w[i, j, k]`` over the taps
  whose position is a whole output pixel, in the same order, then its ``M`` copies of
  each channel are added in order;
- kernel gradient: a task's partial ``part[i, j, k]`` adds, row by row of its samples,
  the row's sum over the output columns ``ox`` with the tap in the image (even and odd
  ``ox`` in two chains from zero, added at the end) of ``x[...] * g[b, oy, ox, k]``, and
  the bias gradient's partial the row's sum of ``g`` itself
  (:mod:`tinynet.kernels.depthwise_grads`). The backward takes the output gradient's rows
  and the input gradient's rows in one sweep, a block of input rows after the output
  gradient rows they follow, so the rows both read stay in cache; the
  caller merges partials in task order in float64. The row bodies of the input gradient
  (:func:`input_rows`) and of the kernel gradient are kernels of their own, which the
  backward calls through their addresses (:func:`tinynet.kernels.address.call_at`), so
  each is compiled and optimized once, not again inside the backward.

With ``stream`` the forward's output and the input gradient are written with streaming
stores (:func:`tinynet.kernels.simd.vstream`: no read of the destination lines first; the
caller passes it only for whole vectors on 64-byte aligned rows); the values are the same.

Every sum runs in a fixed order on separate multiplies and adds (no fused multiply-add
LLVM could choose per CPU). Work is split into *tasks* of whole samples, fixed by the
shape, and dealt to *slots* (slot ``s`` of ``S`` runs tasks ``s, s + S, ...``, with its own
scratch buffers). The serial kernels run a range of slots (all of them, one, in order);
the parallel variants are the serial kernel called at its address once per slot over
Numba's threads (:mod:`tinynet.kernels.address`), so no second copy of a body is
compiled. A task's results never depend on its slot, so the bits are the same for any
gate and thread count.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels import depthwise_grads as dg
from tinynet.kernels._jit import njit
from tinynet.kernels.address import _address, _key, call_at, run_parallel
from tinynet.kernels.simd import (NARROW_REGISTERS, sfence, vload, vprefetch, vsplat, vstore,
                                  vstream)

__all__ = ["forward_serial", "forward_parallel", "backward_serial", "backward_parallel",
           "input_rows", "addresses"]

# rows of a slot's tap table (``_tap_table``): a row's taps, then one pixel's
_OFF, _WGT, _COL, _ROW, _POFF, _PWGT = 0, 1, 2, 3, 4, 5
# Runs of eight pixels that share each loaded source pixel (:func:`_slide_pixels`) hold
# eleven or more ``f32x16`` values in registers: only where the registers are 512 bits.
_SLIDE: bool = not NARROW_REGISTERS
# The backward computes the input gradient's rows in blocks of this many, each after the
# kernel gradient's share of the same gradient rows: a call per block, not per row.
_DX_ROWS = 8

# The hot paths index flat arrays with offsets: an array view made per row or per pixel
# costs reference-count updates (atomic) and, for ``reshape``, a call into Numba's helper
# library (about a quarter of the forward's time in a profile of views made per row).


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _tap_table(kh, kw):
    """Scratch for :func:`_tap_rows`: six rows of ``kh * kw`` tap entries."""
    return np.empty((6, kh * kw), dtype=np.int64)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _widen(a, b, mult, cp, out):
    """Sample ``b`` of ``a[B, R, S, C]`` into ``out[:R * S * cp]`` as ``[R, S, cp]``: each
    channel repeated ``mult`` times, zeros past ``C * mult``."""
    pixels, channels = a.shape[1] * a.shape[2], a.shape[3]
    cm = channels * mult
    src = a.reshape(-1)
    s0 = b * pixels * channels
    for px in range(pixels):
        o = px * cp
        for c in range(channels):
            v = src[s0 + px * channels + c]
            for m in range(mult):
                out[o + c * mult + m] = v
        for k in range(cm, cp):
            out[o + k] = np.float32(0.0)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _put(a, i, v, stream):
    """Vector ``v`` to ``a[i:i + 16]``: a streaming store when ``stream``, else ordinary."""
    if stream:
        vstream(a, i, v)
    else:
        vstore(a, i, v)


@njit(callee=True, cache=True, nogil=True, inline="always", error_model="numpy")
def _inside_pixels(sflat, wflat, bias, use_bias, dst, d0, dps, tab, n, cp, pstep, pc, ac,
                   px0, px1, step, stream):
    """Pixels ``px0 .. px1 - 1`` of a row of :func:`_tap_rows`, every tap inside, ``step``
    (4 or 2, a constant at each call) at a time sharing each loaded weight vector: each
    pixel's sum over the row's ``n`` taps from zero, then the bias, to ``dst``."""
    for px in range(px0, px1, step):
        for c in range(0, cp, 16):
            a0 = vsplat(0.0)
            a1 = vsplat(0.0)
            a2 = vsplat(0.0)
            a3 = vsplat(0.0)
            q0 = (px * pc + ac) * cp + c
            for t in range(n):
                wv = vload(wflat, tab[_WGT, t] + c)
                e = q0 + tab[_OFF, t]
                a0 = a0 + vload(sflat, e) * wv
                a1 = a1 + vload(sflat, e + pstep) * wv
                if step == 4:
                    a2 = a2 + vload(sflat, e + 2 * pstep) * wv
                    a3 = a3 + vload(sflat, e + 3 * pstep) * wv
            if use_bias:
                bv = vload(bias, c)
                a0 = a0 + bv
                a1 = a1 + bv
                a2 = a2 + bv
                a3 = a3 + bv
            o = d0 + px * dps + c
            _put(dst, o, a0, stream)
            _put(dst, o + dps, a1, stream)
            if step == 4:
                _put(dst, o + 2 * dps, a2, stream)
                _put(dst, o + 3 * dps, a3, stream)


@njit(callee=True, cache=True, nogil=True, inline="always", error_model="numpy")
def _slide_pixels(sflat, wflat, bias, use_bias, dst, d0, dps, tab, n, cp, ac, px0, px1,
                  stream):
    """Pixels ``px0 .. px1 - 1`` (runs of eight) of a row of :func:`_tap_rows` whose taps
    are kernel rows of three adjacent source columns (``kw == 3``, ``pc == ec == 1``),
    every tap inside. A kernel row's ten source pixels are loaded once each and feed the
    up to three pixels of the run that read them: source ``k`` (``k = 0 .. 9``, left to
    right) is tap 0 of pixel ``k``, tap 1 of pixel ``k - 1`` and tap 2 of pixel
    ``k - 2``, so each pixel still takes its taps in order, each product added to its
    running sum from zero; then the bias, as :func:`_inside_pixels`. The last kernel
    row asks for the lines of the sources that the run after next reads first."""
    for px in range(px0, px1, 8):
        for c in range(0, cp, 16):
            b0 = vsplat(0.0)
            b1 = vsplat(0.0)
            b2 = vsplat(0.0)
            b3 = vsplat(0.0)
            b4 = vsplat(0.0)
            b5 = vsplat(0.0)
            b6 = vsplat(0.0)
            b7 = vsplat(0.0)
            q0 = (px + ac) * cp + c
            for t in range(0, n, 3):
                w0 = vload(wflat, tab[_WGT, t] + c)
                w1 = vload(wflat, tab[_WGT, t + 1] + c)
                w2 = vload(wflat, tab[_WGT, t + 2] + c)
                e = q0 + tab[_OFF, t]
                if t == n - 3 and e + 26 * cp <= sflat.shape[0]:
                    for k in range(18, 26):
                        vprefetch(sflat, e + k * cp)
                v = vload(sflat, e)
                b0 = b0 + v * w0
                v = vload(sflat, e + cp)
                b1 = b1 + v * w0
                b0 = b0 + v * w1
                v = vload(sflat, e + 2 * cp)
                b2 = b2 + v * w0
                b1 = b1 + v * w1
                b0 = b0 + v * w2
                v = vload(sflat, e + 3 * cp)
                b3 = b3 + v * w0
                b2 = b2 + v * w1
                b1 = b1 + v * w2
                v = vload(sflat, e + 4 * cp)
                b4 = b4 + v * w0
                b3 = b3 + v * w1
                b2 = b2 + v * w2
                v = vload(sflat, e + 5 * cp)
                b5 = b5 + v * w0
                b4 = b4 + v * w1
                b3 = b3 + v * w2
                v = vload(sflat, e + 6 * cp)
                b6 = b6 + v * w0
                b5 = b5 + v * w1
                b4 = b4 + v * w2
                v = vload(sflat, e + 7 * cp)
                b7 = b7 + v * w0
                b6 = b6 + v * w1
                b5 = b5 + v * w2
                v = vload(sflat, e + 8 * cp)
                b7 = b7 + v * w1
                b6 = b6 + v * w2
                v = vload(sflat, e + 9 * cp)
                b7 = b7 + v * w2
            if use_bias:
                bv = vload(bias, c)
                b0 = b0 + bv
                b1 = b1 + bv
                b2 = b2 + bv
                b3 = b3 + bv
                b4 = b4 + bv
                b5 = b5 + bv
                b6 = b6 + bv
                b7 = b7 + bv
            o = d0 + px * dps + c
            _put(dst, o, b0, stream)
            _put(dst, o + dps, b1, stream)
            _put(dst, o + 2 * dps, b2, stream)
            _put(dst, o + 3 * dps, b3, stream)
            _put(dst, o + 4 * dps, b4, stream)
            _put(dst, o + 5 * dps, b5, stream)
            _put(dst, o + 6 * dps, b6, stream)
            _put(dst, o + 7 * dps, b7, stream)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _tap_rows(sflat, soff, rows, cols, ar0, arstep, er, dr, pc, ac, ec, dc, kh, kw, wflat,
              bias, use_bias, out, o0, ostep, nrows, count, tab, fold, rowbuf, channels, mult,
              ps, ones, stream):
    """``nrows`` rows of ``count`` output pixels: pixel ``px`` of row ``q`` is the sum over
    the taps ``(i, j)``, row-major, whose source pixel exists, of that pixel times the
    tap's weights ``wflat[(i * kw + j) * CP + k]`` (each product added to the running sum
    from zero), then ``bias[k]`` if ``use_bias``. The source is the ``[rows, cols, CP]``
    image at ``sflat[soff:]``; tap ``(i, j)`` of pixel ``px`` of row ``q`` reads row
    ``(ar0 + q * arstep + i * er) / dr`` and column ``(px * pc + ac + j * ec) / dc``,
    where the divisions are exact and the results inside the image.

    The row goes to ``out[o0 + q * ostep + px * ps + k]`` (``k < CP``), or, with ``fold``,
    is made in ``rowbuf`` and ``out[o0 + q * ostep + px * ps + c]`` (``c < channels``) gets
    the sum, in order, of the ``mult`` copies ``rowbuf[px * CP + c * mult + m]``; with
    ``ones``, ``out[o0 + q * ostep + px * ps + channels]`` is 1. Pixels whose every tap column
    is inside run eight at a time where the taps allow (:func:`_slide_pixels`, sharing
    each loaded source pixel), then four (``dc == 1``), sharing each loaded weight
    vector, then two; the others one by one. ``stream`` writes ``out`` with streaming
    stores (ignored with ``fold`` or ``ones``)."""
    cp = bias.shape[0]
    pstep = pc * cp
    stream = stream and not fold and not ones  # whole rows of whole vectors only
    # runs of eight sharing source pixels: the forward's rows of three adjacent columns per
    # kernel row (the input gradient's, walking its source right to left, measured slower)
    slide = _SLIDE and kw == 3 and pc == 1 and ec == 1
    for q in range(nrows):
        ar = ar0 + q * arstep
        n = 0
        for i in range(kh):
            num = ar + i * er
            if num < 0 or num % dr != 0 or num // dr >= rows:
                continue
            for j in range(kw):
                tab[_OFF, n] = soff + ((num // dr) * cols + j * ec) * cp
                tab[_WGT, n] = (i * kw + j) * cp
                tab[_COL, n] = j
                tab[_ROW, n] = soff + (num // dr) * cols * cp
                n += 1
        lo, hi8, hi, hi2 = 0, 0, 0, 0
        if dc == 1:  # every tap column inside: px * pc + ac + j * ec in [0, cols)
            first, last = min(0, (kw - 1) * ec), max(0, (kw - 1) * ec)
            lo = min(max(-((ac + first) // pc), 0), count)
            inside = min(max((cols - 1 - ac - last) // pc + 1, lo), count)
            hi8 = lo
            if slide:
                hi8 = lo + (inside - lo) // 8 * 8
            hi = hi8 + (inside - hi8) // 4 * 4
            hi2 = hi8 + (inside - hi8) // 2 * 2
        dst = rowbuf if fold else out
        d0 = 0 if fold else o0 + q * ostep
        dps = cp if fold else ps  # the pixel stride in dst
        if slide:
            _slide_pixels(sflat, wflat, bias, use_bias, dst, d0, dps, tab, n, cp, ac, lo, hi8,
                          stream)
        _inside_pixels(sflat, wflat, bias, use_bias, dst, d0, dps, tab, n, cp, pstep, pc, ac,
                       hi8, hi, 4, stream)
        _inside_pixels(sflat, wflat, bias, use_bias, dst, d0, dps, tab, n, cp, pstep, pc, ac,
                       hi, hi2, 2, stream)
        for px in range(count):  # the rest one by one, with the taps that exist
            if lo <= px < hi2:
                continue
            m = 0
            for t in range(n):
                col = px * pc + ac + tab[_COL, t] * ec
                if col < 0 or col % dc != 0 or col // dc >= cols:
                    continue
                tab[_POFF, m] = tab[_ROW, t] + (col // dc) * cp
                tab[_PWGT, m] = tab[_WGT, t]
                m += 1
            for c in range(0, cp - 16, 32):  # two vectors' sums side by side
                a0 = vsplat(0.0)
                a1 = vsplat(0.0)
                for t in range(m):
                    e, f = tab[_POFF, t] + c, tab[_PWGT, t] + c
                    a0 = a0 + vload(sflat, e) * vload(wflat, f)
                    a1 = a1 + vload(sflat, e + 16) * vload(wflat, f + 16)
                if use_bias:
                    a0 = a0 + vload(bias, c)
                    a1 = a1 + vload(bias, c + 16)
                _put(dst, d0 + px * dps + c, a0, stream)
                _put(dst, d0 + px * dps + c + 16, a1, stream)
            if cp % 32:  # the last vector alone
                c = cp - 16
                a0 = vsplat(0.0)
                for t in range(m):
                    a0 = a0 + vload(sflat, tab[_POFF, t] + c) * vload(wflat, tab[_PWGT, t] + c)
                if use_bias:
                    a0 = a0 + vload(bias, c)
                _put(dst, d0 + px * dps + c, a0, stream)
        f0 = o0 + q * ostep
        if fold:
            for px in range(count):
                for c in range(channels):
                    e = px * cp + c * mult
                    total = rowbuf[e]
                    for m in range(1, mult):
                        total += rowbuf[e + m]
                    out[f0 + px * ps + c] = total
        if ones:
            for px in range(count):
                out[f0 + px * ps + channels] = np.float32(1.0)


@njit(cache=True, nogil=True, error_model="numpy")
def forward_serial(x, wf, bias, use_bias, ones, y, tasks, pt, pl, sh, sw, dh, dw, xes, rows,
                   stream, s0, s1):
    """``y`` = the depthwise convolution of ``x`` ``[B, H, W, C]`` with ``wf``
    ``[KH, KW, CP]`` (the kernel ``[KH, KW, C * M]`` padded with zero channels), plus
    ``bias[CP]`` if ``use_bias``, for the tasks of slots ``s0 .. s1 - 1`` of ``len(xes)``
    (slot ``s`` runs tasks ``s, s + len(xes), ...`` in order; ``0, len(xes)`` runs them
    all). With ``ones``, ``y`` is ``[B, OH, OW, C * M + 1]`` and its last channel is 1 (a
    GEMM's bias input, written in the same sweep); else ``[B, OH, OW, C * M]``.
    ``xes[slot]`` is a ``[H, W, CP]`` buffer for the widened sample (unused when
    ``M == 1`` and ``C == CP``), ``rows[slot]`` one output row of ``CP`` channels.
    ``stream``: write ``y`` with streaming stores (``C * M == CP``, no ``ones``, ``y``
    64-byte aligned). The slot loop is written here, not in a helper: Numba would optimize
    a helper's code again in this kernel."""
    slots = xes.shape[0]
    kh, kw, cp = wf.shape
    height, width = x.shape[1], x.shape[2]
    oh, ow, ps = y.shape[1], y.shape[2], y.shape[3]
    cm = ps - 1 if ones else ps
    mult = cm // x.shape[3]
    direct = mult == 1 and cm == cp  # x's rows are whole vectors already
    wflat = wf.reshape(-1)
    yflat = y.reshape(-1)
    tab = _tap_table(kh, kw)
    for s in range(s0, s1):
        xeflat = xes[s].reshape(-1)
        sflat = x.reshape(-1) if direct else xeflat
        rowbuf = rows[s]
        for t in range(s, tasks.shape[0], slots):
            for b in range(tasks[t, 0], tasks[t, 1]):
                if not direct:
                    _widen(x, b, mult, cp, xeflat)
                _tap_rows(sflat, b * height * width * cp if direct else 0, height, width, -pt,
                          sh, dh, 1, sw, -pl, dw, 1, kh, kw, wflat, bias, use_bias, yflat,
                          b * oh * ow * ps, ow * ps, oh, ow, tab, cm != cp, rowbuf, cm, 1, ps,
                          ones, stream)
        if stream:
            sfence()


def forward_parallel(x, wf, bias, use_bias, ones, y, tasks, pt, pl, sh, sw, dh, dw, xes, rows,
                     stream):
    """:func:`forward_serial` for every slot, the slots over Numba's threads: the serial
    kernel called through its address (:func:`tinynet.kernels.address.run_parallel`), so
    no parallel copy of its body is compiled; the same bits."""
    run_parallel(forward_serial, xes.shape[0], x, wf, bias, use_bias, ones, y, tasks, pt, pl,
                 sh, sw, dh, dw, xes, rows, stream)


@njit(cache=True, nogil=True, error_model="numpy")
def input_rows(wf, g, dx, ges, rows, tab, slot, b, r0, r1, pt, pl, sh, sw, dh, dw, stream):
    """Rows ``r0 .. r1 - 1`` of sample ``b``'s input gradient ``dx`` ``[B, H, W, C]`` of
    :func:`forward_serial` for the output gradient ``g`` ``[B, OH, OW, C * M]``, read from
    ``g`` itself or, where ``C * M != CP``, from ``ges[slot]``, where the caller has widened
    sample ``b``'s gradient to ``[OH, OW, CP]``; ``rows[slot]`` holds one row of ``CP``
    channels, ``tab`` is :func:`_tap_table`'s scratch. ``stream``: write ``dx`` with
    streaming stores (``M == 1``, ``C == CP``, ``dx`` 64-byte aligned; the caller fences).
    Its own compiled kernel, called by :func:`backward_serial` through its address
    (:func:`tinynet.kernels.address.call_at`): linked into the backward instead, its
    code would be optimized again there, and the backward would compile in over 10 s."""
    kh, kw, cp = wf.shape
    oh, ow, cm = g.shape[1], g.shape[2], g.shape[3]
    height, width, channels = dx.shape[1], dx.shape[2], dx.shape[3]
    mult = cm // channels
    whole = mult == 1 and cm == cp  # dx's rows are whole vectors already
    wflat = wf.reshape(-1)
    gflat = g.reshape(-1) if cm == cp else ges[slot].reshape(-1)
    goff = b * oh * ow * cp if cm == cp else 0
    dxflat = dx.reshape(-1)
    nobias = wflat[:cp]  # the gather's bias argument (unused; its size is CP)
    _tap_rows(gflat, goff, oh, ow, r0 + pt, 1, -dh, sh, 1, pl, -dw, sw, kh, kw, wflat, nobias,
              False, dxflat, (b * height + r0) * width * channels, width * channels, r1 - r0,
              width, tab, not whole, rows[slot], channels, mult, channels, False, stream)


_TAB = np.empty((6, 1), dtype=np.int64)  # stand-ins of the types of _tap_table's scratch
_FLAT = np.empty(1, dtype=np.float32)  # and of a flat float32 array
# stand-ins of the kernel-gradient row kernels' arguments (their types never change)
_ROWS3_ARGS = (_FLAT, 0, 0, 0, 0, 0, 0, _FLAT, 0, 0, _FLAT, 0, 0, False)
_ROW_ARGS = (_FLAT, 0, 0, 0, 0, 0, 0, 0, _FLAT, 0, 0, _FLAT, 0)


def addresses(wf, g, dx, ges, rows, stream, want_dx, want_dw):
    """``(dx_at, rows3_at, row_at)`` for :func:`backward_serial`: the addresses of
    :func:`input_rows` compiled for these operands' types (if ``want_dx``, else 0) and of
    :mod:`~tinynet.kernels.depthwise_grads`' ``kernel_rows3`` and ``kernel_row`` (if
    ``want_dw``, else 0), each compiled or loaded from the cache on first use. Looked up
    in :mod:`~tinynet.kernels.address`'s table by the arrays' types only: the other
    arguments' types never change."""
    dx_at = 0
    if want_dx:
        dx_at = _address(input_rows, (_key(wf), _key(g), _key(dx), _key(ges), _key(rows)),
                         (wf, g, dx, ges, rows, _TAB, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, stream))
    if not want_dw:
        return dx_at, 0, 0
    return (dx_at, _address(dg.kernel_rows3, (), _ROWS3_ARGS),
            _address(dg.kernel_row, (), _ROW_ARGS))


@njit(cache=True, nogil=True, error_model="numpy")
def backward_serial(x, wf, g, dx, parts, want_dx, want_dw, want_db, tasks, pt, pl, sh, sw, dh,
                    dw, xes, ges, rows, stream, dx_at, rows3_at, row_at, s0, s1):
    """The input gradient ``dx`` (if ``want_dx``) and the per-task partials
    ``parts[task, KH * KW + 1, CP]`` of :func:`forward_serial` for the output gradient ``g``
    ``[B, OH, OW, C * M]``: the kernel gradient's in rows ``0 .. KH * KW - 1`` (if
    ``want_dw``), the bias gradient's in the last row (if ``want_db``); for the tasks of
    slots ``s0 .. s1 - 1`` of ``len(xes)``, as :func:`forward_serial`. ``xes[slot]``
    (``[H, W, CP]``) and ``ges[slot]`` (``[OH, OW, CP]``) hold the widened sample and
    output gradient where the channels are not whole vectors. ``stream``: write ``dx``
    with streaming stores (``M == 1``, ``C == CP``, ``dx`` 64-byte aligned). The rows are
    computed by the kernels at ``dx_at``, ``rows3_at`` and ``row_at`` (:func:`addresses`):
    the input rows in blocks of :data:`_DX_ROWS`, each block after the gradient rows'
    share of the partials, so the rows both read stay in cache. The slot loop is written
    here, as in :func:`forward_serial`."""
    slots = xes.shape[0]
    kh, kw, cp = wf.shape
    oh, ow, cm = g.shape[1], g.shape[2], g.shape[3]
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    mult = cm // channels
    whole = mult == 1 and cm == cp  # x's rows are whole vectors already
    pflat = parts.reshape(-1)
    prows = (kh * kw + 1) * cp
    tab = _tap_table(kh, kw)
    one = np.int64(1)  # not a literal: _widen compiles once, for this call and the other
    # three kernel rows at a time (kernel_rows3): 3-wide kernels, unit column steps, at most
    # one column of padding at each end
    three = kw == 3 and sw == 1 and dw == 1 and 0 <= pl <= 1 and ow <= width + pl - 1
    for s in range(s0, s1):
        xeflat = xes[s].reshape(-1)
        geflat = ges[s].reshape(-1)
        xflat = x.reshape(-1) if whole or not want_dw else xeflat
        gflat = g.reshape(-1) if cm == cp else geflat
        for t in range(s, tasks.shape[0], slots):
            p0 = t * prows if want_dw or want_db else 0
            if want_dw or want_db:
                for e in range(prows):
                    pflat[p0 + e] = np.float32(0.0)
            for b in range(tasks[t, 0], tasks[t, 1]):
                goff = b * oh * ow * cp if cm == cp else 0
                if cm != cp:
                    _widen(g, b, one, cp, geflat)
                xoff = b * height * width * cp if whole else 0
                if want_dw and not whole:
                    _widen(x, b, mult, cp, xeflat)
                for r in range(max(oh, height)):  # one sweep: gradient rows, input rows
                    if (want_dw or want_db) and r < oh:
                        grow = goff + r * ow * cp
                        db = want_db  # the bias gradient's row still to add
                        i = 0
                        while want_dw and i < kh:
                            xr = r * sh + i * dh - pt
                            if three and i + 3 <= kh and xr >= 0 and xr + 2 * dh < height:
                                call_at(rows3_at, (xflat, xoff + xr * width * cp,
                                                   xoff + (xr + dh) * width * cp,
                                                   xoff + (xr + 2 * dh) * width * cp, width, cp, pl,
                                                   gflat, grow, ow, pflat, p0 + i * kw * cp,
                                                   p0 + kh * kw * cp, db))
                                db = False
                                i += 3
                                continue
                            if 0 <= xr < height:
                                call_at(row_at, (xflat, xoff + xr * width * cp, width, cp, sw, dw,
                                                 pl, kw, gflat, grow, ow, pflat, p0 + i * kw * cp))
                            i += 1
                        if db:
                            dg.bias_row(gflat, grow, ow, cp, pflat, p0 + kh * kw * cp)
                    if want_dx and r < height and (r % _DX_ROWS == _DX_ROWS - 1
                                                   or r == height - 1):
                        call_at(dx_at, (wf, g, dx, ges, rows, tab, s, b, r - r % _DX_ROWS,
                                        r + 1, pt, pl, sh, sw, dh, dw, stream))
        if stream:
            sfence()


def backward_parallel(x, wf, g, dx, parts, want_dx, want_dw, want_db, tasks, pt, pl, sh, sw,
                      dh, dw, xes, ges, rows, stream, dx_at, rows3_at, row_at):
    """:func:`backward_serial` for every slot, the slots over Numba's threads (through
    the serial kernel's address, as :func:`forward_parallel`; the same bits)."""
    run_parallel(backward_serial, xes.shape[0], x, wf, g, dx, parts, want_dx, want_dw,
                 want_db, tasks, pt, pl, sh, sw, dh, dw, xes, ges, rows, stream, dx_at,
                 rows3_at, row_at)
