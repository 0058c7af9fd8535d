"""The step products of the recurrent kernels (:mod:`tinynet.kernels.recurrent`): a
register-blocked GEMM on a block of batch rows (``z += h @ U`` forward, ``dh = dz @ U.T``
backward), one fixed chain of fused multiply-adds per element, and the batch's split into
blocks of rows (the range a serial kernel's task runs).
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.sgemm_tiles import cload_n, cstore_n
from tinynet.kernels.simd import NARROW_REGISTERS, vfma, vsplat


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
# Blocks a parallel run makes at least (while there are 4-row tiles): enough to share
# evenly among 2, 4 or 8 threads. Not the thread count, so a result never depends on it;
# the blocks never change a bit, only which rows run together.
_SHARES = 8


def block_count(batch: int, shares: int) -> int:
    """How many blocks of rows a kernel runs: at most :data:`_BLOCK` rows each, and at
    least ``shares`` while there are 4-row tiles to share."""
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


# -- LSTM's whole step product on narrow cores: x_t @ W + xb + h @ U in one register pass ----
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _tile_step(xt, r0, nr, hc, W, U, xb2, biased, pc, n, z, i0):
    """``z[i0 + i, pc:pc + n] = (xt[r0 + i, :F] @ W + xb) + xt[r0 + i, hc:hc + units] @
    U`` on columns ``pc .. pc + n - 1`` (``n <= 16``) of up to 4 rows (``nr``; the rows
    past it repeat the last and are not stored): each chain over the features from zero,
    the bias added, then on over the state, the operations :func:`_inputs`, the bias pass
    and :func:`_recur` make through ``z``, here in registers (the same bits)."""
    ra = r0
    rb = r0 + min(1, nr - 1)
    rc = r0 + min(2, nr - 1)
    rd = r0 + min(3, nr - 1)
    zero = vsplat(np.float32(0.0))
    c0 = zero
    c1 = zero
    c2 = zero
    c3 = zero
    for k in range(W.shape[0]):
        u = cload_n(W, k, pc, n)
        c0 = vfma(vsplat(xt[ra, k]), u, c0)
        c1 = vfma(vsplat(xt[rb, k]), u, c1)
        c2 = vfma(vsplat(xt[rc, k]), u, c2)
        c3 = vfma(vsplat(xt[rd, k]), u, c3)
    if biased:
        bias = cload_n(xb2, 0, pc, n)
        c0 = c0 + bias
        c1 = c1 + bias
        c2 = c2 + bias
        c3 = c3 + bias
    for k in range(U.shape[0]):
        u = cload_n(U, k, pc, n)
        c0 = vfma(vsplat(xt[ra, hc + k]), u, c0)
        c1 = vfma(vsplat(xt[rb, hc + k]), u, c1)
        c2 = vfma(vsplat(xt[rc, hc + k]), u, c2)
        c3 = vfma(vsplat(xt[rd, hc + k]), u, c3)
    cstore_n(z, i0, pc, c0, n)
    if nr > 1:
        cstore_n(z, i0 + 1, pc, c1, n)
    if nr > 2:
        cstore_n(z, i0 + 2, pc, c2, n)
    if nr > 3:
        cstore_n(z, i0 + 3, pc, c3, n)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _step_products(xh, t, hc, W, U, xb2, biased, r0, nb, z):
    """``z[:nb] = x_t @ W + xb + h_{t-1} @ U`` for rows ``r0 .. r0 + nb - 1`` of ``xh[t]``
    (``[x_t | h_{t-1}]``), no dropout masks, in 4 x 16 tiles (:func:`_tile_step`)."""
    xt = xh[t]
    for j in range(0, W.shape[1], 16):
        n = min(16, W.shape[1] - j)
        for r in range(0, nb, 4):
            _tile_step(xt, r0 + r, min(4, nb - r), hc, W, U, xb2, biased, j, n, z, r)
