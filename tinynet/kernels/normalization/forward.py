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

**Compiled pieces.** :func:`forward_kernel` runs one serial driver per ``want_xn`` for
every layout: the whole forward (statistics blocks, merges, sweep) with the layout a
run-time value, so the code all layouts share (block set-up, broadcasts, one-position
spans, folds, merges) is typed and optimized once. A layout's own code, its wide-row
loops (:mod:`.lanes`), is two small kernels per layout (the statistics, and the sweep per
``want_xn``; ``SPANS`` has none) that the driver calls through their addresses
(:mod:`tinynet.kernels.address`) once per block, with the layout's constants folded into
their loops; the unwanted ``xn`` stores are pruned before typing (``want_xn`` is the
closure's constant; the layers never want ``xn``). One parallel driver serves every
layout and holds no copy of the body: each thread calls the serial driver through its
address on its share of the work, named by the ``Dims`` it passes (a run of samples, or
one position block and one pass). A model compiles the serial driver once and the
wide-row kernels of its own layouts, each on first use.
Otherwise inlining stays within a block function (its loops and one-line helpers): Numba
re-derives and copies an inlined function's IR at every call site, so deep chains of
inlined functions cost compile time far beyond their size.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit
from tinynet.kernels.address import _key, call_at
from tinynet.kernels.normalization.folds import group_sums
from tinynet.kernels.normalization.formulas import affine_group, normalized
from tinynet.kernels.normalization.lanes import (STATS, SWEEP, half_sums,
                                                               map_rows, quad_sums)
from tinynet.kernels.normalization.layout import (APPLY_PASS, BLOCKS, BY_BLOCKS, Dims,
                                                                CHUNKS, FINISH_PASS, HALF_ROWS,
                                                                I64, VEC, wide_argument,
                                                                QUAD_ROWS, SERIAL, SPANS,
                                                                STATS_PASS, TWO_QUADS,
                                                                bound_driver, copies_needed,
                                                                expand, fold_copies,
                                                                lane_copies, repeat,
                                                                next_sample_ahead, span,
                                                                span_count, span_reps,
                                                                task_count, task_share,
                                                                wide_rows, zero)

__all__ = ["SERIAL", "CHUNKS", "BLOCKS", "forward_kernel", "forward_bound", "moments",
           "set_stats"]



@njit(cache=True, inline="always", error_model="numpy")
def _shifted_lanes(xs, shift, c1, c2, width):
    for i in range(width):
        d = xs[i] - shift[i]
        c1[i] += d
        c2[i] += d * d


def _wide_stats_fn(layout: int):
    """The wide-row statistics loop of ``layout`` (:mod:`.lanes`), a kernel of its own
    that :func:`_stats_body` calls through its address."""

    @njit(callee=True, cache=True, variant=layout, error_model="numpy")
    def wide_stats(x, start, rows, shift, c1, c2):
        """The shifted-sum lanes ``c1``, ``c2`` of ``rows`` wide rows of ``x`` from
        ``start`` (written, not added to), ``shift`` the broadcast shift."""
        if layout == HALF_ROWS:
            half_sums(STATS, x, x, start, rows, shift, shift, c1, c2)
        elif layout == QUAD_ROWS:
            quad_sums(STATS, 1, x, x, start, rows, shift, shift, c1, c2)
        else:
            quad_sums(STATS, 2, x, x, start, rows, shift, shift, c1, c2)

    return wide_stats


@njit(cache=True, inline="always", error_model="numpy")
def _stats_body(x, base, p0, p1, d, scratch, part, b, k, wide):
    """Shifted sums of positions ``p0..p1`` of the sample at ``base``, reduced to groups
    into ``part[:, b, k]``; ``wide`` is ``(layout, wide-row statistics kernel's address,
    ...)`` (see :func:`forward_kernel`).

    ``scratch`` holds ``3 * reps * C`` floats: the two lane vectors and the broadcast
    shift. A single-position block (a sample of one position) keeps lane copy 0 only:
    no other copy is filled, repeated or folded (its sums are the same bits: a zero
    lane adds nothing to a group sum that starts at zero).
    """
    layout = wide[0]
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
    single = p1 - p0 == 1
    repeat(shift, channels, 1 if single else copies_needed(layout, channels, reps))
    lo = p0
    if layout == SPANS:
        zero(c1, channels if single else w)
        zero(c2, channels if single else w)
    else:
        per_row, rows = wide_rows(layout, p0, p1, channels)
        call_at(wide[1], (x, np.int64(base + p0 * channels), np.int64(rows), shift, c1, c2))
        lo = p0 + rows * per_row  # leftover positions: one-position spans into copy 0
    for q in range(span_count(lo, p1, reps)):
        row, width = span(q, base, lo, p1, reps, channels)
        _shifted_lanes(x[row:row + width], shift, c1, c2, width)
    copies = 1 if single else lane_copies(layout, channels, reps)
    fold_copies(c1, channels, copies)
    fold_copies(c2, channels, copies)
    group_sums(c1, c2, channels, cpg, part, b, k)


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
def moments(s1, s2, n, shift, epsilon):
    """``(mean, var, inv_std)`` in float32 from the sums ``s1``, ``s2`` of ``n`` values'
    differences from ``shift`` and of their squares, computed in float64 (``var``
    biased)."""
    m = np.float64(s1) / n
    v = max(np.float64(s2) / n - m * m, 0.0)
    return (np.float32(np.float64(shift) + m), np.float32(v),
            np.float32(1.0 / np.sqrt(v + epsilon)))


@njit(cache=True, inline="always", error_model="numpy")
def set_stats(x, base, positions, channels, c0, cpg, s1, s2, epsilon, i, stats):
    """Entry ``i`` of ``stats`` (mean, var, inv_std) from the shifted sums ``s1``, ``s2``
    (about ``x[base + c0]``) of one group: channels ``c0..c0 + cpg`` of ``positions``
    positions from ``base``, in float64. Sums that are not finite (float32 squares
    overflowed) are taken again in float64."""
    if not (np.isfinite(s1) and np.isfinite(s2)):
        # int64 throughout: a literal position count or channel (the layer-norm rows)
        # would compile this fallback once more
        s1, s2 = _group_moments_f64(x, base, np.int64(positions), channels, np.int64(c0),
                                    cpg)
    stats[0, i], stats[1, i], stats[2, i] = moments(s1, s2, np.float64(positions * cpg),
                                                    x[base + c0], epsilon)


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


def _wide_sweep_fn(layout: int, want_xn: bool):
    """The wide-row sweep of ``layout`` and ``want_xn`` (:func:`lanes.map_rows`), a kernel
    of its own that :func:`_sweep_body` calls through its address."""

    @njit(callee=True, cache=True, variant=f"{layout}_{int(want_xn)}", error_model="numpy")
    def wide_sweep(x, out, xn, stream, start, rows, ahead, mean_c, inv_c, scale_c, bet):
        """``out`` (and ``xn`` when ``want_xn``) on ``rows`` wide rows from ``start``."""
        if layout == TWO_QUADS:
            map_rows(SWEEP, 2, x, x, out, xn, want_xn, stream, start, rows, ahead, mean_c,
                     inv_c, scale_c, bet)
        else:
            map_rows(SWEEP, 1, x, x, out, xn, want_xn, stream, start, rows, ahead, mean_c,
                     inv_c, scale_c, bet)

    return wide_sweep


def _sweep_fn(want_xn: bool):
    """The sweep for ``want_xn``, inlined into its serial driver (see :func:`_serial_fn`)."""

    @njit(cache=True, inline="always", error_model="numpy")
    def sweep_body(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch, wide):
        """``out`` (and ``xn`` when ``want_xn``) on positions ``r0..r1`` of sample ``b``
        (:func:`formulas.affine_group`); ``scratch`` holds ``4 * reps * C`` floats;
        ``wide`` is ``(layout, ..., wide-row sweep kernel's address)``."""
        layout = wide[0]
        channels = d.channels
        base = b * d.positions * channels
        reps = span_reps(channels)
        w = reps * channels
        mean_c = scratch[:w]
        inv_c = scratch[w:2 * w]
        scale_c = scratch[2 * w:3 * w]
        bet = scratch[3 * w:4 * w]
        expand(stats[0], stats[2], b, channels, d.cpg, mean_c, inv_c)
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
            call_at(wide[2], (x, out, xn, stream, np.int64(base + r0 * channels),
                              np.int64(rows), next_sample_ahead(b, d), mean_c, inv_c,
                              scale_c, bet))
            r0 += rows * per_row
        for q in range(span_count(r0, r1, reps)):
            row, width = span(q, base, r0, r1, reps, channels)
            _sweep_span(x[row:row + width], out[row:row + width],
                        xn[row:row + width] if want_xn else xn, want_xn, mean_c, inv_c,
                        scale_c, bet, width)

    return sweep_body


_WIDE_STATS = {layout: _wide_stats_fn(layout) for layout in (HALF_ROWS, QUAD_ROWS, TWO_QUADS)}
_WIDE_SWEEPS = {(layout, want_xn): _wide_sweep_fn(layout, want_xn)
                for layout in (HALF_ROWS, QUAD_ROWS, TWO_QUADS) for want_xn in (False, True)}
_sweep, _sweep_xn = _sweep_fn(False), _sweep_fn(True)


def _serial_fn(want_xn: bool):
    """The serial driver of ``want_xn``, for every layout: the one compiled body of the
    forward, which the parallel driver calls for each task's share (see
    :func:`forward_kernel`).
    """

    @njit(cache=True, variant=int(want_xn), error_model="numpy")
    def group_forward_serial(x, out, xn, d, epsilon, given, stream, gamma, beta, part, stats,
                             wide):
        w = span_reps(d.channels) * d.channels
        lanes = np.empty(3 * w, dtype=np.float32)
        scratch = np.empty(4 * w, dtype=np.float32)
        r0 = d.k0 * d.block
        r1 = min(d.k1 * d.block, d.positions)
        for b in range(d.lo, d.hi):
            base = b * d.positions * d.channels
            if not given and d.passes & STATS_PASS:
                for k in range(d.k0, d.k1):
                    p0, p1 = k * d.block, min((k + 1) * d.block, d.positions)
                    _stats_body(x, base, p0, p1, d, lanes, part, b, k, wide)
            if not given and d.passes & FINISH_PASS:
                _finish_stats(x, b, d, epsilon, part, stats)
            if d.passes & APPLY_PASS:
                # the sweep is a global, not captured: a captured dispatcher would change
                # the cache key in every process
                if want_xn:
                    _sweep_xn(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch,
                              wide)
                else:
                    _sweep(x, out, xn, stream, b, r0, r1, d, stats, gamma, beta, scratch,
                           wide)

    return group_forward_serial


_serial, _serial_xn = _serial_fn(False), _serial_fn(True)
_SERIAL_DRIVERS = {False: _serial, True: _serial_xn}


def forward_kernel(layout: int, mode: int, want_xn: bool):
    """The forward driver of one layout, mode and ``want_xn`` (its kernels compiled on
    first use).

    The driver is ``kernel(x, out, xn, d, epsilon, given, stream, gamma, beta, part,
    stats)``: flat float32 ``x``, ``out``, ``xn`` (written when ``want_xn``); ``d`` the
    plan's ``Dims`` (the share: all of it from Python); ``given`` when ``stats[0]`` (mean)
    and ``stats[2]`` (inv_std) hold fixed statistics; ``part[2, batch, nblk, groups]``
    float64 block partials; ``stats[3, batch * groups]`` float32 mean, var, inv_std
    (written unless given).

    One serial driver per ``want_xn`` holds the body of every layout: the block set-up,
    the one-position spans, the folds, merges and broadcasts are the same code for all
    layouts, so they are typed and optimized once, not once per layout. A layout's own
    code is its wide-row loops (:mod:`.lanes`): two small kernels per layout (the
    statistics, and the sweep per ``want_xn``), which the serial driver calls through
    their addresses (:mod:`tinynet.kernels.address`), passed in its last argument
    ``wide = (layout, statistics address, sweep address)``; ``SPANS`` has none. A model
    compiles the serial driver once and the wide-row kernels of its own layouts.
    ``CHUNKS`` and ``BLOCKS`` run :func:`group_forward_parallel`, one driver for every
    layout: a loop over tasks that calls the serial driver through its address on each
    task's share (``layout.task_share``; ``Dims.passes`` says which split).
    """
    return functools.partial(_run, layout, mode != SERIAL, want_xn)


_WIDE: dict = {}  # (layout, want_xn, argument types) -> the driver's ``wide`` argument


def _wide(layout: int, want_xn: bool, x, out, xn, stream) -> tuple:
    """The serial driver's ``wide`` argument for ``layout`` and these arrays: the layout
    and the addresses of its wide-row kernels (:func:`layout.wide_argument`)."""
    if layout == SPANS:
        return (SPANS, 0, 0)
    return wide_argument(
        _WIDE, (layout, want_xn, _key(x), _key(out), _key(xn), type(stream)),
        lambda: ((_WIDE_STATS[layout], (x, I64, I64, VEC, VEC, VEC)),
                 (_WIDE_SWEEPS[layout, want_xn], (x, out, xn, stream, I64, I64, I64, VEC,
                                                  VEC, VEC, VEC))))


def forward_bound(layout: int, parallel: bool, want_xn: bool, args: tuple) -> Callable:
    """The driver of :func:`forward_kernel` bound to ``args`` (``x, out, xn, d, epsilon,
    given, stream, gamma, beta, part, stats``): ``run(x, out, xn, epsilon, given, stream,
    gamma, beta, part, stats)`` calls it with ``d`` and the addresses of the wide-row
    kernels and (``parallel``) of the serial driver, found here for the types of ``args``
    (:func:`layout.bound_driver`). Later calls must pass arguments of those types (the
    door keeps its bound drivers by them); each then costs one Python call and the
    driver's."""
    x, out, xn, _, _, _, stream = args[:7]
    return bound_driver(_PARALLEL, layout, want_xn,
                        lambda: _wide(layout, want_xn, x, out, xn, stream),
                        _SERIAL_DRIVERS[want_xn], group_forward_parallel, parallel, args)


_PARALLEL: dict = {}  # (layout, want_xn, the arguments' types) -> (wide, address)


def _run(layout, parallel, want_xn, x, out, xn, d, epsilon, given, stream, gamma, beta, part,
         stats):
    """The driver on the arguments (bound to their types for this call only)."""
    forward_bound(layout, parallel, want_xn, (x, out, xn, d, epsilon, given, stream, gamma,
                                              beta, part, stats))(
        x, out, xn, epsilon, given, stream, gamma, beta, part, stats)


@njit(cache=True, parallel=True, error_model="numpy")
def group_forward_parallel(addr, x, out, xn, dims, epsilon, given, stream, gamma, beta, part,
                           stats, wide):
    """The forward over Numba's threads: each task runs the serial driver at ``addr``
    (:func:`tinynet.kernels.address.entry_address`) on its share of ``dims``; the
    statistics' merges run on this thread between the phases of the blocks split.
    ``dims`` is the plan's ``Dims`` as a plain tuple: Numba types a plain tuple from
    Python faster than a named tuple."""
    d = Dims(*dims)
    # with given statistics, the blocks split runs its last phase only
    by_blocks = (d.passes & BY_BLOCKS) != 0
    first = 2 if given and by_blocks else 0
    for phase in range(first, 3 if by_blocks else 1):
        if phase == 1:  # the merges: a few sums per sample, on this thread
            for b in range(d.batch):
                _finish_stats(x, b, d, epsilon, part, stats)
        else:
            for t in prange(task_count(d, phase)):  # int64 t: one task_share compile
                call_at(addr, (x, out, xn, task_share(d, phase, np.int64(t)), epsilon, given,
                               stream, gamma, beta, part, stats, wide))

