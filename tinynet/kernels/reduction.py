"""Deterministic blocked reduction kernels: a flat array summed in fixed blocks.

Each block of ``DET_REDUCE_BLOCK`` elements is folded with 8 independent lanes (so the
loop vectorises without fastmath; :func:`lanes8_fn` makes the one 8-lane fold, here with
float64 lanes, in the normalization's segment folds with float32 ones), the lanes are
combined in lane order, and the block
partials are merged in block order (:func:`merge_partials`). The grouping depends only on
the length, so the serial and parallel variants give the same bits at any thread count;
the parallel ones run a serial block loop (``block_sums``, ``col_blocks``) one block a
task through its address (:func:`tinynet.kernels.address.run_parallel`).
:func:`merge_block_rows` is the one ordered float64 merge of block partials the other
folds use (the column folds here, the global average pooling, the tiled convolution's
weight gradient, the normalization's parameter gradients).
``DET_REDUCE_BLOCK`` also sizes the fixed blocks of the other kernels' folds
(:func:`rows_per_block`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.kernels._jit import inlined, njit
from tinynet.kernels.address import run_parallel

__all__ = ["DET_REDUCE_BLOCK", "rows_per_block", "lanes8_fn", "lane_sum", "block_partials_serial",
           "block_partials_parallel", "block_sums", "col_blocks", "merge_partials",
           "merge_block_rows", "merge_cols", "col_fold_serial", "col_fold_parallel"]

DET_REDUCE_BLOCK = 16384
_LANES = 8


def lanes8_fn(terms: Any, zero: Any, variant: str) -> Any:
    """An 8-lane fold (one per terms function and accumulator type; see ``lanes8``), the
    one behind every blocked sum: the normalization's float32 segment folds
    (``folds.segment_*``) and :func:`lane_sum`'s float64 sums. ``terms(p, q, r, shift,
    mode)`` gives the two values each element adds; ``zero`` (``np.float32(0.0)`` or
    ``np.float64(0.0)``) starts the lanes and fixes their type."""

    @njit(cache=True, inline="always", error_model="numpy", variant=variant)
    def lanes8(xp, xq, xr, start, stop, shift, mode):
        """Two lane sets (of ``zero``'s type) accumulate ``terms`` of ``xp[start:stop]``
        (and ``xq``, ``xr``); lane ``k`` takes elements ``start + k, start + 8 + k, ...``,
        the tail of fewer than 8 goes to lanes ``0, 1, ...``, and each set folds as
        ``((a0 + a1) + a2) + ... + a7``.

        The lanes are scalars over views indexed from 0, which LLVM packs into SIMD registers
        (an 8-element array would round-trip memory on every add).
        """
        p = xp[start:stop]
        q = xq[start:stop]
        r = xr[start:stop]
        n8 = ((stop - start) // _LANES) * _LANES
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = zero
        b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = zero
        for j in range(0, n8, _LANES):
            t0, u0 = terms(p[j], q[j], r[j], shift, mode)
            t1, u1 = terms(p[j + 1], q[j + 1], r[j + 1], shift, mode)
            t2, u2 = terms(p[j + 2], q[j + 2], r[j + 2], shift, mode)
            t3, u3 = terms(p[j + 3], q[j + 3], r[j + 3], shift, mode)
            t4, u4 = terms(p[j + 4], q[j + 4], r[j + 4], shift, mode)
            t5, u5 = terms(p[j + 5], q[j + 5], r[j + 5], shift, mode)
            t6, u6 = terms(p[j + 6], q[j + 6], r[j + 6], shift, mode)
            t7, u7 = terms(p[j + 7], q[j + 7], r[j + 7], shift, mode)
            a0 += t0
            a1 += t1
            a2 += t2
            a3 += t3
            a4 += t4
            a5 += t5
            a6 += t6
            a7 += t7
            b0 += u0
            b1 += u1
            b2 += u2
            b3 += u3
            b4 += u4
            b5 += u5
            b6 += u6
            b7 += u7
        tail = (stop - start) - n8
        if tail > 0:
            t, u = terms(p[n8], q[n8], r[n8], shift, mode)
            a0 += t
            b0 += u
        if tail > 1:
            t, u = terms(p[n8 + 1], q[n8 + 1], r[n8 + 1], shift, mode)
            a1 += t
            b1 += u
        if tail > 2:
            t, u = terms(p[n8 + 2], q[n8 + 2], r[n8 + 2], shift, mode)
            a2 += t
            b2 += u
        if tail > 3:
            t, u = terms(p[n8 + 3], q[n8 + 3], r[n8 + 3], shift, mode)
            a3 += t
            b3 += u
        if tail > 4:
            t, u = terms(p[n8 + 4], q[n8 + 4], r[n8 + 4], shift, mode)
            a4 += t
            b4 += u
        if tail > 5:
            t, u = terms(p[n8 + 5], q[n8 + 5], r[n8 + 5], shift, mode)
            a5 += t
            b5 += u
        if tail > 6:
            t, u = terms(p[n8 + 6], q[n8 + 6], r[n8 + 6], shift, mode)
            a6 += t
            b6 += u
        sa = ((((((a0 + a1) + a2) + a3) + a4) + a5) + a6) + a7
        sb = ((((((b0 + b1) + b2) + b3) + b4) + b5) + b6) + b7
        return sa, sb

    return lanes8


_PLAIN, _SQUARES = 0, 1


@njit(callee=True, cache=True, error_model="numpy")
def _terms64(p, q, r, shift, mode):
    v = np.float64(p)
    return (v * v if mode == _SQUARES else v), np.float64(0.0)


_lanes8_64 = lanes8_fn(_terms64, np.float64(0.0), "f64")


@njit(cache=True, error_model="numpy")
def lane_sum(x, start, stop, squares=False):
    """float64 sum of ``x[start:stop]`` (or of its squares) over 8 lanes, in lane order
    (the fold of :func:`lanes8_fn`)."""
    return _lanes8_64(x, x, x, start, stop, np.float64(0.0), _SQUARES if squares else _PLAIN)[0]


lane_sum_inline = inlined(lane_sum)


@njit(cache=True, error_model="numpy")
def block_partials_serial(x, block, squares):
    nblocks = (x.size + block - 1) // block
    parts = np.empty(nblocks, dtype=np.float64)
    for b in range(nblocks):
        parts[b] = lane_sum_inline(x, b * block, min((b + 1) * block, x.size), squares)
    return parts


@njit(cache=True, error_model="numpy")
def block_sums(x, block, squares, parts, b0, b1):
    """``parts[b]``: the lane sum of block ``b`` for blocks ``b0..b1`` (the loop of
    :func:`block_partials_serial`, a task range of :func:`block_partials_parallel`)."""
    for b in range(b0, b1):
        parts[b] = lane_sum_inline(x, b * block, min((b + 1) * block, x.size), squares)


def block_partials_parallel(x: np.ndarray, block: int, squares: bool) -> np.ndarray:
    """:func:`block_partials_serial` with the blocks spread over threads (the same bits)."""
    nblocks = (x.size + block - 1) // block
    parts = np.empty(nblocks, dtype=np.float64)
    run_parallel(block_sums, nblocks, x, block, squares, parts)
    return parts


@njit(cache=True, error_model="numpy")
def merge_partials(parts):
    total = np.float64(0.0)
    for b in range(parts.size):
        total += parts[b]
    return total



# -- column folds: per-channel sums (or dots) of a [rows, C] view, in fixed row blocks
@njit(callee=True, cache=True, error_model="numpy")
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


@njit(callee=True, cache=True, error_model="numpy")
def merge_block_rows(parts, acc, c0, c1):
    """``acc[c] += parts[b, c]`` for columns ``c0..c1``, the blocks ``b`` in order: the
    ordered float64 merge of block partials (``acc`` float64, zeroed by the caller; the
    order of additions per column depends only on the number of blocks). The loops index
    slices from 0: an index that may be negative gets Numba's wraparound, which kept LLVM
    from vectorizing the column loop (5x slower)."""
    sums = acc[c0:c1]
    for b in range(parts.shape[0]):
        row = parts[b, c0:c1]
        for i in range(sums.size):
            sums[i] += row[i]


@njit(cache=True, error_model="numpy")
def merge_cols(parts, scale):
    """float32 ``[C]``: the blocks of ``parts[nblocks, C]`` merged in order in float64
    (:func:`merge_block_rows`), times ``scale``, rounded once."""
    channels = parts.shape[1]
    acc = np.zeros(channels, dtype=np.float64)
    merge_block_rows(parts, acc, np.int64(0), channels)  # not a literal: one compile
    out = np.empty(channels, dtype=np.float32)
    for c in range(channels):
        out[c] = np.float32(acc[c] * scale)
    return out


col_block_inline = inlined(col_block)


@njit(cache=True, error_model="numpy")
def col_fold_serial(x, y, use_y, channels, block, scale):
    rows = x.size // channels
    nblocks = (rows + block - 1) // block
    parts = np.empty((nblocks, channels), dtype=np.float32)
    for b in range(nblocks):
        col_block_inline(x, y, use_y, channels, b * block, min((b + 1) * block, rows), parts[b])
    return merge_cols(parts, scale)


@njit(cache=True, error_model="numpy")
def col_blocks(x, y, use_y, channels, block, parts, b0, b1):
    """Blocks ``b0..b1`` of :func:`col_fold_serial`'s loop into ``parts`` (a task range of
    :func:`col_fold_parallel`)."""
    rows = x.size // channels
    for b in range(b0, b1):
        col_block_inline(x, y, use_y, channels, b * block, min((b + 1) * block, rows), parts[b])


def col_fold_parallel(x: np.ndarray, y: np.ndarray, use_y: bool, channels: int, block: int,
                      scale: float) -> np.ndarray:
    """:func:`col_fold_serial` with the blocks spread over threads (the same bits)."""
    rows = x.size // channels
    nblocks = (rows + block - 1) // block
    parts = np.empty((nblocks, channels), dtype=np.float32)
    run_parallel(col_blocks, nblocks, x, y, use_y, channels, block, parts)
    return merge_cols(parts, scale)


def rows_per_block(channels: int) -> int:
    """Rows of ``channels`` values per fold block: about ``DET_REDUCE_BLOCK`` elements, at
    least one row (the global poolings' and the normalization folds' blocks)."""
    return max(DET_REDUCE_BLOCK // max(int(channels), 1), 1)
