"""Numba kernels of the depthwise 2-D convolution (channels-last, float32).

Each input channel ``c`` is convolved with its own ``depth_multiplier`` kernels; output
channel ``c * M + m`` is input channel ``c`` times kernel ``m``. A sample is first copied
into a zero-padded, *expanded* buffer ``xe[hp, wp, C * M]`` (input channel ``c`` repeated
``M`` times), so every pass is a loop over the ``C * M`` output channels, contiguous in
the buffer, the kernel ``w[kh, kw, C * M]`` and the output alike, whatever ``M`` is:

- forward: ``y[b, oy, ox, k] = sum over taps (i, j), in order, of
  xe[oy * sh + i * dh, ox * sw + j * dw, k] * w[i, j, k]``;
- kernel gradient: the task's partial ``part[i, j, k]`` adds ``xe[...] * g[b, oy, ox, k]``
  over its samples and output pixels in order; partials are merged in task order in
  float64 by the caller;
- input gradient: ``g[b, oy, ox, k] * w[i, j, k]`` scattered into the sample's padded,
  expanded gradient in pixel then tap order, whose interior is folded back to ``C``
  channels (the ``M`` copies added in order).

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

__all__ = ["forward_serial", "forward_parallel", "backward_serial", "backward_parallel"]


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _expand(x, b, pt, pl, mult, xe):
    """Sample ``b`` of ``x`` into ``xe`` at ``(pt, pl)``, each channel repeated ``mult``
    times, zeros around it."""
    hp, wp, cm = xe.shape
    height, width, channels = x.shape[1], x.shape[2], x.shape[3]
    inner = width * channels
    for r in range(hp):
        row = xe[r].reshape(-1)
        if r < pt or r >= pt + height:
            row[:] = np.float32(0.0)
            continue
        row[:pl * cm] = np.float32(0.0)
        row[(pl + width) * cm:] = np.float32(0.0)
        src = x[b, r - pt].reshape(-1)
        dst = row[pl * cm:(pl + width) * cm]
        if mult == 1:
            for e in range(inner):
                dst[e] = src[e]
        else:
            for e in range(inner):
                v = src[e]
                for m in range(mult):
                    dst[e * mult + m] = v


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _collapse(dxe, b, pt, pl, mult, dx):
    """The interior of the padded, expanded gradient ``dxe`` into ``dx[b]``, the ``mult``
    copies of each channel added in order."""
    height, width, channels = dx.shape[1], dx.shape[2], dx.shape[3]
    cm = dxe.shape[2]
    inner = width * channels
    for r in range(height):
        src = dxe[pt + r].reshape(-1)[pl * cm:(pl + width) * cm]
        dst = dx[b, r].reshape(-1)
        if mult == 1:
            for e in range(inner):
                dst[e] = src[e]
        else:
            for e in range(inner):
                total = src[e * mult]
                for m in range(1, mult):
                    total += src[e * mult + m]
                dst[e] = total


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _tap(xe, wrow, r0, t, kw, dh, dw, span):
    """Tap ``t`` (row-major over the kernel) of an output row whose taps start at padded
    row ``r0``: the run of ``span`` input floats it reads, and its repeated weights."""
    i = t // kw
    j = t - i * kw
    cm = xe.shape[2]
    xrow = xe[r0 + i * dh].reshape(-1)
    return xrow[j * dw * cm:j * dw * cm + span], wrow[i, j]


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _add_taps(out, a, wa, b, wb, c, wc, count, n):
    """``out[:n]`` plus ``a * wa``, then ``b * wb``, then ``c * wc`` (the first ``count`` of
    them), element by element in that order: one pass over ``out`` for up to three
    taps (the forward's rows and the input gradient's gathered rows)."""
    if count == 3:
        for e in range(n):
            v = out[e] + a[e] * wa[e]
            v += b[e] * wb[e]
            out[e] = v + c[e] * wc[e]
    elif count == 2:
        for e in range(n):
            v = out[e] + a[e] * wa[e]
            out[e] = v + b[e] * wb[e]
    else:
        for e in range(n):
            out[e] += a[e] * wa[e]


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _forward_slot(x, w, wrow, y, tasks, s, slots, pt, pl, sh, sw, dh, dw, xe):
    kh, kw, cm = w.shape
    mult = cm // x.shape[3]
    oh, ow = y.shape[1], y.shape[2]
    span = ow * cm
    for t in range(s, tasks.shape[0], slots):
        for b in range(tasks[t, 0], tasks[t, 1]):
            _expand(x, b, pt, pl, mult, xe)
            for oy in range(oh):
                yr = y[b, oy].reshape(-1)
                yr[:] = np.float32(0.0)
                if sw == 1:  # whole output rows, three taps per pass, in tap order
                    for t0 in range(0, kh * kw, 3):
                        count = min(3, kh * kw - t0)
                        xa, wa = _tap(xe, wrow, oy * sh, t0, kw, dh, dw, span)
                        xb, wb = _tap(xe, wrow, oy * sh, t0 + min(count - 1, 1), kw, dh, dw,
                                      span)
                        xc, wc = _tap(xe, wrow, oy * sh, t0 + count - 1, kw, dh, dw, span)
                        _add_taps(yr, xa, wa, xb, wb, xc, wc, count, span)
                    continue
                for i in range(kh):
                    xrow = xe[oy * sh + i * dh].reshape(-1)
                    for j in range(kw):
                        wr = w[i, j]
                        for ox in range(ow):
                            q = (ox * sw + j * dw) * cm
                            xs = xrow[q:q + cm]
                            ys = yr[ox * cm:(ox + 1) * cm]
                            for k in range(cm):
                                ys[k] += xs[k] * wr[k]


@njit(cache=True, nogil=True, error_model="numpy")
def forward_serial(x, w, wrow, y, tasks, pt, pl, sh, sw, dh, dw, xes):
    """``y`` = the depthwise convolution of ``x`` ``[B, H, W, C]`` with ``w``
    ``[KH, KW, C * M]`` (no bias; ``wrow[i, j]`` is ``w[i, j]`` repeated ``OW`` times),
    the tasks in order on one slot."""
    for s in range(xes.shape[0]):  # one slot; a loop, so no literal slot numbers
        _forward_slot(x, w, wrow, y, tasks, s, xes.shape[0], pt, pl, sh, sw, dh, dw, xes[s])


@njit(cache=True, parallel=True, error_model="numpy")
def forward_parallel(x, w, wrow, y, tasks, pt, pl, sh, sw, dh, dw, xes):
    """:func:`forward_serial` with the tasks spread over ``len(xes)`` slots (same bits)."""
    slots = xes.shape[0]
    for s in prange(slots):
        _forward_slot(x, w, wrow, y, tasks, np.int64(s), slots, pt, pl, sh, sw, dh, dw, xes[s])


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _dw_rows(xe, gr, prow, r0, t0, count, kw, dh, dw, span):
    """Kernel-gradient row partials of taps ``t0 .. t0 + count - 1`` (at most 3) for one
    output row (``gr``), whose taps start at padded row ``r0``."""
    xa, pa = _tap(xe, prow, r0, t0, kw, dh, dw, span)
    if count == 3:
        xb, pb = _tap(xe, prow, r0, t0 + 1, kw, dh, dw, span)
        xc, pc = _tap(xe, prow, r0, t0 + 2, kw, dh, dw, span)
        for n in range(span):
            gv = gr[n]
            pa[n] += xa[n] * gv
            pb[n] += xb[n] * gv
            pc[n] += xc[n] * gv
    elif count == 2:
        xb, pb = _tap(xe, prow, r0, t0 + 1, kw, dh, dw, span)
        for n in range(span):
            gv = gr[n]
            pa[n] += xa[n] * gv
            pb[n] += xb[n] * gv
    else:
        for n in range(span):
            pa[n] += xa[n] * gr[n]


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _dx_row(gpad, wrow, drow, i, j0, count, dw, cm, lead):
    """Input-gradient row ``drow`` (a padded, expanded row) gathers kernel row ``i``'s taps
    ``j0 .. j0 + count - 1`` (at most 3) of one output row, held in ``gpad`` behind
    ``lead`` zero pixels: element ``n`` adds ``g[n - j * dw * cm] * w[i, j]``, ``j`` in
    order, as the scatter of each output element in tap order would."""
    n = drow.shape[0]
    jb, jc = j0 + min(count - 1, 1), j0 + count - 1  # taps past ``count`` repeat (unused)
    ga = gpad[(lead - j0 * dw) * cm:(lead - j0 * dw) * cm + n]
    gb = gpad[(lead - jb * dw) * cm:(lead - jb * dw) * cm + n]
    gc = gpad[(lead - jc * dw) * cm:(lead - jc * dw) * cm + n]
    _add_taps(drow, ga, wrow[i, j0], gb, wrow[i, jb], gc, wrow[i, jc], count, n)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _backward_slot(x, w, wrow, g, dx, parts, want_dx, want_dw, tasks, s, slots, pt, pl, sh,
                   sw, dh, dw, xe, dxe, prow, gpad):
    kh, kw, cm = w.shape
    mult = cm // x.shape[3]
    oh, ow = g.shape[1], g.shape[2]
    span = ow * cm
    lead = (kw - 1) * dw  # zero pixels before an output row in ``gpad``
    gpad[:] = np.float32(0.0)
    for t in range(s, tasks.shape[0], slots):
        part = parts[t if want_dw else 0]
        if want_dw:
            prow[:] = np.float32(0.0)
        for b in range(tasks[t, 0], tasks[t, 1]):
            if want_dw:
                _expand(x, b, pt, pl, mult, xe)
            if want_dx:
                dxe[:] = np.float32(0.0)
            for oy in range(oh):
                gr = g[b, oy].reshape(-1)
                if sw == 1:  # whole rows, up to three taps per pass, in tap order
                    if want_dw:
                        for t0 in range(0, kh * kw, 3):
                            _dw_rows(xe, gr, prow, oy * sh, t0, min(3, kh * kw - t0), kw, dh,
                                     dw, span)
                    if want_dx:
                        gs = gpad[lead * cm:lead * cm + span]
                        for n in range(span):
                            gs[n] = gr[n]
                        for i in range(kh):
                            drow = dxe[oy * sh + i * dh].reshape(-1)
                            for j0 in range(0, kw, 3):
                                _dx_row(gpad, wrow, drow, i, j0, min(3, kw - j0), dw, cm, lead)
                    continue
                for i in range(kh):
                    r = oy * sh + i * dh
                    xrow = xe[r].reshape(-1)
                    drow = dxe[r].reshape(-1)
                    for j in range(kw):
                        wr = w[i, j]
                        ps = prow[i, j]
                        for ox in range(ow):
                            q = (ox * sw + j * dw) * cm
                            o = ox * cm
                            if want_dw:
                                for k in range(cm):
                                    ps[o + k] += xrow[q + k] * gr[o + k]
                            if want_dx:
                                for k in range(cm):
                                    drow[q + k] += gr[o + k] * wr[k]
            if want_dx:
                _collapse(dxe, b, pt, pl, mult, dx)
        if want_dw:  # the task's row partials folded over output columns, in order
            for i in range(kh):
                for j in range(kw):
                    pr = part[i, j]
                    ps = prow[i, j]
                    for k in range(cm):
                        pr[k] = ps[k]
                    for ox in range(1, ow):
                        for k in range(cm):
                            pr[k] += ps[ox * cm + k]


@njit(cache=True, nogil=True, error_model="numpy")
def backward_serial(x, w, wrow, g, dx, parts, want_dx, want_dw, tasks, pt, pl, sh, sw, dh, dw,
                    xes, dxes, prows, gpads):
    """The input gradient ``dx`` (if ``want_dx``) and the per-task kernel-gradient partials
    ``parts[task, KH, KW, C * M]`` (if ``want_dw``) of :func:`forward_serial` for the output
    gradient ``g`` ``[B, OH, OW, C * M]``, the tasks in order on one slot."""
    for s in range(xes.shape[0]):
        _backward_slot(x, w, wrow, g, dx, parts, want_dx, want_dw, tasks, s, xes.shape[0], pt,
                       pl, sh, sw, dh, dw, xes[s], dxes[s], prows[s], gpads[s])


@njit(cache=True, parallel=True, error_model="numpy")
def backward_parallel(x, w, wrow, g, dx, parts, want_dx, want_dw, tasks, pt, pl, sh, sw, dh, dw,
                      xes, dxes, prows, gpads):
    """:func:`backward_serial` with the tasks spread over ``len(xes)`` slots (same bits)."""
    slots = xes.shape[0]
    for s in prange(slots):
        _backward_slot(x, w, wrow, g, dx, parts, want_dx, want_dw, tasks, np.int64(s), slots,
                       pt, pl, sh, sw, dh, dw, xes[s], dxes[s], prows[s], gpads[s])
