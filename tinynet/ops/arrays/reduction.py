"""Deterministic blocked reductions: :func:`det_reduce`, the operation over the kernels of
:mod:`tinynet.kernels.reduction` (fixed blocks of ``DET_REDUCE_BLOCK`` elements, 8 lanes
each, merged in block order: the same bits serial or parallel, at any thread count), and
the column folds :func:`col_sum` / :func:`col_dot` (bias gradients, the normalization
layers' parameter gradients)."""

from __future__ import annotations

import numpy as np

from tinynet import tuning
from tinynet.kernels.reduction import (DET_REDUCE_BLOCK, block_partials_parallel,
                                       block_partials_serial, col_fold_parallel,
                                       col_fold_serial, lane_sum, merge_partials,
                                       rows_per_block)

__all__ = ["DET_REDUCE_BLOCK", "det_reduce", "lane_sum", "col_sum", "col_dot"]

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
        parts = block_partials_parallel(flat, DET_REDUCE_BLOCK, squares)
    else:
        parts = block_partials_serial(flat, DET_REDUCE_BLOCK, squares)
    return float(merge_partials(parts))


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
    fold = col_fold_parallel if parallel else col_fold_serial
    return fold(flat, flat, False, channels, rows_per_block(channels), scale)


def col_dot(x, y, channels: int, parallel: bool = False, scale: float = 1.0) -> np.ndarray:
    """Per-channel dot products of the ``[M, channels]`` views of ``x`` and ``y``."""
    fx, fy = _flat(x), _flat(y)
    fold = col_fold_parallel if parallel else col_fold_serial
    return fold(fx, fy, True, channels, rows_per_block(channels), scale)
