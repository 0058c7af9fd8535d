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
from numba import njit, prange

from tinynet.math.reduction import DET_REDUCE_BLOCK

__all__ = ["rows_per_block", "segment_sum", "segment_dot", "col_sum", "col_dot",
           "merge_rows_serial", "merge_rows_parallel", "LANES"]

LANES = 8


def rows_per_block(channels: int) -> int:
    """Rows per fold block: about ``DET_REDUCE_BLOCK`` elements, at least one row."""
    return max(DET_REDUCE_BLOCK // max(int(channels), 1), 1)


@njit(cache=True)
def segment_sum(x, start, stop):
    """float32 sum of ``x[start:stop]`` over 8 lanes, combined in lane order."""
    acc = np.zeros(LANES, dtype=np.float32)
    full = start + ((stop - start) // LANES) * LANES
    for i in range(start, full, LANES):
        for k in range(LANES):
            acc[k] += x[i + k]
    for i in range(full, stop):
        acc[i - full] += x[i]
    total = np.float32(0.0)
    for k in range(LANES):
        total += acc[k]
    return total


@njit(cache=True)
def segment_dot(a, b, start, stop):
    """float32 dot of ``a[start:stop]`` and ``b[start:stop]`` over 8 lanes."""
    acc = np.zeros(LANES, dtype=np.float32)
    full = start + ((stop - start) // LANES) * LANES
    for i in range(start, full, LANES):
        for k in range(LANES):
            acc[k] += a[i + k] * b[i + k]
    for i in range(full, stop):
        acc[i - full] += a[i] * b[i]
    total = np.float32(0.0)
    for k in range(LANES):
        total += acc[k]
    return total


@njit(cache=True)
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


@njit(cache=True)
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


@njit(cache=True)
def _col_fold_serial(x, y, use_y, channels, block, scale):
    rows = x.size // channels
    nblocks = (rows + block - 1) // block
    parts = np.empty((nblocks, channels), dtype=np.float32)
    for b in range(nblocks):
        _col_block(x, y, use_y, channels, b * block, min((b + 1) * block, rows), parts[b])
    return _merge_cols(parts, scale)


@njit(cache=True, parallel=True)
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


@njit(cache=True)
def _merge_cols_range(parts, out, c0, c1):
    for r in range(parts.shape[1]):
        for c in range(c0, c1):
            out[0, c] += parts[0, r, c]
            out[1, c] += parts[1, r, c]


@njit(cache=True)
def merge_rows_serial(parts):
    """Sums ``parts[k, rows, C]`` (float64 task partials) over rows in row order -> float32 ``[k, C]``."""
    acc = np.zeros((2, parts.shape[2]), dtype=np.float64)
    _merge_cols_range(parts, acc, 0, parts.shape[2])
    return acc.astype(np.float32)


@njit(cache=True, parallel=True)
def merge_rows_parallel(parts):
    """:func:`merge_rows_serial` with channel ranges spread over threads (same bits)."""
    channels = parts.shape[2]
    acc = np.zeros((2, channels), dtype=np.float64)
    nchunks = (channels + _MERGE_COLS - 1) // _MERGE_COLS
    for j in prange(nchunks):
        _merge_cols_range(parts, acc, j * _MERGE_COLS, min((j + 1) * _MERGE_COLS, channels))
    return acc.astype(np.float32)
