"""Deterministic fold kernels shared by the normalization layers (Numba).

Every reduction here folds fixed, shape-derived blocks: the block size comes from the
channel count alone (:func:`rows_per_block`), each block is folded serially, and the
block partials are merged in block order. The serial and parallel variants call the same
block helper, so they give the same bits whatever the thread count; a tuning gate only
decides which variant runs.

Accumulators: float32 inside a block (as the Rust original; it keeps the per-channel loops at
full SIMD width), float64 for the merge of block partials.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import bound_parallel
from tinynet.kernels.simd import vfold8x4, vload8x2, vsplat, vsplat8x2
from tinynet.kernels.reduction import lanes8_fn, merge_block_rows, rows_per_block

__all__ = ["rows_per_block", "segment_sum", "segment_dot", "segment_dot2", "shifted_segment_sums",
           "shifted_sums_pair", "segment_dot2_pair",
           "merge_rows_serial", "merge_rows_parallel", "merge_rows_into", "merge_rows_chunks",
           "merge_rows_to", "merge_rows_to_parallel", "merge_rows_bound", "merge_rows_range",
           "segment_sum_fn", "group_sums",
           "LANES"]

LANES = 8


# What each lane adds per element (a compile-time constant at every call site, so the
# unused branches and the second accumulator vanish after inlining).
_SUM, _DOT, _DOT2, _SHIFTED = 0, 1, 2, 3


@njit(callee=True, cache=True, error_model="numpy")
def _terms(p, q, r, shift, mode):
    if mode == _SUM:
        return p, np.float32(0.0)
    if mode == _DOT:
        return p * q, np.float32(0.0)
    if mode == _DOT2:
        return p * q, p * r
    d = p - shift
    return d, d * d


_lanes8 = lanes8_fn(_terms, np.float32(0.0), "f32")  # float32 lanes (as the Rust original)


@njit(cache=True, inline="always", error_model="numpy")
def segment_sum(x, start, stop):
    """float32 sum of ``x[start:stop]`` over 8 lanes, combined in lane order (see
    :func:`_lanes8`)."""
    return _lanes8(x, x, x, start, stop, np.float32(0.0), _SUM)[0]


@njit(cache=True, inline="always", error_model="numpy")
def segment_dot(a, b, start, stop):
    """float32 dot of ``a[start:stop]`` and ``b[start:stop]`` over 8 lanes (as
    :func:`segment_sum`, each product rounded before it is added)."""
    return _lanes8(a, b, b, start, stop, np.float32(0.0), _DOT)[0]


@njit(cache=True, inline="always", error_model="numpy")
def segment_dot2(w, a, b, start, stop):
    """``(segment_dot(w, a), segment_dot(w, b))`` in one pass (the same bits as two)."""
    return _lanes8(w, a, b, start, stop, np.float32(0.0), _DOT2)


@njit(cache=True, inline="always", error_model="numpy")
def shifted_segment_sums(x, start, stop, shift):
    """``(sum(x - shift), sum((x - shift)^2))`` over ``x[start:stop]`` in float32, with the
    lanes and order of :func:`segment_sum` (the same bits as folding ``x - shift`` and its
    square into lanes first)."""
    return _lanes8(x, x, x, start, stop, shift, _SHIFTED)


# The same fold as a called function, compiled once: for callers that run it a few times
# per block (the group statistics and gradient sums, through group_sums), where an inlined
# copy per call site would cost compile time and save nothing measurable. Per-row callers
# (layer norm's rows) inline the functions above. It spells the fold out for a plain sum
# (the lanes, the tail and the final order of :func:`_lanes8`, so the same bits): built
# on ``_lanes8`` it typed and lowered eight pairs of terms and a second lane set it then
# dropped, some 0.5 s of the first run's compile of the group-norm forward.
@njit(callee=True, cache=True, error_model="numpy")
def segment_sum_fn(x, start, stop):
    """:func:`segment_sum`, called."""
    p = x[start:stop]
    n8 = ((stop - start) // LANES) * LANES
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
    for j in range(0, n8, LANES):
        a0 += p[j]
        a1 += p[j + 1]
        a2 += p[j + 2]
        a3 += p[j + 3]
        a4 += p[j + 4]
        a5 += p[j + 5]
        a6 += p[j + 6]
        a7 += p[j + 7]
    tail = (stop - start) - n8
    if tail > 0:
        a0 += p[n8]
    if tail > 1:
        a1 += p[n8 + 1]
    if tail > 2:
        a2 += p[n8 + 2]
    if tail > 3:
        a3 += p[n8 + 3]
    if tail > 4:
        a4 += p[n8 + 4]
    if tail > 5:
        a5 += p[n8 + 5]
    if tail > 6:
        a6 += p[n8 + 6]
    return ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7


@njit(cache=True, inline="always", error_model="numpy")
def group_sums(c1, c2, channels, cpg, part, b, k):
    """The channel lanes ``c1``, ``c2`` (``channels`` floats each) reduced to one pair of
    sums per group of ``cpg`` channels, into ``part[0, b, k, g]`` and ``part[1, b, k, g]``:
    the group statistics and the gradient sums of the normalization's block passes."""
    g = 0
    for c0 in range(0, channels, cpg):
        if cpg < LANES:  # the 8-lane fold's own order for a segment shorter than 8
            s1 = s2 = np.float32(0.0)
            for c in range(c0, c0 + cpg):
                s1 += c1[c]
                s2 += c2[c]
            part[0, b, k, g] = s1
            part[1, b, k, g] = s2
        else:
            part[0, b, k, g] = segment_sum_fn(c1, c0, c0 + cpg)
            part[1, b, k, g] = segment_sum_fn(c2, c0, c0 + cpg)
        g += 1


# Two segments at once: the 8 lanes of one segment in lanes 0-7 of an ``f32x16``, the
# other's in lanes 8-15 (``simd.vload8x2``). Each lane sees exactly the additions of
# :func:`_lanes8` and the lanes are added up in its order (``simd.vfold8x4``), so each
# result has its bits, at about twice the speed (one chain of additions serves both
# segments). Segment lengths are multiples of 8 (no tail).
@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def shifted_sums_pair(x, ra, rb, n):
    """:func:`shifted_segment_sums` of ``x[ra:ra + n]`` (shift ``x[ra]``) and of
    ``x[rb:rb + n]`` (shift ``x[rb]``), ``n % 8 == 0``, in one pass: ``(s1a, s2a, s1b,
    s2b)``."""
    k = vsplat8x2(x[ra], x[rb])
    a = vsplat(0.0)
    b = vsplat(0.0)
    for j in range(0, n, LANES):
        t = vload8x2(x, ra + j, rb + j) - k
        a = a + t
        b = b + t * t
    s1a, s1b, s2a, s2b = vfold8x4(a, b)
    return s1a, s2a, s1b, s2b


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def segment_dot2_pair(w, a, ra, rb, b, qa, qb, n):
    """:func:`segment_dot2` of ``w[:n]`` with ``(a[ra:], b[qa:])`` and with ``(a[rb:],
    b[qb:])``, ``n % 8 == 0``, in one pass: ``(da, ea, db, eb)``."""
    s = vsplat(0.0)
    t = vsplat(0.0)
    for j in range(0, n, LANES):
        wv = vload8x2(w, j, j)
        s = s + wv * vload8x2(a, ra + j, rb + j)
        t = t + wv * vload8x2(b, qa + j, qb + j)
    da, db, ea, eb = vfold8x4(s, t)
    return da, ea, db, eb


_MERGE_COLS = 64


@njit(cache=True, inline="always", error_model="numpy")
def merge_rows_into(parts, acc, out0, out1, j):
    """Column chunk ``j`` (:data:`_MERGE_COLS` columns) of the merge of ``parts[k, rows,
    C]`` (float64 task partials): each column's rows added in row order into the zeroed
    float64 ``acc[k, C]``, then rounded once to float32 into ``out0`` (k = 0) and
    ``out1`` (k = 1). Chunks are independent, so threads may take them in any order."""
    c0 = j * _MERGE_COLS
    c1 = min(c0 + _MERGE_COLS, parts.shape[2])
    merge_block_rows(parts[0], acc[0], c0, c1)
    merge_block_rows(parts[1], acc[1], c0, c1)
    for c in range(c0, c1):
        out0[c] = np.float32(acc[0, c])
        out1[c] = np.float32(acc[1, c])


@njit(cache=True, inline="always", error_model="numpy")
def merge_rows_chunks(channels):
    """How many column chunks :func:`merge_rows_into` takes for ``channels`` columns."""
    return (channels + _MERGE_COLS - 1) // _MERGE_COLS


@njit(cache=True, inline="always", error_model="numpy")
def _zeroed2(channels):
    """A zeroed float64 ``[2, channels]`` by a plain loop: ``np.zeros`` in a
    ``parallel=True`` kernel becomes a parallel region of its own (one more wake-up of
    the thread pool)."""
    acc = np.empty((2, channels), dtype=np.float64)
    for c in range(channels):
        acc[0, c] = 0.0
        acc[1, c] = 0.0
    return acc


@njit(cache=True, inline="always", error_model="numpy")
def merge_rows_to(parts, out0, out1):
    """The merge of ``parts[k, rows, C]`` (float64 task partials) into float32 ``out0``
    (k = 0) and ``out1`` (k = 1), chunk after chunk on the calling thread: the kernels'
    in-place :func:`merge_rows_serial` (the same bits)."""
    acc = _zeroed2(parts.shape[2])
    for j in range(merge_rows_chunks(parts.shape[2])):
        merge_rows_into(parts, acc, out0, out1, j)


@njit(cache=True, error_model="numpy")
def merge_rows_range(parts, acc, out0, out1, j0, j1):
    """Column chunks ``j0..j1`` of the merge (:func:`merge_rows_into`); ``acc`` zeroed."""
    for j in range(j0, j1):
        merge_rows_into(parts, acc, out0, out1, j)


def merge_rows_to_parallel(parts: np.ndarray, out0: np.ndarray, out1: np.ndarray) -> None:
    """:func:`merge_rows_to` with the column chunks spread over threads, one chunk a task
    (:func:`tinynet.kernels.address.run_parallel`; the same bits)."""
    merge_rows_bound(parts, out0, out1)(parts, out0, out1)


def merge_rows_bound(parts: np.ndarray, out0: np.ndarray,
                     out1: np.ndarray) -> Callable[[np.ndarray, np.ndarray, np.ndarray], None]:
    """:func:`merge_rows_to_parallel` bound to the types and shape of its arguments
    (:func:`tinynet.kernels.address.bound_parallel`): ``run(parts, out0, out1)``."""
    channels = parts.shape[2]
    chunks = (channels + _MERGE_COLS - 1) // _MERGE_COLS
    acc = np.zeros((2, channels), dtype=np.float64)
    tasks = bound_parallel(merge_rows_range, (parts, acc, out0, out1))

    def run(parts: np.ndarray, out0: np.ndarray, out1: np.ndarray) -> None:
        tasks(chunks, parts, np.zeros((2, channels), dtype=np.float64), out0, out1)

    return run


def merge_rows_serial(parts: np.ndarray) -> np.ndarray:
    """Sums ``parts[k, rows, C]`` (float64 task partials) over rows in row order ->
    float32 ``[k, C]``: every column chunk of :func:`merge_rows_range` (the parallel
    merge's kernel, so a first run compiles one kernel for both) on the calling thread."""
    channels = parts.shape[2]
    out = np.empty((2, channels), dtype=np.float32)
    acc = np.zeros((2, channels), dtype=np.float64)
    merge_rows_range(parts, acc, out[0], out[1], 0, (channels + _MERGE_COLS - 1) // _MERGE_COLS)
    return out


def merge_rows_parallel(parts: np.ndarray) -> np.ndarray:
    """:func:`merge_rows_serial` with column chunks spread over threads (same bits)."""
    out = np.empty((2, parts.shape[2]), dtype=np.float32)
    merge_rows_to_parallel(parts, out[0], out[1])
    return out
