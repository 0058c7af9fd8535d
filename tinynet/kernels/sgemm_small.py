"""Small products in the same fixed order as :mod:`tinynet.kernels.sgemm`, compiled cheaply.

The blocked C GEMM of :mod:`.sgemm` takes seconds to compile, which a first run pays
before its first product. A small model's products (a Dense layer of a few thousand
weights on a batch of 32) are over before blocking pays, so they run here: ``op(b)`` is
copied once into a zero-padded ``[K, Npad]`` scratch (``Npad`` a multiple of 16), and
the output is computed as the same chains as :func:`.sgemm.gemm`,

    acc = 0;  acc = fma(op(a)[i, k], op(b)[k, j], acc) for k = 0, 1, ..., K - 1

four rows by one 16-lane vector of columns at a time (four independent chains keep the
fused multiply-add unit busy; each vector of ``op(b)`` is loaded once for the four).
Every element is the twin's chain, so a product gives the same bits here or in the C
GEMM, whichever its size picks.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.simd import LANES, vfma, vload, vsplat, vstore

__all__ = ["ROWS", "padded_columns", "gemm_small"]

ROWS = 4  # output rows per pass (independent chains)


def padded_columns(n: int) -> int:
    """``n`` rounded up to whole vectors: the scratch's row length."""
    return -(-n // LANES) * LANES


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _pack(b, trans_b, k, n, bp):
    """``bp[kk, j] = op(b)[kk, j]``, zeros past column ``n``."""
    npad = bp.shape[1]
    for kk in range(k):
        for j in range(n):
            bp[kk, j] = b[j, kk] if trans_b else b[kk, j]
        for j in range(n, npad):
            bp[kk, j] = np.float32(0.0)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _put(c, i, j0, n, v, row):
    """Stores vector ``v`` as ``c[i, j0:j0 + 16]``, cut at column ``n``."""
    if j0 + LANES <= n:
        vstore(c[i], j0, v)
    else:
        vstore(row, 0, v)
        for j in range(j0, n):
            c[i, j] = row[j - j0]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def gemm_small(a, b, c, trans_a, trans_b, bp, row):
    """``c = op(a) @ op(b)`` in one thread, as :func:`.sgemm.gemm`'s chains.

    Args:
        a, b: float32 matrices; ``op(x)`` is ``x.T`` when its flag is set.
        c: The C-contiguous float32 output.
        trans_a, trans_b: The flags.
        bp: Scratch ``[K, padded_columns(N)]`` float32.
        row: Scratch of at least 16 float32 (a cut vector's lanes).

    Shape:
        op(a): ``[M, K]``; op(b): ``[K, N]``; c: ``[M, N]``.
    """
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    _pack(b, trans_b, k, n, bp)
    npad = bp.shape[1]
    zero = vsplat(np.float32(0.0))
    last = m - 1
    for i0 in range(0, m, ROWS):
        # rows past the last repeat it: computed, never stored
        r0 = i0
        r1 = min(i0 + 1, last)
        r2 = min(i0 + 2, last)
        r3 = min(i0 + 3, last)
        for j0 in range(0, npad, LANES):
            v0 = zero
            v1 = zero
            v2 = zero
            v3 = zero
            for kk in range(k):
                bk = vload(bp[kk], j0)
                if trans_a:
                    v0 = vfma(vsplat(a[kk, r0]), bk, v0)
                    v1 = vfma(vsplat(a[kk, r1]), bk, v1)
                    v2 = vfma(vsplat(a[kk, r2]), bk, v2)
                    v3 = vfma(vsplat(a[kk, r3]), bk, v3)
                else:
                    v0 = vfma(vsplat(a[r0, kk]), bk, v0)
                    v1 = vfma(vsplat(a[r1, kk]), bk, v1)
                    v2 = vfma(vsplat(a[r2, kk]), bk, v2)
                    v3 = vfma(vsplat(a[r3, kk]), bk, v3)
            _put(c, r0, j0, n, v0, row)
            if i0 + 1 <= last:
                _put(c, r1, j0, n, v1, row)
            if i0 + 2 <= last:
                _put(c, r2, j0, n, v2, row)
            if i0 + 3 <= last:
                _put(c, r3, j0, n, v3, row)
