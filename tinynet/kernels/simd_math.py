"""exp in float32 operations for tinynet's kernels, one value or 16 lanes at a time, and
the lane-wise helpers it needs (:mod:`tinynet.kernels.simd`'s ``f32x16`` vectors).

libm's ``expf`` is a call LLVM cannot vectorize. :func:`exp_poly` is Cephes's float32
approximation (within 2 ulp of the exact value) for ``-87 <= w <= 0``, written with IEEE
float32 operations only (no fast-math), so it gives the same bits on every machine,
compiled or interpreted; :func:`vexp_poly` runs the same operations in the same order on
16 lanes, so each lane has the scalar function's bits. Callers clamp or zero the range
below -87 as their function needs (the recurrent activations clamp, attention's softmax
gives 0).

The lane-wise helpers (:func:`vdiv`, :func:`vfloor`, :func:`vpow2`, the ``vpick_*``
selects) are LLVM vector instructions in a kernel and NumPy under ``NUMBA_DISABLE_JIT=1``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from tinynet.kernels._jit import CALLEE_OPTIONS, njit
from tinynet.kernels.simd import LANES, f32x16, vsplat

__all__ = ["exp_poly", "vexp_poly", "pow2", "vpow2", "vfloor", "vdiv", "vpick_ge", "vpick_lt",
           "vpick_gt", "EXP_LOW"]

#: Below this, float32 ``exp`` leaves the normal range.
EXP_LOW = np.float32(-87.0)

_C = (np.float32(1.44269504088896341), np.float32(0.5), np.float32(0.693359375),
      np.float32(-2.12194440e-4), np.float32(1.9875691500e-4), np.float32(1.3981999507e-3),
      np.float32(8.3334519073e-3), np.float32(4.1665795894e-2), np.float32(1.6666665459e-1),
      np.float32(5.0000001201e-1), np.float32(1.0))


# -- the Python definitions (what NUMBA_DISABLE_JIT runs) -------------------------------------
def pow2(n):
    """``2.0 ** n`` as float32 for an integer ``-126 <= n <= 0`` (its exponent bits)."""
    return np.array((int(n) + 127) << 23, dtype=np.int32).view(np.float32)[()]


def vpow2(n):
    """:func:`pow2` lane by lane."""
    return ((n.astype(np.int32) + np.int32(127)) << np.int32(23)).view(np.float32)


def vfloor(a):
    """``floor(a)`` lane by lane."""
    return np.floor(a).astype(np.float32)


def vdiv(a, b):
    """``a / b`` lane by lane."""
    return (a / b).astype(np.float32)


def vpick_ge(a, b, x, y):
    """``x`` where ``a >= b``, else ``y``, lane by lane."""
    return np.where(a >= b, x, y).astype(np.float32)


def vpick_lt(a, b, x, y):
    """``x`` where ``a < b``, else ``y``, lane by lane."""
    return np.where(a < b, x, y).astype(np.float32)


def vpick_gt(a, b, x, y):
    """``x`` where ``a > b``, else ``y``, lane by lane."""
    return np.where(a > b, x, y).astype(np.float32)


# -- the compiled forms: LLVM instructions --------------------------------------------------
_F32x16 = ir.VectorType(ir.FloatType(), LANES)
_I32x16 = ir.VectorType(ir.IntType(32), LANES)


@intrinsic
def _bits_to_f32(typingctx, bits):
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@intrinsic
def _vpow2_i(typingctx, n):
    def codegen(context, builder, sig, args):
        k = builder.fptosi(args[0], _I32x16)
        k = builder.shl(builder.add(k, ir.Constant(_I32x16, [127] * LANES)),
                        ir.Constant(_I32x16, [23] * LANES))
        return builder.bitcast(k, _F32x16)

    return f32x16(f32x16), codegen


@intrinsic
def _vfloor_i(typingctx, a):
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_F32x16, [_F32x16]),
                                            "llvm.floor.v16f32")
        return builder.call(fn, args)

    return f32x16(f32x16), codegen


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


_vpick_ge_i, _vpick_lt_i, _vpick_gt_i = _picker(">="), _picker("<"), _picker(">")


@overload(pow2, jit_options=CALLEE_OPTIONS)
def _pow2_jit(n):
    return lambda n: _bits_to_f32(np.int32((np.int32(n) + np.int32(127)) << np.int32(23)))


@overload(vpow2, jit_options=CALLEE_OPTIONS)
def _vpow2_jit(n):
    return lambda n: _vpow2_i(n)


@overload(vfloor, jit_options=CALLEE_OPTIONS)
def _vfloor_jit(a):
    return lambda a: _vfloor_i(a)


@overload(vdiv, jit_options=CALLEE_OPTIONS)
def _vdiv_jit(a, b):
    return lambda a, b: _vdiv_i(a, b)


@overload(vpick_ge, jit_options=CALLEE_OPTIONS)
def _vpick_ge_jit(a, b, x, y):
    return lambda a, b, x, y: _vpick_ge_i(a, b, x, y)


@overload(vpick_lt, jit_options=CALLEE_OPTIONS)
def _vpick_lt_jit(a, b, x, y):
    return lambda a, b, x, y: _vpick_lt_i(a, b, x, y)


@overload(vpick_gt, jit_options=CALLEE_OPTIONS)
def _vpick_gt_jit(a, b, x, y):
    return lambda a, b, x, y: _vpick_gt_i(a, b, x, y)


# -- exp -----------------------------------------------------------------------------------
@njit(cache=True, error_model="numpy", inline="always")
def exp_poly(w):
    """``exp(w)`` in float32 operations for ``EXP_LOW <= w <= 0``."""
    n = np.floor(w * _C[0] + _C[1])
    r = w - n * _C[2]
    r = r - n * _C[3]
    r2 = r * r
    p = _C[4] * r + _C[5]
    p = p * r + _C[6]
    p = p * r + _C[7]
    p = p * r + _C[8]
    p = p * r + _C[9]
    p = p * r2 + r + _C[10]
    return p * pow2(n)


@njit(cache=True, error_model="numpy", inline="always")
def vexp_poly(w):
    """:func:`exp_poly` in 16 lanes."""
    n = vfloor(w * vsplat(_C[0]) + vsplat(_C[1]))
    r = w - n * vsplat(_C[2])
    r = r - n * vsplat(_C[3])
    r2 = r * r
    p = vsplat(_C[4]) * r + vsplat(_C[5])
    p = p * r + vsplat(_C[6])
    p = p * r + vsplat(_C[7])
    p = p * r + vsplat(_C[8])
    p = p * r + vsplat(_C[9])
    p = p * r2 + r + vsplat(_C[10])
    return p * vpow2(n)
