"""16-lane float32 vectors for tinynet's Numba kernels (``f32x16``).

Numba has no SIMD value type, and LLVM keeps per-channel vectors in registers only when
it can prove they do not alias the arrays a loop writes. The normalization passes need
exactly that: a channels-last row of 64 floats against four per-channel vectors that stay
the same for a whole block of positions. This module gives kernels an LLVM
``<16 x float>`` value: :func:`vload` / :func:`vstore` move 16 consecutive floats of a 1-D
float32 array, :func:`vsplat` broadcasts a scalar, and ``+``, ``-``, ``*`` work lane by
lane; :func:`vstream` stores without reading the line first, and :func:`vprefetch` asks
for a line ahead of its reads. A vector held in a local variable lives in a register for
the whole loop. The *quad* helpers (:func:`load4`, :func:`store4`, :func:`add4`, ...) work on tuples of four
vectors, 64 consecutive floats, so a kernel states a 64-float row once.

Every operation is one IEEE float32 operation per lane, with no fast-math flags (LLVM may
not fuse a multiply and an add), so a vector loop computes the bits of the scalar loop
it replaces. A fused multiply-add is only ever asked for explicitly: :func:`vfma` is
IEEE 754's ``fusedMultiplyAdd`` (``a * b + c`` rounded once, LLVM's ``llvm.fma``), the
same bits on every machine whether or not it has an FMA unit.

Two 8-lane folds (the normalization's ``folds._lanes8`` order) can run side by side in
one vector: :func:`vload8x2` and :func:`vsplat8x2` fill lanes 0-7 and 8-15 from two
places, :func:`vlows` / :func:`vhighs` pair the low or high halves of two vectors, and
:func:`vfold8x4` adds up four 8-lane groups, each in lane order.

Under ``NUMBA_DISABLE_JIT=1`` the same functions run in Python on 16-element NumPy
float32 arrays (NumPy's float32 ``+``, ``-`` and ``*`` are the same IEEE operations), so
interpreted kernels give the compiled kernels' bits; the interpreted :func:`vfma` rounds
the exact ``a * b + c`` once, through float64 with round-to-odd.

Indices are element offsets into the array's data; like Numba's own unchecked indexing
they are not bounds-checked: ``a[i:i + 16]`` must lie inside the array.
"""

from __future__ import annotations

import operator
import platform

import numpy as np
from llvmlite import binding as _llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

from tinynet.kernels._jit import CALLEE_OPTIONS, njit

__all__ = ["LANES", "STREAM_ALIGN", "F32x16", "f32x16", "vload", "vload8x2", "vstore",
           "vstream", "vprefetch", "sfence", "vsplat", "vsplat8x2", "vlows", "vhighs",
           "vfold8x4", "vfma", "load4", "store4", "splat4", "zero4", "add4", "sub4", "mul4",
           "NARROW_REGISTERS"]

LANES = 16
STREAM_ALIGN = 64  # bytes: a streamed vector's address must be a multiple of this
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")
_VT = ir.VectorType(ir.FloatType(), LANES)


def _narrow_registers() -> bool:
    """Whether this machine's vector registers cannot hold a kernel's wide register blocks
    (16 or more ``f32x16`` accumulators and their operands): no AVX-512, so 16 registers
    of at most 256 bits, and an ``f32x16`` takes two of them."""
    try:
        return not _llvm.get_host_cpu_features().get("avx512f", False)
    except RuntimeError:  # features unknown: the blocks that spill least
        return True


#: The kernels with register blocks (the direct convolution, the GEMM's tile) use their
#: narrow blocks. A fact of the machine, for speed only: the blocks change which outputs
#: are computed together, never an output's own chain of operations, so never a bit.
NARROW_REGISTERS: bool = _narrow_registers()


class F32x16(types.Type):
    """Numba type of a 16-lane float32 vector value (LLVM ``<16 x float>``)."""

    def __init__(self) -> None:
        super().__init__(name="f32x16")


f32x16 = F32x16()


@register_model(F32x16)
class _F32x16Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type) -> None:
        super().__init__(dmm, fe_type, _VT)


# ------------------------------------------------ the Python versions (NUMBA_DISABLE_JIT)
def vload(a: np.ndarray, i: int) -> np.ndarray:
    """The 16 floats ``a[i:i + 16]`` of a 1-D float32 array as one vector."""
    return a[i:i + LANES].copy()


def vload8x2(a: np.ndarray, i: int, j: int) -> np.ndarray:
    """``a[i:i + 8]`` in lanes 0-7 and ``a[j:j + 8]`` in lanes 8-15: two 8-float pieces
    (say, of two rows) side by side, so 8-lane folds of both run as one vector."""
    return np.concatenate((a[i:i + 8], a[j:j + 8]))


def vstore(a: np.ndarray, i: int, v: np.ndarray) -> None:
    """Writes vector ``v`` to ``a[i:i + 16]``."""
    a[i:i + LANES] = v


def vstream(a: np.ndarray, i: int, v: np.ndarray) -> None:
    """Writes vector ``v`` to ``a[i:i + 16]`` with a non-temporal (streaming) store.

    The same values as :func:`vstore`; the line goes to memory without first being read
    into the cache (no read-for-ownership) and without evicting cached data, which pays
    for outputs much larger than the last-level cache. The address of ``a[i]`` must be a
    multiple of :data:`STREAM_ALIGN` bytes, and a kernel that streams calls :func:`sfence`
    before its results are read by another thread.
    """
    a[i:i + LANES] = v


def vprefetch(a: np.ndarray, i: int) -> None:
    """Asks for the cache line of ``a[i]`` (``i`` within the array) ahead of a read: a
    hint, no value changes; a no-op when interpreted."""


def sfence() -> None:
    """Orders this thread's earlier streaming stores before its later stores (x86
    ``sfence``); a no-op when interpreted."""


def vsplat(x: float) -> np.ndarray:
    """A vector with ``float32(x)`` in every lane."""
    return np.full(LANES, x, dtype=np.float32)


def vsplat8x2(x: float, y: float) -> np.ndarray:
    """``float32(x)`` in lanes 0-7, ``float32(y)`` in lanes 8-15."""
    return np.repeat(np.array([x, y], dtype=np.float32), 8)


def vlows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lanes 0-7 of ``a`` then lanes 0-7 of ``b``."""
    return np.concatenate((a[:8], b[:8]))


def vhighs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Lanes 8-15 of ``a`` then lanes 8-15 of ``b``."""
    return np.concatenate((a[8:], b[8:]))


def vfold8x4(a: np.ndarray, b: np.ndarray) -> tuple:
    """The four 8-lane sums ``((l0 + l1) + l2) + ... + l7`` of lanes 0-7 of ``a``, 8-15 of
    ``a``, 0-7 of ``b`` and 8-15 of ``b``, each added in lane order."""
    out = []
    for v, o in ((a, 0), (a, 8), (b, 0), (b, 8)):
        acc = v[o]
        for k in range(1, 8):
            acc = np.float32(acc + v[o + k])
        out.append(np.float32(acc))
    return tuple(out)


def vfma(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` lane by lane, rounded once to float32 (IEEE fused multiply-add).

    Interpreted: the float32 product is exact in float64 and the sum's rounding error is
    recovered exactly (TwoSum); rounding the sum to odd in float64 (53 bits, more than
    24 + 2) and then to nearest float32 is the single correct rounding.
    """
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    bv = s - p
    err = (p - (s - bv)) + (c64 - bv)
    even = (s.view(np.int64) & 1) == 0
    toward = np.where(err > 0, np.inf, -np.inf)
    s = np.where((err != 0) & even, np.nextafter(s, toward), s)
    return s.astype(np.float32)


# ------------------------------------------------------------- the compiled versions
def _pointer(context, builder, ary_type, ary, index, vector=_VT):
    data = context.make_array(ary_type)(context, builder, ary).data
    return builder.bitcast(builder.gep(data, [index]), vector.as_pointer())


def _check_array(a) -> None:
    if not (isinstance(a, types.Array) and a.dtype == types.float32 and a.ndim == 1):
        raise TypeError(f"f32x16: expected a 1-D float32 array, got {a}")


@intrinsic
def _vload(typingctx, a, i):
    _check_array(a)

    def codegen(context, builder, sig, args):
        return builder.load(_pointer(context, builder, sig.args[0], args[0], args[1]), align=4)

    return f32x16(a, types.intp), codegen


_V8 = ir.VectorType(ir.FloatType(), 8)
_LANE_INDEX = ir.Constant(ir.VectorType(ir.IntType(32), LANES), list(range(LANES)))


@intrinsic
def _vload8x2(typingctx, a, i, j):
    _check_array(a)

    def codegen(context, builder, sig, args):
        lo, hi = (builder.load(_pointer(context, builder, sig.args[0], args[0], k, _V8),
                               align=4) for k in args[1:])
        return builder.shuffle_vector(lo, hi, _LANE_INDEX)

    return f32x16(a, types.intp, types.intp), codegen


@intrinsic
def _vstore(typingctx, a, i, v):
    _check_array(a)

    def codegen(context, builder, sig, args):
        builder.store(args[2], _pointer(context, builder, sig.args[0], args[0], args[1]),
                      align=4)
        return context.get_dummy_value()

    return types.void(a, types.intp, f32x16), codegen


@intrinsic
def _vstream(typingctx, a, i, v):
    _check_array(a)

    def codegen(context, builder, sig, args):
        store = builder.store(args[2], _pointer(context, builder, sig.args[0], args[0], args[1]),
                              align=STREAM_ALIGN)
        store.set_metadata("nontemporal",
                           builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))
        return context.get_dummy_value()

    return types.void(a, types.intp, f32x16), codegen


def emit_prefetch(builder, ptr, write: bool) -> None:
    """Emits ``llvm.prefetch`` of the line at ``ptr`` (a ``<16 x float>*``: every caller
    declares the intrinsic with that pointer type, so one kernel may use several), kept
    in all cache levels, ahead of a read or (``write``) of a write."""
    i32 = ir.IntType(32)
    fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(
        ir.VoidType(), [_VT.as_pointer(), i32, i32, i32]), "llvm.prefetch.p0")
    builder.call(fn, [ptr, ir.Constant(i32, int(write)), ir.Constant(i32, 3),
                      ir.Constant(i32, 1)])


@intrinsic
def _vprefetch(typingctx, a, i):
    _check_array(a)

    def codegen(context, builder, sig, args):
        emit_prefetch(builder, _pointer(context, builder, sig.args[0], args[0], args[1]),
                      write=False)
        return context.get_dummy_value()

    return types.void(a, types.intp), codegen


@intrinsic
def _sfence(typingctx):
    def codegen(context, builder, sig, args):
        if _X86:
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), []), "llvm.x86.sse.sfence")
            builder.call(fn, [])
        else:  # elsewhere a full fence orders streaming stores too
            builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def _vsplat(typingctx, x):
    def codegen(context, builder, sig, args):
        one = builder.insert_element(ir.Constant(_VT, ir.Undefined), args[0],
                                     ir.Constant(ir.IntType(32), 0))
        mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES), [0] * LANES)
        return builder.shuffle_vector(one, one, mask)

    return f32x16(types.float32), codegen


@intrinsic
def _vfma(typingctx, a, b, c):
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VT, [_VT] * 3),
                                            "llvm.fma.v16f32")
        return builder.call(fn, args)

    return f32x16(f32x16, f32x16, f32x16), codegen


@intrinsic
def _vsplat8x2(typingctx, x, y):
    def codegen(context, builder, sig, args):
        v = ir.Constant(_VT, ir.Undefined)
        for k in range(LANES):
            v = builder.insert_element(v, args[k // 8], ir.Constant(ir.IntType(32), k))
        return v

    return f32x16(types.float32, types.float32), codegen


def _halves(first: int):
    mask = ir.Constant(ir.VectorType(ir.IntType(32), LANES),
                       [first + k for k in range(8)] + [LANES + first + k for k in range(8)])

    @intrinsic
    def pick(typingctx, a, b):
        def codegen(context, builder, sig, args):
            return builder.shuffle_vector(args[0], args[1], mask)

        return f32x16(f32x16, f32x16), codegen

    return pick


_vlows, _vhighs = _halves(0), _halves(8)


def _shuffle(builder, a, b, lanes):
    return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), len(lanes)),
                                                    lanes))


@intrinsic
def _vfold8x4(typingctx, a, b):
    result = types.UniTuple(types.float32, 4)

    def codegen(context, builder, sig, args):
        # Lane k of each of the four 8-lane groups side by side, then added in lane order.
        # The picks come from the usual 4 x 8 transpose (unpack, then 64-bit shuffles, both
        # within 128-bit halves). Picking each lane k straight from the two 16-lane vectors
        # lowered to so many AVX2 shuffles that layer norm's two-row sums took 37 shuffle
        # instructions, 15 this way (0.89-0.92x the time of that pass). Only the shuffles
        # differ, so the additions and the bits are those of the direct picks.
        low, high = list(range(8)), list(range(8, 16))
        g0, g1 = (_shuffle(builder, args[0], args[0], lanes) for lanes in (low, high))
        g2, g3 = (_shuffle(builder, args[1], args[1], lanes) for lanes in (low, high))
        even, odd = [0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]
        t0, t1 = _shuffle(builder, g0, g1, even), _shuffle(builder, g0, g1, odd)
        t2, t3 = _shuffle(builder, g2, g3, even), _shuffle(builder, g2, g3, odd)
        first, second = [0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]
        # u[k] holds lane k of the four groups in its low half and lane k + 4 in its high
        u = [_shuffle(builder, t0, t2, first), _shuffle(builder, t0, t2, second),
             _shuffle(builder, t1, t3, first), _shuffle(builder, t1, t3, second)]
        picks = ([_shuffle(builder, v, v, [0, 1, 2, 3]) for v in u]
                 + [_shuffle(builder, v, v, [4, 5, 6, 7]) for v in u])
        acc = picks[0]
        for pick in picks[1:]:
            acc = builder.fadd(acc, pick)
        sums = [builder.extract_element(acc, ir.Constant(ir.IntType(32), i)) for i in range(4)]
        return context.make_tuple(builder, result, sums)

    return result(f32x16, f32x16), codegen


def _lanewise(instruction: str):
    @intrinsic
    def op(typingctx, a, b):
        def codegen(context, builder, sig, args):
            return getattr(builder, instruction)(args[0], args[1])

        return f32x16(f32x16, f32x16), codegen

    return op


# The overloads are called, not inlined by Numba: each is one LLVM instruction, which LLVM
# inlines into every caller (no call is left in the kernels' assembly), while Numba's own
# inlining re-derived and copied them at each of the thousands of call sites.
@overload(vload, jit_options=CALLEE_OPTIONS)
def _vload_jit(a, i):
    return lambda a, i: _vload(a, i)


@overload(vload8x2, jit_options=CALLEE_OPTIONS)
def _vload8x2_jit(a, i, j):
    return lambda a, i, j: _vload8x2(a, i, j)


@overload(vsplat8x2, jit_options=CALLEE_OPTIONS)
def _vsplat8x2_jit(x, y):
    return lambda x, y: _vsplat8x2(np.float32(x), np.float32(y))


@overload(vlows, jit_options=CALLEE_OPTIONS)
def _vlows_jit(a, b):
    return lambda a, b: _vlows(a, b)


@overload(vhighs, jit_options=CALLEE_OPTIONS)
def _vhighs_jit(a, b):
    return lambda a, b: _vhighs(a, b)


@overload(vfold8x4, jit_options=CALLEE_OPTIONS)
def _vfold8x4_jit(a, b):
    return lambda a, b: _vfold8x4(a, b)


@overload(vstore, jit_options=CALLEE_OPTIONS)
def _vstore_jit(a, i, v):
    return lambda a, i, v: _vstore(a, i, v)


@overload(vstream, jit_options=CALLEE_OPTIONS)
def _vstream_jit(a, i, v):
    return lambda a, i, v: _vstream(a, i, v)


@overload(vprefetch, jit_options=CALLEE_OPTIONS)
def _vprefetch_jit(a, i):
    return lambda a, i: _vprefetch(a, i)


@overload(sfence, jit_options=CALLEE_OPTIONS)
def _sfence_jit():
    return lambda: _sfence()


@overload(vsplat, jit_options=CALLEE_OPTIONS)
def _vsplat_jit(x):
    return lambda x: _vsplat(np.float32(x))


@overload(vfma, jit_options=CALLEE_OPTIONS)
def _vfma_jit(a, b, c):
    return lambda a, b, c: _vfma(a, b, c)


def _register_operator(op, instruction: str) -> None:
    kernel = _lanewise(instruction)

    @overload(op, jit_options=CALLEE_OPTIONS)
    def _jit(a, b):
        if isinstance(a, F32x16) and isinstance(b, F32x16):
            return lambda a, b: kernel(a, b)
        return None


for _op, _instruction in ((operator.add, "fadd"), (operator.sub, "fsub"),
                          (operator.mul, "fmul")):
    _register_operator(_op, _instruction)


# ------------------------------------------------ quads: 64 consecutive floats, 4 vectors
# A tuple of four vectors; after inlining each stays in its own register.
@njit(cache=True, inline="always")
def load4(a, i):
    """``a[i:i + 64]`` as four vectors."""
    return vload(a, i), vload(a, i + 16), vload(a, i + 32), vload(a, i + 48)


@njit(cache=True, inline="always")
def store4(a, i, q):
    """Writes the four vectors of ``q`` to ``a[i:i + 64]``."""
    vstore(a, i, q[0])
    vstore(a, i + 16, q[1])
    vstore(a, i + 32, q[2])
    vstore(a, i + 48, q[3])


@njit(cache=True, inline="always")
def splat4(x):
    """``float32(x)`` in all 64 lanes."""
    v = vsplat(x)
    return v, v, v, v


@njit(cache=True, inline="always")
def zero4():
    return splat4(0.0)


@njit(cache=True, inline="always")
def add4(p, q):
    return p[0] + q[0], p[1] + q[1], p[2] + q[2], p[3] + q[3]


@njit(cache=True, inline="always")
def sub4(p, q):
    return p[0] - q[0], p[1] - q[1], p[2] - q[2], p[3] - q[3]


@njit(cache=True, inline="always")
def mul4(p, q):
    return p[0] * q[0], p[1] * q[1], p[2] * q[2], p[3] * q[3]
