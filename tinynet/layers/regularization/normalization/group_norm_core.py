"""The group-normalization core shared by group, instance, batch and layer normalization.

Ported from the seed (``rustyml``'s normalization module). Everything works on the
channels-last buffer ``[batch, positions, channels]``; a group is a contiguous run of
``cpg = channels // num_groups`` channels of each position's channel vector. Batch norm
runs on the ``[1, batch * positions, C]`` view with one group per channel, layer norm on
``[rows, 1, features]`` with one group, instance norm with one group per channel.

**Statistics**, per (sample, group), in one pass of shifted sums: with ``K`` the first
element of the group in that sample, accumulate ``s1 = sum(x - K)`` and
``s2 = sum((x - K)^2)``; then ``mean = K + s1/n`` and ``var = s2/n - (s1/n)^2``. Measuring
from ``K`` keeps both sums on the scale of the spread, so a mean that dwarfs the spread
(``1e6 + small``) does not cancel catastrophically as ``E[x^2] - E[x]^2`` would.

**Fold order**, fixed by the shape alone. Rows (positions) are folded in *tasks*: with
``rpb = rows_per_block(C)``, a sample of ``P >= rpb`` positions is split into blocks of
``rpb`` positions; smaller samples are packed ``rpb // P`` to a chunk. Inside a block,
per-channel float32 lanes accumulate over positions (in spans of ``reps`` positions,
see ``SPAN_ELEMS`` below); the lanes reduce to groups in channel order (the seed's 8-lane
segment sums); block partials merge in block order in float64. The parameter gradients are column folds of the ``[M, C]`` view over the same
tasks, merged in task order. The serial and parallel kernels share these helpers, so a
gate or the thread count decides where work runs, never the bits.

**Passes.** Forward: statistics, then one sweep writing the output (and ``x_normalized``
only when asked: the layers recompute it from ``x`` in the backward, which saves a
full write). Backward: one pass for the per-channel sums of ``g`` and ``g * x_norm``
(which give both the parameter gradients and the per-group sums), one pass writing
``dx``. When whole samples are processed per task, both passes of a sample run back to
back while it is still in cache.

Kernels index contiguous row views (``x[row:row + C]``), never ``x[row + c]``: Numba's
negative-index wraparound on a computed flat index blocks vectorization (4x slower).
"""

from __future__ import annotations

import math
import threading

import numpy as np
from numba import prange

from tinynet import tuning
from tinynet.kernels._jit import njit
from tinynet.kernels.simd import LANES as SIMD_LANES
from tinynet.kernels.simd import (add4, load4, mul4, sfence, splat4, store4, sub4,
                                  vfold8x4, vhighs, vload, vload8x2, vlows, vsplat, vstore,
                                  vstream, zero4)
from tinynet.kernels.streaming import empty_aligned, streams
from tinynet.layers.regularization.normalization.folds import (
    LANES,
    merge_rows_parallel,
    merge_rows_serial,
    merge_rows_to,
    merge_rows_to_parallel,
    rows_per_block,
    segment_dot2,
    segment_dot2_pair,
    segment_sum,
    shifted_segment_sums,
    shifted_sums_pair,
)

__all__ = ["group_norm_forward_core", "group_norm_backward_core", "gn_forward",
           "gn_backward", "Plan"]

# The per-channel passes walk *spans* of ``reps = max(SPAN_ELEMS // C, 1)`` consecutive
# positions (``reps * C`` contiguous floats) against per-channel vectors repeated ``reps``
# times, so the loop set-up a row would cost is paid once per span. Lane accumulators
# are ``reps`` copies of the channel lanes, folded in copy order at the end of a block;
# positions left over after the last whole span go to the first copy.
SPAN_ELEMS = 512


@njit(cache=True, inline="always", error_model="numpy")
def _span_reps(channels):
    return max(SPAN_ELEMS // channels, 1)


@njit(cache=True, inline="always", error_model="numpy")
def _span_count(p0, p1, reps):
    """Spans covering positions ``p0..p1``: the whole spans of ``reps``, then one per
    leftover position."""
    full = (p1 - p0) // reps
    return full + (p1 - p0 - full * reps)


@njit(cache=True, inline="always", error_model="numpy")
def _span(q, base, p0, p1, reps, channels):
    """``(offset, width)`` of span ``q`` of positions ``p0..p1`` of the sample at ``base``:
    ``reps * C`` floats for a whole span, ``C`` for a leftover position."""
    full = (p1 - p0) // reps
    if q < full:
        return base + (p0 + q * reps) * channels, reps * channels
    return base + (p0 + full * reps + q - full) * channels, channels


@njit(cache=True, inline="always", error_model="numpy")
def _copies(vec, channels, reps, fold):
    """The ``reps`` copies of ``C`` entries in ``vec``: ``fold`` adds copies 1, 2, ... into
    copy 0 in that order (lane folding); otherwise copy 0 is written into the others."""
    first = vec[:channels]
    for k in range(1, reps):
        other = vec[k * channels:(k + 1) * channels]
        if fold:
            for c in range(channels):
                first[c] += other[c]
        else:
            for c in range(channels):
                other[c] = first[c]


@njit(cache=True, inline="always", error_model="numpy")
def _repeat(vec, channels, reps):
    """``vec[k * C + c] = vec[c]`` for ``k < reps`` (the first ``C`` entries repeated)."""
    _copies(vec, channels, reps, False)


@njit(cache=True, inline="always", error_model="numpy")
def _fold_copies(lanes, channels, reps):
    """``lanes[:C] = ((copy 0 + copy 1) + copy 2) + ...``: the lane copies folded in order."""
    _copies(lanes, channels, reps, True)


# ``C`` divides 64 (1, 2, 4, 8, 16, 32, 64) or is 128: the passes run on *wide rows* of
# ``max(64, C)`` floats instead of spans (``64 // C`` positions per row, or one 128-channel
# position), each row one or two quads (four ``f32x16`` vectors each) against
# per-channel vectors held in registers for the whole block of positions. Lane copies
# and leftover positions (fewer than a wide row, into copy 0) are as for spans, with
# ``max(32, C) // C`` copies (see :data:`HALF`). The sweep and ``dx`` compute each element
# with the span expression, so only the statistics lanes see the different grouping.
# (Wider channel vectors do not fit in registers. A 128-channel row walked as two
# 64-channel halves, one pass per half, was measured 1.5-2x slower on data not in cache;
# whole two-quad rows read each row once, 1.7-2.4x faster than spans.)
WIDE = 64


# The statistics and gradient sums of channel counts up to 32 keep ``HALF`` lanes, not 64:
# each wide row adds its first half, then its second half, into the same 32 lanes, so
# there are ``32 // C`` lane copies (position ``p`` feeds copy ``p mod (32 // C)``). Half
# the accumulators fit in the registers of cores without AVX-512 (16 of 256 bits), where 64
# lanes of two sums (16 registers) and their channel vectors (8) did not and the sums went
# to the stack on every row. Interleaved on the same 8 and 24.5 MiB at 32 channels, the
# three lane passes took a median 0.93 of their 64-lane time (0.62-1.30 over 36 pairs).
HALF = 32


# Channel counts whose wide rows consist of whole 16-float vectors (the streamed rows).
_STREAM_CHANNELS = (16, 32, 64, 128)


@njit(cache=True, inline="always", error_model="numpy")
def _wide(channels):
    """Whether the wide-row register path applies to ``C`` channels."""
    return WIDE % channels == 0 or channels == 2 * WIDE


@njit(cache=True, inline="always", error_model="numpy")
def _row_floats(channels):
    """Floats per wide row: 64, or 128 for 128 channels."""
    return max(WIDE, channels)


@njit(cache=True, inline="always", error_model="numpy")
def _wide_rows(p0, p1, channels):
    """``(width, copies, rows)``: floats per wide row, positions per row, whole rows in
    positions ``p0..p1``."""
    width = _row_floats(channels)
    copies = width // channels
    return width, copies, (p1 - p0) // copies


@njit(cache=True, inline="always", error_model="numpy")
def _lane_copies(channels):
    """Copies of the channel lanes the wide statistics and gradient sums keep:
    ``max(HALF, C) // C``, one per position of a half row (see :data:`HALF`)."""
    return max(HALF, channels) // channels


@njit(cache=True, inline="always", error_model="numpy")
def _copies_needed(channels, reps):
    """Copies of the channel vectors a pass reads: one per position of a wide row
    (leftover positions read copy 0 only), ``reps`` on the span path."""
    return _row_floats(channels) // channels if _wide(channels) else reps


# What the two lane sums of :func:`_lanes_wide` add per wide row (as ``folds._terms``):
# the shifted statistics ``(x - K, (x - K)^2)``, or the gradient sums ``(g, g * xn)``
# with ``xn`` recomputed as ``(x - mean) * inv_std`` or given.
_STATS, _GRAD_RECOMPUTE, _GRAD_XN = 0, 1, 2


@njit(cache=True, inline="always", error_model="numpy")
def _vec_terms(xa, xb, mode, i, ka, kb):
    """The two terms of the vector at ``i`` (see :func:`_lanes_wide`)."""
    if mode == _STATS:
        t = vload(xa, i) - ka
        return t, t * t
    t = vload(xa, i)
    xn = (vload(xb, i) - ka) * kb if mode == _GRAD_RECOMPUTE else vload(xb, i)
    return t, t * xn


@njit(cache=True, inline="always", error_model="numpy")
def _lane_terms(xa, xb, mode, i, ka, kb):
    """The two terms of the quad at ``i``: :func:`_vec_terms` of its four vectors."""
    t0, u0 = _vec_terms(xa, xb, mode, i, ka[0], kb[0])
    t1, u1 = _vec_terms(xa, xb, mode, i + 16, ka[1], kb[1])
    t2, u2 = _vec_terms(xa, xb, mode, i + 32, ka[2], kb[2])
    t3, u3 = _vec_terms(xa, xb, mode, i + 48, ka[3], kb[3])
    return (t0, t1, t2, t3), (u0, u1, u2, u3)


@njit(cache=True, inline="always", error_model="numpy")
def _lanes_half(xa, xb, mode, start, rows, va, vb, c1, c2):
    """:func:`_lanes_wide` into :data:`HALF` lanes: each row's two halves in turn."""
    ka0 = vload(va, 0)
    ka1 = vload(va, 16)
    kb0 = vload(vb, 0)
    kb1 = vload(vb, 16)
    a0 = vsplat(np.float32(0.0))
    a1 = a0
    b0 = a0
    b1 = a0
    for r in range(rows):
        for h in range(0, WIDE, HALF):
            i = start + r * WIDE + h
            t0, u0 = _vec_terms(xa, xb, mode, i, ka0, kb0)
            t1, u1 = _vec_terms(xa, xb, mode, i + 16, ka1, kb1)
            a0 = a0 + t0
            a1 = a1 + t1
            b0 = b0 + u0
            b1 = b1 + u1
    vstore(c1, 0, a0)
    vstore(c1, 16, a1)
    vstore(c2, 0, b0)
    vstore(c2, 16, b1)


@njit(cache=True, nogil=True, error_model="numpy")
def _lanes_wide(xa, xb, mode, start, rows, width, channels, va, vb, c1, c2):
    """The lanes of two sums over ``rows`` wide rows from ``start`` (written, not added
    to): ``x - K`` and its square (``xa = x``, ``va = K``), or ``g`` and ``g * xn``
    (``xa = g``, ``xb`` = the input or ``xn``, ``va``/``vb`` = mean / inv_std vectors):
    :data:`HALF` lanes for ``C <= 32`` (:func:`_lanes_half`), else ``width``."""
    if channels <= HALF:
        _lanes_half(xa, xb, mode, start, rows, va, vb, c1, c2)
        return
    ka = load4(va, 0)
    kb = load4(vb, 0)
    a = zero4()
    b = zero4()
    if width == WIDE:
        for r in range(rows):
            t, u = _lane_terms(xa, xb, mode, start + r * WIDE, ka, kb)
            a = add4(a, t)
            b = add4(b, u)
    else:  # two quads per row
        ka2 = load4(va, WIDE)
        kb2 = load4(vb, WIDE)
        a2 = zero4()
        b2 = zero4()
        for r in range(rows):
            i = start + r * width
            t, u = _lane_terms(xa, xb, mode, i, ka, kb)
            a = add4(a, t)
            b = add4(b, u)
            t, u = _lane_terms(xa, xb, mode, i + WIDE, ka2, kb2)
            a2 = add4(a2, t)
            b2 = add4(b2, u)
        store4(c1, WIDE, a2)
        store4(c2, WIDE, b2)
    store4(c1, 0, a)
    store4(c2, 0, b)


# The two element-wise passes of :func:`_map_wide`: the forward sweep (``xa = x``,
# ``flag = want_xn``, vectors mean / inv_std / scale / beta) and ``dx`` (``xa = g``,
# ``xb`` = the input or ``xn``, ``flag = recompute``, vectors mean / g / xn / constant
# coefficients, see :func:`_dx_rows`).
_SWEEP, _DX = 0, 1


@njit(cache=True, inline="always", error_model="numpy")
def _put(a, i, v, stream):
    """Vector ``v`` to ``a[i:i + 16]``: a streaming store when ``stream``, else ordinary."""
    if stream:
        vstream(a, i, v)
    else:
        vstore(a, i, v)


@njit(cache=True, inline="always", error_model="numpy")
def _put4(a, i, q, stream):
    """The quad ``q`` (64 floats) to ``a[i:i + 64]`` by :func:`_put`."""
    _put(a, i, q[0], stream)
    _put(a, i + 16, q[1], stream)
    _put(a, i + 32, q[2], stream)
    _put(a, i + 48, q[3], stream)


@njit(cache=True, inline="always", error_model="numpy")
def _map_quad(mode, xa, xb, out, xn, flag, stream, i, q1, q2, q3, q4):
    if mode == _SWEEP:
        d = sub4(load4(xa, i), q1)
        _put4(out, i, add4(mul4(d, q3), q4), stream)
        if flag:
            _put4(xn, i, mul4(d, q2), stream)
    else:
        e = sub4(load4(xb, i), q1) if flag else load4(xb, i)
        _put4(out, i, sub4(mul4(q2, load4(xa, i)), add4(q4, mul4(q3, e))), stream)


@njit(cache=True, nogil=True, error_model="numpy")
def _map_wide(mode, xa, xb, out, xn, flag, stream, start, rows, width, v1, v2, v3, v4):
    """One element-wise pass (``mode``) over ``rows`` wide rows from ``start``, the four
    per-channel vectors ``v1..v4`` in registers for the whole block; ``stream``: write
    with streaming stores (the rows start on :data:`STREAM_ALIGN` boundaries)."""
    q1 = load4(v1, 0)
    q2 = load4(v2, 0)
    q3 = load4(v3, 0)
    q4 = load4(v4, 0)
    if width == WIDE:
        for r in range(rows):
            _map_quad(mode, xa, xb, out, xn, flag, stream, start + r * WIDE, q1, q2, q3, q4)
        return
    p1 = load4(v1, WIDE)  # two quads per row
    p2 = load4(v2, WIDE)
    p3 = load4(v3, WIDE)
    p4 = load4(v4, WIDE)
    for r in range(rows):
        i = start + r * width
        _map_quad(mode, xa, xb, out, xn, flag, stream, i, q1, q2, q3, q4)
        _map_quad(mode, xa, xb, out, xn, flag, stream, i + WIDE, p1, p2, p3, p4)


# ------------------------------------------------------------------ forward kernels
@njit(cache=True, inline="always", error_model="numpy")
def _shifted_lanes(xs, shift, c1, c2, width):
    for i in range(width):
        d = xs[i] - shift[i]
        c1[i] += d
        c2[i] += d * d


@njit(cache=True, inline="always", error_model="numpy")
def _stats_block(x, base, p0, p1, channels, cpg, scratch, out1, out2):
    """Shifted sums of positions ``p0..p1`` of the sample at ``base``, reduced to groups.

    ``scratch`` holds ``3 * reps * C`` floats: the two lane vectors and the broadcast
    shift, each repeated for a span of ``reps`` positions. A
    single-position block (layer norm's rows) skips the lanes: its group sums are the
    segment sums of ``x - K`` and ``(x - K)^2`` themselves, the same bits.
    """
    if p1 - p0 == 1:
        row = base + p0 * channels
        g = 0
        for c0 in range(0, channels, cpg):
            s1, s2 = shifted_segment_sums(x, row + c0, row + c0 + cpg, x[base + c0])
            out1[g] = s1
            out2[g] = s2
            g += 1
        return
    reps = _span_reps(channels)
    w = reps * channels
    c1 = scratch[:w]
    c2 = scratch[w:2 * w]
    shift = scratch[2 * w:3 * w]
    for c0 in range(0, channels, cpg):
        k = x[base + c0]
        for j in range(cpg):
            shift[c0 + j] = k
    _repeat(shift, channels, _copies_needed(channels, reps))
    lo, copies = p0, reps
    if _wide(channels):
        width, per_row, rows = _wide_rows(p0, p1, channels)
        _lanes_wide(x, x, _STATS, base + p0 * channels, rows, width, channels, shift, shift,
                    c1, c2)
        lo = p0 + rows * per_row  # leftover positions: one-position spans into copy 0
        copies = _lane_copies(channels)
    else:
        for c in range(w):
            c1[c] = np.float32(0.0)
            c2[c] = np.float32(0.0)
    for q in range(_span_count(lo, p1, reps)):
        row, width = _span(q, base, lo, p1, reps, channels)
        _shifted_lanes(x[row:row + width], shift, c1, c2, width)
    _fold_copies(c1, channels, copies)
    _fold_copies(c2, channels, copies)
    g = 0
    for c0 in range(0, channels, cpg):
        if cpg < LANES:  # the 8-lane fold's own order for a segment shorter than 8
            s1 = s2 = np.float32(0.0)
            for c in range(c0, c0 + cpg):
                s1 += c1[c]
                s2 += c2[c]
            out1[g] = s1
            out2[g] = s2
        else:
            out1[g] = segment_sum(c1, c0, c0 + cpg)
            out2[g] = segment_sum(c2, c0, c0 + cpg)
        g += 1


@njit(cache=True, inline="always", error_model="numpy")
def _group_moments_f64(x, base, positions, channels, c0, cpg):
    """Shifted sums of one group entirely in float64, position by position.

    The fallback for a group whose float32 squares overflowed (a spread beyond ~1e19):
    rare, serial and in a fixed order, so it keeps results deterministic.
    """
    k = np.float64(x[base + c0])
    s1 = np.float64(0.0)
    s2 = np.float64(0.0)
    for p in range(positions):
        row = base + p * channels + c0
        for j in range(cpg):
            d = np.float64(x[row + j]) - k
            s1 += d
            s2 += d * d
    return s1, s2


@njit(cache=True, inline="always", error_model="numpy")
def _merge_blocks(part1, part2, g):
    """Group ``g``'s two float32 block partials (``[nblk, groups]``) summed in block order
    in float64."""
    s1 = np.float64(0.0)
    s2 = np.float64(0.0)
    for k in range(part1.shape[0]):
        s1 += part1[k, g]
        s2 += part2[k, g]
    return s1, s2


@njit(cache=True, inline="always", error_model="numpy")
def _set_stats(x, base, positions, channels, c0, cpg, s1, s2, epsilon, i, mean, var, inv_std):
    """Entry ``i`` of mean, var, inv_std from the shifted sums ``s1``, ``s2`` (about
    ``x[base + c0]``) of one group: channels ``c0..c0 + cpg`` of ``positions`` positions
    from ``base``, in float64. Sums that are not finite (float32 squares overflowed) are
    taken again in float64 (rare, and still in a fixed order)."""
    if not (np.isfinite(s1) and np.isfinite(s2)):
        s1, s2 = _group_moments_f64(x, base, positions, channels, c0, cpg)
    n = np.float64(positions * cpg)
    m = np.float64(s1) / n
    v = max(np.float64(s2) / n - m * m, 0.0)
    mean[i] = np.float32(np.float64(x[base + c0]) + m)
    var[i] = np.float32(v)
    inv_std[i] = np.float32(1.0 / np.sqrt(v + epsilon))


@njit(cache=True, inline="always", error_model="numpy")
def _finish_stats(x, b, positions, channels, cpg, epsilon, part1, part2, mean, var, inv_std):
    """Merges sample ``b``'s block partials in block order into mean, var, inv_std."""
    groups = channels // cpg
    base = b * positions * channels
    for g in range(groups):
        s1, s2 = _merge_blocks(part1, part2, g)
        _set_stats(x, base, positions, channels, g * cpg, cpg, s1, s2, epsilon,
                   b * groups + g, mean, var, inv_std)


@njit(cache=True, inline="always", error_model="numpy")
def _expand(stat, b, channels, cpg, out):
    """Per-group values of sample ``b`` broadcast to one per channel."""
    groups = channels // cpg
    for g in range(groups):
        s = stat[b * groups + g]
        for j in range(cpg):
            out[g * cpg + j] = s


@njit(cache=True, inline="always", error_model="numpy")
def _sweep_span(xs, os, ns, want_xn, mean_c, inv_c, scale_c, bet, width):
    if want_xn:
        for i in range(width):
            d = xs[i] - mean_c[i]
            ns[i] = d * inv_c[i]
            os[i] = d * scale_c[i] + bet[i]
    else:
        for i in range(width):
            os[i] = (xs[i] - mean_c[i]) * scale_c[i] + bet[i]


@njit(cache=True, inline="always", error_model="numpy")
def _sweep_body(x, out, xn, want_xn, stream, b, base, r0, r1, channels, cpg, mean, inv_std,
                gamma, beta, scratch):
    reps = _span_reps(channels)
    w = reps * channels
    mean_c = scratch[:w]
    inv_c = scratch[w:2 * w]
    scale_c = scratch[2 * w:3 * w]
    bet = scratch[3 * w:4 * w]
    _expand(mean, b, channels, cpg, mean_c)
    _expand(inv_std, b, channels, cpg, inv_c)
    for c in range(channels):
        scale_c[c] = inv_c[c] * gamma[c]
        bet[c] = beta[c]
    for vec in (mean_c, inv_c, scale_c, bet):
        _repeat(vec, channels, _copies_needed(channels, reps))
    if _wide(channels):
        width, copies, rows = _wide_rows(r0, r1, channels)
        _map_wide(_SWEEP, x, x, out, xn, want_xn, stream, base + r0 * channels, rows, width,
                  mean_c, inv_c, scale_c, bet)
        if stream:
            sfence()
        r0 += rows * copies
    for q in range(_span_count(r0, r1, reps)):
        row, width = _span(q, base, r0, r1, reps, channels)
        _sweep_span(x[row:row + width], out[row:row + width],
                    xn[row:row + width] if want_xn else xn, want_xn, mean_c, inv_c, scale_c,
                    bet, width)


@njit(cache=True, inline="always", error_model="numpy")
def _sweep(x, out, xn, want_xn, stream, b, base, r0, r1, channels, cpg, mean, inv_std, gamma,
           beta, scratch):
    """``out = (x - mean) * (inv_std * gamma) + beta`` (and ``xn = (x - mean) * inv_std``
    when asked) on rows ``r0..r1``, in spans; ``scratch`` holds ``4 * reps * C`` floats.
    ``want_xn`` becomes a constant of the loops (no test per span)."""
    if want_xn:
        _sweep_body(x, out, xn, True, stream, b, base, r0, r1, channels, cpg, mean, inv_std,
                    gamma, beta, scratch)
    else:
        _sweep_body(x, out, xn, False, stream, b, base, r0, r1, channels, cpg, mean, inv_std,
                    gamma, beta, scratch)


@njit(cache=True, error_model="numpy")
def _fwd_samples(x, out, xn, want_xn, stream, b0, b1, positions, channels, cpg, block, epsilon,
                 given, gamma, beta, part1, part2, mean, var, inv_std):
    """Statistics then sweep, sample by sample (each sample is still in cache)."""
    w = _span_reps(channels) * channels
    lanes = np.empty(3 * w, dtype=np.float32)
    scratch = np.empty(4 * w, dtype=np.float32)
    nblk = part1.shape[1]
    for b in range(b0, b1):
        base = b * positions * channels
        if not given:
            for k in range(nblk):
                _stats_block(x, base, k * block, min((k + 1) * block, positions), channels,
                             cpg, lanes, part1[b, k], part2[b, k])
            _finish_stats(x, b, positions, channels, cpg, epsilon, part1[b], part2[b],
                          mean, var, inv_std)
        _sweep(x, out, xn, want_xn, stream, b, base, 0, positions, channels, cpg, mean, inv_std,
               gamma, beta, scratch)


@njit(cache=True, error_model="numpy")
def _forward_serial(x, out, xn, want_xn, stream, batch, positions, channels, cpg, block, spc,
                    epsilon, given, gamma, beta, part1, part2, mean, var, inv_std):
    _fwd_samples(x, out, xn, want_xn, stream, 0, batch, positions, channels, cpg, block, epsilon,
                 given, gamma, beta, part1, part2, mean, var, inv_std)


@njit(cache=True, parallel=True, error_model="numpy")
def _forward_chunks_parallel(x, out, xn, want_xn, stream, batch, positions, channels, cpg, block,
                             spc, epsilon, given, gamma, beta, part1, part2, mean, var,
                             inv_std):
    nchunks = (batch + spc - 1) // spc
    for j in prange(nchunks):
        _fwd_samples(x, out, xn, want_xn, stream, j * spc, min((j + 1) * spc, batch), positions,
                     channels, cpg, block, epsilon, given, gamma, beta, part1, part2, mean,
                     var, inv_std)


@njit(cache=True, inline="always", error_model="numpy")
def _reversed_task(t, batch, nblk):
    """``(sample, block)`` of task ``batch * nblk - 1 - t``: the block-parallel kernels'
    second pass walks the blocks in reverse, so each thread starts on the blocks the
    first pass read last, which are still in the cache when the data is larger than the
    cache (walked forward, a pass that does not fit evicts each block just before the
    next pass reads it). Each block's work is element-wise, so the order changes no bit."""
    u = batch * nblk - 1 - t
    b = u // nblk
    return b, u - b * nblk


@njit(cache=True, parallel=True, error_model="numpy")
def _forward_blocks_parallel(x, out, xn, want_xn, stream, batch, positions, channels, cpg, block,
                             spc, epsilon, given, gamma, beta, part1, part2, mean, var,
                             inv_std):
    """Few samples: split each into its position blocks, statistics then sweep."""
    nblk = part1.shape[1]
    if not given:
        for t in prange(batch * nblk):
            b = t // nblk
            k = t - b * nblk
            lanes = np.empty(3 * _span_reps(channels) * channels, dtype=np.float32)
            _stats_block(x, b * positions * channels, k * block,
                         min((k + 1) * block, positions), channels, cpg, lanes,
                         part1[b, k], part2[b, k])
        for b in range(batch):
            _finish_stats(x, b, positions, channels, cpg, epsilon, part1[b], part2[b],
                          mean, var, inv_std)
    for t in prange(batch * nblk):
        b, k = _reversed_task(t, batch, nblk)
        scratch = np.empty(4 * _span_reps(channels) * channels, dtype=np.float32)
        _sweep(x, out, xn, want_xn, stream, b, b * positions * channels, k * block,
               min((k + 1) * block, positions), channels, cpg, mean, inv_std, gamma, beta,
               scratch)


# ----------------------------------------------------------------- backward kernels
@njit(cache=True, inline="always", error_model="numpy")
def _bwd_block(g, s, recompute, b, base, p0, p1, channels, cpg, mean, inv_std, gamma,
               scratch, u, v, gp1, gp2):
    """Per-channel ``u = sum(g)``, ``v = sum(g * xn)`` over positions ``p0..p1``, and the
    per-group ``sum(gamma * u)``, ``sum(gamma * v)``.

    ``xn`` is ``s`` itself, or ``(s - mean) * inv_std`` when ``recompute`` (``s`` is then
    the layer input), the same expression the forward sweep used.
    """
    groups = channels // cpg
    if p1 - p0 == 1:
        _bwd_row(g, s, recompute, b, base + p0 * channels, channels, cpg, mean, inv_std,
                 scratch, u, v)
    else:
        _bwd_lanes(g, s, recompute, b, base, p0, p1, channels, cpg, mean, inv_std, scratch,
                   u, v)
    gi = 0
    for c0 in range(0, channels, cpg):
        if cpg < LANES:  # the 8-lane fold's own order for a segment shorter than 8
            s1 = s2 = np.float32(0.0)
            for c in range(c0, c0 + cpg):
                s1 += gamma[c] * u[c]
                s2 += gamma[c] * v[c]
            gp1[gi] = s1
            gp2[gi] = s2
        else:
            gp1[gi], gp2[gi] = segment_dot2(gamma, u, v, c0, c0 + cpg)
        gi += 1


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_row(g, s, recompute, b, row, channels, cpg, mean, inv_std, scratch, u, v):
    """A single-position block: ``u = g`` and ``v = g * xn`` (no lanes to zero)."""
    gr = g[row:row + channels]
    sr = s[row:row + channels]
    if not recompute:
        for c in range(channels):
            u[c] = gr[c]
            v[c] = gr[c] * sr[c]
        return
    mean_c = scratch[:channels]
    inv_c = scratch[channels:2 * channels]
    _expand(mean, b, channels, cpg, mean_c)
    _expand(inv_std, b, channels, cpg, inv_c)
    for c in range(channels):
        u[c] = gr[c]
        v[c] = gr[c] * ((sr[c] - mean_c[c]) * inv_c[c])


@njit(cache=True, inline="always", error_model="numpy")
def _grad_lanes(gs, ss, recompute, mean_c, inv_c, u, v, width):
    if recompute:
        for i in range(width):
            u[i] += gs[i]
            v[i] += gs[i] * ((ss[i] - mean_c[i]) * inv_c[i])
    else:
        for i in range(width):
            u[i] += gs[i]
            v[i] += gs[i] * ss[i]


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_lanes_body(g, s, recompute, b, base, p0, p1, channels, cpg, mean, inv_std, scratch,
                    u, v):
    reps = _span_reps(channels)
    w = reps * channels
    mean_c = scratch[:w]
    inv_c = scratch[w:2 * w]
    if recompute:
        _expand(mean, b, channels, cpg, mean_c)
        _expand(inv_std, b, channels, cpg, inv_c)
        _repeat(mean_c, channels, _copies_needed(channels, reps))
        _repeat(inv_c, channels, _copies_needed(channels, reps))
    lo, copies = p0, reps
    if _wide(channels):
        width, per_row, rows = _wide_rows(p0, p1, channels)
        _lanes_wide(g, s, _GRAD_RECOMPUTE if recompute else _GRAD_XN, base + p0 * channels,
                    rows, width, channels, mean_c, inv_c, u, v)
        lo = p0 + rows * per_row  # leftover positions: one-position spans into copy 0
        copies = _lane_copies(channels)
    else:
        for c in range(w):
            u[c] = np.float32(0.0)
            v[c] = np.float32(0.0)
    for q in range(_span_count(lo, p1, reps)):
        row, width = _span(q, base, lo, p1, reps, channels)
        _grad_lanes(g[row:row + width], s[row:row + width], recompute, mean_c, inv_c, u, v,
                    width)
    _fold_copies(u, channels, copies)
    _fold_copies(v, channels, copies)


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_lanes(g, s, recompute, b, base, p0, p1, channels, cpg, mean, inv_std, scratch, u, v):
    """Per-channel lanes ``u += g``, ``v += g * xn`` over positions ``p0..p1`` in spans
    (``u``, ``v`` hold ``reps * C`` floats; the totals end in their first ``C``).
    ``recompute`` becomes a constant of the loops."""
    if recompute:
        _bwd_lanes_body(g, s, True, b, base, p0, p1, channels, cpg, mean, inv_std, scratch, u,
                        v)
    else:
        _bwd_lanes_body(g, s, False, b, base, p0, p1, channels, cpg, mean, inv_std, scratch,
                        u, v)


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_coeffs(b, positions, channels, cpg, gp1, gp2, affine_only, sg, sgx):
    """Merges sample ``b``'s group partials in block order: ``sum/n`` per group."""
    groups = channels // cpg
    n = np.float64(positions * cpg)
    for gi in range(groups):
        s1, s2 = _merge_blocks(gp1, gp2, gi)
        if affine_only:
            s1 = 0.0
            s2 = 0.0
        sg[b * groups + gi] = np.float32(s1 / n)
        sgx[b * groups + gi] = np.float32(s2 / n)


@njit(cache=True, inline="always", error_model="numpy")
def _dx_span(gs, ss, ds, recompute, mean_c, ga_c, xa_c, ca_c, width):
    if recompute:
        for i in range(width):
            ds[i] = ga_c[i] * gs[i] - (ca_c[i] + xa_c[i] * (ss[i] - mean_c[i]))
    else:
        for i in range(width):
            ds[i] = ga_c[i] * gs[i] - (ca_c[i] + xa_c[i] * ss[i])


@njit(cache=True, inline="always", error_model="numpy")
def _dx_rows_body(g, s, dx, recompute, stream, b, base, r0, r1, channels, cpg, mean, inv_std,
                  gamma, sg, sgx, scratch):
    reps = _span_reps(channels)
    w = reps * channels
    mean_c = scratch[:w]
    ga_c = scratch[w:2 * w]
    xa_c = scratch[2 * w:3 * w]
    ca_c = scratch[3 * w:4 * w]
    inv_c = scratch[4 * w:5 * w]
    _expand(mean, b, channels, cpg, mean_c)
    _expand(inv_std, b, channels, cpg, inv_c)
    _expand(sg, b, channels, cpg, ca_c)
    _expand(sgx, b, channels, cpg, xa_c)
    for c in range(channels):
        k = inv_c[c]
        ga_c[c] = k * gamma[c]                        # inv * gamma         (times g)
        ca_c[c] = k * ca_c[c]                         # inv * sum_g / n
        xa_c[c] = k * xa_c[c] * (k if recompute else np.float32(1.0))  # times (x - mean) or xn
    for vec in (mean_c, ga_c, xa_c, ca_c):
        _repeat(vec, channels, _copies_needed(channels, reps))
    if _wide(channels):
        width, copies, rows = _wide_rows(r0, r1, channels)
        _map_wide(_DX, g, s, dx, dx, recompute, stream, base + r0 * channels, rows, width,
                  mean_c, ga_c, xa_c, ca_c)
        if stream:
            sfence()
        r0 += rows * copies
    for q in range(_span_count(r0, r1, reps)):
        row, width = _span(q, base, r0, r1, reps, channels)
        _dx_span(g[row:row + width], s[row:row + width], dx[row:row + width], recompute,
                 mean_c, ga_c, xa_c, ca_c, width)


@njit(cache=True, inline="always", error_model="numpy")
def _dx_rows(g, s, dx, recompute, stream, b, base, r0, r1, channels, cpg, mean, inv_std, gamma,
             sg, sgx, scratch):
    """``dx = inv_std * (g * gamma - (sum_g + xn * sum_gxn) / n)`` on rows ``r0..r1`` in
    spans, with ``inv_std`` folded into per-channel coefficients:
    ``dx = (inv*gamma) * g - (inv*sum_g/n + (inv*sum_gxn/n*inv) * (x - mean))`` (``* xn``
    when ``xn`` is given). ``scratch`` holds ``5 * reps * C`` floats; ``recompute``
    becomes a constant."""
    if recompute:
        _dx_rows_body(g, s, dx, True, stream, b, base, r0, r1, channels, cpg, mean, inv_std, gamma,
                      sg, sgx, scratch)
    else:
        _dx_rows_body(g, s, dx, False, stream, b, base, r0, r1, channels, cpg, mean, inv_std, gamma,
                      sg, sgx, scratch)


@njit(cache=True, inline="always", error_model="numpy")
def _add_row(parts, t, u, v, channels, first):
    """Adds the block lanes ``u``, ``v`` to task row ``t`` of the float64 parameter
    partials; the ``first`` block of a row starts it (``0.0 + u``: the bits of an addition
    to a zeroed row, without a zeroing pass over all rows before the kernel)."""
    pu = parts[0, t]
    pv = parts[1, t]
    for c in range(channels):
        pu[c] = (0.0 if first else pu[c]) + np.float64(u[c])
        pv[c] = (0.0 if first else pv[c]) + np.float64(v[c])


@njit(cache=True, error_model="numpy")
def _bwd_samples(g, s, dx, recompute, affine_only, stream, b0, b1, positions, channels, cpg, block,
                 spc, mean, inv_std, gamma, gp1, gp2, sg, sgx, parts):
    """Both backward passes, sample by sample; parameter partials per task row (the first
    sample of each chunk of ``spc`` starts its rows)."""
    w = _span_reps(channels) * channels
    lanes = np.empty(2 * w, dtype=np.float32)
    scratch = np.empty(5 * w, dtype=np.float32)
    u = lanes[:w]
    v = lanes[w:]
    nblk = gp1.shape[1]
    for b in range(b0, b1):
        base = b * positions * channels
        for k in range(nblk):
            _bwd_block(g, s, recompute, b, base, k * block, min((k + 1) * block, positions),
                       channels, cpg, mean, inv_std, gamma, scratch, u, v, gp1[b, k],
                       gp2[b, k])
            _add_row(parts, (b // spc) * nblk + k, u, v, channels, b % spc == 0)
        _bwd_coeffs(b, positions, channels, cpg, gp1[b], gp2[b], affine_only, sg, sgx)
        _dx_rows(g, s, dx, recompute, stream, b, base, 0, positions, channels, cpg, mean, inv_std,
                 gamma, sg, sgx, scratch)


@njit(cache=True, error_model="numpy")
def _backward_serial(g, s, dx, recompute, affine_only, stream, batch, positions, channels, cpg,
                     block, spc, mean, inv_std, gamma, gp1, gp2, sg, sgx, parts):
    _bwd_samples(g, s, dx, recompute, affine_only, stream, 0, batch, positions, channels, cpg,
                 block, spc, mean, inv_std, gamma, gp1, gp2, sg, sgx, parts)


@njit(cache=True, parallel=True, error_model="numpy")
def _backward_chunks_parallel(g, s, dx, recompute, affine_only, stream, batch, positions, channels,
                              cpg, block, spc, mean, inv_std, gamma, gp1, gp2, sg, sgx,
                              parts):
    nchunks = (batch + spc - 1) // spc
    for j in prange(nchunks):
        _bwd_samples(g, s, dx, recompute, affine_only, stream, j * spc, min((j + 1) * spc, batch),
                     positions, channels, cpg, block, spc, mean, inv_std, gamma, gp1, gp2,
                     sg, sgx, parts)


@njit(cache=True, parallel=True, error_model="numpy")
def _backward_blocks_parallel(g, s, dx, recompute, affine_only, stream, batch, positions, channels,
                              cpg, block, spc, mean, inv_std, gamma, gp1, gp2, sg, sgx,
                              parts):
    nblk = gp1.shape[1]
    for t in prange(batch * nblk):
        b = t // nblk
        k = t - b * nblk
        w = _span_reps(channels) * channels
        lanes = np.empty(2 * w, dtype=np.float32)
        scratch = np.empty(5 * w, dtype=np.float32)
        u = lanes[:w]
        v = lanes[w:]
        _bwd_block(g, s, recompute, b, b * positions * channels, k * block,
                   min((k + 1) * block, positions), channels, cpg, mean, inv_std, gamma,
                   scratch, u, v, gp1[b, k], gp2[b, k])
        _add_row(parts, (b // spc) * nblk + k, u, v, channels, b % spc == 0)
    for b in range(batch):
        _bwd_coeffs(b, positions, channels, cpg, gp1[b], gp2[b], affine_only, sg, sgx)
    for t in prange(batch * nblk):
        b, k = _reversed_task(t, batch, nblk)
        scratch = np.empty(5 * _span_reps(channels) * channels, dtype=np.float32)
        _dx_rows(g, s, dx, recompute, stream, b, b * positions * channels, k * block,
                 min((k + 1) * block, positions), channels, cpg, mean, inv_std, gamma, sg,
                 sgx, scratch)


# --------------------------------------------------- rows: one position, one group
# Layer norm's view ``[rows, 1, C]`` with one group: each sample is a single row. The
# statistics and outputs are those of the general kernels; the parameter partials fold
# each chunk of rows in float32 lanes (like a position block) instead of one float64 row
# per sample. The path is chosen by shape alone, so gates and threads never change bits.
@njit(cache=True, inline="always", error_model="numpy")
def _row_stat(x, r, channels, s1, s2, epsilon, mean, var, inv_std):
    """Row ``r``'s statistics from its float32 shifted sums (a one-position group)."""
    _set_stats(x, r * channels, 1, channels, 0, channels, s1, s2, epsilon, r, mean, var,
               inv_std)


@njit(cache=True, inline="always", error_model="numpy")
def _sweep_row(x, out, xn, want_xn, stream, r, channels, gamma, beta, mean, inv_std):
    """``out = ((x - mean) * inv_std) * gamma + beta`` (and ``xn = (x - mean) * inv_std``)
    on row ``r``: whole ``f32x16`` vectors when ``C`` is a multiple of 16 (streamed when
    asked), else one float at a time; the same operations either way."""
    row = r * channels
    mu = mean[r]
    sc = inv_std[r]
    if channels % SIMD_LANES == 0:
        vm = vsplat(mu)
        vs = vsplat(sc)
        for c in range(0, channels, SIMD_LANES):
            t = (vload(x, row + c) - vm) * vs
            if want_xn:
                _put(xn, row + c, t, stream)
            _put(out, row + c, t * vload(gamma, c) + vload(beta, c), stream)
        return
    xr = x[row:row + channels]
    orow = out[row:row + channels]
    if want_xn:
        nrow = xn[row:row + channels]
        for c in range(channels):
            t = (xr[c] - mu) * sc
            nrow[c] = t
            orow[c] = t * gamma[c] + beta[c]
    else:
        for c in range(channels):
            orow[c] = ((xr[c] - mu) * sc) * gamma[c] + beta[c]


@njit(cache=True, inline="always", error_model="numpy")
def _fwd_rows(x, out, xn, want_xn, stream, r0, r1, channels, epsilon, given, gamma, beta,
              mean, var, inv_std):
    """Rows ``r0..r1``, each row's statistics then its sweep while the row is in L1. When
    ``C`` is a multiple of 8, neighbouring rows go in pairs: one chain of additions serves
    both rows' 8-lane folds (:func:`folds.shifted_sums_pair`, each row's bits). Fused this
    way the kernel measured 1.7-1.8x faster than the earlier statistics of a whole chunk,
    then its sweep (1.05-1.3x for the whole forward call)."""
    r = r0
    if not given and channels % LANES == 0:
        while r + 1 < r1:
            row = r * channels
            a1, a2, b1, b2 = shifted_sums_pair(x, row, row + channels, channels)
            _row_stat(x, r, channels, a1, a2, epsilon, mean, var, inv_std)
            _row_stat(x, r + 1, channels, b1, b2, epsilon, mean, var, inv_std)
            _sweep_row(x, out, xn, want_xn, stream, r, channels, gamma, beta, mean, inv_std)
            _sweep_row(x, out, xn, want_xn, stream, r + 1, channels, gamma, beta, mean,
                       inv_std)
            r += 2
    for q in range(r, r1):
        if not given:
            row = q * channels
            s1, s2 = shifted_segment_sums(x, row, row + channels, x[row])
            _row_stat(x, q, channels, s1, s2, epsilon, mean, var, inv_std)
        _sweep_row(x, out, xn, want_xn, stream, q, channels, gamma, beta, mean, inv_std)
    if stream:
        sfence()


@njit(cache=True, error_model="numpy")
def _forward_rows_serial(x, out, xn, want_xn, stream, batch, positions, channels, cpg, block, spc,
                         epsilon, given, gamma, beta, part1, part2, mean, var, inv_std):
    for r0 in range(0, batch, spc):
        _fwd_rows(x, out, xn, want_xn, stream, r0, min(r0 + spc, batch), channels, epsilon,
                  given, gamma, beta, mean, var, inv_std)


@njit(cache=True, parallel=True, error_model="numpy")
def _forward_rows_parallel(x, out, xn, want_xn, stream, batch, positions, channels, cpg, block, spc,
                           epsilon, given, gamma, beta, part1, part2, mean, var, inv_std):
    nchunks = (batch + spc - 1) // spc
    for j in prange(nchunks):
        _fwd_rows(x, out, xn, want_xn, stream, j * spc, min((j + 1) * spc, batch), channels,
                  epsilon, given, gamma, beta, mean, var, inv_std)


@njit(cache=True, inline="always", error_model="numpy")
def _flush_rows(parts, j, acc, channels):
    pu = parts[0, j]
    pv = parts[1, j]
    for c in range(channels):
        pu[c] = np.float64(acc[0, c])
        pv[c] = np.float64(acc[1, c])
        acc[0, c] = np.float32(0.0)
        acc[1, c] = np.float32(0.0)


@njit(cache=True, nogil=True, error_model="numpy")
def _bwd_rows64(g, s, dx, recompute, affine_only, stream, r0, r1, spc, mean, inv_std, gamma,
                parts, vbuf, acc):
    """:func:`_bwd_rows_body` for rows of exactly 64 features, each row four ``f32x16``
    vectors: the chunk's parameter lanes and ``gamma`` stay in registers and ``dx`` reuses
    the row's loaded values. Every element sees the same operations in the same order,
    so the bits are those of the general loop."""
    n = np.float64(WIDE)
    gam = load4(gamma, 0)
    for c0 in range(r0 - r0 % spc, r1, spc):
        au = zero4()
        av = zero4()
        for r in range(max(c0, r0), min(c0 + spc, r1)):
            i = r * WIDE
            k = splat4(inv_std[r])
            gq = load4(g, i)
            xq = mul4(sub4(load4(s, i), splat4(mean[r])), k) if recompute else load4(s, i)
            tq = mul4(gq, xq)
            au = add4(au, gq)
            av = add4(av, tq)
            store4(vbuf, 0, tq)
            sa, sb = segment_dot2(gamma, g[i:i + WIDE], vbuf, 0, WIDE)
            a, b = _rows_coeff(sa, sb, n, affine_only)
            _put4(dx, i, mul4(k, sub4(mul4(gq, gam), add4(splat4(a), mul4(xq, splat4(b))))),
                  stream)
        store4(acc[0], 0, au)
        store4(acc[1], 0, av)
        _flush_rows(parts, c0 // spc, acc, WIDE)


@njit(cache=True, inline="always", error_model="numpy")
def _rows_coeff(sa, sb, n, affine_only):
    """A row's dx coefficients from its two dots."""
    if affine_only:
        return np.float32(0.0), np.float32(0.0)
    return np.float32(np.float64(sa) / n), np.float32(np.float64(sb) / n)


@njit(cache=True, nogil=True, error_model="numpy")
def _bwd_rows32(g, s, dx, recompute, affine_only, stream, r0, r1, spc, mean, inv_std, gamma,
                parts, acc, vb):
    """:func:`_bwd_rows_body` for rows of exactly 32 features, two rows at a time in
    registers: each row two ``f32x16`` vectors, the parameter lanes and ``gamma`` in
    registers, and the two rows' 8-lane dots side by side in one vector (row ``r`` in
    lanes 0-7, row ``r + 1`` in lanes 8-15, the low and high halves of each row's
    vectors added in element order). Every element and lane sees the operations of the
    general loop in its order, so the bits are the same. An odd last row of a chunk
    takes the general loop."""
    n = np.float64(32)
    gw0 = vload8x2(gamma, 0, 0)
    gw1 = vload8x2(gamma, 8, 8)
    gw2 = vload8x2(gamma, 16, 16)
    gw3 = vload8x2(gamma, 24, 24)
    gam0 = vload(gamma, 0)
    gam1 = vload(gamma, 16)
    zero = vsplat(0.0)
    for c0 in range(r0 - r0 % spc, r1, spc):
        lo = max(c0, r0)
        hi = min(c0 + spc, r1)
        u0 = u1 = v0 = v1 = zero
        for r in range(lo, hi - 1, 2):
            i = r * 32
            ka = vsplat(inv_std[r])
            kb = vsplat(inv_std[r + 1])
            ga0 = vload(g, i)
            ga1 = vload(g, i + 16)
            gb0 = vload(g, i + 32)
            gb1 = vload(g, i + 48)
            if recompute:
                ma = vsplat(mean[r])
                mb = vsplat(mean[r + 1])
                xa0 = (vload(s, i) - ma) * ka
                xa1 = (vload(s, i + 16) - ma) * ka
                xb0 = (vload(s, i + 32) - mb) * kb
                xb1 = (vload(s, i + 48) - mb) * kb
            else:
                xa0 = vload(s, i)
                xa1 = vload(s, i + 16)
                xb0 = vload(s, i + 32)
                xb1 = vload(s, i + 48)
            ta0 = ga0 * xa0
            ta1 = ga1 * xa1
            tb0 = gb0 * xb0
            tb1 = gb1 * xb1
            u0 = (u0 + ga0) + gb0
            u1 = (u1 + ga1) + gb1
            v0 = (v0 + ta0) + tb0
            v1 = (v1 + ta1) + tb1
            d = zero + gw0 * vlows(ga0, gb0)
            e = zero + gw0 * vlows(ta0, tb0)
            d = d + gw1 * vhighs(ga0, gb0)
            e = e + gw1 * vhighs(ta0, tb0)
            d = d + gw2 * vlows(ga1, gb1)
            e = e + gw2 * vlows(ta1, tb1)
            d = d + gw3 * vhighs(ga1, gb1)
            e = e + gw3 * vhighs(ta1, tb1)
            da, db, ea, eb = vfold8x4(d, e)
            aa, ba = _rows_coeff(da, ea, n, affine_only)
            ab, bb = _rows_coeff(db, eb, n, affine_only)
            _put(dx, i, ka * (ga0 * gam0 - (vsplat(aa) + xa0 * vsplat(ba))), stream)
            _put(dx, i + 16, ka * (ga1 * gam1 - (vsplat(aa) + xa1 * vsplat(ba))), stream)
            _put(dx, i + 32, kb * (gb0 * gam0 - (vsplat(ab) + xb0 * vsplat(bb))), stream)
            _put(dx, i + 48, kb * (gb1 * gam1 - (vsplat(ab) + xb1 * vsplat(bb))), stream)
        vstore(acc[0], 0, u0)
        vstore(acc[0], 16, u1)
        vstore(acc[1], 0, v0)
        vstore(acc[1], 16, v1)
        if (hi - lo) % 2:
            row = (hi - 1) * 32
            _bwd_one_row(g[row:row + 32], s[row:row + 32], dx[row:row + 32], recompute,
                         affine_only, mean[hi - 1], inv_std[hi - 1], gamma, acc, vb, n)
        _flush_rows(parts, c0 // spc, acc, 32)


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_one_row(gr, sr, dr, recompute, affine_only, m, k, gamma, acc, vb, n):
    """One row by the general loop: terms into ``vb`` and the lanes ``acc``, then ``dx``."""
    channels = gr.size
    _row_terms(gr, sr, recompute, m, k, vb[:channels], acc[0], acc[1])
    sa, sb = segment_dot2(gamma, gr, vb, 0, channels)
    _row_dx(gr, sr, dr, recompute, affine_only, m, k, sa, sb, gamma, n)


@njit(cache=True, inline="always", error_model="numpy")
def _row_terms(gr, sr, recompute, m, k, vb, au, av):
    """One row's ``g * xn`` into ``vb``, and ``g``, ``g * xn`` added to the lanes."""
    if recompute:
        for c in range(gr.size):
            t = gr[c] * ((sr[c] - m) * k)
            vb[c] = t
            au[c] += gr[c]
            av[c] += t
    else:
        for c in range(gr.size):
            t = gr[c] * sr[c]
            vb[c] = t
            au[c] += gr[c]
            av[c] += t


@njit(cache=True, inline="always", error_model="numpy")
def _row_dx(gr, sr, dr, recompute, affine_only, m, k, sa, sb, gamma, n):
    """One row's ``dx`` from its sums ``sa = sum(gamma * g)``, ``sb = sum(gamma * g * xn)``."""
    a, b = _rows_coeff(sa, sb, n, affine_only)
    if recompute:
        for c in range(gr.size):
            dr[c] = k * (gr[c] * gamma[c] - (a + ((sr[c] - m) * k) * b))
    else:
        for c in range(gr.size):
            dr[c] = k * (gr[c] * gamma[c] - (a + sr[c] * b))


@njit(cache=True, inline="always", error_model="numpy")
def _row_terms_v(g, s, row, recompute, m, k, vb, vo, au, av):
    """:func:`_row_terms` in ``f32x16`` vectors (``C`` a multiple of 16): row ``row``'s
    ``g * xn`` into ``vb[vo:]``, ``g`` and ``g * xn`` added to the lanes ``au``, ``av``."""
    vm = vsplat(m)
    vk = vsplat(k)
    for c in range(0, au.size, SIMD_LANES):
        gv = vload(g, row + c)
        xv = (vload(s, row + c) - vm) * vk if recompute else vload(s, row + c)
        t = gv * xv
        vstore(vb, vo + c, t)
        vstore(au, c, vload(au, c) + gv)
        vstore(av, c, vload(av, c) + t)


@njit(cache=True, inline="always", error_model="numpy")
def _row_dx_v(g, s, dx, row, recompute, affine_only, stream, m, k, sa, sb, gamma, n):
    """:func:`_row_dx` in ``f32x16`` vectors (``C`` a multiple of 16), streamed when asked."""
    a, b = _rows_coeff(sa, sb, n, affine_only)
    va = vsplat(a)
    vb = vsplat(b)
    vm = vsplat(m)
    vk = vsplat(k)
    for c in range(0, gamma.size, SIMD_LANES):
        xv = (vload(s, row + c) - vm) * vk if recompute else vload(s, row + c)
        _put(dx, row + c, vk * (vload(g, row + c) * vload(gamma, c) - (va + xv * vb)), stream)


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_rows_registers(g, s, dx, recompute, affine_only, stream, r0, r1, channels, spc, mean,
                        inv_std, gamma, parts, vbuf, acc):
    """The register kernel of ``C`` = 64 or 32 features."""
    if channels == WIDE:
        _bwd_rows64(g, s, dx, recompute, affine_only, stream, r0, r1, spc, mean, inv_std, gamma,
                    parts, vbuf, acc)
    else:
        _bwd_rows32(g, s, dx, recompute, affine_only, stream, r0, r1, spc, mean, inv_std, gamma,
                    parts, acc, vbuf)


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_rows_body(g, s, dx, recompute, affine_only, stream, r0, r1, channels, spc, mean,
                   inv_std, gamma, parts):
    """Rows ``r0..r1``; the parameter partial of each chunk of ``spc`` rows is folded in
    float32 lanes over its rows in order (as a position block), then stored as a row.
    When ``C`` is a multiple of 8, rows go in pairs whose two 8-lane dots run as one
    (:func:`folds.segment_dot2_pair`, the same bits).

    The register kernels of 64 and 32 features get ``affine_only`` as a constant (one
    compiled variant per value): with it a run-time flag, the 64-feature kernel took
    1.3-1.5x as long with ordinary stores and 2.9-3.2x with streaming stores (LN rows
    ``[32768, 64]`` and ``[25088, 64]``, interleaved in one process on the 2-core AMD VM;
    the 32-feature kernel 0.95-1.14x)."""
    n = np.float64(channels)
    vbuf = np.empty(2 * channels, dtype=np.float32)
    acc = np.zeros((2, channels), dtype=np.float32)
    if channels == WIDE or channels == WIDE // 2:
        if affine_only:
            _bwd_rows_registers(g, s, dx, recompute, True, stream, r0, r1, channels, spc, mean,
                                inv_std, gamma, parts, vbuf, acc)
        else:
            _bwd_rows_registers(g, s, dx, recompute, False, stream, r0, r1, channels, spc, mean,
                                inv_std, gamma, parts, vbuf, acc)
        return
    au = acc[0]
    av = acc[1]
    va = vbuf[:channels]
    vb = vbuf[channels:]
    step = 2 if channels % LANES == 0 else 1
    for c0 in range(r0 - r0 % spc, r1, spc):  # the parameter-partial chunks touched
        hi = min(c0 + spc, r1)
        r = max(c0, r0)
        if channels % SIMD_LANES == 0:  # whole f32x16 vectors per row, no row slices
            while r + 1 < hi:
                row = r * channels
                nxt = row + channels
                _row_terms_v(g, s, row, recompute, mean[r], inv_std[r], vbuf, 0, au, av)
                _row_terms_v(g, s, nxt, recompute, mean[r + 1], inv_std[r + 1], vbuf, channels,
                             au, av)
                sa, sb, ta, tb = segment_dot2_pair(gamma, g, row, nxt, vbuf, 0, channels,
                                                   channels)
                _row_dx_v(g, s, dx, row, recompute, affine_only, stream, mean[r], inv_std[r],
                          sa, sb, gamma, n)
                _row_dx_v(g, s, dx, nxt, recompute, affine_only, stream, mean[r + 1],
                          inv_std[r + 1], ta, tb, gamma, n)
                r += 2
        while r < hi:
            row = r * channels
            gr = g[row:row + channels]
            sr = s[row:row + channels]
            if r + 1 == hi or step == 1:
                _bwd_one_row(gr, sr, dx[row:row + channels], recompute, affine_only, mean[r],
                             inv_std[r], gamma, acc, va, n)
                r += 1
                continue
            nxt = row + channels
            _row_terms(gr, sr, recompute, mean[r], inv_std[r], va, au, av)
            _row_terms(g[nxt:nxt + channels], s[nxt:nxt + channels], recompute, mean[r + 1],
                       inv_std[r + 1], vb, au, av)
            sa, sb, ta, tb = segment_dot2_pair(gamma, g, row, nxt, vbuf, 0, channels, channels)
            _row_dx(gr, sr, dx[row:row + channels], recompute, affine_only, mean[r],
                    inv_std[r], sa, sb, gamma, n)
            _row_dx(g[nxt:nxt + channels], s[nxt:nxt + channels], dx[nxt:nxt + channels],
                    recompute, affine_only, mean[r + 1], inv_std[r + 1], ta, tb, gamma, n)
            r += 2
        _flush_rows(parts, c0 // spc, acc, channels)


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_rows(g, s, dx, recompute, affine_only, stream, r0, r1, channels, spc, mean, inv_std,
              gamma, parts):
    """:func:`_bwd_rows_body` with ``recompute`` a constant, so the row loops carry no test."""
    if recompute:
        _bwd_rows_body(g, s, dx, True, affine_only, stream, r0, r1, channels, spc, mean, inv_std,
                       gamma, parts)
    else:
        _bwd_rows_body(g, s, dx, False, affine_only, stream, r0, r1, channels, spc, mean,
                       inv_std, gamma, parts)
    if stream:
        sfence()


# The rows kernels fold their parameter partials themselves, with the merge of
# :func:`folds.merge_rows_serial` (the same bits): the general kernels' per-group
# coefficient arguments ``sg``, ``sgx`` take the sums of ``g`` and ``g * xn`` per feature
# (grad_beta, grad_gamma). One call instead of two saves a dispatch and, in the parallel
# kernel, a second start of the thread pool from Python.
@njit(cache=True, error_model="numpy")
def _backward_rows_serial(g, s, dx, recompute, affine_only, stream, batch, positions, channels, cpg,
                          block, spc, mean, inv_std, gamma, gp1, gp2, sg, sgx, parts):
    _bwd_rows(g, s, dx, recompute, affine_only, stream, 0, batch, channels, spc, mean, inv_std,
              gamma, parts)
    merge_rows_to(parts, sg, sgx)


@njit(cache=True, parallel=True, error_model="numpy")
def _backward_rows_parallel(g, s, dx, recompute, affine_only, stream, batch, positions, channels,
                            cpg, block, spc, mean, inv_std, gamma, gp1, gp2, sg, sgx, parts):
    nchunks = (batch + spc - 1) // spc
    for j in prange(nchunks):
        _bwd_rows(g, s, dx, recompute, affine_only, stream, j * spc, min((j + 1) * spc, batch),
                  channels, spc, mean, inv_std, gamma, parts)
    merge_rows_to_parallel(parts, sg, sgx)


# ------------------------------------------------------------------------ wrappers
def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


class Plan:
    """Shape facts of one pass: ``[batch, positions, channels]``, groups and fold tasks.

    ``block`` positions per fold block (``rows_per_block(C)``); a sample of
    ``P >= block`` positions has ``nblk`` blocks, smaller samples pack ``spc`` to a task.
    """

    __slots__ = ("batch", "positions", "channels", "groups", "cpg", "block", "nblk", "spc",
                 "ntasks", "rows")

    def __init__(self, shape: tuple, num_groups: int, who: str) -> None:
        if len(shape) < 2:
            raise ValueError(f"{who}: input must have rank >= 2 ([batch, ..., channels]), "
                             f"got shape {tuple(shape)}")
        if (isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer))
                or num_groups < 1):
            raise ValueError(f"{who}: num_groups must be a positive int, got {num_groups!r}")
        self.channels = int(shape[-1])
        if self.channels % num_groups:
            raise ValueError(f"{who}: channels ({self.channels}) must be divisible by groups "
                             f"({num_groups})")
        self.batch = int(shape[0])
        self.positions = math.prod(int(d) for d in shape[1:-1])
        self.groups = int(num_groups)
        self.cpg = self.channels // self.groups
        self.block = rows_per_block(self.channels)
        if self.positions >= self.block:
            self.nblk = -(-self.positions // self.block)
            self.spc = 1
        else:
            self.nblk = 1
            self.spc = max(self.block // max(self.positions, 1), 1)
        self.ntasks = -(-self.batch // self.spc) * self.nblk
        # one position and one group per sample: the dedicated row kernels
        self.rows = self.positions == 1 and self.groups == 1

    def streams(self, nbytes: int) -> bool:
        """Whether the element-wise passes write with streaming stores: large outputs in
        rows of whole vectors (the wide rows of 64 or 128 floats, or layer norm's rows of
        a multiple of 16 features), so every streamed vector is aligned."""
        if self.rows:
            return streams(nbytes, self.channels)
        return self.channels in _STREAM_CHANNELS and streams(nbytes, WIDE)

    def kernel(self, gate: str, size: int, serial, chunks, blocks):
        """Picks the serial, chunk-parallel or block-parallel variant (same bits)."""
        if not tuning.use_parallel(gate, size):
            return serial
        nchunks = -(-self.batch // self.spc)
        if nchunks >= tuning.get_num_threads() or self.nblk == 1:
            return chunks
        return blocks


_NO_XN = np.empty(0, dtype=np.float32)  # the kernels' x_normalized when none is wanted
# The row kernels take the general kernels' arguments but keep no per-block partials.
_NO_PART = np.zeros((2, 1, 1, 1), dtype=np.float64)

# Plans of the shapes seen lately (a training loop repeats a few shapes): building one is
# pure Python, and on every call its cost showed up (tens of microseconds once the
# activations had pushed the interpreter's own data out of the cache).
_PLANS: dict = {}
_PLANS_MAX = 64


# The kernels' own partial sums (block and task partials, per-group coefficients) never
# leave a call, so each thread keeps one buffer per size and reuses it: a fresh buffer of
# a few hundred KiB comes from the operating system page by page (a fault and a zeroed
# page each), which the layer-norm backward on [64, 196, 256] paid on most calls.
_SCRATCH = threading.local()
_SCRATCH_MAX = 32


def _scratch(shape: tuple, dtype) -> np.ndarray:
    """This thread's reusable buffer of ``shape`` and ``dtype`` (contents undefined)."""
    bufs = getattr(_SCRATCH, "bufs", None)
    if bufs is None:
        bufs = _SCRATCH.bufs = {}
    key = (shape, dtype)
    buf = bufs.get(key)
    if buf is None:
        if len(bufs) >= _SCRATCH_MAX:
            bufs.clear()
        buf = bufs[key] = np.empty(shape, dtype=dtype)
    return buf


def _plan(shape: tuple, num_groups: int, who: str) -> Plan:
    """The :class:`Plan` of ``shape`` and ``num_groups``, built once per distinct pair."""
    key = (shape, type(num_groups), num_groups)  # True == 1 and 4.0 == 4 must not hit
    plan = _PLANS.get(key)
    if plan is None:
        plan = Plan(shape, num_groups, who)  # raises on bad arguments: nothing cached
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def _check_vec(v, channels: int, arg: str, who: str) -> np.ndarray:
    v = _f32(v).reshape(-1)
    if v.size != channels:
        raise ValueError(f"{who}: {arg} must have {channels} elements (one per channel), "
                         f"got {v.size}")
    return v


def _check_stat(v, plan: Plan, arg: str, who: str) -> np.ndarray:
    v = _f32(v).reshape(-1)
    if v.size != plan.batch * plan.groups:
        raise ValueError(f"{who}: {arg} must have batch * num_groups = "
                         f"{plan.batch * plan.groups} elements, got {v.size}")
    return v


def gn_forward(x, num_groups: int, gamma, beta, epsilon: float, *,
               gate: str = "gn_row_parallel_min_elems", want_xn: bool = True,
               stats: tuple | None = None):
    """Group-norm forward on channels-last data: the engine behind every norm layer.

    Args:
        x: ``[batch, *spatial, C]`` data.
        num_groups: Groups ``G`` (``C % G == 0``).
        gamma: Scale ``[C]``.
        beta: Offset ``[C]``.
        epsilon: Added to the biased variance.
        gate: The tuning gate that decides serial or parallel.
        want_xn: Also return the normalized input.
        stats: Optional fixed ``(mean, inv_std)`` per (sample, group), skipping the
            statistics pass (batch norm inference).

    Returns:
        ``(output, x_normalized or None, mean, var, inv_std)``; the statistics are float32
        ``[batch * G]`` (``var`` biased; zeros when ``stats`` was given).

    Shape:
        x, output, x_normalized: ``[N, *spatial, C]``; statistics: ``[N * G]``.
    """
    who = "group_norm_forward_core"
    if type(epsilon) is not float or not 0.0 <= epsilon < math.inf:  # the layers' case first
        if (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating))
                or not math.isfinite(epsilon) or epsilon < 0):
            raise ValueError(f"{who}: epsilon must be a finite number >= 0, got {epsilon!r}")
    x = _f32(x)
    plan = _plan(x.shape, num_groups, who)
    gamma = _check_vec(gamma, plan.channels, "gamma", who)
    beta = _check_vec(beta, plan.channels, "beta", who)
    stream = plan.streams(x.nbytes)
    new = empty_aligned if stream else np.empty
    out = new(x.shape, np.float32)
    xn = new(x.shape, np.float32) if want_xn else _NO_XN
    if stats is None:
        mean, var, inv_std = np.zeros((3, plan.batch * plan.groups), dtype=np.float32)
    else:
        var = np.zeros(plan.batch * plan.groups, dtype=np.float32)
        mean = _check_stat(stats[0], plan, "mean", who)
        inv_std = _check_stat(stats[1], plan, "inv_std", who)
    if x.size:
        part = (_NO_PART if plan.rows
                else _scratch((2, plan.batch, plan.nblk, plan.groups), np.float64))
        if plan.rows:
            kernel = plan.kernel(gate, x.size, _forward_rows_serial, _forward_rows_parallel,
                                 _forward_rows_parallel)
        else:
            kernel = plan.kernel(gate, x.size, _forward_serial, _forward_chunks_parallel,
                                 _forward_blocks_parallel)
        kernel(x.reshape(-1), out.reshape(-1), xn.reshape(-1), want_xn, stream, plan.batch,
               plan.positions, plan.channels, plan.cpg, plan.block, plan.spc, float(epsilon),
               stats is not None, gamma, beta, part[0], part[1], mean, var, inv_std)
    return out, (xn if want_xn else None), mean, var, inv_std


def gn_backward(grad_output, source, inv_std, num_groups: int, gamma, *, mean=None,
                affine_only: bool = False, row_gate: str = "gn_row_parallel_min_elems",
                param_gate: str = "gn_param_grad_parallel_min_elems"):
    """Group-norm backward: ``(grad_input, grad_gamma, grad_beta)``.

    Args:
        grad_output: dL/dy, shaped like the forward input.
        source: ``x_normalized``, or the forward input ``x`` when ``mean`` is given (the
            normalized input is then recomputed exactly as the forward computed it).
        inv_std: ``[batch * G]`` from the forward.
        num_groups: Groups ``G``.
        gamma: Scale ``[C]``.
        mean: ``[batch * G]`` forward means, to recompute ``x_normalized`` from ``x``.
        affine_only: The statistics were constants (batch norm inference):
            ``dx = inv_std * g * gamma``.
        row_gate: Gate for the two row passes.
        param_gate: Gate for the merge of the parameter-gradient column folds (layer
            norm's rows kernels merge them themselves, by ``row_gate``'s choice).

    Shape:
        grad_output, source: ``[N, *spatial, C]``; inv_std, mean: ``[N * G]``.
    """
    who = "group_norm_backward_core"
    g = _f32(grad_output)
    s = _f32(source)
    if g.shape != s.shape:
        raise ValueError(f"{who}: grad_output shape {g.shape} does not match x_normalized "
                         f"shape {s.shape}")
    plan = _plan(g.shape, num_groups, who)
    gamma = _check_vec(gamma, plan.channels, "gamma", who)
    inv_std = _check_stat(inv_std, plan, "inv_std", who)
    recompute = mean is not None
    mean = _check_stat(mean, plan, "mean", who) if recompute else inv_std
    stream = plan.streams(g.nbytes)
    dx = (empty_aligned if stream else np.empty)(g.shape, np.float32)
    c = plan.channels
    if g.size == 0:
        return dx, np.zeros(c, dtype=np.float32), np.zeros(c, dtype=np.float32)
    if plan.rows:  # no block partials; each chunk's parameter partials are stored once,
        # and the kernel merges them into ``coeff`` (grad_beta, grad_gamma)
        gp, coeff = _NO_PART, np.empty((2, c), dtype=np.float32)
        parts = _scratch((2, plan.ntasks, c), np.float64)
    else:  # block partials and per-group coefficients besides the task rows
        gp = _scratch((2, plan.batch, plan.nblk, plan.groups), np.float64)
        coeff = _scratch((2, plan.batch * plan.groups), np.float32)
        parts = _scratch((2, plan.ntasks, c), np.float64)  # the kernels start every row
    if plan.rows:
        kernel = plan.kernel(row_gate, g.size, _backward_rows_serial, _backward_rows_parallel,
                             _backward_rows_parallel)
    else:
        kernel = plan.kernel(row_gate, g.size, _backward_serial, _backward_chunks_parallel,
                             _backward_blocks_parallel)
    kernel(g.reshape(-1), s.reshape(-1), dx.reshape(-1), recompute, affine_only, stream,
           plan.batch, plan.positions, c, plan.cpg, plan.block, plan.spc, mean, inv_std, gamma,
           gp[0], gp[1], coeff[0], coeff[1], parts)
    if plan.rows:
        return dx, coeff[1], coeff[0]
    merge = (merge_rows_parallel if tuning.use_parallel(param_gate, parts[0].size)
             else merge_rows_serial)
    sums = merge(parts)
    return dx, sums[1], sums[0]


def group_norm_forward_core(x, num_groups: int, gamma, beta, epsilon: float):
    """Group-normalization forward core (the seed's signature).

    Args:
        x: float32 ``[batch, *spatial, C]``.
        num_groups: Number of groups; ``C`` must be divisible by it.
        gamma: float32 ``[C]``.
        beta: float32 ``[C]``.
        epsilon: Added to the biased variance.

    Returns:
        ``(output, x_normalized, inv_std)``: output and x_normalized shaped like ``x``,
        ``inv_std`` float32 ``[batch * num_groups]``.

    Shape:
        x: ``[N, *spatial, C]``; inv_std: ``[N * G]``.
    """
    out, xn, _mean, _var, inv_std = gn_forward(x, num_groups, gamma, beta, epsilon)
    return out, xn, inv_std


def group_norm_backward_core(grad_output, x_normalized, inv_std, num_groups: int, gamma):
    """Group-normalization backward core (the seed's signature).

    ``dx = inv_std * (g * gamma - (sum_g + x_norm * sum_g_xnorm) / group_size)`` with the
    sums per (sample, group) of ``g * gamma`` and ``g * gamma * x_norm``; ``grad_beta`` and
    ``grad_gamma`` are the column folds of ``g`` and ``g * x_norm`` over the ``[M, C]`` view.

    Returns:
        ``(grad_input, grad_gamma, grad_beta)``, the last two float32 ``[C]``.

    Shape:
        grad_output, x_normalized: ``[N, *spatial, C]``; inv_std: ``[N * G]``.
    """
    return gn_backward(grad_output, x_normalized, inv_std, num_groups, gamma)
