"""Batched small products for the attention layers: one fixed-order GEMM per batch item.

Each item is :func:`.sgemm_small.gemm_small`'s product (the chains of
:func:`.sgemm.gemm`), so an item's bits are those of ``tinynet.ops.arrays.matmul`` on it. The
parallel variant hands whole items to Numba's threads, each with its own packing
scratch: an item is computed by one thread in one order, so both variants give the same
bits at any thread count.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit
from tinynet.kernels.sgemm_small import gemm_small, padded_columns

__all__ = ["bmm_serial", "bmm_parallel", "padded_columns"]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def bmm_serial(a, b, c, trans_a, trans_b, npad):
    """``c[i] = op(a[i]) @ op(b[i])`` for every item ``i``, in one thread.

    Args:
        a, b: C-contiguous float32 ``[items, ., .]`` arrays; ``op(x)`` transposes an
            item when its flag is set.
        c: The C-contiguous float32 output ``[items, M, N]``.
        trans_a, trans_b: The flags.
        npad: ``padded_columns(N)`` (the packing scratch's row length).
    """
    k = a.shape[1] if trans_a else a.shape[2]
    bp = np.empty((k, npad), dtype=np.float32)
    row = np.empty(16, dtype=np.float32)
    for i in range(c.shape[0]):
        gemm_small(a[i], b[i], c[i], trans_a, trans_b, bp, row)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy", boundscheck=False)
def bmm_parallel(a, b, c, trans_a, trans_b, npad):
    """:func:`bmm_serial` with the items spread over Numba's threads (the same bits)."""
    k = a.shape[1] if trans_a else a.shape[2]
    for i in prange(c.shape[0]):
        bp = np.empty((k, npad), dtype=np.float32)
        row = np.empty(16, dtype=np.float32)
        gemm_small(a[i], b[i], c[i], trans_a, trans_b, bp, row)
