"""The numerical pieces of the attention layers: batched products, masked softmax.

Everything here is deterministic by construction: products are tinynet's fixed-order
GEMM chains (:mod:`tinynet.kernels.attention`), whose serial and parallel variants give
the same bits; the softmax and the sums are NumPy reductions along the contiguous last
axis, whose order depends only on the shape.
"""

from __future__ import annotations

import numpy as np

from tinynet import tuning
from tinynet.kernels import attention as K
from tinynet.ops.arrays import reduction

__all__ = ["bmm", "softmax", "softmax_backward", "masked_softmax", "masked_softmax_backward",
           "NEG_LARGE", "col_sum", "attend", "attend_backward"]

_NO_GRAD = np.empty((0, 1, 1, 1), dtype=np.float32)

#: What a masked score becomes (Keras's large negative number for float32).
NEG_LARGE = np.float32(-1e9)


def bmm(a: np.ndarray, b: np.ndarray, trans_a: bool = False,
        trans_b: bool = False) -> np.ndarray:
    """``op(a[i]) @ op(b[i])`` for each item of the leading axes, in float32.

    Args:
        a: ``[..., M, K]`` (``[..., K, M]`` with ``trans_a``).
        b: ``[..., K, N]`` (``[..., N, K]`` with ``trans_b``); the same leading axes.

    Returns:
        ``[..., M, N]`` float32, each item the chain of fixed-order multiply-adds of
        ``tinynet.ops.arrays.matmul`` (bitwise independent of threads and gates).
    """
    lead = a.shape[:-2]
    a3 = np.ascontiguousarray(a, dtype=np.float32).reshape(-1, *a.shape[-2:])
    b3 = np.ascontiguousarray(b, dtype=np.float32).reshape(-1, *b.shape[-2:])
    m = a3.shape[2] if trans_a else a3.shape[1]
    k = a3.shape[1] if trans_a else a3.shape[2]
    n = b3.shape[1] if trans_b else b3.shape[2]
    out = np.empty((a3.shape[0], m, n), dtype=np.float32)
    if out.size == 0:
        return out.reshape(*lead, m, n)
    if k == 0:
        out.fill(0.0)
        return out.reshape(*lead, m, n)
    work = a3.shape[0] * m * n * k
    K.bmm(a3, b3, out, trans_a, trans_b,
          a3.shape[0] > 1 and tuning.use_parallel("matmul_parallel_min_flops", work))
    return out.reshape(*lead, m, n)


def _parallel(items: int, work: int) -> bool:
    return items > 1 and tuning.use_parallel("matmul_parallel_min_flops", work)


def _runs(items: int) -> int:
    """How many runs of consecutive items the parallel attention kernels make: two a
    thread (each run allocates its scratch once; where an item runs never changes its
    bits)."""
    return max(1, min(items, 2 * tuning.get_num_threads()))


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, offsets: tuple[int, int, int],
           batch: int, heads: int, dk: int, dv: int, scale: np.float32
           ) -> tuple[np.ndarray, np.ndarray]:
    """Unmasked multi-head scaled dot-product attention, each head in one fused pass.

    The heads are read where the projections put them: head ``h``'s query is the column
    band ``offsets[0] + h * dk`` (``dk`` wide) of ``q``, its key and value the bands at
    ``offsets[1]`` and ``offsets[2]`` of ``k`` and ``v`` (which may all be one array).

    Args:
        q: C-contiguous float32 ``[batch * T, .]``.
        k, v: C-contiguous float32 ``[batch * S, .]``.
        offsets: First columns of the query, key and value bands.
        batch, heads, dk, dv: Batch size, head count, query/key and value widths.
        scale: The query's factor (``1 / sqrt(dk)``).

    Returns:
        ``(p, o)``: the weights ``softmax((q_h * scale) k_h^T)`` ``[batch, heads, T, S]``
        and the context ``p @ v_h``, ``[batch * T, heads * dv]``, head ``h`` in column
        band ``h``. Each product is a fixed-order chain, the softmax's sums fixed by
        shape: the same bits serial or parallel.
    """
    t, s = q.shape[0] // batch, k.shape[0] // batch
    p = np.empty((batch, heads, t, s), dtype=np.float32)
    o = np.empty((batch * t, heads * dv), dtype=np.float32)
    items = batch * heads
    runs = _runs(items) if _parallel(items, items * t * s * (dk + dv)) else 1
    K.attend_forward(runs, q, k, v, offsets, heads, dk, np.float32(scale), p, o)
    return p, o


def attend_backward(q: np.ndarray, k: np.ndarray, v: np.ndarray, offsets: tuple[int, int, int],
                    heads: int, dk: int, scale: np.float32, p: np.ndarray, do: np.ndarray,
                    gp: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The gradients of :func:`attend` given dL/d(context) ``do`` (and dL/d``p`` ``gp``).

    Returns:
        ``(dq, dk, dv)`` shaped like ``q``, ``k`` and ``v``, each gradient in its input's
        band (one array for inputs that were one array). Columns outside the bands are
        left uninitialized.
    """
    batch, _, t, s = p.shape
    grads: dict[int, np.ndarray] = {}  # one gradient array per distinct input array
    dq, dkey, dval = (grads.setdefault(id(x), np.empty_like(x)) for x in (q, k, v))
    gp = _NO_GRAD if gp is None else np.ascontiguousarray(gp, dtype=np.float32)
    dv = do.shape[1] // heads
    items = batch * heads
    runs = _runs(items) if _parallel(items, 2 * items * t * s * (dk + dv)) else 1
    K.attend_backward(runs, q, k, v, offsets, heads, dk, np.float32(scale), p, do, gp, dq,
                      dkey, dval)
    return dq, dkey, dval


def softmax(scores: np.ndarray) -> np.ndarray:
    """Softmax along the last axis in float32 (``exp(s - max) / sum``)."""
    shifted = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(shifted, dtype=np.float32)
    return e / e.sum(axis=-1, keepdims=True, dtype=np.float32)


def softmax_backward(p: np.ndarray, dp: np.ndarray) -> np.ndarray:
    """dL/ds of ``p = softmax(s)`` along the last axis: ``p * (dp - sum(dp * p))``."""
    inner = np.sum(dp * p, axis=-1, keepdims=True, dtype=np.float32)
    return p * (dp - inner)


def col_sum(g: np.ndarray) -> np.ndarray:
    """Column sums of ``[rows, cols]`` as float32: the bias gradients' column fold (fixed
    row blocks, float64 merge in block order; the same bits serial or parallel)."""
    cols = g.shape[-1]
    if g.size == 0:
        return np.zeros(cols, dtype=np.float32)
    return reduction.col_sum(g, cols, parallel=tuning.use_parallel(
        "elementwise_parallel_min_elems", g.size))


def masked_softmax(scores: np.ndarray, mask: np.ndarray | None, *, replace: bool,
                   zero_masked: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Softmax of ``scores`` along the last axis, the scores where ``mask`` is False
    pushed out of it.

    Args:
        scores: float32 ``[..., T, S]``.
        mask: bool, broadcastable to ``scores``; ``None`` masks nothing.
        replace: Masked scores become ``-1e9`` (Keras's ``Softmax`` layer, used by
            ``MultiHeadAttention``); otherwise ``1e9`` is subtracted from them (Keras's
            ``Attention`` and ``AdditiveAttention``).
        zero_masked: Masked probabilities are then set to 0 (a row masked everywhere
            gives zeros instead of a uniform distribution).

    Returns:
        ``(p_softmax, p)``: the softmax, and the probabilities returned (zeroed where
        masked when ``zero_masked``); the first is what the backward needs.
    """
    if mask is None:
        p = softmax(scores)
        return p, p
    if replace:
        shifted = np.where(mask, scores, NEG_LARGE)
    else:
        shifted = np.where(mask, scores, scores + NEG_LARGE)
    p_soft = softmax(shifted.astype(np.float32, copy=False))
    p = np.where(mask, p_soft, np.float32(0.0)) if zero_masked else p_soft
    return p_soft, p


def masked_softmax_backward(p_soft: np.ndarray, dp: np.ndarray, mask: np.ndarray | None, *,
                            replace: bool, zero_masked: bool = False) -> np.ndarray:
    """dL/d``scores`` of :func:`masked_softmax` given dL/d``p`` (same arguments)."""
    if mask is None:
        return softmax_backward(p_soft, dp)
    if zero_masked:
        dp = np.where(mask, dp, np.float32(0.0))
    ds = softmax_backward(p_soft, dp)
    if replace:  # a replaced score is a constant
        ds = np.where(mask, ds, np.float32(0.0))
    return ds.astype(np.float32, copy=False)
