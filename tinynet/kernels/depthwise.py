"""Numba kernels of the depthwise 2-D convolution (channels-last, float32).

Each input channel ``c`` is convolved with its own ``depth_multiplier`` kernels; output
channel ``c * M + m`` is input channel ``c`` times kernel ``m``. The ``C * M`` output
channels are padded to ``CP``, a multiple of 16, so every pass works on whole 16-lane
vectors (:mod:`tinynet.kernels.simd`) running over the contiguous channel axis:

- forward: a sample is copied into a zero-padded, *expanded* buffer ``xe[hp, wp, CP]``
  (input channel ``c`` repeated ``M`` times, zeros past ``C * M``), and
  ``y[b, oy, ox, k] = sum over taps (i, j), row-major, of
  xe[oy * sh + i * dh, ox * sw + j * dw, k] * w[i, j, k]``, four output pixels at a
  time with the tap's weight vector held in a register;
- input gradient: the output gradient is placed in a zero buffer ``gp[ghp, gwp, CP]`` at
  ``(T + oy * sh, L + ox * sw)``, and the expanded gradient of input pixel ``(iy, ix)``
  gathers ``gp[T + pt + iy - i * dh, L + pl + ix - j * dw, k] * w[i, j, k]`` over the taps
  in the same order (the terms a scatter would add, plus zeros), then its ``M`` copies of
  each channel are added in order;
- kernel gradient: a task's partial ``part[i, j, k]`` adds, row by row of its samples,
  the row's sum over output columns (even and odd columns in two chains, added at the
  end) of ``xe[...] * g[b, oy, ox, k]``, and the bias gradient's partial the row's sum of
  ``g`` itself, in the same pass; the caller merges partials in task order in float64.

Every sum runs in a fixed order on separate multiplies and adds (no fused multiply-add
LLVM could choose per CPU). Work is split into *tasks* of whole samples, fixed by the
shape; the serial drivers run them in order on one slot, the parallel ones spread them
over ``slots`` (a task's results never depend on its slot), so the bits are the same for
any gate and thread count.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit
from tinynet.kernels.simd import vload, vsplat, vstore

__all__ = ["forward_serial", "forward_parallel", "backward_serial", "backward_parallel"]


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _expand(x, b, pt, pl, mult, xe):
    """Sample ``b`` of ``x`` into ``xe[hp, wp, CP]`` at ``(pt, pl)``, each channel repeated
    ``mult`` times, zeros around it and past ``C * mult``."""
    hp, wp, cp = xe.shape
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    cm = channels * mult
    for r in range(hp):
        row = xe[r].reshape(-1)
        if r < pt or r >= pt + height:
            row[:] = np.float32(0.0)
            continue
        row[:pl * cp] = np.float32(0.0)
        row[(pl + width) * cp:] = np.float32(0.0)
        src = x[b, r - pt].reshape(-1)
        if mult == 1 and cm == cp:
            dst = row[pl * cp:(pl + width) * cp]
            for e in range(width * cp):
                dst[e] = src[e]
            continue
        for px in range(width):
            dst = row[(pl + px) * cp:(pl + px + 1) * cp]
            for c in range(channels):
                v = src[px * channels + c]
                for m in range(mult):
                    dst[c * mult + m] = v
            for k in range(cm, cp):
                dst[k] = np.float32(0.0)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _place(g, b, top, left, sh, sw, gp):
    """Sample ``b`` of the output gradient ``g[B, OH, OW, C * M]`` into the zero buffer
    ``gp[ghp, gwp, CP]``, output pixel ``(oy, ox)`` at ``(top + oy * sh, left + ox * sw)``."""
    oh, ow, cm = g.shape[1], g.shape[2], g.shape[3]
    cp = gp.shape[2]
    dense = sw == 1 and cm == cp  # every row of g fills one contiguous run of gp's row
    if not (dense and sh == 1):
        gp[:] = np.float32(0.0)
    else:
        gp[:top] = np.float32(0.0)
        gp[top + oh:] = np.float32(0.0)
    for oy in range(oh):
        src = g[b, oy].reshape(-1)
        row = gp[top + oy * sh].reshape(-1)
        if dense:
            row[:left * cp] = np.float32(0.0)
            row[(left + ow) * cp:] = np.float32(0.0)
            dst = row[left * cp:(left + ow) * cp]
            for e in range(ow * cp):
                dst[e] = src[e]
            continue
        for ox in range(ow):
            o = (left + ox * sw) * cp
            for k in range(cm):
                row[o + k] = src[ox * cm + k]


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _taps_row(src, r0, c0, ps, toff, wf, bias, use_bias, out, width):
    """``out[px * CP + k]`` for ``px < width``: the sum over taps ``t``, in order, of
    ``src[r0, c0 + px * ps, k]`` shifted by ``toff[t]`` elements (``toff`` is tap
    ``(i, j)``'s offset, row-major) times ``wf[t, k]``, a product added to the running
    sum tap by tap starting from zero, then ``bias[k]`` added if ``use_bias``. Four pixels
    at a time share each loaded weight vector."""
    cp = src.shape[2]
    sflat = src.reshape(-1)
    wflat = wf.reshape(-1)
    ntaps = toff.shape[0]
    base = (r0 * src.shape[1] + c0) * cp
    pstep = ps * cp
    px = 0
    while px + 4 <= width:
        for c in range(0, cp, 16):
            a0 = vsplat(0.0)
            a1 = vsplat(0.0)
            a2 = vsplat(0.0)
            a3 = vsplat(0.0)
            q0 = base + px * pstep + c
            for t in range(ntaps):
                wv = vload(wflat, t * cp + c)
                q = q0 + toff[t]
                a0 = a0 + vload(sflat, q) * wv
                a1 = a1 + vload(sflat, q + pstep) * wv
                a2 = a2 + vload(sflat, q + 2 * pstep) * wv
                a3 = a3 + vload(sflat, q + 3 * pstep) * wv
            if use_bias:
                bv = vload(bias, c)
                a0 = a0 + bv
                a1 = a1 + bv
                a2 = a2 + bv
                a3 = a3 + bv
            o = px * cp + c
            vstore(out, o, a0)
            vstore(out, o + cp, a1)
            vstore(out, o + 2 * cp, a2)
            vstore(out, o + 3 * cp, a3)
        px += 4
    while px < width:
        for c in range(0, cp, 16):
            a0 = vsplat(0.0)
            q0 = base + px * pstep + c
            for t in range(ntaps):
                a0 = a0 + vload(sflat, q0 + toff[t]) * vload(wflat, t * cp + c)
            if use_bias:
                a0 = a0 + vload(bias, c)
            vstore(out, px * cp + c, a0)
        px += 1


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _offsets(kh, kw, rstep, cstep, width, cp):
    """Element offsets of the taps ``(i, j)``, row-major, in a ``[rows, width, cp]`` buffer
    (``rstep`` rows and ``cstep`` pixels apart; negative for the input gradient's gather)."""
    toff = np.empty(kh * kw, dtype=np.int64)
    for i in range(kh):
        for j in range(kw):
            toff[i * kw + j] = (i * rstep * width + j * cstep) * cp
    return toff


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _forward_slot(x, wf, bias, use_bias, y, tasks, s, slots, pt, pl, sh, sw, dh, dw, xe, rowbuf):
    kh, kw, cp = wf.shape
    cm = y.shape[3]
    mult = cm // x.shape[3]
    oh, ow = y.shape[1], y.shape[2]
    toff = _offsets(kh, kw, dh, dw, xe.shape[1], cp)
    for t in range(s, tasks.shape[0], slots):
        for b in range(tasks[t, 0], tasks[t, 1]):
            _expand(x, b, pt, pl, mult, xe)
            for oy in range(oh):
                yr = y[b, oy].reshape(-1)
                out = yr if cm == cp else rowbuf
                _taps_row(xe, oy * sh, 0, sw, toff, wf, bias, use_bias, out, ow)
                if cm != cp:
                    for ox in range(ow):
                        for k in range(cm):
                            yr[ox * cm + k] = rowbuf[ox * cp + k]


@njit(cache=True, nogil=True, error_model="numpy")
def forward_serial(x, wf, bias, use_bias, y, tasks, pt, pl, sh, sw, dh, dw, xes, rows):
    """``y`` = the depthwise convolution of ``x`` ``[B, H, W, C]`` with ``wf``
    ``[KH, KW, CP]`` (the kernel ``[KH, KW, C * M]`` padded with zero channels), plus
    ``bias[CP]`` if ``use_bias``, the tasks in order on one slot."""
    for s in range(xes.shape[0]):  # one slot; a loop, so no literal slot numbers
        _forward_slot(x, wf, bias, use_bias, y, tasks, s, xes.shape[0], pt, pl, sh, sw, dh,
                      dw, xes[s], rows[s])


@njit(cache=True, parallel=True, error_model="numpy")
def forward_parallel(x, wf, bias, use_bias, y, tasks, pt, pl, sh, sw, dh, dw, xes, rows):
    """:func:`forward_serial` with the tasks spread over ``len(xes)`` slots (same bits)."""
    slots = xes.shape[0]
    for s in prange(slots):
        _forward_slot(x, wf, bias, use_bias, y, tasks, np.int64(s), slots, pt, pl, sh, sw,
                      dh, dw, xes[s], rows[s])


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _dw_row(xe, r0, sw, toff, gr, gstep, ow, prow):
    """Adds to ``prow[t]``, for every tap ``t``, one output row's sum over its columns of
    ``xe[r0, ox * sw, k]`` shifted by ``toff[t]`` elements times ``gr[ox * gstep + k]``:
    even and odd columns in two chains from zero, added at the end. Three taps at a time
    share each loaded gradient vector."""
    cp = xe.shape[2]
    xflat = xe.reshape(-1)
    pflat = prow.reshape(-1)
    ntaps = toff.shape[0]
    base = r0 * xe.shape[1] * cp
    xstep = sw * cp
    for c in range(0, cp, 16):
        t = 0
        while t + 3 <= ntaps:
            o0 = base + c + toff[t]
            o1 = base + c + toff[t + 1]
            o2 = base + c + toff[t + 2]
            a0 = vsplat(0.0)
            a1 = vsplat(0.0)
            a2 = vsplat(0.0)
            b0 = vsplat(0.0)
            b1 = vsplat(0.0)
            b2 = vsplat(0.0)
            ox = 0
            while ox + 2 <= ow:
                ga = vload(gr, ox * gstep + c)
                gb = vload(gr, (ox + 1) * gstep + c)
                qa = ox * xstep
                qb = qa + xstep
                a0 = a0 + vload(xflat, o0 + qa) * ga
                b0 = b0 + vload(xflat, o0 + qb) * gb
                a1 = a1 + vload(xflat, o1 + qa) * ga
                b1 = b1 + vload(xflat, o1 + qb) * gb
                a2 = a2 + vload(xflat, o2 + qa) * ga
                b2 = b2 + vload(xflat, o2 + qb) * gb
                ox += 2
            if ox < ow:
                ga = vload(gr, ox * gstep + c)
                qa = ox * xstep
                a0 = a0 + vload(xflat, o0 + qa) * ga
                a1 = a1 + vload(xflat, o1 + qa) * ga
                a2 = a2 + vload(xflat, o2 + qa) * ga
            p = t * cp + c
            vstore(pflat, p, vload(pflat, p) + (a0 + b0))
            vstore(pflat, p + cp, vload(pflat, p + cp) + (a1 + b1))
            vstore(pflat, p + 2 * cp, vload(pflat, p + 2 * cp) + (a2 + b2))
            t += 3
        while t < ntaps:
            o0 = base + c + toff[t]
            a0 = vsplat(0.0)
            b0 = vsplat(0.0)
            ox = 0
            while ox + 2 <= ow:
                qa = ox * xstep
                a0 = a0 + vload(xflat, o0 + qa) * vload(gr, ox * gstep + c)
                b0 = b0 + vload(xflat, o0 + qa + xstep) * vload(gr, (ox + 1) * gstep + c)
                ox += 2
            if ox < ow:
                a0 = a0 + vload(xflat, o0 + ox * xstep) * vload(gr, ox * gstep + c)
            p = t * cp + c
            vstore(pflat, p, vload(pflat, p) + (a0 + b0))
            t += 1


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _db_row(gr, gstep, ow, cp, prow, t):
    """Adds one output row's sum over its columns of ``gr[ox * gstep + k]`` (the bias
    gradient) to ``prow[t]``: even and odd columns in two chains from zero, added at the
    end."""
    pflat = prow.reshape(-1)
    for c in range(0, cp, 16):
        a0 = vsplat(0.0)
        b0 = vsplat(0.0)
        ox = 0
        while ox + 2 <= ow:
            a0 = a0 + vload(gr, ox * gstep + c)
            b0 = b0 + vload(gr, (ox + 1) * gstep + c)
            ox += 2
        if ox < ow:
            a0 = a0 + vload(gr, ox * gstep + c)
        p = t * cp + c
        vstore(pflat, p, vload(pflat, p) + (a0 + b0))


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _backward_slot(x, wf, g, dx, parts, want_dx, want_dw, want_db, tasks, s, slots, pt, pl,
                   sh, sw, dh, dw, top, left, xe, gp, rowbuf):
    kh, kw, cp = wf.shape
    oh, ow, cm = g.shape[1], g.shape[2], g.shape[3]
    height, width, channels = dx.shape[1], dx.shape[2], dx.shape[3]
    mult = cm // channels
    toff = _offsets(kh, kw, -dh, -dw, gp.shape[1], cp)
    xoff = _offsets(kh, kw, dh, dw, xe.shape[1], cp)
    for t in range(s, tasks.shape[0], slots):
        prow = parts[t if want_dw or want_db else 0]
        if want_dw or want_db:
            prow[:] = np.float32(0.0)
        for b in range(tasks[t, 0], tasks[t, 1]):
            if want_dx or cm != cp:
                _place(g, b, top, left, sh, sw, gp)
            if want_dw:
                _expand(x, b, pt, pl, mult, xe)
            if want_dw or want_db:
                for oy in range(oh):
                    if cm == cp:  # g's own rows: whole vectors per pixel
                        gr = g[b, oy].reshape(-1)
                        gstep = cp
                    else:
                        gr = gp[top + oy * sh].reshape(-1)[left * cp:]
                        gstep = sw * cp
                    if want_dw:
                        _dw_row(xe, oy * sh, sw, xoff, gr, gstep, ow, prow)
                    if want_db:
                        _db_row(gr, gstep, ow, cp, prow, kh * kw)
            if want_dx:
                for iy in range(height):
                    dr = dx[b, iy].reshape(-1)
                    out = dr if (mult == 1 and cm == cp) else rowbuf
                    _taps_row(gp, top + pt + iy, left + pl, 1, toff, wf, wf[0, 0], False, out,
                              width)
                    if mult == 1 and cm == cp:
                        continue
                    for ix in range(width):
                        for c in range(channels):
                            q = ix * cp + c * mult
                            total = rowbuf[q]
                            for m in range(1, mult):
                                total += rowbuf[q + m]
                            dr[ix * channels + c] = total


@njit(cache=True, nogil=True, error_model="numpy")
def backward_serial(x, wf, g, dx, parts, want_dx, want_dw, want_db, tasks, pt, pl, sh, sw, dh,
                    dw, top, left, xes, gps, rows):
    """The input gradient ``dx`` (if ``want_dx``) and the per-task partials
    ``parts[task, KH * KW + 1, CP]`` of :func:`forward_serial` for the output gradient ``g``
    ``[B, OH, OW, C * M]``: the kernel gradient's in rows ``0 .. KH * KW - 1`` (if
    ``want_dw``), the bias gradient's in the last row (if ``want_db``); the tasks in order
    on one slot."""
    for s in range(xes.shape[0]):
        _backward_slot(x, wf, g, dx, parts, want_dx, want_dw, want_db, tasks, s, xes.shape[0],
                       pt, pl, sh, sw, dh, dw, top, left, xes[s], gps[s], rows[s])


@njit(cache=True, parallel=True, error_model="numpy")
def backward_parallel(x, wf, g, dx, parts, want_dx, want_dw, want_db, tasks, pt, pl, sh, sw,
                      dh, dw, top, left, xes, gps, rows):
    """:func:`backward_serial` with the tasks spread over ``len(xes)`` slots (same bits)."""
    slots = xes.shape[0]
    for s in prange(slots):
        _backward_slot(x, wf, g, dx, parts, want_dx, want_dw, want_db, tasks, np.int64(s),
                       slots, pt, pl, sh, sw, dh, dw, top, left, xes[s], gps[s], rows[s])
