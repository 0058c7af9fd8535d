"""The wide-row passes: per-channel vectors in registers for a whole block of rows.

For the ``HALF_ROWS``, ``QUAD_ROWS`` and ``TWO_QUADS`` layouts (:mod:`.layout`) each pass
walks rows of 64 or 128 floats in ``f32x16`` vectors against per-channel vectors loaded
once per block: :func:`half_sums` and :func:`quad_sums` accumulate the two lane sums of
the statistics or the gradient sums, :func:`map_rows` writes the forward sweep or ``dx``.

These are the loops themselves, inlined (``inline="always"``) into the wide-row kernel
of each layout and pass (:mod:`.forward`, :mod:`.backward`), where
``mode``, ``quads`` and ``flag`` are constants: the dead branches are pruned there and
the constants folded into the loop. Called instead, they would test run-time values in
the loop. They inline nothing but the one-line helpers below, so each copy is small.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.simd import (load4, sfence, store4, vload, vprefetch, vsplat, vstore,
                                  vstream)
from tinynet.kernels.normalization.formulas import (affine_group, dx_group,
                                                                  normalized)
from tinynet.kernels.normalization.layout import HALF, WIDE

__all__ = ["STATS", "GRAD_RECOMPUTE", "GRAD_XN", "SWEEP", "DX", "half_sums", "quad_sums",
           "map_rows", "put"]

# What the two lane sums add per element: the shifted statistics ``(x - K, (x - K)^2)``,
# or the gradient sums ``(g, g * xn)`` with ``xn`` recomputed from ``x`` or given.
STATS, GRAD_RECOMPUTE, GRAD_XN = 0, 1, 2
# The element-wise passes: the forward sweep (``xa = x``, ``flag = want_xn``; vectors
# mean, inv_std, scale, beta) and ``dx`` (``xa = g``, ``xb`` = the input or ``xn``,
# ``flag = recompute``; vectors mean, ga, xa, ca: see formulas.dx_group).
SWEEP, DX = 0, 1


@njit(callee=True, cache=True, error_model="numpy")
def put(a, i, v, stream):
    """Vector ``v`` to ``a[i:i + 16]``: a streaming store when ``stream``, else ordinary."""
    if stream:
        vstream(a, i, v)
    else:
        vstore(a, i, v)


# How far ahead (floats) the statistics pass, the first to read a block from memory, asks
# for the lines it will read. The gradient sums, reading two arrays, ask for none: the
# hardware's prefetcher alone fetched them faster (docs/performance.md, session 47).
PASS_AHEAD = 1024


@njit(callee=True, cache=True, error_model="numpy")
def _terms(xa, xb, mode, i, ka, kb):
    """The two lane terms of the vector at ``i``."""
    if mode == STATS:
        if i + PASS_AHEAD < xa.size:
            vprefetch(xa, i + PASS_AHEAD)
        t = vload(xa, i) - ka
        return t, t * t
    t = vload(xa, i)
    xn = normalized(vload(xb, i), ka, kb) if mode == GRAD_RECOMPUTE else vload(xb, i)
    return t, t * xn


@njit(callee=True, cache=True, error_model="numpy")
def _quad_terms(xa, xb, mode, i, ka, kb, a, b):
    """``a``, ``b`` (quads of lanes) plus the terms of the quad at ``i``."""
    t0, u0 = _terms(xa, xb, mode, i, ka[0], kb[0])
    t1, u1 = _terms(xa, xb, mode, i + 16, ka[1], kb[1])
    t2, u2 = _terms(xa, xb, mode, i + 32, ka[2], kb[2])
    t3, u3 = _terms(xa, xb, mode, i + 48, ka[3], kb[3])
    return ((a[0] + t0, a[1] + t1, a[2] + t2, a[3] + t3),
            (b[0] + u0, b[1] + u1, b[2] + u2, b[3] + u3))


@njit(cache=True, inline="always", error_model="numpy")
def half_sums(mode, xa, xb, start, rows, va, vb, c1, c2):
    """``HALF_ROWS``: the :data:`HALF` lanes of two sums over ``rows`` wide rows from
    ``start`` (written, not added to), each row's two halves in turn: ``x - K`` and its
    square (``xa = x``, ``va = K``), or ``g`` and ``g * xn`` (``xa = g``, ``xb`` = the
    input or ``xn``, ``va``/``vb`` = mean / inv_std vectors)."""
    ka0 = vload(va, 0)
    ka1 = vload(va, 16)
    kb0 = vload(vb, 0)
    kb1 = vload(vb, 16)
    a0 = vsplat(np.float32(0.0))
    a1 = a0
    b0 = a0
    b1 = a0
    for r in range(rows):
        for h in range(0, WIDE, HALF):
            i = start + r * WIDE + h
            t0, u0 = _terms(xa, xb, mode, i, ka0, kb0)
            t1, u1 = _terms(xa, xb, mode, i + 16, ka1, kb1)
            a0 = a0 + t0
            a1 = a1 + t1
            b0 = b0 + u0
            b1 = b1 + u1
    vstore(c1, 0, a0)
    vstore(c1, 16, a1)
    vstore(c2, 0, b0)
    vstore(c2, 16, b1)


@njit(cache=True, inline="always", error_model="numpy")
def quad_sums(mode, quads, xa, xb, start, rows, va, vb, c1, c2):
    """``QUAD_ROWS`` (``quads = 1``) and ``TWO_QUADS`` (``quads = 2``): the lanes of
    :func:`half_sums`'s two sums, one lane per float of a row. A 128-float row is read
    once, both quads together: two 64-float passes would read it from memory twice."""
    z = vsplat(np.float32(0.0))
    a = (z, z, z, z)
    b = a
    ka = load4(va, 0)
    kb = load4(vb, 0)
    if quads == 1:
        for r in range(rows):
            a, b = _quad_terms(xa, xb, mode, start + r * WIDE, ka, kb, a, b)
    else:
        a2 = a
        b2 = a
        ka2 = load4(va, WIDE)
        kb2 = load4(vb, WIDE)
        for r in range(rows):
            i = start + r * 2 * WIDE
            a, b = _quad_terms(xa, xb, mode, i, ka, kb, a, b)
            a2, b2 = _quad_terms(xa, xb, mode, i + WIDE, ka2, kb2, a2, b2)
        store4(c1, WIDE, a2)
        store4(c2, WIDE, b2)
    store4(c1, 0, a)
    store4(c2, 0, b)


@njit(callee=True, cache=True, error_model="numpy")
def _map_vec(mode, xa, xb, out, xn, flag, stream, i, ahead, v1, v2, v3, v4):
    """One vector of the sweep or of ``dx`` (see :data:`SWEEP`); with ``ahead > 0`` it also
    asks for the line ``ahead`` floats further in ``xa``."""
    if ahead > 0:
        vprefetch(xa, i + ahead)
    if mode == SWEEP:
        x = vload(xa, i)
        put(out, i, affine_group(x, v1, v3, v4), stream)
        if flag:
            put(xn, i, normalized(x, v1, v2), stream)
    else:
        e = vload(xb, i) - v1 if flag else vload(xb, i)
        put(out, i, dx_group(vload(xa, i), e, v2, v4, v3), stream)


@njit(cache=True, inline="always", error_model="numpy")
def _map_quad(mode, xa, xb, out, xn, flag, stream, i, ahead, q1, q2, q3, q4):
    """The four vectors of the quad at ``i`` (:func:`_map_vec`), against the quads of
    per-channel vectors ``q1..q4``."""
    _map_vec(mode, xa, xb, out, xn, flag, stream, i, ahead, q1[0], q2[0], q3[0], q4[0])
    _map_vec(mode, xa, xb, out, xn, flag, stream, i + 16, ahead, q1[1], q2[1], q3[1], q4[1])
    _map_vec(mode, xa, xb, out, xn, flag, stream, i + 32, ahead, q1[2], q2[2], q3[2], q4[2])
    _map_vec(mode, xa, xb, out, xn, flag, stream, i + 48, ahead, q1[3], q2[3], q3[3], q4[3])


@njit(cache=True, inline="always", error_model="numpy")
def map_rows(mode, quads, xa, xb, out, xn, flag, stream, start, rows, ahead, v1, v2, v3, v4):
    """One element-wise pass (``mode``) over ``rows`` wide rows of ``quads`` quads from
    ``start``, the per-channel vectors ``v1..v4`` in registers for the whole block;
    ``stream``: write with streaming stores (the rows start on ``STREAM_ALIGN``
    boundaries); ``ahead > 0``: ask for the lines ``ahead`` floats further (the same rows
    of the next sample, whose first pass then finds them in the cache; the caller keeps
    them inside the arrays). Each element gets its span expression (:mod:`.formulas`)."""
    q1 = load4(v1, 0)
    q2 = load4(v2, 0)
    q3 = load4(v3, 0)
    q4 = load4(v4, 0)
    if quads == 1:
        for r in range(rows):
            _map_quad(mode, xa, xb, out, xn, flag, stream, start + r * WIDE, ahead, q1, q2,
                      q3, q4)
    else:
        p1 = load4(v1, WIDE)
        p2 = load4(v2, WIDE)
        p3 = load4(v3, WIDE)
        p4 = load4(v4, WIDE)
        for r in range(rows):
            i = start + r * 2 * WIDE
            _map_quad(mode, xa, xb, out, xn, flag, stream, i, ahead, q1, q2, q3, q4)
            _map_quad(mode, xa, xb, out, xn, flag, stream, i + WIDE, ahead, p1, p2, p3, p4)
    if stream:
        sfence()
