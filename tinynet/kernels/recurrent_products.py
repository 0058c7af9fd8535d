"""The step products of the recurrent kernels (:mod:`tinynet.kernels.recurrent`): a
register-blocked GEMM on a block of batch rows (``z += h @ U`` forward, ``dh = dz @ U.T``
backward), one fixed chain of fused multiply-adds per element, and the batch's split into
blocks of rows (the range a serial kernel's task runs); and LSTM's weight gradient over
the whole sequence (:func:`weight_grads_tasks`).
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.sgemm_tiles import cload, cload_n, cstore, cstore_n
from tinynet.kernels.simd import NARROW_REGISTERS, vfma, vload, vsplat, vstore


# -- the step products: a register-blocked GEMM on a block of batch rows ----------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _tile(a, r0, nr, k0, k1, p, pc, n, c, cc, load):
    """``c[r0 + i, cc + j] (+)= sum over k0 <= k < k1 of a[r0 + i, k] * p[k, pc + j]`` for
    ``i < nr <= 4``, ``j < n <= 64``: a 4 x 64 block of chains held in 16 vector registers
    over the whole k loop, each ``p`` row slice loaded once for the four rows and each
    ``a`` value broadcast. Each chain is ``k`` in increasing order of explicit fused
    multiply-adds, started from ``c`` when ``load``, else from zero. Rows past ``nr``
    repeat the last one and are not stored; columns past ``n`` are masked off."""
    n0 = min(max(n, 0), 16)
    n1 = min(max(n - 16, 0), 16)
    n2 = min(max(n - 32, 0), 16)
    n3 = min(max(n - 48, 0), 16)
    ra = r0
    rb = r0 + min(1, nr - 1)
    rc = r0 + min(2, nr - 1)
    rd = r0 + min(3, nr - 1)
    if load:
        c00 = cload_n(c, ra, cc, n0)
        c01 = cload_n(c, ra, cc + 16, n1)
        c02 = cload_n(c, ra, cc + 32, n2)
        c03 = cload_n(c, ra, cc + 48, n3)
        c10 = cload_n(c, rb, cc, n0)
        c11 = cload_n(c, rb, cc + 16, n1)
        c12 = cload_n(c, rb, cc + 32, n2)
        c13 = cload_n(c, rb, cc + 48, n3)
        c20 = cload_n(c, rc, cc, n0)
        c21 = cload_n(c, rc, cc + 16, n1)
        c22 = cload_n(c, rc, cc + 32, n2)
        c23 = cload_n(c, rc, cc + 48, n3)
        c30 = cload_n(c, rd, cc, n0)
        c31 = cload_n(c, rd, cc + 16, n1)
        c32 = cload_n(c, rd, cc + 32, n2)
        c33 = cload_n(c, rd, cc + 48, n3)
    else:
        zero = vsplat(np.float32(0.0))
        c00 = zero
        c01 = zero
        c02 = zero
        c03 = zero
        c10 = zero
        c11 = zero
        c12 = zero
        c13 = zero
        c20 = zero
        c21 = zero
        c22 = zero
        c23 = zero
        c30 = zero
        c31 = zero
        c32 = zero
        c33 = zero
    for k in range(k0, k1):
        u0 = cload_n(p, k, pc, n0)
        u1 = cload_n(p, k, pc + 16, n1)
        u2 = cload_n(p, k, pc + 32, n2)
        u3 = cload_n(p, k, pc + 48, n3)
        x = vsplat(a[ra, k])
        c00 = vfma(x, u0, c00)
        c01 = vfma(x, u1, c01)
        c02 = vfma(x, u2, c02)
        c03 = vfma(x, u3, c03)
        x = vsplat(a[rb, k])
        c10 = vfma(x, u0, c10)
        c11 = vfma(x, u1, c11)
        c12 = vfma(x, u2, c12)
        c13 = vfma(x, u3, c13)
        x = vsplat(a[rc, k])
        c20 = vfma(x, u0, c20)
        c21 = vfma(x, u1, c21)
        c22 = vfma(x, u2, c22)
        c23 = vfma(x, u3, c23)
        x = vsplat(a[rd, k])
        c30 = vfma(x, u0, c30)
        c31 = vfma(x, u1, c31)
        c32 = vfma(x, u2, c32)
        c33 = vfma(x, u3, c33)
    cstore_n(c, ra, cc, c00, n0)
    cstore_n(c, ra, cc + 16, c01, n1)
    cstore_n(c, ra, cc + 32, c02, n2)
    cstore_n(c, ra, cc + 48, c03, n3)
    if nr > 1:
        cstore_n(c, rb, cc, c10, n0)
        cstore_n(c, rb, cc + 16, c11, n1)
        cstore_n(c, rb, cc + 32, c12, n2)
        cstore_n(c, rb, cc + 48, c13, n3)
    if nr > 2:
        cstore_n(c, rc, cc, c20, n0)
        cstore_n(c, rc, cc + 16, c21, n1)
        cstore_n(c, rc, cc + 32, c22, n2)
        cstore_n(c, rc, cc + 48, c23, n3)
    if nr > 3:
        cstore_n(c, rd, cc, c30, n0)
        cstore_n(c, rd, cc + 16, c31, n1)
        cstore_n(c, rd, cc + 32, c32, n2)
        cstore_n(c, rd, cc + 48, c33, n3)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _tile_narrow(a, r0, nr, k0, k1, p, pc, n, c, cc, load):
    """:func:`_tile` for ``n <= 16`` columns: 4 x 16 chains in 4 accumulators, for cores
    with 16 vector registers (:data:`~tinynet.kernels.simd.NARROW_REGISTERS`), where the
    4 x 64 tile's 16 accumulators take 32 and spill. The same chains, so the same bits."""
    ra = r0
    rb = r0 + min(1, nr - 1)
    rc = r0 + min(2, nr - 1)
    rd = r0 + min(3, nr - 1)
    if load:
        c0 = cload_n(c, ra, cc, n)
        c1 = cload_n(c, rb, cc, n)
        c2 = cload_n(c, rc, cc, n)
        c3 = cload_n(c, rd, cc, n)
    else:
        zero = vsplat(np.float32(0.0))
        c0 = zero
        c1 = zero
        c2 = zero
        c3 = zero
    for k in range(k0, k1):
        u = cload_n(p, k, pc, n)
        c0 = vfma(vsplat(a[ra, k]), u, c0)
        c1 = vfma(vsplat(a[rb, k]), u, c1)
        c2 = vfma(vsplat(a[rc, k]), u, c2)
        c3 = vfma(vsplat(a[rd, k]), u, c3)
    cstore_n(c, ra, cc, c0, n)
    if nr > 1:
        cstore_n(c, rb, cc, c1, n)
    if nr > 2:
        cstore_n(c, rc, cc, c2, n)
    if nr > 3:
        cstore_n(c, rd, cc, c3, n)


#: Columns of a step product's tile: 16 (:func:`_tile_narrow`) on cores with 16 vector
#: registers, else 64 (:func:`_tile`). A fact of the machine, for speed only: a tile
#: chooses which chains run together, never a chain's order.
_NARROW = NARROW_REGISTERS
_TILE_COLS = 16 if _NARROW else 64
_TILE = _tile_narrow if _NARROW else _tile


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _product(a, nb, k0, k1, p, pc0, pc1, c, cc0, load):
    """``c[:nb, cc0:cc0 + pc1 - pc0] (+)= a[:nb, k0:k1] @ p[k0:k1, pc0:pc1]`` in 4-row
    tiles (:data:`_TILE`), column blocks outside, so a block of ``p`` stays in cache for
    all the rows. Every element is one chain over ``k`` in order, whatever ``nb``."""
    for j in range(pc0, pc1, _TILE_COLS):
        n = min(_TILE_COLS, pc1 - j)
        for r in range(0, nb, 4):
            _TILE(a, r, min(4, nb - r), k0, k1, p, j, n, c, cc0 + (j - pc0), load)


_BLOCK = 32  # rows a block of the kernels holds at most (its gates stay in cache)


def block_count(batch: int, shares: int) -> int:
    """How many blocks of rows a kernel runs: at most :data:`_BLOCK` rows each, and at
    least ``shares`` (a parallel run's thread count) while there are 4-row tiles to
    share. The blocks never change a bit, only which rows run together; fewer, larger
    blocks read each step's weights fewer times."""
    tiles = (batch + 3) // 4
    return max((batch + _BLOCK - 1) // _BLOCK, min(shares, tiles))


@njit(callee=True, cache=True, error_model="numpy")
def _block_rows(batch, blocks, c):
    """Rows ``[r0, r1)`` of block ``c`` of ``blocks``: whole 4-row tiles, shared evenly."""
    tiles = (batch + 3) // 4
    return min(4 * (tiles * c // blocks), batch), min(4 * (tiles * (c + 1) // blocks), batch)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _operand(hs, t, hc, rmask, g, r0, nb, units, hop):
    """``hop[i] = hs[t, r0 + i, hc:hc + units] * rmask[r0 + i, g]`` (no mask when ``rmask``
    is empty); ``hc`` is the state's first column (LSTM keeps the input beside it)."""
    masked = rmask.shape[0] > 0
    for i in range(nb):
        b = r0 + i
        if masked:
            for j in range(units):
                hop[i, j] = hs[t, b, hc + j] * rmask[b, g, j]
        else:
            for j in range(units):
                hop[i, j] = hs[t, b, hc + j]


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _recur(hs, t, hc, U, rmask, r0, nb, g0, g1, units, hop, z, load):
    """``z[:nb, gates g0..g1-1] (+)= (hs[t, r0:r0 + nb, hc:hc + units] * rmask[., g]) @
    U[:, gate g]``."""
    izero = np.int64(0)  # not a literal: a literal argument compiles a callee per value
    if rmask.shape[0] == 0:
        _operand(hs, t, hc, rmask, izero, r0, nb, units, hop)
        _product(hop, nb, izero, units, U, g0 * units, g1 * units, z, g0 * units, load)
        return
    for g in range(g0, g1):
        _operand(hs, t, hc, rmask, g, r0, nb, units, hop)
        _product(hop, nb, izero, units, U, g * units, (g + 1) * units, z, g * units, load)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _recur_back(dzb, UT, rmask, r0, nb, g0, g1, units, live, tmp, dh):
    """``dh[i] += sum_g rmask[r0 + i, g] * (dzb[i, gate g] @ UT[gate g])`` for the rows
    with ``live[i]``: without a mask one chain over the gate columns in increasing order,
    with one a chain per gate, the gates added in order."""
    izero = np.int64(0)  # (see _recur)
    no = np.bool_(False)
    if rmask.shape[0] == 0:
        _product(dzb, nb, g0 * units, g1 * units, UT, izero, units, tmp, izero, no)
        for i in range(nb):
            if live[i]:
                for k in range(units):
                    dh[i, k] += tmp[i, k]
        return
    for g in range(g0, g1):
        _product(dzb, nb, g * units, (g + 1) * units, UT, izero, units, tmp, izero, no)
        for i in range(nb):
            if live[i]:
                b = r0 + i
                for k in range(units):
                    dh[i, k] += tmp[i, k] * rmask[b, g, k]


# -- LSTM's input side in the step: x_t @ W forward, dz_t @ W.T backward ----------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _inputs(x, t, W, xmask, r0, nb, xop, z):
    """``z[:nb] = (x[t, r0:r0 + nb, :F] * xmask[m, r0:r0 + nb]) @ W`` (``F = W.shape[0]``,
    the features; ``x`` may hold more columns), each chain over the
    features in order from zero (the bits of ``matmul(x * mask, W)``): with no mask
    (``xmask`` empty) or one mask for all gates, one product; with one mask per gate
    (``xmask`` ``[gates, B, features]``), a product per gate on its columns."""
    izero = np.int64(0)  # (see _recur)
    f = W.shape[0]
    width = W.shape[1]
    n = xmask.shape[0]
    gw = width // n if n > 1 else width
    for g in range(max(n, 1)):
        for i in range(nb):
            b = r0 + i
            if n > 0:
                for j in range(f):
                    xop[i, j] = x[t, b, j] * xmask[g, b, j]
            else:
                for j in range(f):
                    xop[i, j] = x[t, b, j]
        _product(xop, nb, izero, f, W, g * gw, (g + 1) * gw, z, g * gw, np.bool_(False))


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _input_grads(dzb, WT, xmask, t, r0, nb, dxb, dx):
    """``dx[r0 + i, t] = dzb[i] @ WT`` (``dx`` batch-major ``[B, T, features]``; ``WT =
    W.T``, ``[G, features]``), one chain over
    the gate columns in order from zero, times the one input mask if there is one; with a
    mask per gate, ``sum_g (dzb[i, gate g] @ WT[gate g]) * xmask[g]`` from zero, the gates
    in order (the bits of the GEMMs ``dz @ W.T`` the layer took before)."""
    izero = np.int64(0)  # (see _recur)
    no = np.bool_(False)
    width = WT.shape[0]
    f = WT.shape[1]
    n = xmask.shape[0]
    if n <= 1:
        _product(dzb, nb, izero, width, WT, izero, f, dxb, izero, no)
        for i in range(nb):
            b = r0 + i
            if n == 1:
                for j in range(f):
                    dx[b, t, j] = dxb[i, j] * xmask[0, b, j]
            else:
                for j in range(f):
                    dx[b, t, j] = dxb[i, j]
        return
    gw = width // n
    for i in range(nb):
        for j in range(f):
            dx[r0 + i, t, j] = np.float32(0.0)
    for g in range(n):
        _product(dzb, nb, g * gw, (g + 1) * gw, WT, izero, f, dxb, izero, no)
        for i in range(nb):
            b = r0 + i
            for j in range(f):
                dx[b, t, j] += dxb[i, j] * xmask[g, b, j]


# -- LSTM's step products over packed panels: one register pass a tile ----------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _tile_panel(a, r0, nr, hc, P, jt, xb2, biased, z, i0):
    """``z[i0 + i, 16 jt:16 jt + 16] = (a[r0 + i, :hc] @ P[jt, :hc] (+ xb2[0, 16 jt:])) +
    a[r0 + i, hc:K] @ P[jt, hc:]`` for up to 4 rows (``nr``; the rows past it repeat the
    last and are not stored), ``P`` ``[tiles, K, 16]`` the packed panels: each chain over
    ``k`` in increasing order from zero, the bias added after the first ``hc`` terms when
    ``biased``. Forward, ``a`` is ``[x_t | h_{t-1}]`` and ``P`` packs ``[W; U]``: the
    operations :func:`_inputs`, the bias pass and :func:`_recur` make through ``z``, in
    registers (the same bits); backward (``hc = K``), ``a`` is the gate gradients and
    ``P`` packs ``[U.T | W.T]``: :func:`_recur_back`'s and :func:`_input_grads`' chains.
    A panel is one contiguous ``[K, 16]`` stream, which stays in L1 for every row tile; a
    weight matrix's own column slice, its rows a whole matrix row apart, maps onto a few
    L1 sets and came from L2 again for every tile."""
    ra = r0
    rb = r0 + min(1, nr - 1)
    rc = r0 + min(2, nr - 1)
    rd = r0 + min(3, nr - 1)
    pj = P[jt]
    zero = vsplat(np.float32(0.0))
    c0 = zero
    c1 = zero
    c2 = zero
    c3 = zero
    for k in range(hc):
        u = cload(pj, k, 0)
        c0 = vfma(vsplat(a[ra, k]), u, c0)
        c1 = vfma(vsplat(a[rb, k]), u, c1)
        c2 = vfma(vsplat(a[rc, k]), u, c2)
        c3 = vfma(vsplat(a[rd, k]), u, c3)
    if biased:
        bias = cload(xb2, 0, 16 * jt)
        c0 = c0 + bias
        c1 = c1 + bias
        c2 = c2 + bias
        c3 = c3 + bias
    for k in range(hc, pj.shape[0]):
        u = cload(pj, k, 0)
        c0 = vfma(vsplat(a[ra, k]), u, c0)
        c1 = vfma(vsplat(a[rb, k]), u, c1)
        c2 = vfma(vsplat(a[rc, k]), u, c2)
        c3 = vfma(vsplat(a[rd, k]), u, c3)
    cstore(z, i0, 16 * jt, c0)
    if nr > 1:
        cstore(z, i0 + 1, 16 * jt, c1)
    if nr > 2:
        cstore(z, i0 + 2, 16 * jt, c2)
    if nr > 3:
        cstore(z, i0 + 3, 16 * jt, c3)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _panel_products(a, r0, nb, hc, P, xb2, biased, z):
    """``z[:nb, :16 tiles]`` = :func:`_tile_panel` over every panel of ``P`` and rows ``r0
    .. r0 + nb - 1`` of ``a``, in 4-row tiles, panels outside (a panel stays in L1 for all
    the rows). ``z`` has ``16 * P.shape[0]`` columns (the padded ones are zeros' sums)."""
    for jt in range(P.shape[0]):
        for r in range(0, nb, 4):
            _tile_panel(a, r0 + r, min(4, nb - r), hc, P, jt, xb2, biased, z, r)


# -- the weight gradient over every step: a.T @ b for a long inner index ----------------------
_WG_ROWS = 256  # inner steps (rows of a and b) packed at a time; for speed only
_WG_STRIP = 6  # columns of a per tile, broadcast (6 x 16: 12 accumulators, 2 loads a step)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _wg_tile(ap, s, bp, p, rn, ni, n, c, i0, j0, load):
    """``c[i0 + q, j0:j0 + n] (+)= sum over r < rn of ap[s, r, q] * bp[p, 16 r:16 r + n]``
    for ``q < ni <= 6``: six chains of 16 lanes over the packed rows in order, started from
    ``c`` when ``load``, else from zero (the padded lanes and rows are zeros and are not
    stored)."""
    if load:
        c0 = cload_n(c, i0, j0, n)
        c1 = cload_n(c, i0 + min(1, ni - 1), j0, n)
        c2 = cload_n(c, i0 + min(2, ni - 1), j0, n)
        c3 = cload_n(c, i0 + min(3, ni - 1), j0, n)
        c4 = cload_n(c, i0 + min(4, ni - 1), j0, n)
        c5 = cload_n(c, i0 + min(5, ni - 1), j0, n)
    else:
        zero = vsplat(np.float32(0.0))
        c0 = zero
        c1 = zero
        c2 = zero
        c3 = zero
        c4 = zero
        c5 = zero
    bpp = bp[p]
    for r in range(rn):
        u = vload(bpp, 16 * r)
        c0 = vfma(vsplat(ap[s, r, 0]), u, c0)
        c1 = vfma(vsplat(ap[s, r, 1]), u, c1)
        c2 = vfma(vsplat(ap[s, r, 2]), u, c2)
        c3 = vfma(vsplat(ap[s, r, 3]), u, c3)
        c4 = vfma(vsplat(ap[s, r, 4]), u, c4)
        c5 = vfma(vsplat(ap[s, r, 5]), u, c5)
    cstore_n(c, i0, j0, c0, n)
    if ni > 1:
        cstore_n(c, i0 + 1, j0, c1, n)
    if ni > 2:
        cstore_n(c, i0 + 2, j0, c2, n)
    if ni > 3:
        cstore_n(c, i0 + 3, j0, c3, n)
    if ni > 4:
        cstore_n(c, i0 + 4, j0, c4, n)
    if ni > 5:
        cstore_n(c, i0 + 5, j0, c5, n)


@njit(cache=True, error_model="numpy", boundscheck=False)
def weight_grads_tasks(a, b, c, tasks, k0, k1):
    """``c = a.T @ b`` (``a`` ``[R, M]``, ``b`` ``[R, N]``, ``c`` ``[M, N]``, C-contiguous
    float32), tasks ``k0 .. k1 - 1`` of ``tasks``, each a band of ``c``'s 16-column panels:
    LSTM's weight gradients, ``[x_t | h_{t-1}].T @ dz`` over all ``T * B`` rows. Every
    element is one chain of fused multiply-adds over the rows in increasing order from
    zero, as :func:`tinynet.ops.arrays.matmul.matmul`'s, so the same bits. Per block of
    :data:`_WG_ROWS` rows a task packs ``a`` into strips of 6 columns and its band of ``b``
    into panels of 16 (each a contiguous stream for the tile), then runs a 6 x 16 tile
    (:func:`_wg_tile`) over each strip and panel, the chains waiting in ``c`` between
    blocks (a float32 round trip: the same chain). The tasks' panels do not overlap, so
    their number never shows in a result; each packs all of ``a``. A last row of ``c``
    past ``a``'s columns (``c`` ``[M + 1, N]``) takes a column of ones: the column sums
    of ``b`` (LSTM's bias gradient, a chain of additions over the rows in order), from
    a strip's lanes the tile computes anyway."""
    rows = a.shape[0]
    m = a.shape[1]
    mc = c.shape[0]  # m, or m + 1 with the column of ones
    n = b.shape[1]
    strips = (mc + _WG_STRIP - 1) // _WG_STRIP
    panels = (n + 15) // 16
    rb = min(_WG_ROWS, rows)
    for task in range(k0, k1):
        p0 = panels * task // tasks
        p1 = panels * (task + 1) // tasks
        if p1 <= p0:
            continue
        ap = np.zeros((strips, rb, _WG_STRIP), dtype=np.float32)
        if mc > m:
            for r in range(rb):
                ap[m // _WG_STRIP, r, m % _WG_STRIP] = np.float32(1.0)
        bp = np.zeros((p1 - p0, 16 * rb), dtype=np.float32)
        for r0 in range(0, rows, rb):
            rn = min(rb, rows - r0)
            # row by row: each row of ``a`` read once, in order (strip by strip, the
            # reads jumped a whole row per element: three times the time)
            whole = m // _WG_STRIP
            for r in range(rn):
                ar = a[r0 + r]
                for s in range(whole):
                    for q in range(_WG_STRIP):
                        ap[s, r, q] = ar[_WG_STRIP * s + q]
                for q in range(m - _WG_STRIP * whole):
                    ap[whole, r, q] = ar[_WG_STRIP * whole + q]
            for r in range(rn):
                for p in range(p0, p1):
                    w = min(16, n - 16 * p)
                    if w == 16:
                        vstore(bp[p - p0], 16 * r, vload(b[r0 + r], 16 * p))
                    else:
                        for q in range(w):
                            bp[p - p0, 16 * r + q] = b[r0 + r, 16 * p + q]
            for p in range(p0, p1):
                w = min(16, n - 16 * p)
                for s in range(strips):
                    _wg_tile(ap, s, bp, p - p0, rn, min(_WG_STRIP, mc - _WG_STRIP * s), w, c,
                             _WG_STRIP * s, 16 * p, r0 > 0)
