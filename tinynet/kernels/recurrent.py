"""Recurrent Numba kernels: the per-step loops of SimpleRNN, LSTM and GRU, forward and
backward through time.

The input side of every gate for the whole sequence is one GEMM done before these
kernels run (``xp = x @ kernel + bias``, ``[B, T, G]`` with ``G = k * units``, on
tinynet's fixed-order GEMM); what is left is the recurrence. The drivers split the batch
into blocks of whole 4-row tiles (at most 32 rows; the parallel drivers at least 8
blocks, on Numba's threads with ``prange``) and each block runs every step for its rows.

A step's recurrent product, ``z += h @ U`` (``U`` the ``[units, G]`` recurrent kernel),
is a small GEMM on the block's rows (:func:`_tile`: 4 rows x 64 columns of ``z`` in
registers over the whole loop over ``units``, each row slice of ``U`` loaded once for the
four rows). Backward, ``dh_prev = dz @ U.T`` is the same GEMM over ``UT = U.T``
(``[G, units]``, contiguous). Every element is one chain of fused multiply-adds in a
fixed order (over ``units``, or over the gate columns backward), whatever the tiles,
blocks, driver or thread count, so all of them give the same bits. The weight gradients
are not accumulated here: the kernels store every step's gate gradients (``[B, T, G]``)
and the caller takes ``x.T @ dz`` and ``h_prev.T @ dz`` as GEMMs over all ``B * T`` rows.

Recurrent dropout (Keras 3): ``rmask`` is ``[B, k, units]`` (one mask per gate, fixed
over the steps) or empty (``[0, k, units]``: no mask); a masked gate sees
``h * rmask[b, g]`` in its recurrent product.

Sequence mask (Keras's masking layers): ``smask`` is ``[B, T]`` bool (``False`` marks a
padded step) or empty (``[0, T]``: every step valid; the same compiled kernel serves both).
A masked step keeps the state (``h``, and ``c`` for LSTM) and stores zero gates; backward,
its gate gradients are zero and the state's gradient passes through it unchanged (plus
the gradient of that step's output, which is the carried state).

Activation kinds (``act``, ``ract``): :data:`LINEAR`, :data:`TANH`, :data:`SIGMOID`,
:data:`RELU`, :data:`HARD_SIGMOID` (Keras 3's ``relu6(x + 3) / 6``). Derivatives are
taken from the activation's output.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from tinynet.kernels._jit import CALLEE_OPTIONS, njit
from tinynet.kernels.sgemm_tiles import cload_n, cstore_n
from tinynet.kernels.simd import LANES, f32x16, vfma, vload, vsplat, vstore

__all__ = ["LINEAR", "TANH", "SIGMOID", "RELU", "HARD_SIGMOID",
           "simple_forward_serial", "simple_forward_parallel",
           "simple_backward_serial", "simple_backward_parallel",
           "lstm_forward_serial", "lstm_forward_parallel",
           "lstm_backward_serial", "lstm_backward_parallel",
           "gru_forward_serial", "gru_forward_parallel",
           "gru_backward_serial", "gru_backward_parallel"]

LINEAR, TANH, SIGMOID, RELU, HARD_SIGMOID = range(5)


# -- tanh and sigmoid in float32 arithmetic ---------------------------------------------------
# libm's exp/tanh are calls LLVM cannot vectorize, and they were most of a step's time.
# These are Cephes's float32 approximations (within 2 ulp of the exact value), written
# with IEEE float32 operations only (no fast-math), so they give the same bits on every
# machine, compiled or interpreted; the spans below run them 16 lanes at a time.
def _pow2(n):
    """``2.0 ** n`` as float32 for an integer ``-126 <= n <= 0`` (its exponent bits)."""
    return np.array((int(n) + 127) << 23, dtype=np.int32).view(np.float32)[()]


@intrinsic
def _bits_to_f32(typingctx, bits):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@overload(_pow2, jit_options=CALLEE_OPTIONS)
def _pow2_jit(n):
    return lambda n: _bits_to_f32(np.int32((np.int32(n) + np.int32(127)) << np.int32(23)))


@njit(cache=True, error_model="numpy", inline="always")
def _exp_neg(v):
    """``exp(v)`` for ``v <= 0`` (float32; below -87, ``exp(-87)``)."""
    v = np.float32(-87.0) if v < np.float32(-87.0) else v
    n = np.floor(v * np.float32(1.44269504088896341) + np.float32(0.5))
    r = v - n * np.float32(0.693359375)
    r = r - n * np.float32(-2.12194440e-4)
    r2 = r * r
    p = np.float32(1.9875691500e-4) * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * r2 + r + np.float32(1.0)
    return p * _pow2(n)


@njit(cache=True, error_model="numpy", inline="always")
def _sigmoid_f32(v):
    e = _exp_neg(-v if v >= np.float32(0.0) else v)
    one = np.float32(1.0)
    return one / (one + e) if v >= np.float32(0.0) else e / (one + e)


@njit(cache=True, error_model="numpy", inline="always")
def _tanh_f32(v):
    a = -v if v < np.float32(0.0) else v
    if a < np.float32(0.625):
        z = v * v
        p = np.float32(-5.70498872745e-3) * z + np.float32(2.06390887954e-2)
        p = p * z - np.float32(5.37397155531e-2)
        p = p * z + np.float32(1.33314422036e-1)
        p = p * z - np.float32(3.33332819422e-1)
        return p * z * v + v
    e = _exp_neg(np.float32(-2.0) * a)
    t = (np.float32(1.0) - e) / (np.float32(1.0) + e)
    return -t if v < np.float32(0.0) else t


@njit(callee=True, cache=True, error_model="numpy")
def _act(kind, v):
    zero = np.float32(0.0)
    if kind == TANH:
        return _tanh_f32(v)
    if kind == SIGMOID:
        return _sigmoid_f32(v)
    if kind == RELU:
        return zero if v <= zero else v
    if kind == HARD_SIGMOID:
        t = v + np.float32(3.0)
        t = zero if t <= zero else t
        t = np.float32(6.0) if t >= np.float32(6.0) else t
        return t / np.float32(6.0)
    return v


@njit(callee=True, cache=True, error_model="numpy")
def _dact(kind, y):
    """The activation's derivative, from its output ``y``."""
    one = np.float32(1.0)
    zero = np.float32(0.0)
    if kind == TANH:
        return one - y * y
    if kind == SIGMOID:
        return y * (one - y)
    if kind == RELU:
        return one if y > zero else zero
    if kind == HARD_SIGMOID:
        return np.float32(1.0 / 6.0) if (y > zero and y < one) else zero
    return one


# -- the same in 16 lanes: each lane the scalar function's operations, in its order ------------
# LLVM leaves the scalar functions' loops scalar (their branches), so the spans run them on
# f32x16 vectors: both sides of every branch computed and one picked per lane, which gives
# each lane the scalar function's bits.
def _vdiv(a, b):
    """``a / b`` lane by lane."""
    return (a / b).astype(np.float32)


def _vpick_ge(a, b, x, y):
    """``x`` where ``a >= b``, else ``y``, lane by lane."""
    return np.where(a >= b, x, y).astype(np.float32)


def _vpick_lt(a, b, x, y):
    """``x`` where ``a < b``, else ``y``, lane by lane."""
    return np.where(a < b, x, y).astype(np.float32)


def _vfloor(a):
    return np.floor(a).astype(np.float32)


def _vpow2(n):
    """``2.0 ** n`` per lane for integral ``-126 <= n <= 0`` (:func:`_pow2` per lane)."""
    return ((n.astype(np.int32) + np.int32(127)) << np.int32(23)).view(np.float32)


_I32x16 = ir.VectorType(ir.IntType(32), LANES)
_F32x16 = ir.VectorType(ir.FloatType(), LANES)


@intrinsic
def _vdiv_i(typingctx, a, b):
    def codegen(context, builder, sig, args):
        return builder.fdiv(args[0], args[1])

    return f32x16(f32x16, f32x16), codegen


def _picker(op):
    @intrinsic
    def pick(typingctx, a, b, x, y):
        def codegen(context, builder, sig, args):
            return builder.select(builder.fcmp_ordered(op, args[0], args[1]), args[2], args[3])

        return f32x16(f32x16, f32x16, f32x16, f32x16), codegen

    return pick


_vpick_ge_i, _vpick_lt_i = _picker(">="), _picker("<")


@intrinsic
def _vfloor_i(typingctx, a):
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_F32x16, [_F32x16]),
                                            "llvm.floor.v16f32")
        return builder.call(fn, args)

    return f32x16(f32x16), codegen


@intrinsic
def _vpow2_i(typingctx, n):
    def codegen(context, builder, sig, args):
        k = builder.fptosi(args[0], _I32x16)
        k = builder.shl(builder.add(k, ir.Constant(_I32x16, [127] * LANES)),
                        ir.Constant(_I32x16, [23] * LANES))
        return builder.bitcast(k, _F32x16)

    return f32x16(f32x16), codegen


@overload(_vdiv, jit_options=CALLEE_OPTIONS)
def _vdiv_jit(a, b):
    return lambda a, b: _vdiv_i(a, b)


@overload(_vpick_ge, jit_options=CALLEE_OPTIONS)
def _vpick_ge_jit(a, b, x, y):
    return lambda a, b, x, y: _vpick_ge_i(a, b, x, y)


@overload(_vpick_lt, jit_options=CALLEE_OPTIONS)
def _vpick_lt_jit(a, b, x, y):
    return lambda a, b, x, y: _vpick_lt_i(a, b, x, y)


@overload(_vfloor, jit_options=CALLEE_OPTIONS)
def _vfloor_jit(a):
    return lambda a: _vfloor_i(a)


@overload(_vpow2, jit_options=CALLEE_OPTIONS)
def _vpow2_jit(n):
    return lambda n: _vpow2_i(n)


@njit(cache=True, error_model="numpy", inline="always")
def _vexp_neg(v):
    """:func:`_exp_neg` in 16 lanes."""
    v = _vpick_lt(v, vsplat(-87.0), vsplat(-87.0), v)
    n = _vfloor(v * vsplat(1.44269504088896341) + vsplat(0.5))
    r = v - n * vsplat(0.693359375)
    r = r - n * vsplat(-2.12194440e-4)
    r2 = r * r
    p = vsplat(1.9875691500e-4) * r + vsplat(1.3981999507e-3)
    p = p * r + vsplat(8.3334519073e-3)
    p = p * r + vsplat(4.1665795894e-2)
    p = p * r + vsplat(1.6666665459e-1)
    p = p * r + vsplat(5.0000001201e-1)
    p = p * r2 + r + vsplat(1.0)
    return p * _vpow2(n)


@njit(cache=True, error_model="numpy", inline="always")
def _vsigmoid(v):
    """:func:`_sigmoid_f32` in 16 lanes."""
    zero = vsplat(0.0)
    one = vsplat(1.0)
    e = _vexp_neg(_vpick_ge(v, zero, v * vsplat(-1.0), v))
    d = one + e
    return _vpick_ge(v, zero, _vdiv(one, d), _vdiv(e, d))


@njit(cache=True, error_model="numpy", inline="always")
def _vtanh(v):
    """:func:`_tanh_f32` in 16 lanes."""
    zero = vsplat(0.0)
    one = vsplat(1.0)
    a = _vpick_lt(v, zero, v * vsplat(-1.0), v)
    z = v * v
    p = vsplat(-5.70498872745e-3) * z + vsplat(2.06390887954e-2)
    p = p * z - vsplat(5.37397155531e-2)
    p = p * z + vsplat(1.33314422036e-1)
    p = p * z - vsplat(3.33332819422e-1)
    small = p * z * v + v
    e = _vexp_neg(vsplat(-2.0) * a)
    t = _vdiv(one - e, one + e)
    big = _vpick_lt(v, zero, t * vsplat(-1.0), t)
    return _vpick_lt(a, vsplat(0.625), small, big)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _act_span(kind, z, j0, j1):
    """``z[j0:j1] = act(z[j0:j1])`` in place: tanh and sigmoid 16 lanes at a time (the
    last few elements one by one, with the same bits), the others element by element."""
    if kind == LINEAR:
        return
    j = j0
    if kind == TANH:
        while j + LANES <= j1:
            vstore(z, j, _vtanh(vload(z, j)))
            j += LANES
        for jj in range(j, j1):
            z[jj] = _tanh_f32(z[jj])
    elif kind == SIGMOID:
        while j + LANES <= j1:
            vstore(z, j, _vsigmoid(vload(z, j)))
            j += LANES
        for jj in range(j, j1):
            z[jj] = _sigmoid_f32(z[jj])
    else:
        for jj in range(j0, j1):
            z[jj] = _act(kind, z[jj])


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _dact_span(kind, y, j0, j1, d):
    """``d[j] = dact(y[j])`` for ``j0 <= j < j1``: the kind chosen once, tanh and sigmoid
    16 lanes at a time (the same operations, so the same bits as :func:`_dact`)."""
    j = j0
    one = vsplat(1.0)
    if kind == TANH:
        while j + LANES <= j1:
            v = vload(y, j)
            vstore(d, j, one - v * v)
            j += LANES
    elif kind == SIGMOID:
        while j + LANES <= j1:
            v = vload(y, j)
            vstore(d, j, v * (one - v))
            j += LANES
    for jj in range(j, j1):
        d[jj] = _dact(kind, y[jj])


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
def _product(a, nb, k0, k1, p, pc0, pc1, c, cc0, load):
    """``c[:nb, cc0:cc0 + pc1 - pc0] (+)= a[:nb, k0:k1] @ p[k0:k1, pc0:pc1]`` in 4 x 64
    tiles (:func:`_tile`), column blocks outside, so a block of ``p`` stays in cache for
    all the rows. Every element is one chain over ``k`` in order, whatever ``nb``."""
    for j in range(pc0, pc1, 64):
        n = min(64, pc1 - j)
        for r in range(0, nb, 4):
            _tile(a, r, min(4, nb - r), k0, k1, p, j, n, c, cc0 + (j - pc0), load)


_BLOCK = 32  # rows a block of the drivers holds at most (its gates stay in cache)
# Blocks the parallel drivers make at least (while there are 4-row tiles): enough to share
# evenly among 2, 4 or 8 threads. Not the thread count, which would keep the kernel out of
# Numba's cache; the blocks never change a bit, only which rows run together.
_SHARES = 8


@njit(callee=True, cache=True, error_model="numpy")
def _blocks(batch, shares):
    """How many blocks of rows a driver runs: at most :data:`_BLOCK` rows each, and at
    least ``shares`` while there are 4-row tiles to share."""
    tiles = (batch + 3) // 4
    return max((batch + _BLOCK - 1) // _BLOCK, min(shares, tiles))


@njit(callee=True, cache=True, error_model="numpy")
def _block_rows(batch, blocks, c):
    """Rows ``[r0, r1)`` of block ``c`` of ``blocks``: whole 4-row tiles, shared evenly."""
    tiles = (batch + 3) // 4
    return min(4 * (tiles * c // blocks), batch), min(4 * (tiles * (c + 1) // blocks), batch)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _operand(hs, t, rmask, g, r0, nb, units, hop):
    """``hop[i] = hs[r0 + i, t] * rmask[r0 + i, g]`` (no mask when ``rmask`` is empty)."""
    masked = rmask.shape[0] > 0
    for i in range(nb):
        b = r0 + i
        if masked:
            for j in range(units):
                hop[i, j] = hs[b, t, j] * rmask[b, g, j]
        else:
            for j in range(units):
                hop[i, j] = hs[b, t, j]


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _recur(hs, t, U, rmask, r0, nb, g0, g1, units, hop, z, load):
    """``z[:nb, gates g0..g1-1] (+)= (hs[r0:r0 + nb, t] * rmask[., g]) @ U[:, gate g]``."""
    if rmask.shape[0] == 0:
        _operand(hs, t, rmask, 0, r0, nb, units, hop)
        _product(hop, nb, 0, units, U, g0 * units, g1 * units, z, g0 * units, load)
        return
    for g in range(g0, g1):
        _operand(hs, t, rmask, g, r0, nb, units, hop)
        _product(hop, nb, 0, units, U, g * units, (g + 1) * units, z, g * units, load)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _recur_back(dzb, UT, rmask, r0, nb, g0, g1, units, live, tmp, dh):
    """``dh[i] += sum_g rmask[r0 + i, g] * (dzb[i, gate g] @ UT[gate g])`` for the rows
    with ``live[i]``: without a mask one chain over the gate columns in increasing order,
    with one a chain per gate, the gates added in order."""
    if rmask.shape[0] == 0:
        _product(dzb, nb, g0 * units, g1 * units, UT, 0, units, tmp, 0, False)
        for i in range(nb):
            if live[i]:
                for k in range(units):
                    dh[i, k] += tmp[i, k]
        return
    for g in range(g0, g1):
        _product(dzb, nb, g * units, (g + 1) * units, UT, 0, units, tmp, 0, False)
        for i in range(nb):
            if live[i]:
                b = r0 + i
                for k in range(units):
                    dh[i, k] += tmp[i, k] * rmask[b, g, k]


# -- SimpleRNN: h = act(xp + h_prev @ U) ----------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _simple_fwd_block(r0, r1, xp, U, h0, rmask, smask, act, hs):
    steps = xp.shape[1]
    units = U.shape[0]
    nb = r1 - r0
    seq = smask.shape[0] > 0
    z = np.empty((nb, units), dtype=np.float32)
    hop = np.empty((nb, units), dtype=np.float32)
    for i in range(nb):
        for j in range(units):
            hs[r0 + i, 0, j] = h0[r0 + i, j]
    for t in range(steps):
        for i in range(nb):
            for j in range(units):
                z[i, j] = xp[r0 + i, t, j]
        _recur(hs, t, U, rmask, r0, nb, 0, 1, units, hop, z, True)
        for i in range(nb):
            b = r0 + i
            if seq and not smask[b, t]:
                for j in range(units):
                    hs[b, t + 1, j] = hs[b, t, j]
                continue
            zr = z[i]
            _act_span(act, zr, 0, units)
            for j in range(units):
                hs[b, t + 1, j] = zr[j]


@njit(cache=True, error_model="numpy")
def simple_forward_serial(xp, U, h0, rmask, smask, act, hs):
    """SimpleRNN forward, one block of rows after another.

    Shape:
        xp: ``[B, T, units]``; U: ``[units, units]``; h0: ``[B, units]``;
        rmask: ``[B, 1, units]`` or ``[0, 1, units]``; smask: ``[B, T]`` bool or
        ``[0, T]``; hs (out): ``[B, T + 1, units]``
        (``hs[:, 0] = h0``, ``hs[:, t + 1]`` the output of step ``t``).
    """
    batch = xp.shape[0]
    blocks = _blocks(batch, 1)
    for c in range(blocks):
        r0, r1 = _block_rows(batch, blocks, c)
        _simple_fwd_block(r0, r1, xp, U, h0, rmask, smask, act, hs)


@njit(cache=True, parallel=True, error_model="numpy")
def simple_forward_parallel(xp, U, h0, rmask, smask, act, hs):
    """:func:`simple_forward_serial` with the blocks of rows on Numba's threads."""
    batch = xp.shape[0]
    blocks = _blocks(batch, _SHARES)
    for c in prange(blocks):
        r0, r1 = _block_rows(batch, blocks, np.int64(c))
        _simple_fwd_block(r0, r1, xp, U, h0, rmask, smask, act, hs)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _simple_bwd_block(r0, r1, dhs, dhT, UT, rmask, smask, act, hs, dz, dh0):
    steps = dhs.shape[1]
    units = UT.shape[1]
    nb = r1 - r0
    seq = smask.shape[0] > 0
    dh = np.empty((nb, units), dtype=np.float32)
    dzb = np.empty((nb, units), dtype=np.float32)
    tmp = np.empty((nb, units), dtype=np.float32)
    live = np.empty(nb, dtype=np.bool_)
    dg = np.empty(units, dtype=np.float32)
    for i in range(nb):
        for j in range(units):
            dh[i, j] = dhT[r0 + i, j]
    for t in range(steps - 1, -1, -1):
        for i in range(nb):
            b = r0 + i
            live[i] = not (seq and not smask[b, t])
            if not live[i]:
                for j in range(units):
                    dh[i, j] += dhs[b, t, j]
                    dz[b, t, j] = np.float32(0.0)
                    dzb[i, j] = np.float32(0.0)
                continue
            _dact_span(act, hs[b, t + 1], 0, units, dg)
            for j in range(units):
                d = (dh[i, j] + dhs[b, t, j]) * dg[j]
                dz[b, t, j] = d
                dzb[i, j] = d
                dh[i, j] = np.float32(0.0)
        _recur_back(dzb, UT, rmask, r0, nb, 0, 1, units, live, tmp, dh)
    for i in range(nb):
        for j in range(units):
            dh0[r0 + i, j] = dh[i, j]


@njit(cache=True, error_model="numpy")
def simple_backward_serial(dhs, dhT, UT, rmask, smask, act, hs, dz, dh0):
    """SimpleRNN backward through time, one block of rows after another.

    Shape:
        dhs: ``[B, T, units]`` (dL/d output of each step); dhT: ``[B, units]`` (dL/d the
        returned final state); UT: ``[units, units]`` (``U.T``); hs: the forward's;
        dz (out): ``[B, T, units]`` (dL/d pre-activation); dh0 (out): ``[B, units]``.
    """
    batch = dhs.shape[0]
    blocks = _blocks(batch, 1)
    for c in range(blocks):
        r0, r1 = _block_rows(batch, blocks, c)
        _simple_bwd_block(r0, r1, dhs, dhT, UT, rmask, smask, act, hs, dz, dh0)


@njit(cache=True, parallel=True, error_model="numpy")
def simple_backward_parallel(dhs, dhT, UT, rmask, smask, act, hs, dz, dh0):
    """:func:`simple_backward_serial` with the blocks of rows on Numba's threads."""
    batch = dhs.shape[0]
    blocks = _blocks(batch, _SHARES)
    for c in prange(blocks):
        r0, r1 = _block_rows(batch, blocks, np.int64(c))
        _simple_bwd_block(r0, r1, dhs, dhT, UT, rmask, smask, act, hs, dz, dh0)


# -- LSTM: gates i, f, c, o (Keras order) ----------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _lstm_fwd_block(r0, r1, xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates):
    steps = xp.shape[1]
    units = U.shape[0]
    width = 4 * units
    nb = r1 - r0
    seq = smask.shape[0] > 0
    z = np.empty((nb, width), dtype=np.float32)
    hop = np.empty((nb, units), dtype=np.float32)
    tc = np.empty(units, dtype=np.float32)
    for i in range(nb):
        for j in range(units):
            hs[r0 + i, 0, j] = h0[r0 + i, j]
            cs[r0 + i, 0, j] = c0[r0 + i, j]
    for t in range(steps):
        for i in range(nb):
            for j in range(width):
                z[i, j] = xp[r0 + i, t, j]
        _recur(hs, t, U, rmask, r0, nb, 0, 4, units, hop, z, True)
        for i in range(nb):
            b = r0 + i
            if seq and not smask[b, t]:
                for j in range(units):
                    hs[b, t + 1, j] = hs[b, t, j]
                    cs[b, t + 1, j] = cs[b, t, j]
                for j in range(width + units):
                    gates[b, t, j] = np.float32(0.0)
                continue
            zr = z[i]
            _act_span(ract, zr, 0, 2 * units)
            _act_span(act, zr, 2 * units, 3 * units)
            _act_span(ract, zr, 3 * units, width)
            for j in range(units):
                c = zr[units + j] * cs[b, t, j] + zr[j] * zr[2 * units + j]
                cs[b, t + 1, j] = c
                tc[j] = c
            _act_span(act, tc, 0, units)
            for j in range(units):
                hs[b, t + 1, j] = zr[3 * units + j] * tc[j]
                gates[b, t, width + j] = tc[j]
            for j in range(width):
                gates[b, t, j] = zr[j]


@njit(cache=True, error_model="numpy")
def lstm_forward_serial(xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates):
    """LSTM forward, one block of rows after another.

    Shape:
        xp: ``[B, T, 4 * units]``; U: ``[units, 4 * units]``; h0, c0: ``[B, units]``;
        rmask: ``[B, 4, units]`` or empty; smask: ``[B, T]`` or empty; hs, cs (out):
        ``[B, T + 1, units]`` (index 0 the initial state); gates (out):
        ``[B, T, 5 * units]`` (activated i, f, c, o, then ``activation(c_t)``).
    """
    batch = xp.shape[0]
    blocks = _blocks(batch, 1)
    for c in range(blocks):
        r0, r1 = _block_rows(batch, blocks, c)
        _lstm_fwd_block(r0, r1, xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates)


@njit(cache=True, parallel=True, error_model="numpy")
def lstm_forward_parallel(xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates):
    """:func:`lstm_forward_serial` with the blocks of rows on Numba's threads."""
    batch = xp.shape[0]
    blocks = _blocks(batch, _SHARES)
    for c in prange(blocks):
        r0, r1 = _block_rows(batch, blocks, np.int64(c))
        _lstm_fwd_block(r0, r1, xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _lstm_bwd_block(r0, r1, dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz, dh0,
                    dc0):
    steps = dhs.shape[1]
    units = UT.shape[1]
    width = 4 * units
    nb = r1 - r0
    seq = smask.shape[0] > 0
    dh = np.empty((nb, units), dtype=np.float32)
    dc = np.empty((nb, units), dtype=np.float32)
    dzb = np.empty((nb, width), dtype=np.float32)
    tmp = np.empty((nb, units), dtype=np.float32)
    live = np.empty(nb, dtype=np.bool_)
    dg = np.empty(width + units, dtype=np.float32)
    for i in range(nb):
        for j in range(units):
            dh[i, j] = dhT[r0 + i, j]
            dc[i, j] = dcT[r0 + i, j]
    for t in range(steps - 1, -1, -1):
        for i in range(nb):
            b = r0 + i
            live[i] = not (seq and not smask[b, t])
            if not live[i]:
                for j in range(units):
                    dh[i, j] += dhs[b, t, j]
                for j in range(width):
                    dz[b, t, j] = np.float32(0.0)
                    dzb[i, j] = np.float32(0.0)
                continue
            gr = gates[b, t]
            _dact_span(ract, gr, 0, 2 * units, dg)
            _dact_span(act, gr, 2 * units, 3 * units, dg)
            _dact_span(ract, gr, 3 * units, width, dg)
            _dact_span(act, gr, width, width + units, dg)
            for j in range(units):
                dhj = dh[i, j] + dhs[b, t, j]
                ig = gr[j]
                f = gr[units + j]
                g = gr[2 * units + j]
                tc = gr[4 * units + j]
                dcj = dc[i, j] + dhj * gr[3 * units + j] * dg[4 * units + j]
                dzb[i, j] = dcj * g * dg[j]
                dzb[i, units + j] = dcj * cs[b, t, j] * dg[units + j]
                dzb[i, 2 * units + j] = dcj * ig * dg[2 * units + j]
                dzb[i, 3 * units + j] = dhj * tc * dg[3 * units + j]
                dc[i, j] = dcj * f
                dh[i, j] = np.float32(0.0)
            for j in range(width):
                dz[b, t, j] = dzb[i, j]
        _recur_back(dzb, UT, rmask, r0, nb, 0, 4, units, live, tmp, dh)
    for i in range(nb):
        for j in range(units):
            dh0[r0 + i, j] = dh[i, j]
            dc0[r0 + i, j] = dc[i, j]


@njit(cache=True, error_model="numpy")
def lstm_backward_serial(dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz, dh0,
                         dc0):
    """LSTM backward through time, one block of rows after another.

    Shape:
        dhs: ``[B, T, units]``; dhT, dcT: ``[B, units]`` (dL/d the returned final h and
        c); UT: ``[4 * units, units]``; hs, cs, gates (``[B, T, 5 * units]``): the
        forward's; dz (out): ``[B, T, 4 * units]`` (dL/d gate pre-activations); dh0, dc0
        (out): ``[B, units]``.
    """
    batch = dhs.shape[0]
    blocks = _blocks(batch, 1)
    for c in range(blocks):
        r0, r1 = _block_rows(batch, blocks, c)
        _lstm_bwd_block(r0, r1, dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz,
                        dh0, dc0)


@njit(cache=True, parallel=True, error_model="numpy")
def lstm_backward_parallel(dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz, dh0,
                           dc0):
    """:func:`lstm_backward_serial` with the blocks of rows on Numba's threads."""
    batch = dhs.shape[0]
    blocks = _blocks(batch, _SHARES)
    for c in prange(blocks):
        r0, r1 = _block_rows(batch, blocks, np.int64(c))
        _lstm_bwd_block(r0, r1, dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz,
                        dh0, dc0)


# -- GRU: gates z, r, h (Keras order) --------------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _gru_fwd_block(r0, r1, xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates,
                   extra):
    steps = xp.shape[1]
    units = U.shape[0]
    width = 3 * units
    nb = r1 - r0
    masked = rmask.shape[0] > 0
    seq = smask.shape[0] > 0
    rec = np.empty((nb, width), dtype=np.float32)
    pre = np.empty((nb, width), dtype=np.float32)
    hop = np.empty((nb, units), dtype=np.float32)
    for i in range(nb):
        for j in range(units):
            hs[r0 + i, 0, j] = h0[r0 + i, j]
    for t in range(steps):
        if reset_after:
            _recur(hs, t, U, rmask, r0, nb, 0, 3, units, hop, rec, False)
            for i in range(nb):
                for j in range(width):
                    rec[i, j] += rbias[j]
        else:
            _recur(hs, t, U, rmask, r0, nb, 0, 2, units, hop, rec, False)
        for i in range(nb):
            b = r0 + i
            if seq and not smask[b, t]:
                for j in range(units):
                    hop[i, j] = np.float32(0.0)
                continue
            pr = pre[i]
            for j in range(2 * units):
                pr[j] = xp[b, t, j] + rec[i, j]
            _act_span(ract, pr, 0, 2 * units)
            for j in range(units):
                if reset_after:
                    extra[b, t, j] = rec[i, 2 * units + j]
                else:
                    hm = hs[b, t, j] * rmask[b, 2, j] if masked else hs[b, t, j]
                    rh = pr[units + j] * hm
                    hop[i, j] = rh
                    extra[b, t, j] = rh
        if not reset_after:
            # the candidate's recurrent product, of r * h
            _product(hop, nb, 0, units, U, 2 * units, width, rec, 2 * units, False)
        for i in range(nb):
            b = r0 + i
            if seq and not smask[b, t]:
                for j in range(units):
                    hs[b, t + 1, j] = hs[b, t, j]
                    extra[b, t, j] = np.float32(0.0)
                for j in range(width):
                    gates[b, t, j] = np.float32(0.0)
                continue
            pr = pre[i]
            for j in range(units):
                if reset_after:
                    pr[2 * units + j] = (xp[b, t, 2 * units + j]
                                         + pr[units + j] * rec[i, 2 * units + j])
                else:
                    pr[2 * units + j] = xp[b, t, 2 * units + j] + rec[i, 2 * units + j]
            _act_span(act, pr, 2 * units, width)
            for j in range(width):
                gates[b, t, j] = pr[j]
            for j in range(units):
                zg = pr[j]
                hs[b, t + 1, j] = zg * hs[b, t, j] + (np.float32(1.0) - zg) * pr[2 * units + j]


@njit(cache=True, error_model="numpy")
def gru_forward_serial(xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates,
                       extra):
    """GRU forward, one block of rows after another.

    Shape:
        xp: ``[B, T, 3 * units]`` (input bias included); U: ``[units, 3 * units]``;
        rbias: ``[3 * units]`` (the recurrent bias of ``reset_after``, else unused);
        h0: ``[B, units]``; rmask: ``[B, 3, units]`` or empty; smask: ``[B, T]`` or
        empty; hs (out):
        ``[B, T + 1, units]``; gates (out): ``[B, T, 3 * units]`` (z, r and the
        candidate); extra (out): ``[B, T, units]``: ``h @ U_h + b_h`` with
        ``reset_after``, else ``r * h`` (the recurrent product's operand).
    """
    batch = xp.shape[0]
    blocks = _blocks(batch, 1)
    for c in range(blocks):
        r0, r1 = _block_rows(batch, blocks, c)
        _gru_fwd_block(r0, r1, xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs,
                       gates, extra)


@njit(cache=True, parallel=True, error_model="numpy")
def gru_forward_parallel(xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates,
                         extra):
    """:func:`gru_forward_serial` with the blocks of rows on Numba's threads."""
    batch = xp.shape[0]
    blocks = _blocks(batch, _SHARES)
    for c in prange(blocks):
        r0, r1 = _block_rows(batch, blocks, np.int64(c))
        _gru_fwd_block(r0, r1, xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs,
                       gates, extra)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _gru_bwd_block(r0, r1, dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra,
                   dzx, dzr, dh0):
    steps = dhs.shape[1]
    units = UT.shape[1]
    width = 3 * units
    nb = r1 - r0
    masked = rmask.shape[0] > 0
    seq = smask.shape[0] > 0
    one = np.float32(1.0)
    dh = np.empty((nb, units), dtype=np.float32)
    dzb = np.empty((nb, width), dtype=np.float32)
    tmp = np.empty((nb, units), dtype=np.float32)
    live = np.empty(nb, dtype=np.bool_)
    dg = np.empty((nb, width), dtype=np.float32)
    for i in range(nb):
        for j in range(units):
            dh[i, j] = dhT[r0 + i, j]
    for t in range(steps - 1, -1, -1):
        for i in range(nb):
            b = r0 + i
            live[i] = not (seq and not smask[b, t])
            if not live[i]:
                for j in range(units):
                    dh[i, j] += dhs[b, t, j]
                for j in range(width):
                    dzx[b, t, j] = np.float32(0.0)
                    dzr[b, t, j] = np.float32(0.0)
                    dzb[i, j] = np.float32(0.0)
                continue
            gr = gates[b, t]
            dgr = dg[i]
            _dact_span(ract, gr, 0, 2 * units, dgr)
            _dact_span(act, gr, 2 * units, width, dgr)
            for j in range(units):
                dhj = dh[i, j] + dhs[b, t, j]
                zg = gr[j]
                hh = gr[2 * units + j]
                dzh = dhj * (one - zg) * dgr[2 * units + j]
                dzz = dhj * (hs[b, t, j] - hh) * dgr[j]
                dzx[b, t, j] = dzz
                dzx[b, t, 2 * units + j] = dzh
                dzb[i, j] = dzz
                rg = gr[units + j]
                if reset_after:
                    dzrg = dzh * extra[b, t, j] * dgr[units + j]
                    dzx[b, t, units + j] = dzrg
                    dzb[i, units + j] = dzrg
                    dzb[i, 2 * units + j] = dzh * rg
                else:
                    dzb[i, 2 * units + j] = dzh
                dh[i, j] = dhj * zg
        if reset_after:
            _recur_back(dzb, UT, rmask, r0, nb, 0, 3, units, live, tmp, dh)
        else:
            # d(r * h_masked) = dz_h @ U_h.T, then the reset gate's pre-activation
            _product(dzb, nb, 2 * units, width, UT, 0, units, tmp, 0, False)
            for i in range(nb):
                if not live[i]:
                    continue
                b = r0 + i
                for j in range(units):
                    rg = gates[b, t, units + j]
                    hm = hs[b, t, j] * rmask[b, 2, j] if masked else hs[b, t, j]
                    dzrg = tmp[i, j] * hm * dg[i, units + j]
                    dzx[b, t, units + j] = dzrg
                    dzb[i, units + j] = dzrg
                    back = tmp[i, j] * rg
                    dh[i, j] += back * rmask[b, 2, j] if masked else back
            _recur_back(dzb, UT, rmask, r0, nb, 0, 2, units, live, tmp, dh)
        for i in range(nb):
            if live[i]:
                for j in range(width):
                    dzr[r0 + i, t, j] = dzb[i, j]
    for i in range(nb):
        for j in range(units):
            dh0[r0 + i, j] = dh[i, j]


@njit(cache=True, error_model="numpy")
def gru_backward_serial(dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra,
                        dzx, dzr, dh0):
    """GRU backward through time, one block of rows after another.

    Shape:
        dhs: ``[B, T, units]``; dhT: ``[B, units]``; UT: ``[3 * units, units]``; hs,
        gates, extra: the forward's; dzx (out): ``[B, T, 3 * units]`` (dL/d the input
        projection, bias included); dzr (out): ``[B, T, 3 * units]`` (dL/d the
        recurrent products ``h @ U_z``, ``h @ U_r`` and ``h @ U_h + b_h`` with
        ``reset_after``, or ``(r * h) @ U_h`` without); dh0 (out): ``[B, units]``.
    """
    batch = dhs.shape[0]
    blocks = _blocks(batch, 1)
    for c in range(blocks):
        r0, r1 = _block_rows(batch, blocks, c)
        _gru_bwd_block(r0, r1, dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates,
                       extra, dzx, dzr, dh0)


@njit(cache=True, parallel=True, error_model="numpy")
def gru_backward_parallel(dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra,
                          dzx, dzr, dh0):
    """:func:`gru_backward_serial` with the blocks of rows on Numba's threads."""
    batch = dhs.shape[0]
    blocks = _blocks(batch, _SHARES)
    for c in prange(blocks):
        r0, r1 = _block_rows(batch, blocks, np.int64(c))
        _gru_bwd_block(r0, r1, dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates,
                       extra, dzx, dzr, dh0)
