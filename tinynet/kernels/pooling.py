"""Numba pooling kernels: 2D max/average pooling and global pooling (channels-last, float32).

Layout: ``x`` is ``[N, H, W, C]``, C-contiguous float32; inner loops run over the
contiguous channel axis into small per-row channel vectors. Kernels index the 4D arrays
directly (``x[n, h, w, c]``) rather than flat ``base + c`` offsets: Numba's negative-index
wraparound on a computed int64 offset hides contiguity from LLVM and the channel loop does
not vectorize (about 3-4x slower here), while a ``range`` index stays provably >= 0.
Window geometry (TF/Keras "valid" and
"same", the odd pad cell at the end) is computed once per call in Python as small per-row
and per-column bound arrays, so kernels never divide inside their loops.

Work is split into fixed, shape-derived blocks: forward passes one block per
``(sample, output row)``, backward passes one block per ``(sample, input row)`` (a
gather: each input row sums the windows that cover it, in output-row then output-column
order, so no two blocks write the same element), and global reductions one block per
``(sample, run of positions)`` with block partials merged in block order. Serial and
parallel variants run the same blocks with the same helper, so results are bitwise
identical for any gate value and thread count. The gate is ``pool_parallel_min_elems``
(compared with the input element count).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet import tuning
from tinynet.kernels._jit import njit
from tinynet.math.reduction import DET_REDUCE_BLOCK

__all__ = [
    "GATE", "pooled_size", "window_bounds", "rows_per_block",
    "max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward",
    "global_avg_pool2d_forward", "global_avg_pool2d_backward",
    "global_max_pool2d_forward", "global_max_pool2d_backward",
]

GATE = "pool_parallel_min_elems"


# ---------------------------------------------------------------------------------------
# geometry (plain Python / NumPy, run once per call)
# ---------------------------------------------------------------------------------------
def pooled_size(size: int, pool: int, stride: int, padding: str) -> tuple[int, int]:
    """Output length and leading pad of one spatial axis (TF/Keras rules).

    "valid": ``out = (size - pool) // stride + 1``, no padding. "same":
    ``out = ceil(size / stride)``, ``pad_total = max((out - 1) * stride + pool - size, 0)``
    and ``pad_before = pad_total // 2`` (the odd cell goes at the end).

    Returns:
        ``(out, pad_before)``; ``out`` may be < 1 for "valid" when the window does not fit.
    """
    if padding == "valid":
        return (size - pool) // stride + 1, 0
    out = -(-size // stride)
    pad_total = max((out - 1) * stride + pool - size, 0)
    return out, pad_total // 2


def window_bounds(size: int, pool: int, stride: int, padding: str) -> tuple[np.ndarray, np.ndarray]:
    """In-bounds ``[lo, hi)`` input range of every output position along one axis (int64)."""
    out, pad = pooled_size(size, pool, stride, padding)
    starts = np.arange(out, dtype=np.int64) * stride - pad
    return np.maximum(starts, 0), np.minimum(starts + pool, size)


def _covering(lo: np.ndarray, hi: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """For each input index ``i``, the output range ``[first, stop)`` whose windows hold ``i``."""
    pos = np.arange(size, dtype=np.int64)
    first = np.searchsorted(hi, pos, side="right").astype(np.int64)
    stop = np.searchsorted(lo, pos, side="right").astype(np.int64)
    return first, stop


def rows_per_block(channels: int) -> int:
    """Positions folded per block by the global reductions: ``max(DET_REDUCE_BLOCK // C, 1)``."""
    return max(DET_REDUCE_BLOCK // max(channels, 1), 1)


def _f32(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


# ---------------------------------------------------------------------------------------
# 2D max pooling
# ---------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _max_fwd_row(x, out, arg, r, hlo, hhi, wlo, whi):
    OH, OW, C = out.shape[1], out.shape[2], out.shape[3]
    W = x.shape[2]
    n = r // OH
    oh = r - n * OH
    best = np.empty(C, dtype=np.float32)
    where = np.empty(C, dtype=np.int32)
    neg_inf = np.float32(-np.inf)
    for ow in range(OW):
        first = np.int32(hlo[oh] * W + wlo[ow])
        for c in range(C):
            best[c] = neg_inf
            where[c] = first
        for h in range(hlo[oh], hhi[oh]):
            for w in range(wlo[ow], whi[ow]):
                p = np.int32(h * W + w)
                for c in range(C):
                    v = x[n, h, w, c]
                    b = best[c]
                    take = (v > b) | (v != v)  # first max wins ties; NaN propagates
                    best[c] = v if take else b
                    where[c] = p if take else where[c]
        for c in range(C):
            out[n, oh, ow, c] = best[c]
            arg[n, oh, ow, c] = where[c]


@njit(cache=True, error_model="numpy")
def _max_fwd_serial(x, out, arg, hlo, hhi, wlo, whi):
    for r in range(out.shape[0] * out.shape[1]):
        _max_fwd_row(x, out, arg, r, hlo, hhi, wlo, whi)


# A prange index is typed uint64: the parallel drivers pass it on as int64, so the serial
# and parallel drivers share one compiled row function instead of one each.
@njit(cache=True, parallel=True, error_model="numpy")
def _max_fwd_parallel(x, out, arg, hlo, hhi, wlo, whi):
    for r in prange(out.shape[0] * out.shape[1]):
        _max_fwd_row(x, out, arg, np.int64(r), hlo, hhi, wlo, whi)


@njit(cache=True, error_model="numpy")
def _max_bwd_row(g, arg, gx, r, ofirst, ostop, wlo, whi):
    H, W, C = gx.shape[1], gx.shape[2], gx.shape[3]
    n = r // H
    h = r - n * H
    zero = np.float32(0.0)
    for w in range(W):
        for c in range(C):
            gx[n, h, w, c] = zero
    for oh in range(ofirst[h], ostop[h]):
        for ow in range(g.shape[2]):
            for w in range(wlo[ow], whi[ow]):
                p = np.int32(h * W + w)
                for c in range(C):
                    gx[n, h, w, c] += g[n, oh, ow, c] if arg[n, oh, ow, c] == p else zero


@njit(cache=True, error_model="numpy")
def _max_bwd_serial(g, arg, gx, ofirst, ostop, wlo, whi):
    for r in range(gx.shape[0] * gx.shape[1]):
        _max_bwd_row(g, arg, gx, r, ofirst, ostop, wlo, whi)


@njit(cache=True, parallel=True, error_model="numpy")
def _max_bwd_parallel(g, arg, gx, ofirst, ostop, wlo, whi):
    for r in prange(gx.shape[0] * gx.shape[1]):
        _max_bwd_row(g, arg, gx, np.int64(r), ofirst, ostop, wlo, whi)


def _geometry(shape: tuple, pool_size: tuple[int, int], strides: tuple[int, int], padding: str):
    _, H, W, _ = shape
    hlo, hhi = window_bounds(H, pool_size[0], strides[0], padding)
    wlo, whi = window_bounds(W, pool_size[1], strides[1], padding)
    return hlo, hhi, wlo, whi


def max_pool2d_forward(x, pool_size: tuple[int, int], strides: tuple[int, int],
                       padding: str) -> tuple[np.ndarray, np.ndarray]:
    """Max pooling of ``x`` ``[N, H, W, C]``.

    Returns:
        ``(out, argmax)``: ``out`` ``[N, OH, OW, C]`` float32 and ``argmax`` (same shape,
        int32) holding the flat in-sample position ``h * W + w`` of each maximum (the
        first in row-major window order on ties; NaN propagates).
    """
    x = _f32(x)
    hlo, hhi, wlo, whi = _geometry(x.shape, pool_size, strides, padding)
    shape = (x.shape[0], hlo.size, wlo.size, x.shape[3])
    out = np.empty(shape, dtype=np.float32)
    arg = np.empty(shape, dtype=np.int32)
    kernel = _max_fwd_parallel if tuning.use_parallel(GATE, x.size) else _max_fwd_serial
    kernel(x, out, arg, hlo, hhi, wlo, whi)
    return out, arg


def max_pool2d_backward(grad_output, argmax: np.ndarray, input_shape: tuple,
                        pool_size: tuple[int, int], strides: tuple[int, int],
                        padding: str) -> np.ndarray:
    """Routes ``grad_output`` ``[N, OH, OW, C]`` to the recorded maxima; returns ``[N, H, W, C]``."""
    g = _f32(grad_output)
    arg = np.ascontiguousarray(argmax, dtype=np.int32)
    hlo, hhi, wlo, whi = _geometry(input_shape, pool_size, strides, padding)
    ofirst, ostop = _covering(hlo, hhi, input_shape[1])
    gx = np.empty(tuple(input_shape), dtype=np.float32)
    kernel = _max_bwd_parallel if tuning.use_parallel(GATE, gx.size) else _max_bwd_serial
    kernel(g, arg, gx, ofirst, ostop, wlo, whi)
    return gx


# ---------------------------------------------------------------------------------------
# 2D average pooling (mean over in-bounds cells)
# ---------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _avg_fwd_row(x, out, r, hlo, hhi, wlo, whi):
    OH, OW, C = out.shape[1], out.shape[2], out.shape[3]
    n = r // OH
    oh = r - n * OH
    acc = np.empty(C, dtype=np.float32)
    zero = np.float32(0.0)
    for ow in range(OW):
        for c in range(C):
            acc[c] = zero
        for h in range(hlo[oh], hhi[oh]):
            for w in range(wlo[ow], whi[ow]):
                for c in range(C):
                    acc[c] += x[n, h, w, c]
        count = np.float32((hhi[oh] - hlo[oh]) * (whi[ow] - wlo[ow]))
        for c in range(C):
            out[n, oh, ow, c] = acc[c] / count


@njit(cache=True, error_model="numpy")
def _avg_fwd_serial(x, out, hlo, hhi, wlo, whi):
    for r in range(out.shape[0] * out.shape[1]):
        _avg_fwd_row(x, out, r, hlo, hhi, wlo, whi)


@njit(cache=True, parallel=True, error_model="numpy")
def _avg_fwd_parallel(x, out, hlo, hhi, wlo, whi):
    for r in prange(out.shape[0] * out.shape[1]):
        _avg_fwd_row(x, out, np.int64(r), hlo, hhi, wlo, whi)


@njit(cache=True, error_model="numpy")
def _avg_bwd_row(g, gx, r, ofirst, ostop, hlo, hhi, wlo, whi):
    H, W, C = gx.shape[1], gx.shape[2], gx.shape[3]
    n = r // H
    h = r - n * H
    share = np.empty(C, dtype=np.float32)
    zero = np.float32(0.0)
    for w in range(W):
        for c in range(C):
            gx[n, h, w, c] = zero
    for oh in range(ofirst[h], ostop[h]):
        rows = hhi[oh] - hlo[oh]
        for ow in range(g.shape[2]):
            count = np.float32(rows * (whi[ow] - wlo[ow]))
            for c in range(C):
                share[c] = g[n, oh, ow, c] / count
            for w in range(wlo[ow], whi[ow]):
                for c in range(C):
                    gx[n, h, w, c] += share[c]


@njit(cache=True, error_model="numpy")
def _avg_bwd_serial(g, gx, ofirst, ostop, hlo, hhi, wlo, whi):
    for r in range(gx.shape[0] * gx.shape[1]):
        _avg_bwd_row(g, gx, r, ofirst, ostop, hlo, hhi, wlo, whi)


@njit(cache=True, parallel=True, error_model="numpy")
def _avg_bwd_parallel(g, gx, ofirst, ostop, hlo, hhi, wlo, whi):
    for r in prange(gx.shape[0] * gx.shape[1]):
        _avg_bwd_row(g, gx, np.int64(r), ofirst, ostop, hlo, hhi, wlo, whi)


def avg_pool2d_forward(x, pool_size: tuple[int, int], strides: tuple[int, int],
                       padding: str) -> np.ndarray:
    """Average pooling of ``x`` ``[N, H, W, C]`` over in-bounds cells; returns ``[N, OH, OW, C]``.

    Each window is summed in float32 in row-major window order, then divided by its
    in-bounds cell count (TF/Keras "same" semantics).
    """
    x = _f32(x)
    hlo, hhi, wlo, whi = _geometry(x.shape, pool_size, strides, padding)
    out = np.empty((x.shape[0], hlo.size, wlo.size, x.shape[3]), dtype=np.float32)
    kernel = _avg_fwd_parallel if tuning.use_parallel(GATE, x.size) else _avg_fwd_serial
    kernel(x, out, hlo, hhi, wlo, whi)
    return out


def avg_pool2d_backward(grad_output, input_shape: tuple, pool_size: tuple[int, int],
                        strides: tuple[int, int], padding: str) -> np.ndarray:
    """Spreads ``grad_output / count`` over each window; returns ``[N, H, W, C]``."""
    g = _f32(grad_output)
    hlo, hhi, wlo, whi = _geometry(input_shape, pool_size, strides, padding)
    ofirst, ostop = _covering(hlo, hhi, input_shape[1])
    gx = np.empty(tuple(input_shape), dtype=np.float32)
    kernel = _avg_bwd_parallel if tuning.use_parallel(GATE, gx.size) else _avg_bwd_serial
    kernel(g, gx, ofirst, ostop, hlo, hhi, wlo, whi)
    return gx


# ---------------------------------------------------------------------------------------
# global pooling: x seen as [N, P, C]; fixed blocks of positions per sample, block
# partials merged in block order
# ---------------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy")
def _gap_block(x, parts, k, block):
    nblocks, C = parts.shape[1], parts.shape[2]
    n = k // nblocks
    b = k - n * nblocks
    acc = np.zeros(C, dtype=np.float64)
    for p in range(b * block, min((b + 1) * block, x.shape[1])):
        for c in range(C):
            acc[c] += x[n, p, c]
    for c in range(C):
        parts[n, b, c] = acc[c]


@njit(cache=True, error_model="numpy")
def _gap_merge(parts, out, P):
    N, nblocks, C = parts.shape
    for n in range(N):
        for c in range(C):
            acc = np.float64(0.0)
            for b in range(nblocks):
                acc += parts[n, b, c]
            out[n, c] = np.float32(acc / P)


@njit(cache=True, error_model="numpy")
def _gap_fwd_serial(x, out, block):
    N, P, C = x.shape
    parts = np.empty((N, (P + block - 1) // block, C), dtype=np.float64)
    for k in range(N * parts.shape[1]):
        _gap_block(x, parts, k, block)
    _gap_merge(parts, out, P)


@njit(cache=True, parallel=True, error_model="numpy")
def _gap_fwd_parallel(x, out, block):
    N, P, C = x.shape
    parts = np.empty((N, (P + block - 1) // block, C), dtype=np.float64)
    for k in prange(N * parts.shape[1]):
        _gap_block(x, parts, np.int64(k), block)
    _gap_merge(parts, out, P)


@njit(cache=True, error_model="numpy")
def _broadcast_row(share, gx, r):
    H, W, C = gx.shape[1], gx.shape[2], gx.shape[3]
    n = r // H
    h = r - n * H
    for w in range(W):
        for c in range(C):
            gx[n, h, w, c] = share[n, c]


@njit(cache=True, error_model="numpy")
def _broadcast_serial(share, gx):
    for r in range(gx.shape[0] * gx.shape[1]):
        _broadcast_row(share, gx, r)


@njit(cache=True, parallel=True, error_model="numpy")
def _broadcast_parallel(share, gx):
    for r in prange(gx.shape[0] * gx.shape[1]):
        _broadcast_row(share, gx, np.int64(r))


@njit(cache=True, error_model="numpy")
def _gmp_block(x, vals, args, k, block):
    nblocks, C = vals.shape[1], vals.shape[2]
    n = k // nblocks
    b = k - n * nblocks
    p0 = b * block
    best = np.empty(C, dtype=np.float32)
    where = np.empty(C, dtype=np.int32)
    neg_inf = np.float32(-np.inf)
    for c in range(C):
        best[c] = neg_inf
        where[c] = np.int32(p0)
    for p in range(p0, min(p0 + block, x.shape[1])):
        p32 = np.int32(p)
        for c in range(C):
            v = x[n, p, c]
            bv = best[c]
            take = (v > bv) | (v != v)
            best[c] = v if take else bv
            where[c] = p32 if take else where[c]
    for c in range(C):
        vals[n, b, c] = best[c]
        args[n, b, c] = where[c]


@njit(cache=True, error_model="numpy")
def _gmp_merge(vals, args, out, arg):
    N, nblocks, C = vals.shape
    for n in range(N):
        for c in range(C):
            best = vals[n, 0, c]
            where = args[n, 0, c]
            for b in range(1, nblocks):
                v = vals[n, b, c]
                if v > best or v != v:
                    best = v
                    where = args[n, b, c]
            out[n, c] = best
            arg[n, c] = where


@njit(cache=True, error_model="numpy")
def _gmp_fwd_serial(x, out, arg, block):
    N, P, C = x.shape
    nblocks = (P + block - 1) // block
    vals = np.empty((N, nblocks, C), dtype=np.float32)
    args = np.empty((N, nblocks, C), dtype=np.int32)
    for k in range(N * nblocks):
        _gmp_block(x, vals, args, k, block)
    _gmp_merge(vals, args, out, arg)


@njit(cache=True, parallel=True, error_model="numpy")
def _gmp_fwd_parallel(x, out, arg, block):
    N, P, C = x.shape
    nblocks = (P + block - 1) // block
    vals = np.empty((N, nblocks, C), dtype=np.float32)
    args = np.empty((N, nblocks, C), dtype=np.int32)
    for k in prange(N * nblocks):
        _gmp_block(x, vals, args, np.int64(k), block)
    _gmp_merge(vals, args, out, arg)


def global_avg_pool2d_forward(x) -> np.ndarray:
    """Mean over every position of ``x`` ``[N, H, W, C]``; returns ``[N, C]`` float32.

    Positions are summed in order in float64, in fixed blocks of ``rows_per_block(C)``
    positions per sample; block partials are merged in block order.
    """
    x = _f32(x)
    N, H, W, C = x.shape
    out = np.empty((N, C), dtype=np.float32)
    kernel = _gap_fwd_parallel if tuning.use_parallel(GATE, x.size) else _gap_fwd_serial
    kernel(x.reshape(N, H * W, C), out, rows_per_block(C))
    return out


def global_avg_pool2d_backward(grad_output, input_shape: tuple) -> np.ndarray:
    """Broadcasts ``grad_output`` ``[N, C]`` divided by ``H * W`` to ``[N, H, W, C]``."""
    N, H, W, C = input_shape
    g = np.asarray(grad_output, dtype=np.float32).reshape(N, C)
    share = np.ascontiguousarray((g.astype(np.float64) / (H * W)).astype(np.float32))
    gx = np.empty((N, H, W, C), dtype=np.float32)
    kernel = _broadcast_parallel if tuning.use_parallel(GATE, gx.size) else _broadcast_serial
    kernel(share, gx)
    return gx


def global_max_pool2d_forward(x) -> tuple[np.ndarray, np.ndarray]:
    """Max over every position of ``x`` ``[N, H, W, C]``.

    Returns:
        ``(out, argmax)``, both ``[N, C]``: the maxima (float32) and their flat in-sample
        positions ``h * W + w`` (int32; the first on ties; NaN propagates).
    """
    x = _f32(x)
    N, H, W, C = x.shape
    out = np.empty((N, C), dtype=np.float32)
    arg = np.empty((N, C), dtype=np.int32)
    kernel = _gmp_fwd_parallel if tuning.use_parallel(GATE, x.size) else _gmp_fwd_serial
    kernel(x.reshape(N, H * W, C), out, arg, rows_per_block(C))
    return out, arg


def global_max_pool2d_backward(grad_output, argmax: np.ndarray, input_shape: tuple) -> np.ndarray:
    """Puts ``grad_output`` ``[N, C]`` at each recorded maximum; zeros elsewhere."""
    N, H, W, C = input_shape
    g = np.asarray(grad_output, dtype=np.float32).reshape(N, C)
    gx = np.zeros((N, H * W, C), dtype=np.float32)
    gx[np.arange(N)[:, None], argmax, np.arange(C)[None, :]] = g
    return gx.reshape(N, H, W, C)
