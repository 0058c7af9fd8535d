"""The register tiles of tinynet's own GEMM (:mod:`tinynet.kernels.sgemm`) and the
element access they need.

:func:`tile32` and :func:`tile16` run a column of 6 x 32 (6 x 16) blocks of output
chains, one block after the other, each over a range of inner steps: each step two (one)
16-lane vector loads of the packed ``op(b)`` panel, six broadcasts of ``op(a)`` read in
place through its strides, and twelve (six) explicit fused multiply-adds
(:func:`tinynet.kernels.simd.vfma`), each chain in its own accumulator. The tiles are
written out, not generated: Numba caches a function by its source file.
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload

from tinynet.kernels._jit import CALLEE_OPTIONS, njit
from tinynet.kernels.simd import LANES, emit_prefetch, f32x16, vfma, vload, vsplat

__all__ = ["cload", "cstore", "cload_n", "cstore_n", "cprefetch", "splat", "tile32", "tile16"]


# ------------------------------------------------------------ element access
# ``cload(c, i, j)`` / ``cstore(c, i, j, v)``: the 16 floats ``c[i, j:j + 16]`` of a 2-D
# float32 array whose columns are adjacent (any row stride), ``cload_n`` / ``cstore_n``
# the first ``count`` of them (masked: the other lanes load as 0, are not stored, and no
# memory past them is touched); ``cprefetch(c, i, j)``: asks for the cache line of
# ``c[i, j]`` ahead of a store to it (a hint: no value changes); ``splat(a, off)``: the float
# at byte ``off`` of ``a``'s data in all 16 lanes. Python versions for NUMBA_DISABLE_JIT,
# one LLVM load or store each when compiled; no bounds checks.
def cload(c, i, j):
    return c[i, j:j + LANES].copy()


def cstore(c, i, j, v):
    c[i, j:j + LANES] = v


def cload_n(c, i, j, count):
    v = np.zeros(LANES, dtype=np.float32)
    v[:count] = c[i, j:j + count]
    return v


def cstore_n(c, i, j, v, count):
    c[i, j:j + count] = v[:count]


def cprefetch(c, i, j):
    return None


def splat(a, off):
    return np.full(LANES, ctypes.c_float.from_address(a.ctypes.data + off).value,
                   dtype=np.float32)


_VT = ir.VectorType(ir.FloatType(), LANES)
_I64 = ir.IntType(64)


def _address(context, builder, ary_type, ary, offset):
    data = context.make_array(ary_type)(context, builder, ary).data
    return builder.add(builder.ptrtoint(data, _I64), offset)


def _row_col(context, builder, ary_type, ary, i, j):
    strides = context.make_array(ary_type)(context, builder, ary).strides
    offset = builder.add(builder.mul(i, builder.extract_value(strides, 0)),
                         builder.mul(j, ir.Constant(_I64, 4)))
    return builder.inttoptr(_address(context, builder, ary_type, ary, offset),
                            _VT.as_pointer())


def _check_matrix(a) -> None:
    if not (isinstance(a, types.Array) and a.dtype == types.float32 and a.ndim == 2):
        raise TypeError(f"sgemm: expected a 2-D float32 array, got {a}")


@intrinsic
def _cload_i(typingctx, c, i, j):
    _check_matrix(c)

    def codegen(context, builder, sig, args):
        return builder.load(_row_col(context, builder, sig.args[0], args[0], args[1],
                                     args[2]), align=4)

    return f32x16(c, types.intp, types.intp), codegen


@intrinsic
def _cstore_i(typingctx, c, i, j, v):
    _check_matrix(c)

    def codegen(context, builder, sig, args):
        builder.store(args[3], _row_col(context, builder, sig.args[0], args[0], args[1],
                                        args[2]), align=4)
        return context.get_dummy_value()

    return types.void(c, types.intp, types.intp, f32x16), codegen


def _lanes_below(builder, count):
    """``<16 x i1>``: lane < ``count``."""
    lanes = ir.Constant(ir.VectorType(ir.IntType(32), LANES), list(range(LANES)))
    n = builder.trunc(count, ir.IntType(32))
    one = builder.insert_element(ir.Constant(ir.VectorType(ir.IntType(32), LANES),
                                              ir.Undefined), n, ir.Constant(ir.IntType(32), 0))
    spread = builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32), LANES),
                                                         [0] * LANES))
    return builder.icmp_unsigned("<", lanes, spread)


_MASK = ir.VectorType(ir.IntType(1), LANES)


@intrinsic
def _cload_n_i(typingctx, c, i, j, count):
    _check_matrix(c)

    def codegen(context, builder, sig, args):
        ptr = _row_col(context, builder, sig.args[0], args[0], args[1], args[2])
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            _VT, [ptr.type, ir.IntType(32), _MASK, _VT]), "llvm.masked.load.v16f32.p0")
        return builder.call(fn, [ptr, ir.Constant(ir.IntType(32), 4),
                                 _lanes_below(builder, args[3]), ir.Constant(_VT, [0.0] * LANES)])

    return f32x16(c, types.intp, types.intp, types.intp), codegen


@intrinsic
def _cstore_n_i(typingctx, c, i, j, v, count):
    _check_matrix(c)

    def codegen(context, builder, sig, args):
        ptr = _row_col(context, builder, sig.args[0], args[0], args[1], args[2])
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
            ir.VoidType(), [_VT, ptr.type, ir.IntType(32), _MASK]), "llvm.masked.store.v16f32.p0")
        builder.call(fn, [args[3], ptr, ir.Constant(ir.IntType(32), 4),
                          _lanes_below(builder, args[4])])
        return context.get_dummy_value()

    return types.void(c, types.intp, types.intp, f32x16, types.intp), codegen


@intrinsic
def _cprefetch_i(typingctx, c, i, j):
    _check_matrix(c)

    def codegen(context, builder, sig, args):
        emit_prefetch(builder, _row_col(context, builder, sig.args[0], args[0], args[1],
                                        args[2]), write=True)
        return context.get_dummy_value()

    return types.void(c, types.intp, types.intp), codegen


@intrinsic
def _splat_i(typingctx, a, off):
    _check_matrix(a)

    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(_address(context, builder, sig.args[0], args[0], args[1]),
                               ir.FloatType().as_pointer())
        x = builder.load(ptr, align=4)
        one = builder.insert_element(ir.Constant(_VT, ir.Undefined), x,
                                     ir.Constant(ir.IntType(32), 0))
        return builder.shuffle_vector(one, one, ir.Constant(ir.VectorType(ir.IntType(32),
                                                                          LANES), [0] * LANES))

    return f32x16(a, types.intp), codegen


@overload(cload, jit_options=CALLEE_OPTIONS)
def _cload_jit(c, i, j):
    return lambda c, i, j: _cload_i(c, i, j)


@overload(cstore, jit_options=CALLEE_OPTIONS)
def _cstore_jit(c, i, j, v):
    return lambda c, i, j, v: _cstore_i(c, i, j, v)


@overload(cload_n, jit_options=CALLEE_OPTIONS)
def _cload_n_jit(c, i, j, count):
    return lambda c, i, j, count: _cload_n_i(c, i, j, count)


@overload(cstore_n, jit_options=CALLEE_OPTIONS)
def _cstore_n_jit(c, i, j, v, count):
    return lambda c, i, j, v, count: _cstore_n_i(c, i, j, v, count)


@overload(cprefetch, jit_options=CALLEE_OPTIONS)
def _cprefetch_jit(c, i, j):
    return lambda c, i, j: _cprefetch_i(c, i, j)


@overload(splat, jit_options=CALLEE_OPTIONS)
def _splat_jit(a, off):
    return lambda a, off: _splat_i(a, off)


# ------------------------------------------------------------ register tiles
@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def tile32(a, i0_, mlast, si, sk, k0_, bp, pb, steps, c, ci_, cj, load, beta_on, fb,
           strips, di, dk):
    """The 6 x 32 register tile: rows ``i0 .. i0 + 5`` of ``op(a)`` (read in place:
    element ``(i, kk)`` at byte ``i * si + kk * sk``; rows past ``mlast`` repeat it, computed
    and never stored) times the packed panel ``bp[pb:]`` (32 floats a step) over inner
    steps ``k0 .. k0 + steps - 1``, into ``c[ci:ci + 6, cj:cj + 32]``. The chains start at
    zero, or go on from ``c`` when ``load``; ``beta_on``: ``c = chain + fb * c``.
    ``strips`` such tiles in turn, tile ``s`` at row ``i0 + s * di`` and inner offset
    ``k0 + s * dk`` of ``op(a)``, rows ``ci + 6 * s`` of ``c`` (one call for a column of
    tiles: a call passes every array's fields, which costs as much as a tile of a
    few inner steps)."""
    for s in range(strips):
        i0 = i0_ + s * di
        k0 = k0_ + s * dk
        ci = ci_ + s * 6
        o0 = min(i0 + 0, mlast) * si + k0 * sk
        o1 = min(i0 + 1, mlast) * si + k0 * sk
        o2 = min(i0 + 2, mlast) * si + k0 * sk
        o3 = min(i0 + 3, mlast) * si + k0 * sk
        o4 = min(i0 + 4, mlast) * si + k0 * sk
        o5 = min(i0 + 5, mlast) * si + k0 * sk
        for r in range(6):  # the output's lines arrive while the chains run
            cprefetch(c, ci + r, cj)
            cprefetch(c, ci + r, cj + 16)
            cprefetch(c, ci + r, cj + 31)
        if load:
            c00 = cload(c, ci + 0, cj + 0)
            c01 = cload(c, ci + 0, cj + 16)
            c10 = cload(c, ci + 1, cj + 0)
            c11 = cload(c, ci + 1, cj + 16)
            c20 = cload(c, ci + 2, cj + 0)
            c21 = cload(c, ci + 2, cj + 16)
            c30 = cload(c, ci + 3, cj + 0)
            c31 = cload(c, ci + 3, cj + 16)
            c40 = cload(c, ci + 4, cj + 0)
            c41 = cload(c, ci + 4, cj + 16)
            c50 = cload(c, ci + 5, cj + 0)
            c51 = cload(c, ci + 5, cj + 16)
        else:
            z = vsplat(np.float32(0.0))
            c00 = z
            c01 = z
            c10 = z
            c11 = z
            c20 = z
            c21 = z
            c30 = z
            c31 = z
            c40 = z
            c41 = z
            c50 = z
            c51 = z
        for kk in range(steps):
            q = pb + kk * 32
            b0 = vload(bp, q)
            b1 = vload(bp, q + 16)
            d = kk * sk
            x = splat(a, o0 + d)
            c00 = vfma(x, b0, c00)
            c01 = vfma(x, b1, c01)
            x = splat(a, o1 + d)
            c10 = vfma(x, b0, c10)
            c11 = vfma(x, b1, c11)
            x = splat(a, o2 + d)
            c20 = vfma(x, b0, c20)
            c21 = vfma(x, b1, c21)
            x = splat(a, o3 + d)
            c30 = vfma(x, b0, c30)
            c31 = vfma(x, b1, c31)
            x = splat(a, o4 + d)
            c40 = vfma(x, b0, c40)
            c41 = vfma(x, b1, c41)
            x = splat(a, o5 + d)
            c50 = vfma(x, b0, c50)
            c51 = vfma(x, b1, c51)
        if beta_on:
            f = vsplat(fb)
            cstore(c, ci + 0, cj + 0, c00 + f * cload(c, ci + 0, cj + 0))
            cstore(c, ci + 0, cj + 16, c01 + f * cload(c, ci + 0, cj + 16))
            cstore(c, ci + 1, cj + 0, c10 + f * cload(c, ci + 1, cj + 0))
            cstore(c, ci + 1, cj + 16, c11 + f * cload(c, ci + 1, cj + 16))
            cstore(c, ci + 2, cj + 0, c20 + f * cload(c, ci + 2, cj + 0))
            cstore(c, ci + 2, cj + 16, c21 + f * cload(c, ci + 2, cj + 16))
            cstore(c, ci + 3, cj + 0, c30 + f * cload(c, ci + 3, cj + 0))
            cstore(c, ci + 3, cj + 16, c31 + f * cload(c, ci + 3, cj + 16))
            cstore(c, ci + 4, cj + 0, c40 + f * cload(c, ci + 4, cj + 0))
            cstore(c, ci + 4, cj + 16, c41 + f * cload(c, ci + 4, cj + 16))
            cstore(c, ci + 5, cj + 0, c50 + f * cload(c, ci + 5, cj + 0))
            cstore(c, ci + 5, cj + 16, c51 + f * cload(c, ci + 5, cj + 16))
        else:
            cstore(c, ci + 0, cj + 0, c00)
            cstore(c, ci + 0, cj + 16, c01)
            cstore(c, ci + 1, cj + 0, c10)
            cstore(c, ci + 1, cj + 16, c11)
            cstore(c, ci + 2, cj + 0, c20)
            cstore(c, ci + 2, cj + 16, c21)
            cstore(c, ci + 3, cj + 0, c30)
            cstore(c, ci + 3, cj + 16, c31)
            cstore(c, ci + 4, cj + 0, c40)
            cstore(c, ci + 4, cj + 16, c41)
            cstore(c, ci + 5, cj + 0, c50)
            cstore(c, ci + 5, cj + 16, c51)


@njit(callee=True, cache=True, nogil=True, error_model="numpy", boundscheck=False)
def tile16(a, i0_, mlast, si, sk, k0_, bp, pb, steps, c, ci_, cj, load, beta_on, fb,
           strips, di, dk):
    """The 6 x 16 register tile: rows ``i0 .. i0 + 5`` of ``op(a)`` (read in place:
    element ``(i, kk)`` at byte ``i * si + kk * sk``; rows past ``mlast`` repeat it, computed
    and never stored) times the packed panel ``bp[pb:]`` (16 floats a step) over inner
    steps ``k0 .. k0 + steps - 1``, into ``c[ci:ci + 6, cj:cj + 16]``. The chains start at
    zero, or go on from ``c`` when ``load``; ``beta_on``: ``c = chain + fb * c``.
    ``strips`` such tiles in turn, tile ``s`` at row ``i0 + s * di`` and inner offset
    ``k0 + s * dk`` of ``op(a)``, rows ``ci + 6 * s`` of ``c`` (one call for a column of
    tiles: a call passes every array's fields, which costs as much as a tile of a
    few inner steps)."""
    for s in range(strips):
        i0 = i0_ + s * di
        k0 = k0_ + s * dk
        ci = ci_ + s * 6
        o0 = min(i0 + 0, mlast) * si + k0 * sk
        o1 = min(i0 + 1, mlast) * si + k0 * sk
        o2 = min(i0 + 2, mlast) * si + k0 * sk
        o3 = min(i0 + 3, mlast) * si + k0 * sk
        o4 = min(i0 + 4, mlast) * si + k0 * sk
        o5 = min(i0 + 5, mlast) * si + k0 * sk
        for r in range(6):  # the output's lines arrive while the chains run
            cprefetch(c, ci + r, cj)
            cprefetch(c, ci + r, cj + 15)
        if load:
            c00 = cload(c, ci + 0, cj + 0)
            c10 = cload(c, ci + 1, cj + 0)
            c20 = cload(c, ci + 2, cj + 0)
            c30 = cload(c, ci + 3, cj + 0)
            c40 = cload(c, ci + 4, cj + 0)
            c50 = cload(c, ci + 5, cj + 0)
        else:
            z = vsplat(np.float32(0.0))
            c00 = z
            c10 = z
            c20 = z
            c30 = z
            c40 = z
            c50 = z
        for kk in range(steps):
            q = pb + kk * 16
            b0 = vload(bp, q)
            d = kk * sk
            x = splat(a, o0 + d)
            c00 = vfma(x, b0, c00)
            x = splat(a, o1 + d)
            c10 = vfma(x, b0, c10)
            x = splat(a, o2 + d)
            c20 = vfma(x, b0, c20)
            x = splat(a, o3 + d)
            c30 = vfma(x, b0, c30)
            x = splat(a, o4 + d)
            c40 = vfma(x, b0, c40)
            x = splat(a, o5 + d)
            c50 = vfma(x, b0, c50)
        if beta_on:
            f = vsplat(fb)
            cstore(c, ci + 0, cj + 0, c00 + f * cload(c, ci + 0, cj + 0))
            cstore(c, ci + 1, cj + 0, c10 + f * cload(c, ci + 1, cj + 0))
            cstore(c, ci + 2, cj + 0, c20 + f * cload(c, ci + 2, cj + 0))
            cstore(c, ci + 3, cj + 0, c30 + f * cload(c, ci + 3, cj + 0))
            cstore(c, ci + 4, cj + 0, c40 + f * cload(c, ci + 4, cj + 0))
            cstore(c, ci + 5, cj + 0, c50 + f * cload(c, ci + 5, cj + 0))
        else:
            cstore(c, ci + 0, cj + 0, c00)
            cstore(c, ci + 1, cj + 0, c10)
            cstore(c, ci + 2, cj + 0, c20)
            cstore(c, ci + 3, cj + 0, c30)
            cstore(c, ci + 4, cj + 0, c40)
            cstore(c, ci + 5, cj + 0, c50)
