"""Deterministic fold kernels shared by the normalization layers (Numba).

Every reduction here folds fixed, shape-derived blocks: the block size comes from the
channel count alone (:func:`rows_per_block`), each block is folded serially, and the
block partials are merged in block order. The serial and parallel variants call the same
block helper, so they give the same bits whatever the thread count; a tuning gate only
decides which variant runs.

Accumulators: float32 inside a block (as the seed; it keeps the per-channel loops at
full SIMD width), float64 for the merge of block partials.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit
from tinynet.math.reduction import DET_REDUCE_BLOCK

__all__ = ["rows_per_block", "segment_sum", "segment_dot", "shifted_segment_sums", "col_sum", "col_dot",
           "merge_rows_serial", "merge_rows_parallel", "LANES"]

LANES = 8


def rows_per_block(channels: int) -> int:
    """Rows per fold block: about ``DET_REDUCE_BLOCK`` elements, at least one row."""
    return max(DET_REDUCE_BLOCK // max(int(channels), 1), 1)


@njit(cache=True, inline="always", error_model="numpy")
def segment_sum(x, start, stop):
    """float32 sum of ``x[start:stop]`` over 8 lanes, combined in lane order.

    Lane ``k`` takes elements ``start + k, start + 8 + k, ...``; the tail of fewer than 8
    elements goes to lanes ``0, 1, ...``; the total is ``((a0 + a1) + a2) + ... + a7``.
    The lanes are scalars over a view indexed from 0, which LLVM packs into one SIMD
    register (an 8-element array would round-trip memory on every add).
    """
    xs = x[start:stop]
    n8 = ((stop - start) // LANES) * LANES
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
    for j in range(0, n8, LANES):
        a0 += xs[j]
        a1 += xs[j + 1]
        a2 += xs[j + 2]
        a3 += xs[j + 3]
        a4 += xs[j + 4]
        a5 += xs[j + 5]
        a6 += xs[j + 6]
        a7 += xs[j + 7]
    t = xs[n8:]
    r = t.size
    if r > 0:
        a0 += t[0]
    if r > 1:
        a1 += t[1]
    if r > 2:
        a2 += t[2]
    if r > 3:
        a3 += t[3]
    if r > 4:
        a4 += t[4]
    if r > 5:
        a5 += t[5]
    if r > 6:
        a6 += t[6]
    return ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7


@njit(cache=True, inline="always", error_model="numpy")
def segment_dot(a, b, start, stop):
    """float32 dot of ``a[start:stop]`` and ``b[start:stop]`` over 8 lanes (as
    :func:`segment_sum`, each product rounded before it is added)."""
    xa = a[start:stop]
    xb = b[start:stop]
    n8 = ((stop - start) // LANES) * LANES
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
    for j in range(0, n8, LANES):
        a0 += xa[j] * xb[j]
        a1 += xa[j + 1] * xb[j + 1]
        a2 += xa[j + 2] * xb[j + 2]
        a3 += xa[j + 3] * xb[j + 3]
        a4 += xa[j + 4] * xb[j + 4]
        a5 += xa[j + 5] * xb[j + 5]
        a6 += xa[j + 6] * xb[j + 6]
        a7 += xa[j + 7] * xb[j + 7]
    ta = xa[n8:]
    tb = xb[n8:]
    r = ta.size
    if r > 0:
        a0 += ta[0] * tb[0]
    if r > 1:
        a1 += ta[1] * tb[1]
    if r > 2:
        a2 += ta[2] * tb[2]
    if r > 3:
        a3 += ta[3] * tb[3]
    if r > 4:
        a4 += ta[4] * tb[4]
    if r > 5:
        a5 += ta[5] * tb[5]
    if r > 6:
        a6 += ta[6] * tb[6]
    return ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7


@njit(cache=True, inline="always", error_model="numpy")
def segment_dot2(w, a, b, start, stop):
    """``(segment_dot(w, a), segment_dot(w, b))`` in one pass (the same bits as two)."""
    xw = w[start:stop]
    xa = a[start:stop]
    xb = b[start:stop]
    n8 = ((stop - start) // LANES) * LANES
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = np.float32(0.0)
    for j in range(0, n8, LANES):
        a0 += xw[j] * xa[j]
        a1 += xw[j + 1] * xa[j + 1]
        a2 += xw[j + 2] * xa[j + 2]
        a3 += xw[j + 3] * xa[j + 3]
        a4 += xw[j + 4] * xa[j + 4]
        a5 += xw[j + 5] * xa[j + 5]
        a6 += xw[j + 6] * xa[j + 6]
        a7 += xw[j + 7] * xa[j + 7]
        b0 += xw[j] * xb[j]
        b1 += xw[j + 1] * xb[j + 1]
        b2 += xw[j + 2] * xb[j + 2]
        b3 += xw[j + 3] * xb[j + 3]
        b4 += xw[j + 4] * xb[j + 4]
        b5 += xw[j + 5] * xb[j + 5]
        b6 += xw[j + 6] * xb[j + 6]
        b7 += xw[j + 7] * xb[j + 7]
    r = (stop - start) - n8
    if r > 0:
        a0 += xw[n8] * xa[n8]
        b0 += xw[n8] * xb[n8]
    if r > 1:
        a1 += xw[n8 + 1] * xa[n8 + 1]
        b1 += xw[n8 + 1] * xb[n8 + 1]
    if r > 2:
        a2 += xw[n8 + 2] * xa[n8 + 2]
        b2 += xw[n8 + 2] * xb[n8 + 2]
    if r > 3:
        a3 += xw[n8 + 3] * xa[n8 + 3]
        b3 += xw[n8 + 3] * xb[n8 + 3]
    if r > 4:
        a4 += xw[n8 + 4] * xa[n8 + 4]
        b4 += xw[n8 + 4] * xb[n8 + 4]
    if r > 5:
        a5 += xw[n8 + 5] * xa[n8 + 5]
        b5 += xw[n8 + 5] * xb[n8 + 5]
    if r > 6:
        a6 += xw[n8 + 6] * xa[n8 + 6]
        b6 += xw[n8 + 6] * xb[n8 + 6]
    sa = ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7
    sb = ((((((b0 + b1) + b2) + b3) + b4) + b5) + b6) + b7
    return sa, sb


@njit(cache=True, inline="always", error_model="numpy")
def shifted_segment_sums(x, start, stop, shift):
    """``(sum(x - shift), sum((x - shift)^2))`` over ``x[start:stop]`` in float32, with the
    lanes and order of :func:`segment_sum` (the same bits as folding ``x - shift`` and its
    square into lanes first)."""
    xs = x[start:stop]
    n8 = ((stop - start) // LANES) * LANES
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = np.float32(0.0)
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = np.float32(0.0)
    for j in range(0, n8, LANES):
        d0 = xs[j] - shift
        d1 = xs[j + 1] - shift
        d2 = xs[j + 2] - shift
        d3 = xs[j + 3] - shift
        d4 = xs[j + 4] - shift
        d5 = xs[j + 5] - shift
        d6 = xs[j + 6] - shift
        d7 = xs[j + 7] - shift
        a0 += d0
        a1 += d1
        a2 += d2
        a3 += d3
        a4 += d4
        a5 += d5
        a6 += d6
        a7 += d7
        b0 += d0 * d0
        b1 += d1 * d1
        b2 += d2 * d2
        b3 += d3 * d3
        b4 += d4 * d4
        b5 += d5 * d5
        b6 += d6 * d6
        b7 += d7 * d7
    t = xs[n8:]
    r = t.size
    if r > 0:
        d = t[0] - shift
        a0 += d
        b0 += d * d
    if r > 1:
        d = t[1] - shift
        a1 += d
        b1 += d * d
    if r > 2:
        d = t[2] - shift
        a2 += d
        b2 += d * d
    if r > 3:
        d = t[3] - shift
        a3 += d
        b3 += d * d
    if r > 4:
        d = t[4] - shift
        a4 += d
        b4 += d * d
    if r > 5:
        d = t[5] - shift
        a5 += d
        b5 += d * d
    if r > 6:
        d = t[6] - shift
        a6 += d
        b6 += d * d
    s1 = ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7
    s2 = ((((((b0 + b1) + b2) + b3) + b4) + b5) + b6) + b7
    return s1, s2


@njit(cache=True, error_model="numpy")
def _col_block(x, y, use_y, channels, r0, r1, out):
    """Column sums (or dots with ``y``) of rows ``r0..r1`` into ``out[:channels]`` (float32)."""
    for c in range(channels):
        out[c] = np.float32(0.0)
    for r in range(r0, r1):
        base = r * channels
        xr = x[base:base + channels]
        if use_y:
            yr = y[base:base + channels]
            for c in range(channels):
                out[c] += xr[c] * yr[c]
        else:
            for c in range(channels):
                out[c] += xr[c]


@njit(cache=True, error_model="numpy")
def _merge_cols(parts, scale):
    nblocks, channels = parts.shape
    acc = np.zeros(channels, dtype=np.float64)
    for b in range(nblocks):
        for c in range(channels):
            acc[c] += parts[b, c]
    out = np.empty(channels, dtype=np.float32)
    for c in range(channels):
        out[c] = np.float32(acc[c] * scale)
    return out


@njit(cache=True, error_model="numpy")
def _col_fold_serial(x, y, use_y, channels, block, scale):
    rows = x.size // channels
    nblocks = (rows + block - 1) // block
    parts = np.empty((nblocks, channels), dtype=np.float32)
    for b in range(nblocks):
        _col_block(x, y, use_y, channels, b * block, min((b + 1) * block, rows), parts[b])
    return _merge_cols(parts, scale)


@njit(cache=True, parallel=True, error_model="numpy")
def _col_fold_parallel(x, y, use_y, channels, block, scale):
    rows = x.size // channels
    nblocks = (rows + block - 1) // block
    parts = np.empty((nblocks, channels), dtype=np.float32)
    for b in prange(nblocks):
        _col_block(x, y, use_y, channels, b * block, min((b + 1) * block, rows), parts[b])
    return _merge_cols(parts, scale)


def _flat(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32).reshape(-1)


def col_sum(x, channels: int, parallel: bool = False, scale: float = 1.0) -> np.ndarray:
    """Per-channel sums of the ``[M, channels]`` view of ``x``, times ``scale``.

    Args:
        x: Channels-last data, any shape whose size is a multiple of ``channels``.
        channels: The trailing axis length ``C``.
        parallel: Run the block folds on Numba's thread pool (same bits either way).
        scale: Multiplies the float64 total before it is rounded to float32.

    Returns:
        float32 ``[channels]``.
    """
    flat = _flat(x)
    fold = _col_fold_parallel if parallel else _col_fold_serial
    return fold(flat, flat, False, channels, rows_per_block(channels), scale)


def col_dot(x, y, channels: int, parallel: bool = False, scale: float = 1.0) -> np.ndarray:
    """Per-channel dot products of the ``[M, channels]`` views of ``x`` and ``y``."""
    fx, fy = _flat(x), _flat(y)
    fold = _col_fold_parallel if parallel else _col_fold_serial
    return fold(fx, fy, True, channels, rows_per_block(channels), scale)


_MERGE_COLS = 64


@njit(cache=True, error_model="numpy")
def _merge_cols_range(parts, out, c0, c1):
    for r in range(parts.shape[1]):
        for c in range(c0, c1):
            out[0, c] += parts[0, r, c]
            out[1, c] += parts[1, r, c]


@njit(cache=True, error_model="numpy")
def merge_rows_serial(parts):
    """Sums ``parts[k, rows, C]`` (float64 task partials) over rows in row order -> float32 ``[k, C]``."""
    acc = np.zeros((2, parts.shape[2]), dtype=np.float64)
    _merge_cols_range(parts, acc, 0, parts.shape[2])
    return acc.astype(np.float32)


@njit(cache=True, parallel=True, error_model="numpy")
def merge_rows_parallel(parts):
    """:func:`merge_rows_serial` with channel ranges spread over threads (same bits)."""
    channels = parts.shape[2]
    acc = np.zeros((2, channels), dtype=np.float64)
    nchunks = (channels + _MERGE_COLS - 1) // _MERGE_COLS
    for j in prange(nchunks):
        _merge_cols_range(parts, acc, j * _MERGE_COLS, min((j + 1) * _MERGE_COLS, channels))
    return acc.astype(np.float32)
