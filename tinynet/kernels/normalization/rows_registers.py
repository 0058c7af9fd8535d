"""Layer norm's backward rows of exactly 64 or 32 features, held in registers.

The chunk's parameter lanes and ``gamma`` stay in ``f32x16`` registers and ``dx`` reuses
each row's loaded values. Every element and lane sees the operations of the general row
loop (:mod:`.rows`) in its order, so the bits are the same. ``affine_only`` and
``recompute`` arrive as constants of the caller's compiled row loop (``rows64`` and
``rows32`` are inlined there; :func:`single_rows` is called with them as literal
arguments, so it compiles once per pair of constants): as run-time flags they kept the
64-feature loop from staying in registers (docs/normalization.md has the figures).
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.simd import (load4, splat4, store4, vfold8x4, vhighs, vload, vload8x2,
                                  vlows, vsplat, vstore)
from tinynet.kernels.normalization.folds import segment_dot2, segment_dot2_pair
from tinynet.kernels.normalization.formulas import dx_row, normalized
from tinynet.kernels.normalization.lanes import put

__all__ = ["rows64", "rows32", "coefficients", "flush", "one_row", "single_rows"]


@njit(cache=True, inline="always", error_model="numpy")
def coefficients(sa, sb, n, affine_only):
    """A row's ``dx`` coefficients ``(sum_g / n, sum_gxn / n)`` from its two dots."""
    if affine_only:
        return np.float32(0.0), np.float32(0.0)
    return np.float32(np.float64(sa) / n), np.float32(np.float64(sb) / n)


@njit(cache=True, inline="always", error_model="numpy")
def flush(parts, j, acc, channels):
    """The chunk's float32 lanes ``acc`` to task row ``j`` of the partials, and zeroed."""
    pu = parts[0, j]
    pv = parts[1, j]
    for c in range(channels):
        pu[c] = np.float64(acc[0, c])
        pv[c] = np.float64(acc[1, c])
        acc[0, c] = np.float32(0.0)
        acc[1, c] = np.float32(0.0)


@njit(cache=True, inline="always", error_model="numpy")
def one_row(recompute, affine_only, gr, sr, dr, m, k, gamma, acc, vb, n):
    """One row by the general loop: ``g * xn`` into ``vb`` and the lanes ``acc``, its two
    dots with ``gamma``, then ``dx``."""
    channels = gr.size
    for c in range(channels):
        t = gr[c] * (normalized(sr[c], m, k) if recompute else sr[c])
        vb[c] = t
        acc[0, c] += gr[c]
        acc[1, c] += t
    sa, sb = segment_dot2(gamma, gr, vb, 0, channels)
    a, b = coefficients(sa, sb, n, affine_only)
    for c in range(channels):
        dr[c] = dx_row(gr[c], normalized(sr[c], m, k) if recompute else sr[c], k, gamma[c],
                       a, b)


@njit(callee=True, cache=True, error_model="numpy")
def single_rows(recompute, affine_only, g, s, dx, r0, r1, channels, stats, gamma, acc, vb):
    """Rows ``r0..r1`` one at a time by :func:`one_row` (a called function, compiled once
    per flag constants: the rows of a ``C`` that is not a multiple of 8, and the odd last
    row of a chunk of the pair and register loops)."""
    n = np.float64(channels)
    for q in range(r0, r1):
        row = q * channels
        one_row(recompute, affine_only, g[row:row + channels], s[row:row + channels],
                dx[row:row + channels], stats[0, q], stats[1, q], gamma, acc, vb, n)


@njit(cache=True, inline="always", error_model="numpy")
def _dx_quad(dx, i, stream, k, gq, xq, gam, a, b):
    """:func:`formulas.dx_row` on a quad (four vectors)."""
    va = vsplat(a)
    vb = vsplat(b)
    put(dx, i, dx_row(gq[0], xq[0], k, gam[0], va, vb), stream)
    put(dx, i + 16, dx_row(gq[1], xq[1], k, gam[1], va, vb), stream)
    put(dx, i + 32, dx_row(gq[2], xq[2], k, gam[2], va, vb), stream)
    put(dx, i + 48, dx_row(gq[3], xq[3], k, gam[3], va, vb), stream)


@njit(cache=True, inline="always", error_model="numpy")
def rows64(recompute, affine_only, g, s, dx, stream, r0, r1, spc, stats, gamma, parts, vbuf,
           acc):
    """Rows ``r0..r1`` of 64 features, each four ``f32x16`` vectors."""
    n = np.float64(64)
    gam = load4(gamma, 0)
    for c0 in range(r0 - r0 % spc, r1, spc):
        au = splat4(0.0)
        av = au
        for r in range(max(c0, r0), min(c0 + spc, r1)):
            i = r * 64
            k = vsplat(stats[1, r])
            gq = load4(g, i)
            if recompute:
                m = vsplat(stats[0, r])
                sq = load4(s, i)
                xq = (normalized(sq[0], m, k), normalized(sq[1], m, k),
                      normalized(sq[2], m, k), normalized(sq[3], m, k))
            else:
                xq = load4(s, i)
            tq = (gq[0] * xq[0], gq[1] * xq[1], gq[2] * xq[2], gq[3] * xq[3])
            au = (au[0] + gq[0], au[1] + gq[1], au[2] + gq[2], au[3] + gq[3])
            av = (av[0] + tq[0], av[1] + tq[1], av[2] + tq[2], av[3] + tq[3])
            store4(vbuf, 0, tq)
            # the pair fold on the row twice: segment_dot2's bits, and the callee the
            # vector kinds compile anyway (int64 arguments, no literals: one signature)
            sa, sb, _, _ = segment_dot2_pair(gamma, g, i, i, vbuf, np.int64(0), np.int64(0),
                                             gamma.size)
            a, b = coefficients(sa, sb, n, affine_only)
            _dx_quad(dx, i, stream, k, gq, xq, gam, a, b)
        store4(acc[0], 0, au)
        store4(acc[1], 0, av)
        flush(parts, c0 // spc, acc, 64)


@njit(cache=True, inline="always", error_model="numpy")
def rows32(recompute, affine_only, g, s, dx, stream, r0, r1, spc, stats, gamma, parts, vbuf,
           acc):
    """Rows ``r0..r1`` of 32 features, two rows at a time: each row two ``f32x16``
    vectors, and the two rows' 8-lane dots side by side in one vector (row ``r`` in lanes
    0-7, row ``r + 1`` in lanes 8-15, the low and high halves of each row's vectors added
    in element order). An odd last row of a chunk takes the general loop."""
    n = np.float64(32)
    gw0 = vload8x2(gamma, 0, 0)
    gw1 = vload8x2(gamma, 8, 8)
    gw2 = vload8x2(gamma, 16, 16)
    gw3 = vload8x2(gamma, 24, 24)
    gam0 = vload(gamma, 0)
    gam1 = vload(gamma, 16)
    zero = vsplat(0.0)
    for c0 in range(r0 - r0 % spc, r1, spc):
        lo = max(c0, r0)
        hi = min(c0 + spc, r1)
        u0 = u1 = v0 = v1 = zero
        for r in range(lo, hi - 1, 2):
            i = r * 32
            ka = vsplat(stats[1, r])
            kb = vsplat(stats[1, r + 1])
            ga0 = vload(g, i)
            ga1 = vload(g, i + 16)
            gb0 = vload(g, i + 32)
            gb1 = vload(g, i + 48)
            xa0 = vload(s, i)
            xa1 = vload(s, i + 16)
            xb0 = vload(s, i + 32)
            xb1 = vload(s, i + 48)
            if recompute:
                ma = vsplat(stats[0, r])
                mb = vsplat(stats[0, r + 1])
                xa0 = normalized(xa0, ma, ka)
                xa1 = normalized(xa1, ma, ka)
                xb0 = normalized(xb0, mb, kb)
                xb1 = normalized(xb1, mb, kb)
            ta0 = ga0 * xa0
            ta1 = ga1 * xa1
            tb0 = gb0 * xb0
            tb1 = gb1 * xb1
            u0 = (u0 + ga0) + gb0
            u1 = (u1 + ga1) + gb1
            v0 = (v0 + ta0) + tb0
            v1 = (v1 + ta1) + tb1
            d = zero + gw0 * vlows(ga0, gb0)
            e = zero + gw0 * vlows(ta0, tb0)
            d = d + gw1 * vhighs(ga0, gb0)
            e = e + gw1 * vhighs(ta0, tb0)
            d = d + gw2 * vlows(ga1, gb1)
            e = e + gw2 * vlows(ta1, tb1)
            d = d + gw3 * vhighs(ga1, gb1)
            e = e + gw3 * vhighs(ta1, tb1)
            da, db, ea, eb = vfold8x4(d, e)
            aa, ba = coefficients(da, ea, n, affine_only)
            ab, bb = coefficients(db, eb, n, affine_only)
            va, vb = vsplat(aa), vsplat(ba)
            put(dx, i, dx_row(ga0, xa0, ka, gam0, va, vb), stream)
            put(dx, i + 16, dx_row(ga1, xa1, ka, gam1, va, vb), stream)
            va, vb = vsplat(ab), vsplat(bb)
            put(dx, i + 32, dx_row(gb0, xb0, kb, gam0, va, vb), stream)
            put(dx, i + 48, dx_row(gb1, xb1, kb, gam1, va, vb), stream)
        vstore(acc[0], 0, u0)
        vstore(acc[0], 16, u1)
        vstore(acc[1], 0, v0)
        vstore(acc[1], 16, v1)
        if (hi - lo) % 2:
            # ``gamma.size`` (32), not a literal: the callee compiles once for every caller
            single_rows(recompute, affine_only, g, s, dx, hi - 1, hi, gamma.size, stats,
                        gamma, acc, vbuf)
        flush(parts, c0 // spc, acc, 32)
