"""Deterministic blocked reductions.

``det_reduce`` sums a flat array in fixed blocks of ``DET_REDUCE_BLOCK`` elements. Each
block is folded with 8 independent lanes (so the loop vectorises without fastmath), the
lanes are combined in lane order, and the block partials are merged in block order. The
grouping depends only on the length, so the serial and parallel variants give the same
bits at any thread count.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet import tuning
from tinynet.kernels._jit import njit

__all__ = ["DET_REDUCE_BLOCK", "det_reduce", "lane_sum"]

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
def _block_partials_serial(x, block, squares):
    nblocks = (x.size + block - 1) // block
    parts = np.empty(nblocks, dtype=np.float64)
    for b in range(nblocks):
        parts[b] = lane_sum(x, b * block, min((b + 1) * block, x.size), squares)
    return parts


@njit(cache=True, parallel=True, error_model="numpy")
def _block_partials_parallel(x, block, squares):
    nblocks = (x.size + block - 1) // block
    parts = np.empty(nblocks, dtype=np.float64)
    for b in prange(nblocks):
        parts[b] = lane_sum(x, b * block, min((b + 1) * block, x.size), squares)
    return parts


@njit(cache=True, error_model="numpy")
def _merge(parts):
    total = np.float64(0.0)
    for b in range(parts.size):
        total += parts[b]
    return total


def det_reduce(x, *, squares: bool = False,
               gate: str = "reduce_parallel_min_elems") -> float:
    """Deterministic sum of every element of ``x`` (or of their squares), in float64.

    Args:
        x: Any array-like; flattened (C order) and converted to float32.
        squares: Sum ``x**2`` instead (gradient norms for clipping).
        gate: The tuning gate that picks the serial or parallel fold.

    Returns:
        The sum as a Python float, bitwise independent of gates and threads.
    """
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    if flat.size == 0:
        return 0.0
    if tuning.use_parallel(gate, flat.size):
        parts = _block_partials_parallel(flat, DET_REDUCE_BLOCK, squares)
    else:
        parts = _block_partials_serial(flat, DET_REDUCE_BLOCK, squares)
    return float(_merge(parts))
