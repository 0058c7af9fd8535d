"""Deterministic blocked reduction kernels: a flat array summed in fixed blocks.

Each block of ``DET_REDUCE_BLOCK`` elements is folded with 8 independent lanes (so the
loop vectorises without fastmath), the lanes are combined in lane order, and the block
partials are merged in block order (:func:`merge_partials`). The grouping depends only on
the length, so the serial and parallel variants give the same bits at any thread count.
:func:`merge_block_rows` is the one ordered float64 merge of block partials the other
folds use (the column folds here, the global average pooling, the tiled convolution's
weight gradient, the normalization's parameter gradients).
``DET_REDUCE_BLOCK`` also sizes the fixed blocks of the other kernels' folds
(:func:`rows_per_block`).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit

__all__ = ["DET_REDUCE_BLOCK", "rows_per_block", "lane_sum", "block_partials_serial",
           "block_partials_parallel", "merge_partials", "merge_block_rows", "merge_cols", "col_fold_serial", "col_fold_parallel"]

DET_REDUCE_BLOCK = 16384
_LANES = 8


@njit(cache=True, error_model="numpy")
def lane_sum(x, start, stop, squares=False):
    """float64 sum of ``x[start:stop]`` (or of its squares) over 8 lanes, in lane order."""
    acc = np.zeros(_LANES, dtype=np.float64)
    n = stop - start
    full = start + (n // _LANES) * _LANES
    for i in range(start, full, _LANES):
        for k in range(_LANES):
            v = np.float64(x[i + k])
            acc[k] += v * v if squares else v
    for i in range(full, stop):
        v = np.float64(x[i])
        acc[i - full] += v * v if squares else v
    total = np.float64(0.0)
    for k in range(_LANES):
        total += acc[k]
    return total


@njit(cache=True, error_model="numpy")
def block_partials_serial(x, block, squares):
    nblocks = (x.size + block - 1) // block
    parts = np.empty(nblocks, dtype=np.float64)
    for b in range(nblocks):
        parts[b] = lane_sum(x, b * block, min((b + 1) * block, x.size), squares)
    return parts


@njit(cache=True, parallel=True, error_model="numpy")
def block_partials_parallel(x, block, squares):
    nblocks = (x.size + block - 1) // block
    parts = np.empty(nblocks, dtype=np.float64)
    for b in prange(nblocks):
        parts[b] = lane_sum(x, b * block, min((b + 1) * block, x.size), squares)
    return parts


@njit(cache=True, error_model="numpy")
def merge_partials(parts):
    total = np.float64(0.0)
    for b in range(parts.size):
        total += parts[b]
    return total



# -- column folds: per-channel sums (or dots) of a [rows, C] view, in fixed row blocks
@njit(cache=True, error_model="numpy")
def col_block(x, y, use_y, channels, r0, r1, out):
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
def merge_block_rows(parts, acc, c0, c1):
    """``acc[c] += parts[b, c]`` for columns ``c0..c1``, the blocks ``b`` in order: the
    ordered float64 merge of block partials (``acc`` float64, zeroed by the caller; the
    order of additions per column depends only on the number of blocks)."""
    for b in range(parts.shape[0]):
        for c in range(c0, c1):
            acc[c] += parts[b, c]


@njit(cache=True, error_model="numpy")
def merge_cols(parts, scale):
    """float32 ``[C]``: the blocks of ``parts[nblocks, C]`` merged in order in float64
    (:func:`merge_block_rows`), times ``scale``, rounded once."""
    channels = parts.shape[1]
    acc = np.zeros(channels, dtype=np.float64)
    merge_block_rows(parts, acc, 0, channels)
    out = np.empty(channels, dtype=np.float32)
    for c in range(channels):
        out[c] = np.float32(acc[c] * scale)
    return out


@njit(cache=True, error_model="numpy")
def col_fold_serial(x, y, use_y, channels, block, scale):
    rows = x.size // channels
    nblocks = (rows + block - 1) // block
    parts = np.empty((nblocks, channels), dtype=np.float32)
    for b in range(nblocks):
        col_block(x, y, use_y, channels, b * block, min((b + 1) * block, rows), parts[b])
    return merge_cols(parts, scale)


@njit(cache=True, parallel=True, error_model="numpy")
def col_fold_parallel(x, y, use_y, channels, block, scale):
    rows = x.size // channels
    nblocks = (rows + block - 1) // block
    parts = np.empty((nblocks, channels), dtype=np.float32)
    for b in prange(nblocks):
        col_block(x, y, use_y, channels, b * block, min((b + 1) * block, rows), parts[b])
    return merge_cols(parts, scale)


def rows_per_block(channels: int) -> int:
    """Rows of ``channels`` values per fold block: about ``DET_REDUCE_BLOCK`` elements, at
    least one row (the global poolings' and the normalization folds' blocks)."""
    return max(DET_REDUCE_BLOCK // max(int(channels), 1), 1)
