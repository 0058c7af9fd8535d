"""Group forward: shifted-sum statistics per (sample, group), then the sweep.

**Statistics**, per (sample, group), in one pass of shifted sums: with ``K`` the first
element of the group in that sample, accumulate ``s1 = sum(x - K)`` and
``s2 = sum((x - K)^2)``; then ``mean = K + s1/n`` and ``var = s2/n - (s1/n)^2``. Measuring
from ``K`` keeps both sums on the scale of the spread, so a mean that dwarfs the spread
(``1e6 + small``) does not cancel catastrophically as ``E[x^2] - E[x]^2`` would.

**Fold order**, fixed by the shape alone. Positions are folded in blocks of
``block = rows_per_block(C)`` positions; inside a block per-channel float32 lanes
accumulate over positions in the layout's order (:mod:`.layout`), the lanes reduce to
groups in channel order (the Rust original's 8-lane segment sums) and block partials merge in
block order in float64. The serial and parallel drivers share these helpers, so a gate
or the thread count decides where work runs, never the bits.

**Compiled pieces.** Each layout has its own compiled statistics block and sweep (a
generic body inlined with the layout constant), and :func:`forward_kernel` builds one
driver per (layout, mode, ``want_xn``): the parallel ones call those pieces, the serial
one inlines their bodies, so a model that runs serially compiles one function, not three.
The layout and ``want_xn`` are the closure's constants, so Numba prunes the other
layouts' code and the unwanted ``xn`` stores before it types the driver (the layers never
want ``xn``: they compile the sweep without them). A model compiles its own layouts only,
each piece on first use.
Otherwise inlining stays within a block function (its loops and one-line helpers): Numba
re-derives and copies an inlined function's IR at every call site, so deep chains of
inlined functions cost compile time far beyond their size.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit
from tinynet.kernels.normalization.folds import group_sums
from tinynet.kernels.normalization.formulas import affine_group, normalized
from tinynet.kernels.normalization.lanes import (STATS, SWEEP, half_sums,
                                                               map_rows, quad_sums)
from tinynet.kernels.normalization.layout import (BLOCKS, CHUNKS, HALF_ROWS,
                                                                QUAD_ROWS, SERIAL, SPANS,
                                                                TWO_QUADS, copies_needed, expand,
                                                                fold_copies, lane_copies, repeat,
                                                                reversed_task, span, span_count,
                                                                span_reps, wide_rows, zero)

__all__ = ["SERIAL", "CHUNKS", "BLOCKS", "forward_kernel", "set_stats"]



@njit(cache=True, inline="always", error_model="numpy")
def _shifted_lanes(xs, shift, c1, c2, width):
    for i in range(width):
        d = xs[i] - shift[i]
        c1[i] += d
        c2[i] += d * d


@njit(cache=True, inline="always", error_model="numpy")
def _stats_body(layout, x, base, p0, p1, d, scratch, part, b, k):
    """Shifted sums of positions ``p0..p1`` of the sample at ``base``, reduced to groups
    into ``part[:, b, k]``.

    ``scratch`` holds ``3 * reps * C`` floats: the two lane vectors and the broadcast
    shift. A single-position block (a sample of one position) skips the lane copies: its
    lanes are ``x - K`` and ``(x - K)^2`` of that position themselves.
    """
    channels = d.channels
    cpg = d.cpg
    reps = span_reps(channels)
    w = reps * channels
    c1 = scratch[:w]
    c2 = scratch[w:2 * w]
    shift = scratch[2 * w:3 * w]
    for c0 in range(0, channels, cpg):
        sk = x[base + c0]
        for j in range(cpg):
            shift[c0 + j] = sk
    if p1 - p0 == 1:
        row = base + p0 * channels
        for c in range(channels):
            t = x[row + c] - shift[c]
            c1[c] = t
            c2[c] = t * t
        group_sums(c1, c2, channels, cpg, part, b, k)
        return
    repeat(shift, channels, copies_needed(layout, channels, reps))
    lo = p0
    if layout == SPANS:
        zero(c1, w)
        zero(c2, w)
    else:
        per_row, rows = wide_rows(layout, p0, p1, channels)
        start = base + p0 * channels
        if layout == HALF_ROWS:
            half_sums(STATS, x, x, start, rows, shift, shift, c1, c2)
        elif layout == QUAD_ROWS:
            quad_sums(STATS, 1, x, x, start, rows, shift, shift, c1, c2)
        else:
            quad_sums(STATS, 2, x, x, start, rows, shift, shift, c1, c2)
        lo = p0 + rows * per_row  # leftover positions: one-position spans into copy 0
    for q in range(span_count(lo, p1, reps)):
        row, width = span(q, base, lo, p1, reps, channels)
        _shifted_lanes(x[row:row + width], shift, c1, c2, width)
    copies = lane_copies(layout, channels, reps)
    fold_copies(c1, channels, copies)
    fold_copies(c2, channels, copies)
    group_sums(c1, c2, channels, cpg, part, b, k)


def _stats_fn(layout: int):
    """The compiled statistics block of ``layout`` (the body inlined with the layout a
    constant): one per layout, so a model compiles the layouts of its channel counts."""

    @njit(callee=True, cache=True, variant=layout, error_model="numpy")
    def stats_block(x, base, p0, p1, d, scratch, part, b, k):
        _stats_body(layout, x, base, p0, p1, d, scratch, part, b, k)

    return stats_block


_stats_spans, _stats_half, _stats_quad, _stats_two_quads = (
    _stats_fn(layout) for layout in (SPANS, HALF_ROWS, QUAD_ROWS, TWO_QUADS))


@njit(cache=True, inline="always", error_model="numpy")
def _stats_block(layout, x, base, p0, p1, d, scratch, part, b, k):
    """The statistics block of ``layout`` (a constant of the caller: one call remains)."""
    if layout == SPANS:
        _stats_spans(x, base, p0, p1, d, scratch, part, b, k)
    elif layout == HALF_ROWS:
        _stats_half(x, base, p0, p1, d, scratch, part, b, k)
    elif layout == QUAD_ROWS:
        _stats_quad(x, base, p0, p1, d, scratch, part, b, k)
    else:
        _stats_two_quads(x, base, p0, p1, d, scratch, part, b, k)


@njit(callee=True, cache=True, error_model="numpy")
def _group_moments_f64(x, base, positions, channels, c0, cpg):
    """Shifted sums of one group entirely in float64, position by position: the fallback
    for a group whose float32 squares overflowed (a spread beyond ~1e19); rare, serial
    and in a fixed order, so results stay deterministic."""
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
def set_stats(x, base, positions, channels, c0, cpg, s1, s2, epsilon, i, stats):
    """Entry ``i`` of ``stats`` (mean, var, inv_std) from the shifted sums ``s1``, ``s2``
    (about ``x[base + c0]``) of one group: channels ``c0..c0 + cpg`` of ``positions``
    positions from ``base``, in float64. Sums that are not finite (float32 squares
    overflowed) are taken again in float64."""
    if not (np.isfinite(s1) and np.isfinite(s2)):
        s1, s2 = _group_moments_f64(x, base, positions, channels, c0, cpg)
    n = np.float64(positions * cpg)
    m = np.float64(s1) / n
    v = max(np.float64(s2) / n - m * m, 0.0)
    stats[0, i] = np.float32(np.float64(x[base + c0]) + m)
    stats[1, i] = np.float32(v)
    stats[2, i] = np.float32(1.0 / np.sqrt(v + epsilon))


@njit(callee=True, cache=True, error_model="numpy")
def _finish_stats(x, b, d, epsilon, part, stats):
    """Merges sample ``b``'s block partials (``part[2, batch, nblk, groups]``) in block
    order in float64 into its statistics."""
    groups = d.channels // d.cpg
    base = b * d.positions * d.channels
    for g in range(groups):
        s1 = np.float64(0.0)
        s2 = np.float64(0.0)
        for k in range(d.nblk):
            s1 += part[0, b, k, g]
            s2 += part[1, b, k, g]
        set_stats(x, base, d.positions, d.channels, g * d.cpg, d.cpg, s1, s2, epsilon,
                  b * groups + g, stats)


@njit(cache=True, inline="always", error_model="numpy")
def _sweep_span(xs, os, ns, want_xn, mean_c, inv_c, scale_c, bet, width):
    for i in range(width):
        os[i] = affine_group(xs[i], mean_c[i], scale_c[i], bet[i])
        if want_xn:
            ns[i] = normalized(xs[i], mean_c[i], inv_c[i])


@njit(cache=True, inline="always", error_model="numpy")
def _sweep_body(layout, want_xn, x, out, xn, stream, b, r0, r1, d, stats, gamma, beta,
                scratch):
    """``out`` (and ``xn`` when ``want_xn``) on positions ``r0..r1`` of sample ``b``
    (:func:`formulas.affine_group`); ``scratch`` holds ``4 * reps * C`` floats."""
    channels = d.channels
    base = b * d.positions * channels
    reps = span_reps(channels)
    w = reps * channels
    mean_c = scratch[:w]
    inv_c = scratch[w:2 * w]
    scale_c = scratch[2 * w:3 * w]
    bet = scratch[3 * w:4 * w]
    expand(stats[0], b, channels, d.cpg, mean_c)
    expand(stats[2], b, channels, d.cpg, inv_c)
    for c in range(channels):
        scale_c[c] = inv_c[c] * gamma[c]
        bet[c] = beta[c]
    copies = copies_needed(layout, channels, reps)
    repeat(mean_c, channels, copies)
    repeat(inv_c, channels, copies)
    repeat(scale_c, channels, copies)
    repeat(bet, channels, copies)
    if layout != SPANS:
        per_row, rows = wide_rows(layout, r0, r1, channels)
        start = base + r0 * channels
        if layout == TWO_QUADS:
            map_rows(SWEEP, 2, x, x, out, xn, want_xn, stream, start, rows, mean_c, inv_c,
                     scale_c, bet)
        else:
            map_rows(SWEEP, 1, x, x, out, xn, want_xn, stream, start, rows, mean_c, inv_c,
                     scale_c, bet)
        r0 += rows * per_row
    for q in range(span_count(r0, r1, reps)):
        row, width = span(q, base, r0, r1, reps, channels)
        _sweep_span(x[row:row + width], out[row:row + width],
                    xn[row:row + width] if want_xn else xn, want_xn, mean_c, inv_c, scale_c,
                    bet, width)


def _sweep_fn(layout: int, want_xn: bool):
    """The compiled sweep of ``layout``, writing ``xn`` too when ``want_xn`` (a constant:
    the layers never want it, so they compile the sweep without its ``xn`` stores)."""

    @njit(callee=True, cache=True, variant=f"{layout}_{int(want_xn)}", error_model="numpy")
    def sweep(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch):
        _sweep_body(layout, want_xn, x, out, xn, stream, b, r0, r1, d, stats, gamma, beta,
                    scratch)

    return sweep


# Module globals, not closure cells of the drivers: Numba keys a closure's cache entry on
# its cells' pickled contents, and a dispatcher pickles differently in every process.
(_sweep_spans, _sweep_spans_xn, _sweep_half, _sweep_half_xn, _sweep_quad, _sweep_quad_xn,
 _sweep_two_quads, _sweep_two_quads_xn) = (
    _sweep_fn(layout, want_xn) for layout in (SPANS, HALF_ROWS, QUAD_ROWS, TWO_QUADS)
    for want_xn in (False, True))


@njit(cache=True, inline="always", error_model="numpy")
def _sweep(layout, want_xn, x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch):
    """The sweep of ``layout`` and ``want_xn`` (constants of the caller: one call
    remains)."""
    if layout == SPANS and want_xn:
        _sweep_spans_xn(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)
    elif layout == SPANS:
        _sweep_spans(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)
    elif layout == HALF_ROWS and want_xn:
        _sweep_half_xn(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)
    elif layout == HALF_ROWS:
        _sweep_half(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)
    elif layout == QUAD_ROWS and want_xn:
        _sweep_quad_xn(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)
    elif layout == QUAD_ROWS:
        _sweep_quad(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)
    elif layout == TWO_QUADS and want_xn:
        _sweep_two_quads_xn(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)
    elif layout == TWO_QUADS:
        _sweep_two_quads(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch)


@njit(cache=True, inline="always", error_model="numpy")
def _samples(layout, want_xn, flat, x, out, xn, d, epsilon, given, stream, gamma, beta, part,
             stats, b0, b1):
    """Statistics then sweep, sample by sample (each sample is still in cache). ``flat``
    (the serial driver) inlines the statistics block and the sweep: linked in as
    compiled functions, their code would be optimized once more in the driver. The chunks
    driver calls them (a parallel loop's large inlined body costs Numba's parfor
    passes)."""
    w = span_reps(d.channels) * d.channels
    lanes = np.empty(3 * w, dtype=np.float32)
    scratch = np.empty(4 * w, dtype=np.float32)
    for b in range(b0, b1):
        base = b * d.positions * d.channels
        if not given:
            for k in range(d.nblk):
                p0, p1 = k * d.block, min((k + 1) * d.block, d.positions)
                if flat:
                    _stats_body(layout, x, base, p0, p1, d, lanes, part, b, k)
                else:
                    _stats_block(layout, x, base, p0, p1, d, lanes, part, b, k)
            _finish_stats(x, b, d, epsilon, part, stats)
        # ``b - b``: position 0 as a run-time value (a literal argument would compile a
        # second specialization of the sweep, beside the blocks driver's)
        if flat:
            _sweep_body(layout, want_xn, x, out, xn, stream, b, b - b, d.positions, d, stats,
                        gamma, beta, scratch)
        else:
            _sweep(layout, want_xn, x, out, xn, stream, b, b - b, d.positions, d, stats, gamma,
                   beta, scratch)


@functools.cache
def forward_kernel(layout: int, mode: int, want_xn: bool):
    """The compiled forward driver of one layout, mode and ``want_xn`` (compiled on first
    use).

    The driver is ``kernel(x, out, xn, d, epsilon, given, stream, gamma, beta, part,
    stats)``: flat float32 ``x``, ``out``, ``xn`` (written when ``want_xn``); ``d`` the
    plan's ``Dims``; ``given`` when ``stats[0]`` (mean) and ``stats[2]`` (inv_std) hold
    fixed statistics; ``part[2, batch, nblk, groups]`` float64 block partials;
    ``stats[3, batch * groups]`` float32 mean, var, inv_std (written unless given). Serial
    and parallel drivers are distinct functions (Numba's cache does not tell ``parallel=``
    apart); the layout and ``want_xn`` are the closure's constants, so Numba prunes the
    other layouts' calls and the unwanted stores before typing.
    """
    variant = f"{layout}_{int(want_xn)}"
    if mode == SERIAL:
        @njit(cache=True, variant=variant, error_model="numpy")
        def group_forward_serial(x, out, xn, d, epsilon, given, stream, gamma, beta, part,
                                 stats):
            _samples(layout, want_xn, True, x, out, xn, d, epsilon, given, stream, gamma,
                     beta, part, stats, 0, d.batch)

        return group_forward_serial
    if mode == CHUNKS:
        @njit(cache=True, variant=variant, parallel=True, error_model="numpy")
        def group_forward_chunks_parallel(x, out, xn, d, epsilon, given, stream, gamma, beta,
                                          part, stats):
            for j in prange((d.batch + d.spc - 1) // d.spc):
                _samples(layout, want_xn, False, x, out, xn, d, epsilon, given, stream, gamma,
                         beta, part, stats, j * d.spc, min((j + 1) * d.spc, d.batch))

        return group_forward_chunks_parallel

    @njit(cache=True, variant=variant, parallel=True, error_model="numpy")
    def group_forward_blocks_parallel(x, out, xn, d, epsilon, given, stream, gamma, beta,
                                      part, stats):
        """Few samples: each split into its position blocks, statistics then sweep."""
        w = span_reps(d.channels) * d.channels
        if not given:
            for t in prange(d.batch * d.nblk):
                b = t // d.nblk
                k = t - b * d.nblk
                lanes = np.empty(3 * w, dtype=np.float32)
                _stats_block(layout, x, b * d.positions * d.channels, k * d.block,
                             min((k + 1) * d.block, d.positions), d, lanes, part, b, k)
            for b in range(d.batch):
                _finish_stats(x, b, d, epsilon, part, stats)
        for t in prange(d.batch * d.nblk):
            b, k = reversed_task(t, d.batch, d.nblk)
            scratch = np.empty(4 * w, dtype=np.float32)
            _sweep(layout, want_xn, x, out, xn, stream, b, k * d.block,
                   min((k + 1) * d.block, d.positions), d, stats, gamma, beta, scratch)

    return group_forward_blocks_parallel
