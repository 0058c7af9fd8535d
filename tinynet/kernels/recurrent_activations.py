"""The activations of the recurrent kernels (:mod:`tinynet.kernels.recurrent`): the kinds'
codes, each function and its derivative (taken from the output) in float32 arithmetic,
and the same over a span of a row 16 lanes at a time, with the scalar function's bits.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from tinynet.kernels._jit import CALLEE_OPTIONS, njit
from tinynet.kernels.simd import LANES, f32x16, vload, vsplat, vstore

__all__ = ["LINEAR", "TANH", "SIGMOID", "RELU", "HARD_SIGMOID"]

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
