"""Layer norm's rows: one position and one group per sample.

On the view ``[rows, 1, C]`` each sample is a single row. The statistics and outputs
are those of the group kernels (the same shifted sums, :func:`forward.set_stats`); the
parameter partials fold each chunk of ``spc`` rows in float32 lanes, in row order (as a
position block), instead of one float64 row per sample. The path is chosen by shape
alone, so gates and threads never change bits.

The row *kind*, fixed by ``C`` (:func:`layout.row_kind`), decides the loops: 64 and 32
features run register kernels (:mod:`.rows_registers`); other multiples of 16 take whole
``f32x16`` vectors; multiples of 8 take rows in pairs whose two 8-lane folds run as one
(:func:`folds.shifted_sums_pair`, :func:`folds.segment_dot2_pair`: each row's bits); the
rest one row at a time. A serial kernel runs a range of chunks (the kind's row loop on
their rows), compiled on first use; the parallel variant runs it one chunk a task through
its address (:func:`tinynet.kernels.address.bound_parallel`), with no compiled copy of its
own.

What costs compile time is the code Numba inlines, so each loop is inlined where it is
the kernel's own and called where kernels share it. The forward is one kernel for every
kind (the kind a run-time argument): it takes a block of rows' statistics, then
sweeps the block (:func:`_block_stats`, :func:`_sweep_vectors`, :func:`_sweep_floats`,
called once a block, not once a row). The backward has a kernel for 64 features, one for
32, one for the other multiples of 16, and one for the pair and single kinds (whether
rows pair tested at run time; the vector loop's choice is a constant, as a run-time test
it slowed that loop); rows taken one at a time go through one called loop
(:func:`rows_registers.single_rows`), and the merge of the chunk partials is the merge
kernel, called (:func:`folds.merge_rows_range`).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import bound_parallel
from tinynet.kernels.simd import LANES as SIMD_LANES
from tinynet.kernels.simd import sfence, vload, vprefetch, vsplat, vstore
from tinynet.kernels.normalization.folds import (LANES, merge_rows_chunks,
                                                               merge_rows_range,
                                                               merge_rows_bound,
                                                               segment_dot2_pair,
                                                               shifted_segment_sums,
                                                               shifted_sums_pair)
from tinynet.kernels.normalization.formulas import affine_row, dx_row, normalized
from tinynet.kernels.normalization.forward import moments, set_stats
from tinynet.kernels.normalization.lanes import put
from tinynet.kernels.normalization.layout import PAIRS, ROWS32, ROWS64, SINGLE, VECTORS
from tinynet.kernels.normalization.rows_registers import (coefficients, flush, rows32,
                                                                        rows64, single_rows)

__all__ = ["forward_rows_kernel", "backward_rows_kernel", "forward_rows_bound",
           "backward_rows_bound"]

@njit(callee=True, cache=True, error_model="numpy")
def _sweep_vectors(want_xn, x, out, xn, stream, r0, r1, channels, gamma, beta, stats, ahead,
                   limit):
    """Rows ``r0..r1``'s ``out`` (and ``xn``) in whole ``f32x16`` vectors (``C`` a
    multiple of 16), streamed when asked. Each vector also asks for the line ``ahead``
    floats further in ``x`` (below ``limit``): the next block, whose statistics pass then
    finds it in the cache instead of waiting for memory row by row."""
    for r in range(r0, r1):
        row = r * channels
        vm = vsplat(stats[0, r])
        vs = vsplat(stats[2, r])
        for c in range(0, channels, SIMD_LANES):
            if row + c + ahead < limit:
                vprefetch(x, row + c + ahead)
            t = normalized(vload(x, row + c), vm, vs)
            if want_xn:
                put(xn, row + c, t, stream)
            put(out, row + c, affine_row(t, vload(gamma, c), vload(beta, c)), stream)


@njit(callee=True, cache=True, error_model="numpy")
def _sweep_floats(want_xn, x, out, xn, r0, r1, channels, gamma, beta, stats):
    """Rows ``r0..r1``'s ``out`` (and ``xn``) one float at a time: the operations of
    :func:`_sweep_vectors`."""
    for r in range(r0, r1):
        row = r * channels
        mu = stats[0, r]
        sc = stats[2, r]
        xr = x[row:row + channels]
        orow = out[row:row + channels]
        nrow = xn[row:row + channels] if want_xn else xn
        for c in range(channels):
            t = normalized(xr[c], mu, sc)
            if want_xn:
                nrow[c] = t
            orow[c] = affine_row(t, gamma[c], beta[c])


@njit(callee=True, cache=True, error_model="numpy")
def _block_stats(x, r0, r1, channels, epsilon, stats, pairs, sums):
    """The statistics of rows ``r0..r1`` (at most ``sums.shape[1]`` rows). First each
    row's shifted sums and shift into ``sums`` (with ``pairs``, ``C`` a multiple of 8, two
    rows at a time: one chain of additions serving both rows' 8-lane folds, each row's
    bits; then an odd last row alone), then the block's statistics in one loop over its
    rows, which compiles to vector divisions and square roots (row by row, the divisions
    and square root of each row cost more than its sums). A block with a sum that is not
    finite takes :func:`set_stats` row by row (its float64 fallback)."""
    s1 = sums[0]
    s2 = sums[1]
    shift = sums[2]
    r = r0
    if pairs:
        while r + 1 < r1:
            row = r * channels
            i = r - r0
            s1[i], s2[i], s1[i + 1], s2[i + 1] = shifted_sums_pair(x, row, row + channels,
                                                                    channels)
            shift[i] = x[row]
            shift[i + 1] = x[row + channels]
            r += 2
    for q in range(r, r1):
        row = q * channels
        s1[q - r0], s2[q - r0] = shifted_segment_sums(x, row, row + channels, x[row])
        shift[q - r0] = x[row]
    count = r1 - r0
    finite = True
    for i in range(count):
        finite = finite & np.isfinite(s1[i]) & np.isfinite(s2[i])
    if not finite:
        for i in range(count):
            set_stats(x, (r0 + i) * channels, 1, channels, 0, channels, s1[i], s2[i],
                      epsilon, r0 + i, stats)
        return
    n = np.float64(channels)
    # one-dimensional views: the loop over 2-D ``stats`` did not vectorize
    mean = stats[0, r0:r1]
    var = stats[1, r0:r1]
    inv_std = stats[2, r0:r1]
    for i in range(count):
        mean[i], var[i], inv_std[i] = moments(s1[i], s2[i], n, shift[i], epsilon)


# Floats of a block of rows whose statistics are taken before its sweep: the block is
# still in L1 when the sweep reads it, and each called loop runs over many rows.
_BLOCK_FLOATS = 2048


@njit(cache=True, inline="always", error_model="numpy")
def _fwd_rows(kind, want_xn, x, out, xn, r0, r1, channels, epsilon, given, stream, gamma,
              beta, stats):
    """Rows ``r0..r1`` in blocks of an even number of rows: the block's statistics, then
    its sweep."""
    step = 2 * max(_BLOCK_FLOATS // (2 * channels), 1)
    sums = np.empty((3, step), dtype=np.float32)  # a block's shifted sums and shifts
    for b0 in range(r0, r1, step):
        b1 = min(b0 + step, r1)
        if not given:
            _block_stats(x, b0, b1, channels, epsilon, stats, kind != SINGLE, sums)
        if kind == VECTORS:
            _sweep_vectors(want_xn, x, out, xn, stream, b0, b1, channels, gamma, beta, stats,
                           step * channels, r1 * channels)
        else:
            _sweep_floats(want_xn, x, out, xn, b0, b1, channels, gamma, beta, stats)
    if stream:
        sfence()


def _chunks(d) -> int:
    """How many chunks of ``spc`` rows cover the batch."""
    return (d.batch + d.spc - 1) // d.spc


@njit(cache=True, error_model="numpy")
def rows_forward_serial(kind, x, out, xn, rows, channels, spc, epsilon, given, want_xn, stream,
                        gamma, beta, stats, j0, j1):
    """The serial forward of rows over chunks ``j0..j1``: the row loop of ``kind`` (a
    run-time value: one compiled kernel for every kind) on their rows (a row's bits do
    not depend on the rows beside it)."""
    _fwd_rows(kind, want_xn, x, out, xn, j0 * spc, min(j1 * spc, rows), channels, epsilon,
              given, stream, gamma, beta, stats)


def forward_rows_bound(kind: int, parallel: bool, args: tuple) -> Callable:
    """The forward of :func:`forward_rows_kernel` bound to ``args`` (``x, out, xn, d,
    epsilon, given, want_xn, stream, gamma, beta, stats``): ``run(x, out, xn, epsilon,
    given, want_xn, stream, gamma, beta, stats)``, with ``d`` and (``parallel``) the
    serial kernel's address and slot invoker found here for the types of ``args``; later
    calls must pass arguments of those types."""
    x, out, xn, d = args[:4]
    kind = max(kind, VECTORS)  # one kernel serves every kind; the forward treats every
    # vector kind alike
    serial = rows_forward_serial
    chunks = _chunks(d)
    # the dimensions as scalars: a named tuple cannot reach the parallel driver's threads
    batch, channels, spc = d.batch, d.channels, d.spc
    if not parallel:
        def run(x, out, xn, epsilon, given, want_xn, stream, gamma, beta, stats):
            serial(kind, x, out, xn, batch, channels, spc, epsilon, given, want_xn, stream,
                   gamma, beta, stats, 0, chunks)

        return run
    tasks = bound_parallel(serial, (kind, x, out, xn, batch, channels, spc, *args[4:]))

    def run(x, out, xn, epsilon, given, want_xn, stream, gamma, beta, stats):
        tasks(chunks, kind, x, out, xn, batch, channels, spc, epsilon, given, want_xn,
              stream, gamma, beta, stats)

    return run


def _forward_rows(kind, parallel, x, out, xn, d, epsilon, given, want_xn, stream, gamma,
                  beta, stats):
    forward_rows_bound(kind, parallel, (x, out, xn, d, epsilon, given, want_xn, stream,
                                        gamma, beta, stats))(
        x, out, xn, epsilon, given, want_xn, stream, gamma, beta, stats)


@functools.cache
def forward_rows_kernel(kind: int, parallel: bool):
    """``kernel(x, out, xn, d, epsilon, given, want_xn, stream, gamma, beta, stats)`` for
    rows of one kind: chunks of ``spc`` rows by one compiled serial kernel, on the calling
    thread or one chunk a task over threads (through its address) when ``parallel``."""
    return functools.partial(_forward_rows, kind, parallel)


@njit(cache=True, inline="always", error_model="numpy")
def _terms_vec(recompute, g, s, row, m, k, vb, vo, au, av):
    """Row ``row``'s ``g * xn`` into ``vb[vo:]`` and ``g``, ``g * xn`` added to the lanes,
    in ``f32x16`` vectors."""
    vm = vsplat(m)
    vk = vsplat(k)
    for c in range(0, au.size, SIMD_LANES):
        gv = vload(g, row + c)
        t = gv * (normalized(vload(s, row + c), vm, vk) if recompute else vload(s, row + c))
        vstore(vb, vo + c, t)
        vstore(au, c, vload(au, c) + gv)
        vstore(av, c, vload(av, c) + t)


@njit(cache=True, inline="always", error_model="numpy")
def _dx_vec(recompute, affine_only, g, s, dx, row, stream, m, k, sa, sb, gamma, n):
    """A row's ``dx`` in ``f32x16`` vectors, streamed when asked."""
    a, b = coefficients(sa, sb, n, affine_only)
    va = vsplat(a)
    vb = vsplat(b)
    vm = vsplat(m)
    vk = vsplat(k)
    for c in range(0, gamma.size, SIMD_LANES):
        xv = normalized(vload(s, row + c), vm, vk) if recompute else vload(s, row + c)
        put(dx, row + c, dx_row(vload(g, row + c), xv, vk, vload(gamma, c), va, vb), stream)


@njit(cache=True, inline="always", error_model="numpy")
def _row_terms(recompute, gr, sr, m, k, vb, au, av):
    for c in range(gr.size):
        t = gr[c] * (normalized(sr[c], m, k) if recompute else sr[c])
        vb[c] = t
        au[c] += gr[c]
        av[c] += t


@njit(cache=True, inline="always", error_model="numpy")
def _row_dx(recompute, affine_only, gr, sr, dr, m, k, sa, sb, gamma, n):
    a, b = coefficients(sa, sb, n, affine_only)
    for c in range(gr.size):
        dr[c] = dx_row(gr[c], normalized(sr[c], m, k) if recompute else sr[c], k, gamma[c],
                       a, b)


@njit(cache=True, inline="always", error_model="numpy")
def _bwd_rows(vectors, pairs, recompute, affine_only, g, s, dx, stream, r0, r1, channels, spc,
              stats, gamma, parts, vbuf, acc):
    """Rows ``r0..r1`` in pairs (``pairs``: ``C`` a multiple of 8), in whole ``f32x16``
    vectors (``vectors``, a constant: ``C`` a multiple of 16), else one at a time; the
    parameter partial of each chunk of ``spc`` rows is folded in float32 lanes over its
    rows in order (as a position block), then stored as a row."""
    n = np.float64(channels)
    au = acc[0]
    av = acc[1]
    va = vbuf[:channels]
    vb = vbuf[channels:]
    for c0 in range(r0 - r0 % spc, r1, spc):  # the parameter-partial chunks touched
        hi = min(c0 + spc, r1)
        r = max(c0, r0)
        if pairs:
            while r + 1 < hi:
                row = r * channels
                nxt = row + channels
                m0, k0, m1, k1 = stats[0, r], stats[1, r], stats[0, r + 1], stats[1, r + 1]
                if vectors:  # whole f32x16 vectors per row, no row slices
                    _terms_vec(recompute, g, s, row, m0, k0, vbuf, 0, au, av)
                    _terms_vec(recompute, g, s, nxt, m1, k1, vbuf, channels, au, av)
                else:
                    _row_terms(recompute, g[row:nxt], s[row:nxt], m0, k0, va, au, av)
                    _row_terms(recompute, g[nxt:nxt + channels], s[nxt:nxt + channels], m1,
                               k1, vb, au, av)
                sa, sb, ta, tb = segment_dot2_pair(gamma, g, row, nxt, vbuf, np.int64(0),
                                                   channels, channels)
                if vectors:
                    _dx_vec(recompute, affine_only, g, s, dx, row, stream, m0, k0, sa, sb,
                            gamma, n)
                    _dx_vec(recompute, affine_only, g, s, dx, nxt, stream, m1, k1, ta, tb,
                            gamma, n)
                else:
                    _row_dx(recompute, affine_only, g[row:nxt], s[row:nxt], dx[row:nxt], m0,
                            k0, sa, sb, gamma, n)
                    _row_dx(recompute, affine_only, g[nxt:nxt + channels],
                            s[nxt:nxt + channels], dx[nxt:nxt + channels], m1, k1, ta, tb,
                            gamma, n)
                r += 2
        if r < hi:  # a chunk's odd last row, or every row of the SINGLE kind
            single_rows(recompute, affine_only, g, s, dx, r, hi, channels, stats, gamma, acc,
                        va)
        flush(parts, c0 // spc, acc, channels)


@functools.cache
def _backward_rows_serial(kind: int, layers: bool):
    """The serial backward of ``kind``'s rows over chunks ``j0..j1`` (its row loop on their
    rows, a partial per chunk), then (``merge``) the merge of the chunk partials. With
    ``layers``, for the calls the layers make (``xn`` recomputed, no ``affine_only``:
    constants of the row loop); else with both flags tested at run time, for the other
    calls of the core, compiled only when one comes. The ``VECTORS``, ``PAIRS`` and
    ``SINGLE`` kinds share one kernel (:func:`_bwd_rows`)."""
    kind = min(kind, PAIRS)

    @njit(cache=True, variant=f"{kind}_{layers:d}", error_model="numpy")
    def rows_backward_serial(g, s, dx, rows, channels, spc, recompute, affine_only, stream,
                             gamma, stats, sums, parts, merge, j0, j1):
        r0 = j0 * spc
        r1 = min(j1 * spc, rows)
        vbuf = np.empty(2 * channels, dtype=np.float32)
        acc = np.zeros((2, channels), dtype=np.float32)
        # one branch is left (``kind`` and ``layers`` are constants), pruned before
        # anything is inlined
        if layers:
            if kind == ROWS64:
                rows64(True, False, g, s, dx, stream, r0, r1, spc, stats, gamma, parts, vbuf,
                       acc)
            elif kind == ROWS32:
                rows32(True, False, g, s, dx, stream, r0, r1, spc, stats, gamma, parts, vbuf,
                       acc)
            elif kind == VECTORS:
                _bwd_rows(True, True, True, False, g, s, dx, stream, r0, r1, channels, spc,
                          stats, gamma, parts, vbuf, acc)
            else:
                _bwd_rows(False, channels % LANES == 0, True, False, g, s, dx, stream, r0, r1,
                          channels, spc, stats, gamma, parts, vbuf, acc)
        elif kind == ROWS64:
            rows64(recompute, affine_only, g, s, dx, stream, r0, r1, spc, stats, gamma, parts,
                   vbuf, acc)
        elif kind == ROWS32:
            rows32(recompute, affine_only, g, s, dx, stream, r0, r1, spc, stats, gamma, parts,
                   vbuf, acc)
        elif kind == VECTORS:
            _bwd_rows(True, True, recompute, affine_only, g, s, dx, stream, r0, r1, channels,
                      spc, stats, gamma, parts, vbuf, acc)
        else:
            _bwd_rows(False, channels % LANES == 0, recompute, affine_only, g, s, dx, stream,
                      r0, r1, channels, spc, stats, gamma, parts, vbuf, acc)
        if stream:
            sfence()
        if merge:  # the merge kernel, called: compiled once for every kind (an int64 0,
            # not a literal, so the call matches merge_rows_serial's compiled signature)
            total = np.zeros((2, channels), dtype=np.float64)
            merge_rows_range(parts, total, sums[0], sums[1], np.int64(0),
                             merge_rows_chunks(channels))

    return rows_backward_serial


def backward_rows_bound(kind: int, layers: bool, parallel: bool, args: tuple) -> Callable:
    """The backward of :func:`backward_rows_kernel` bound to ``args`` (``g, s, dx, d,
    recompute, affine_only, stream, gamma, stats, sums, parts``): ``run(g, s, dx,
    recompute, affine_only, stream, gamma, stats, sums, parts)``, as
    :func:`forward_rows_bound`."""
    g, s, dx, d = args[:4]
    serial = _backward_rows_serial(kind, layers)
    chunks = _chunks(d)
    batch, channels, spc = d.batch, d.channels, d.spc
    if not parallel:
        def run(g, s, dx, recompute, affine_only, stream, gamma, stats, sums, parts):
            serial(g, s, dx, batch, channels, spc, recompute, affine_only, stream, gamma,
                   stats, sums, parts, True, 0, chunks)

        return run
    tasks = bound_parallel(serial, (g, s, dx, batch, channels, spc, *args[4:], False))
    sums, parts = args[9:]
    merge = merge_rows_bound(parts, sums[0], sums[1])

    def run(g, s, dx, recompute, affine_only, stream, gamma, stats, sums, parts):
        tasks(chunks, g, s, dx, batch, channels, spc, recompute, affine_only, stream, gamma,
              stats, sums, parts, False)
        merge(parts, sums[0], sums[1])

    return run


def _backward_rows(kind, layers, parallel, g, s, dx, d, recompute, affine_only, stream, gamma,
                   stats, sums, parts):
    backward_rows_bound(kind, layers, parallel, (g, s, dx, d, recompute, affine_only, stream,
                                                 gamma, stats, sums, parts))(
        g, s, dx, recompute, affine_only, stream, gamma, stats, sums, parts)


@functools.cache
def backward_rows_kernel(kind: int, layers: bool, parallel: bool):
    """``kernel(g, s, dx, d, recompute, affine_only, stream, gamma, stats, sums, parts)``
    for rows of one kind: ``stats[2, rows]`` mean and inv_std, ``parts[2, ntasks, C]``
    float64 chunk partials; the kernel merges them (as :func:`folds.merge_rows_serial`,
    the same bits) into ``sums[2, C]`` = (grad_beta, grad_gamma), saving a second
    dispatch. ``layers``: the call recomputes ``xn`` without ``affine_only`` (as the layers
    do), the one case whose flags are constants of the loops. One compiled serial kernel
    runs the chunks, on the calling thread or one chunk a task over threads (through its
    address) when ``parallel``."""
    return functools.partial(_backward_rows, kind, layers, parallel)
