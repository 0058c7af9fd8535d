"""Attention kernels: batched small products, and the fused per-head attention passes.

:func:`bmm_items` computes one fixed-order GEMM per batch item: each item is
:func:`.sgemm_small.gemm_small`'s product (the chains of :func:`.sgemm.gemm`), so an
item's bits are those of ``tinynet.ops.arrays.matmul`` on it.

:func:`attend_forward_runs` / :func:`attend_backward_runs` run a whole unmasked scaled
dot-product attention head in one pass per (batch, head) item: the scores, the softmax
and the context, or the five products and the softmax's derivative of the backward, on
per-item scratch that stays in cache. They read the heads straight out of the
projections' ``[batch * steps, heads * width]`` outputs (a head is a column band of them)
and write the context and the gradients back in that layout, so no head is ever
transposed into a copy. Every product is a :func:`gemm_small` chain; the softmax works on
each row in a fixed order (:func:`_softmax_row`); its derivative takes four rows side by
side, their lane folds interleaved (:func:`_softmax_grad_rows4`, the same bits).

Each kernel computes a range of items (or of runs of consecutive items, each run on one
scratch). Run in parallel (:func:`bmm`, :func:`attend_forward`, :func:`attend_backward`),
every item or run is a task on Numba's threads that calls the same compiled kernel
through its address (:func:`tinynet.kernels.address.run_parallel`), so there is no
parallel copy of a kernel to compile. An item is computed by one thread in one order, so
the bits are the same serial or parallel, at any thread count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import run_tasks
from tinynet.kernels.sgemm_small import gemm_small, padded_columns
from tinynet.kernels.simd import LANES, vload, vsplat, vstore
from tinynet.kernels.simd_math import EXP_LOW, exp_poly, vexp_poly, vpick_gt, vpick_lt

__all__ = ["bmm", "bmm_items", "padded_columns", "attend_forward", "attend_forward_runs",
           "attend_backward", "attend_backward_runs", "exp_nonpositive"]


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def bmm_items(a, b, c, trans_a, trans_b, npad, i0, i1):
    """``c[i] = op(a[i]) @ op(b[i])`` for the items ``i0 <= i < i1``, in one thread on one
    packing scratch (:func:`bmm`: all of them, in one thread or over Numba's threads).

    Args:
        a, b: C-contiguous float32 ``[items, ., .]`` arrays; ``op(x)`` transposes an
            item when its flag is set.
        c: The C-contiguous float32 output ``[items, M, N]``.
        trans_a, trans_b: The flags.
        npad: ``padded_columns(N)`` (the packing scratch's row length).
        i0, i1: The items to compute.
    """
    k = a.shape[1] if trans_a else a.shape[2]
    bp = np.empty((k, npad), dtype=np.float32)
    row = np.empty(16, dtype=np.float32)
    for i in range(i0, i1):
        gemm_small(a[i], b[i], c[i], trans_a, trans_b, bp, row)


def bmm(a: np.ndarray, b: np.ndarray, c: np.ndarray, trans_a: bool, trans_b: bool,
        parallel: bool) -> None:
    """:func:`bmm_items` on every item: in this thread, or (``parallel``) each item a task
    on Numba's threads calling the same compiled kernel (:func:`.address.run_parallel`),
    with its bits."""
    run_tasks(bmm_items, c.shape[0], parallel, a, b, c, trans_a, trans_b,
              padded_columns(c.shape[2]))


# -- exp in float32 operations (kernels.simd_math's Cephes polynomial, within 2 ulp) ------------
# The softmax runs it 16 lanes at a time (:func:`_vexp_nonpositive`, each lane the scalar
# function's operations in its order, so the same bits).
@njit(cache=True, error_model="numpy", inline="always")
def exp_nonpositive(v):
    """``exp(v)`` in float32 for ``v <= 0``; 0 below -87 (where float32 ``exp`` leaves
    the normal range: a softmax weight that small is 0 to float32 precision)."""
    e = exp_poly(EXP_LOW if v < EXP_LOW else v)
    return np.float32(0.0) if v < EXP_LOW else e


@njit(cache=True, error_model="numpy", inline="always")
def _vexp_nonpositive(v):
    """:func:`exp_nonpositive` in 16 lanes."""
    low = vsplat(EXP_LOW)
    e = vexp_poly(vpick_lt(v, low, low, v))
    return vpick_lt(v, low, vsplat(np.float32(0.0)), e)


# -- one (batch, head) item ------------------------------------------------------------------
@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _padded(n):
    """``n`` rounded up to whole vectors (:func:`padded_columns` in a kernel)."""
    return (n + LANES - 1) // LANES * LANES


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _lane_sum(e, n, lanes):
    """The sum of ``e[:n]`` (``e`` zero past ``n`` up to whole vectors): 16 lane sums
    over the vectors in order, then the lanes in order."""
    acc = vsplat(np.float32(0.0))
    for j0 in range(0, n, LANES):
        acc = acc + vload(e, j0)
    vstore(lanes, 0, acc)
    total = np.float32(0.0)
    for i in range(LANES):
        total += lanes[i]
    return total


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _softmax_row(s, out, e, lanes):
    """``out = softmax(s)``: ``exp(s - max) / sum`` with :func:`exp_nonpositive` and the
    sum of :func:`_lane_sum` (``e``: scratch zero past ``len(s)``)."""
    n = s.shape[0]
    whole = n - n % LANES
    top = s[0]
    if whole:
        vtop = vload(s, 0)
        for j0 in range(LANES, whole, LANES):
            v = vload(s, j0)
            vtop = vpick_gt(v, vtop, v, vtop)
        vstore(lanes, 0, vtop)
        for i in range(LANES):
            top = max(top, lanes[i])
    for j in range(whole, n):
        top = max(top, s[j])
    vt = vsplat(top)
    for j0 in range(0, whole, LANES):
        vstore(e, j0, _vexp_nonpositive(vload(s, j0) - vt))
    for j in range(whole, n):
        e[j] = exp_nonpositive(s[j] - top)
    total = _lane_sum(e, n, lanes)
    for j in range(n):
        out[j] = e[j] / total


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _softmax_grad_row(ds, p, e, lanes):
    """``ds = p * (ds - sum(ds * p))`` in place: dL/d(scores) from dL/dp ``ds``."""
    n = ds.shape[0]
    for j in range(n):
        e[j] = ds[j] * p[j]
    inner = _lane_sum(e, n, lanes)
    for j in range(n):
        ds[j] = p[j] * (ds[j] - inner)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _vector_sums4(e, n, lanes):
    """The four rows ``e[0:4, :n]``'s vector sums (16 lane sums over the vectors in order)
    stored as ``lanes[16 * r:16 * (r + 1)]`` (``e`` zero past ``n`` up to whole vectors)."""
    a0 = vsplat(np.float32(0.0))
    a1 = a0
    a2 = a0
    a3 = a0
    for j0 in range(0, n, LANES):
        a0 = a0 + vload(e[0], j0)
        a1 = a1 + vload(e[1], j0)
        a2 = a2 + vload(e[2], j0)
        a3 = a3 + vload(e[3], j0)
    vstore(lanes, 0, a0)
    vstore(lanes, LANES, a1)
    vstore(lanes, 2 * LANES, a2)
    vstore(lanes, 3 * LANES, a3)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _softmax_grad_rows4(ds, p, i0, e, lanes):
    """Rows ``i0 .. i0 + 3`` of :func:`_softmax_grad_row` (the same bits), their lane
    folds interleaved: four independent chains instead of one (``e``: ``[4, .]`` scratch
    zero past the row, ``lanes``: 64 floats)."""
    n = ds.shape[1]
    for r in range(4):
        dr, pr, er = ds[i0 + r], p[i0 + r], e[r]
        for j in range(n):
            er[j] = dr[j] * pr[j]
    _vector_sums4(e, n, lanes)
    z0, z1, z2, z3 = np.float32(0.0), np.float32(0.0), np.float32(0.0), np.float32(0.0)
    for i in range(LANES):
        z0 += lanes[i]
        z1 += lanes[LANES + i]
        z2 += lanes[2 * LANES + i]
        z3 += lanes[3 * LANES + i]
    _scale_grad_row(ds[i0], p[i0], z0)
    _scale_grad_row(ds[i0 + 1], p[i0 + 1], z1)
    _scale_grad_row(ds[i0 + 2], p[i0 + 2], z2)
    _scale_grad_row(ds[i0 + 3], p[i0 + 3], z3)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _scale_grad_row(ds, p, inner):
    """``ds = p * (ds - inner)`` in place."""
    for j in range(ds.shape[0]):
        ds[j] = p[j] * (ds[j] - inner)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _scratch(t, s, dk, dv):
    """One item's scratch: four rows zero past ``max(S, T)`` up to whole vectors, 64 lanes,
    :func:`gemm_small`'s packing buffer, the ``[T, S]`` scores, the scaled query and two
    flat product buffers."""
    e = np.zeros((4, _padded(max(s, t))), dtype=np.float32)
    lanes = np.empty(4 * LANES, dtype=np.float32)
    width = max(dk, dv)
    bp = np.empty(max(t, s, width) * _padded(max(s, t, width)), dtype=np.float32)
    ts = np.empty((t, s), dtype=np.float32)
    qs = np.empty((t, dk), dtype=np.float32)
    buf1 = np.empty(max(t, s) * width, dtype=np.float32)
    buf2 = np.empty(max(t, s) * width, dtype=np.float32)
    return e, lanes, bp, ts, qs, buf1, buf2


# The products' transpose flags, passed read from this array: a constant ``True`` or
# ``False`` would be typed as a literal, and each combination of the two would compile a
# copy of :func:`_product` and of :func:`gemm_small` (and its packing) of its own.
_FLAGS = np.array([False, True])
# Likewise the layout of ``b``: the heads' bands of ``k`` and ``v`` are strided views
# (layout 'A'), so a C-contiguous ``b`` is passed as ``b[:, :]`` (typed 'A' too): one
# compiled :func:`_product` for every call instead of one per layout.


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _product(a, b, c, trans_a, trans_b, bp, row):
    """``c = op(a) @ op(b)`` through :func:`gemm_small` on the flat packing buffer."""
    k = a.shape[0] if trans_a else a.shape[1]
    npad = _padded(c.shape[1])
    gemm_small(a, b, c, trans_a, trans_b, bp[:k * npad].reshape(k, npad), row)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _take(x, r0, c0, scale, out):
    """``out = x[r0:r0 + rows, c0:c0 + cols] * scale`` (one head's band, C-contiguous)."""
    for i in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[i, c] = x[r0 + i, c0 + c] * scale


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _put(y, r0, c0, scale, x):
    """``y[r0:r0 + rows, c0:c0 + cols] = x * scale``."""
    for i in range(x.shape[0]):
        for c in range(x.shape[1]):
            y[r0 + i, c0 + c] = x[i, c] * scale


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _forward_item(item, q, k, v, offsets, heads, dk, scale, p, o, work):
    """Item ``item = b * heads + h``: ``p[b, h] = softmax((q_h * scale) k_h^T)`` and the
    context ``o[b * T:(b + 1) * T, h * dv:(h + 1) * dv] = p[b, h] @ v_h``."""
    e, lanes, bp, ts, qs, buf1, _ = work
    b, h = item // heads, item % heads
    t, s = p.shape[2], p.shape[3]
    dv = o.shape[1] // heads
    kh = k[b * s:(b + 1) * s, offsets[1] + h * dk:offsets[1] + (h + 1) * dk]
    vh = v[b * s:(b + 1) * s, offsets[2] + h * dv:offsets[2] + (h + 1) * dv]
    _take(q, b * t, offsets[0] + h * dk, scale, qs)
    _product(qs, kh, ts, _FLAGS[0], _FLAGS[1], bp, lanes)
    ph = p[b, h]
    e0 = e[0]
    for i in range(t):
        _softmax_row(ts[i], ph[i], e0, lanes)
    ctx = buf1[:t * dv].reshape(t, dv)
    _product(ph, vh, ctx, _FLAGS[0], _FLAGS[0], bp, lanes)
    _put(o, b * t, h * dv, np.float32(1.0), ctx)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def _backward_item(item, q, k, v, offsets, heads, dk, scale, p, do, gp, dq, dkey, dval, work):
    """Item ``item = b * heads + h`` of the backward of :func:`_forward_item` from the
    context's gradient ``do`` (and the weights' ``gp`` when it has items): the gradients
    of the query, key and value bands, written at ``offsets`` in ``dq``, ``dkey``,
    ``dval``."""
    e, lanes, bp, ts, qs, buf1, buf2 = work
    b, h = item // heads, item % heads
    t, s = p.shape[2], p.shape[3]
    dv = do.shape[1] // heads
    one = np.float32(1.0)
    kh = k[b * s:(b + 1) * s, offsets[1] + h * dk:offsets[1] + (h + 1) * dk]
    vh = v[b * s:(b + 1) * s, offsets[2] + h * dv:offsets[2] + (h + 1) * dv]
    _take(q, b * t, offsets[0] + h * dk, scale, qs)
    g = buf1[:t * dv].reshape(t, dv)
    _take(do, b * t, h * dv, one, g)
    ph = p[b, h]
    _product(g, vh, ts, _FLAGS[0], _FLAGS[1], bp, lanes)         # dL/dp
    grad_v = buf2[:s * dv].reshape(s, dv)
    _product(ph, g[:, :], grad_v, _FLAGS[1], _FLAGS[0], bp, lanes)  # b typed 'A', as kh, vh
    _put(dval, b * s, offsets[2] + h * dv, one, grad_v)
    if gp.shape[0] > 0:
        for i in range(t):
            for j in range(s):
                ts[i, j] = ts[i, j] + gp[b, h, i, j]
    quads = t - t % 4                                            # dL/d(scores)
    for i in range(0, quads, 4):
        _softmax_grad_rows4(ts, ph, i, e, lanes)
    for i in range(quads, t):
        _softmax_grad_row(ts[i], ph[i], e[0], lanes)
    grad_q = buf1[:t * dk].reshape(t, dk)
    _product(ts, kh, grad_q, _FLAGS[0], _FLAGS[0], bp, lanes)
    _put(dq, b * t, offsets[0] + h * dk, scale, grad_q)
    grad_k = buf2[:s * dk].reshape(s, dk)
    _product(ts, qs[:, :], grad_k, _FLAGS[1], _FLAGS[0], bp, lanes)
    _put(dkey, b * s, offsets[1] + h * dk, one, grad_k)


# -- the kernels -----------------------------------------------------------------------------
@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def attend_forward_runs(q, k, v, offsets, heads, dk, scale, p, o, runs, r0, r1):
    """Unmasked scaled dot-product attention of the (batch, head) items of runs ``r0 ..
    r1 - 1`` of ``runs`` runs of consecutive items, in one thread on one scratch (an
    item's bits do not depend on its run; :func:`attend_forward` runs them all).

    Args:
        q: C-contiguous float32 ``[B * T, .]``: head ``h``'s query is the column band
            ``offsets[0] + h * dk`` on, ``dk`` wide.
        k, v: Likewise ``[B * S, .]`` (bands at ``offsets[1]``, ``dk`` wide, and at
            ``offsets[2]``, ``dv`` wide); ``q``, ``k`` and ``v`` may be one array.
        offsets: The three bands' first columns (int64 ``[3]``).
        heads, dk: Head count and query/key width.
        scale: float32 factor of the query.
        p: Output ``[B, heads, T, S]``: the attention weights.
        o: Output ``[B * T, heads * dv]``: the context, head ``h`` in column band ``h``.
        runs, r0, r1: The runs, and which of them to compute.
    """
    nb, _, t, s = p.shape
    items = nb * heads
    work = _scratch(t, s, dk, o.shape[1] // heads)
    for r in range(r0, r1):
        for item in range(r * items // runs, (r + 1) * items // runs):
            _forward_item(item, q, k, v, offsets, heads, dk, scale, p, o, work)


@njit(cache=True, nogil=True, error_model="numpy", boundscheck=False)
def attend_backward_runs(q, k, v, offsets, heads, dk, scale, p, do, gp, dq, dkey, dval, runs,
                         r0, r1):
    """The backward of :func:`attend_forward_runs` on the items of runs ``r0 .. r1 - 1``.

    Args:
        q, k, v, offsets, heads, dk, scale, p: As the forward had them (``p`` its weights).
        do: dL/d(context), ``[B * T, heads * dv]``.
        gp: dL/d(weights) ``[B, heads, T, S]``, or an array with no items (none).
        dq, dkey, dval: Outputs shaped like ``q``, ``k``, ``v`` (possibly one array): the
            gradients land in the same bands as the inputs they belong to.
        runs, r0, r1: As the forward's.
    """
    nb, _, t, s = p.shape
    items = nb * heads
    work = _scratch(t, s, dk, do.shape[1] // heads)
    for r in range(r0, r1):
        for item in range(r * items // runs, (r + 1) * items // runs):
            _backward_item(item, q, k, v, offsets, heads, dk, scale, p, do, gp, dq, dkey, dval,
                           work)


def _run(kernel: Any, runs: int, q: np.ndarray, k: np.ndarray, v: np.ndarray,
         offsets: tuple[int, int, int], *rest: Any) -> None:
    # the offsets go as an array: a parallel run's driver takes no tuple inside its arguments
    args = (q, k, v, np.array(offsets, dtype=np.int64), *rest)
    run_tasks(kernel, runs, runs > 1, *args, runs)


def attend_forward(runs: int, *args: Any) -> None:
    """:func:`attend_forward_runs` on ``args`` (its arguments up to ``o``): one run in this
    thread when ``runs`` is 1, else ``runs`` runs as tasks on Numba's threads, each calling
    the same compiled kernel (:func:`.address.run_parallel`)."""
    _run(attend_forward_runs, runs, *args)


def attend_backward(runs: int, *args: Any) -> None:
    """:func:`attend_backward_runs` on ``args`` (its arguments up to ``dval``), as
    :func:`attend_forward`."""
    _run(attend_backward_runs, runs, *args)
