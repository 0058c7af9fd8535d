"""Numba pooling kernels: 2D max/average pooling and global pooling (channels-last, float32).

Layout: ``x`` is ``[N, H, W, C]``, C-contiguous float32; inner loops run over the
contiguous channel axis into small per-row channel vectors. Kernels index the 4D arrays
directly (``x[n, h, w, c]``) rather than flat ``base + c`` offsets: Numba's negative-index
wraparound on a computed int64 offset hides contiguity from LLVM and the channel loop does
not vectorize (about 3-4x slower here), while a ``range`` index stays provably >= 0.
A 2x2 window (the default pool) keeps its running maximum or sum in registers: the same
operations in the same order as the general window loop, which keeps them in per-row
channel vectors the compiled loop reloads and stores at every cell. Window geometry comes
from :mod:`tinynet.ops.arrays.pooling` (the operation step, which also picks the serial or
parallel kernel) as small per-row and per-column bound arrays, so kernels never divide
inside their loops.

Work is split into fixed, shape-derived blocks: forward passes one block per
``(sample, output row)``, backward passes one block per ``(sample, input row)`` (a
gather: each input row sums the windows that cover it, in output-row then output-column
order, so no two blocks write the same element), and global reductions one block per
``(sample, run of positions)`` with block partials merged in block order. The serial
kernels take their range of rows (``r0, r1``) last; the parallel variants run them one
row (or block) a task through their address (:func:`tinynet.kernels.address.run_tasks`),
so no parallel copy of a body is compiled, and the results are bitwise identical for any
gate value and thread count.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import inlined, njit
from tinynet.kernels.address import run_parallel
from tinynet.kernels.reduction import merge_block_rows

__all__ = [
    "avg_bwd_serial",
    "avg_fwd_serial",
    "broadcast_serial",
    "gap_blocks",
    "gap_fwd_parallel",
    "gap_fwd_serial",
    "gmp_fwd_parallel",
    "gmp_blocks",
    "gmp_fwd_serial",
    "max_bwd_serial",
    "max_fwd_serial",
]



# ---------------------------------------------------------------------------------------
# geometry (plain Python / NumPy, run once per call)
# ---------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------
# 2D max pooling
# ---------------------------------------------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy")
def _max_fwd_row(x, out, arg, r, hlo, hhi, wlo, whi):
    OH, OW, C = out.shape[1], out.shape[2], out.shape[3]
    W = x.shape[2]
    n = r // OH
    oh = r - n * OH
    best = np.empty(C, dtype=np.float32)
    where = np.empty(C, dtype=np.int32)
    neg_inf = np.float32(-np.inf)
    h0 = hlo[oh]
    rows2 = hhi[oh] - h0 == 2
    for ow in range(OW):
        w0 = wlo[ow]
        first = np.int32(h0 * W + w0)
        if rows2 and whi[ow] - w0 == 2:
            # A 2x2 window: the same comparisons in the same order, the running maximum
            # in registers (the first cell needs none: it is taken unless it is -inf,
            # where keeping -inf and the first position is the same).
            p1 = first + np.int32(1)
            p2 = first + np.int32(W)
            p3 = p2 + np.int32(1)
            for c in range(C):
                b = x[n, h0, w0, c]
                at = first
                v = x[n, h0, w0 + 1, c]
                take = (v > b) | (v != v)
                b = v if take else b
                at = p1 if take else at
                v = x[n, h0 + 1, w0, c]
                take = (v > b) | (v != v)
                b = v if take else b
                at = p2 if take else at
                v = x[n, h0 + 1, w0 + 1, c]
                take = (v > b) | (v != v)
                out[n, oh, ow, c] = v if take else b
                arg[n, oh, ow, c] = p3 if take else at
            continue
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


_max_fwd_row_inline = inlined(_max_fwd_row)


@njit(cache=True, error_model="numpy")
def max_fwd_serial(x, out, arg, hlo, hhi, wlo, whi, r0, r1):
    """Rows ``r0..r1`` (of ``out.shape[0] * out.shape[1]``) on the calling thread."""
    for r in range(r0, r1):
        _max_fwd_row_inline(x, out, arg, r, hlo, hhi, wlo, whi)



@njit(callee=True, cache=True, error_model="numpy")
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


_max_bwd_row_inline = inlined(_max_bwd_row)


@njit(cache=True, error_model="numpy")
def max_bwd_serial(g, arg, gx, ofirst, ostop, wlo, whi, r0, r1):
    """Rows ``r0..r1`` (of ``gx.shape[0] * gx.shape[1]``) on the calling thread."""
    for r in range(r0, r1):
        _max_bwd_row_inline(g, arg, gx, r, ofirst, ostop, wlo, whi)



# ---------------------------------------------------------------------------------------
# 2D average pooling (mean over in-bounds cells)
# ---------------------------------------------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy")
def _avg_fwd_row(x, out, r, hlo, hhi, wlo, whi):
    OH, OW, C = out.shape[1], out.shape[2], out.shape[3]
    n = r // OH
    oh = r - n * OH
    acc = np.empty(C, dtype=np.float32)
    zero = np.float32(0.0)
    h0 = hlo[oh]
    rows2 = hhi[oh] - h0 == 2
    four = np.float32(4.0)
    for ow in range(OW):
        w0 = wlo[ow]
        if rows2 and whi[ow] - w0 == 2:
            # A 2x2 window: the same sum from zero in the same order, in registers.
            for c in range(C):
                t = ((zero + x[n, h0, w0, c]) + x[n, h0, w0 + 1, c]) + x[n, h0 + 1, w0, c]
                out[n, oh, ow, c] = (t + x[n, h0 + 1, w0 + 1, c]) / four
            continue
        for c in range(C):
            acc[c] = zero
        for h in range(hlo[oh], hhi[oh]):
            for w in range(wlo[ow], whi[ow]):
                for c in range(C):
                    acc[c] += x[n, h, w, c]
        count = np.float32((hhi[oh] - hlo[oh]) * (whi[ow] - wlo[ow]))
        for c in range(C):
            out[n, oh, ow, c] = acc[c] / count


_avg_fwd_row_inline = inlined(_avg_fwd_row)


@njit(cache=True, error_model="numpy")
def avg_fwd_serial(x, out, hlo, hhi, wlo, whi, r0, r1):
    """Rows ``r0..r1`` (of ``out.shape[0] * out.shape[1]``) on the calling thread."""
    for r in range(r0, r1):
        _avg_fwd_row_inline(x, out, r, hlo, hhi, wlo, whi)



@njit(callee=True, cache=True, error_model="numpy")
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


_avg_bwd_row_inline = inlined(_avg_bwd_row)


@njit(cache=True, error_model="numpy")
def avg_bwd_serial(g, gx, ofirst, ostop, hlo, hhi, wlo, whi, r0, r1):
    """Rows ``r0..r1`` (of ``gx.shape[0] * gx.shape[1]``) on the calling thread."""
    for r in range(r0, r1):
        _avg_bwd_row_inline(g, gx, r, ofirst, ostop, hlo, hhi, wlo, whi)



# ---------------------------------------------------------------------------------------
# global pooling: x seen as [N, P, C]; fixed blocks of positions per sample, block
# partials merged in block order
# ---------------------------------------------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy")
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


@njit(callee=True, cache=True, error_model="numpy")
def _gap_merge(parts, out, P):
    N, C = parts.shape[0], parts.shape[2]
    acc = np.empty(C, dtype=np.float64)
    for n in range(N):
        acc[:] = 0.0
        merge_block_rows(parts[n], acc, np.int64(0), C)  # not a literal: one compile
        for c in range(C):
            out[n, c] = np.float32(acc[c] / P)


_gap_block_inline = inlined(_gap_block)
_gap_merge_inline = inlined(_gap_merge)


@njit(cache=True, error_model="numpy")
def gap_fwd_serial(x, out, block):
    N, P, C = x.shape
    parts = np.empty((N, (P + block - 1) // block, C), dtype=np.float64)
    for k in range(N * parts.shape[1]):
        _gap_block_inline(x, parts, k, block)
    _gap_merge_inline(parts, out, P)


@njit(cache=True, error_model="numpy")
def gap_blocks(x, parts, block, k0, k1):
    """Blocks ``k0..k1`` (sample-major) of :func:`gap_fwd_serial`'s loop into ``parts``."""
    for k in range(k0, k1):
        _gap_block_inline(x, parts, k, block)


def gap_fwd_parallel(x: np.ndarray, out: np.ndarray, block: int) -> None:
    """:func:`gap_fwd_serial` with one block a task over Numba's threads, the partials
    merged in block order on the calling thread (the same bits)."""
    N, P, C = x.shape
    parts = np.empty((N, (P + block - 1) // block, C), dtype=np.float64)
    run_parallel(gap_blocks, N * parts.shape[1], x, parts, block)
    _gap_merge(parts, out, P)


@njit(callee=True, cache=True, error_model="numpy")
def _broadcast_row(share, gx, r):
    H, W, C = gx.shape[1], gx.shape[2], gx.shape[3]
    n = r // H
    h = r - n * H
    for w in range(W):
        for c in range(C):
            gx[n, h, w, c] = share[n, c]


_broadcast_row_inline = inlined(_broadcast_row)


@njit(cache=True, error_model="numpy")
def broadcast_serial(share, gx, r0, r1):
    """Rows ``r0..r1`` (of ``gx.shape[0] * gx.shape[1]``) on the calling thread."""
    for r in range(r0, r1):
        _broadcast_row_inline(share, gx, r)



@njit(callee=True, cache=True, error_model="numpy")
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


@njit(callee=True, cache=True, error_model="numpy")
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


_gmp_block_inline = inlined(_gmp_block)
_gmp_merge_inline = inlined(_gmp_merge)


@njit(cache=True, error_model="numpy")
def gmp_fwd_serial(x, out, arg, block):
    N, P, C = x.shape
    nblocks = (P + block - 1) // block
    vals = np.empty((N, nblocks, C), dtype=np.float32)
    args = np.empty((N, nblocks, C), dtype=np.int32)
    for k in range(N * nblocks):
        _gmp_block_inline(x, vals, args, k, block)
    _gmp_merge_inline(vals, args, out, arg)


@njit(cache=True, error_model="numpy")
def gmp_blocks(x, vals, args, block, k0, k1):
    """Blocks ``k0..k1`` (sample-major) of :func:`gmp_fwd_serial`'s loop into ``vals``
    and ``args``."""
    for k in range(k0, k1):
        _gmp_block_inline(x, vals, args, k, block)


def gmp_fwd_parallel(x: np.ndarray, out: np.ndarray, arg: np.ndarray, block: int) -> None:
    """:func:`gmp_fwd_serial` with one block a task over Numba's threads, the block maxima
    merged in block order on the calling thread (the same bits)."""
    N, P, C = x.shape
    nblocks = (P + block - 1) // block
    vals = np.empty((N, nblocks, C), dtype=np.float32)
    args = np.empty((N, nblocks, C), dtype=np.int32)
    run_parallel(gmp_blocks, N * nblocks, x, vals, args, block)
    _gmp_merge(vals, args, out, arg)


