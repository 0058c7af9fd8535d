"""Direct 2-D convolution kernels on channels-last data: fused multiply-adds in registers.

For output channels in multiples of 16 the convolution needs no patch matrix at all
(:mod:`tinynet.ops.arrays.conv2d` chooses). A *block* is 8 output pixels by 32 (or 16) output
channels: 16 (or 8) ``f32x16`` accumulators stay in registers while the loop runs over
the ``K = KH * KW * C`` rows of the kernel, each row one vector load of weights, eight
scalars of the zero-padded input broadcast, and one :func:`~tinynet.kernels.simd.vfma`
per accumulator. A kernel row ``r = (i * KW + j) * C + c`` reads the padded input at a
fixed offset ``roff[r]`` from the pixel's corner, so taps, channels and dilation are one
loop.

* **Output** (forward, and the input gradient of a stride-1 convolution, which is the
  same correlation of the zero-padded output gradient with the flipped, transposed
  kernel): ``z[q, f] = fma chain over r = 0..K-1 of x[off_q + roff[r]] * w[r, f]``,
  then ``+ bias[f]``. Every output is one chain in row order, whatever block it is
  computed in, so the last block of a sample may overlap the one before it (it
  recomputes the same bits) and a sample needs no tail code.
* **Kernel gradient**: a block is 8 kernel rows by 32 (or 16) filters, and the loop runs
  over the output pixels: ``dw[r, f] = fma chain over the task's pixels, in order, of
  x[off_q + roff[r]] * dz[q, f]``. Blocks start from the task's partial so far, which
  continues the same chain sample after sample. ``K`` is padded to a multiple of 8 (6) with
  rows that read offset 0 and land in rows the caller drops (:data:`GRAD_ROWS`).

On cores with 16 vector registers (no AVX-512: ``NARROW``) an ``f32x16`` takes two
256-bit registers, so 8 accumulators of 16 lanes alone fill the register file and the
blocks above spill to the stack on every row. There the passes use *narrow* blocks of
6 pixels (or 6 kernel rows) by 16 channels: 6 accumulators in 12 registers, the weight
vector in 2 and a broadcast in 1, as in a 256-bit GEMM micro-kernel, with the kernel
rows padded to a multiple of 6 for the gradient pass. A block only chooses which chains
run together, never the order within a chain, so narrow and wide blocks give the same
bits.

The order of every sum depends on the shape alone, so the serial and parallel passes
give the same bits for any thread count.
"""

from __future__ import annotations

import functools

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import run_tasks
from tinynet.kernels.conv import pad_sample
from tinynet.kernels.simd import NARROW_REGISTERS, vfma, vload, vsplat, vstore

__all__ = ["BLOCK", "NARROW", "forward_kernel", "backward_kernel"]

BLOCK = 8  # output pixels (output pass) or kernel rows (gradient pass) per block
NARROW_BLOCK = 6  # pixels or kernel rows of a narrow block

#: The passes use the narrow blocks (the kernels take it as an argument; it is a fact of
#: the machine, the same for every call, so it never changes a result).
NARROW: bool = NARROW_REGISTERS
#: The gradient pass's kernel rows are padded to a multiple of this (its block height).
GRAD_ROWS: int = NARROW_BLOCK if NARROW else BLOCK


# ----------------------------------------------------------------- register blocks
# The one-line helpers are called (``callee``), not inlined by Numba: LLVM inlines them
# into every block all the same (the same loads, broadcasts and fused multiply-adds),
# while each of Numba's inlined copies cost its typing and lowering again, at some 70
# call sites.
@njit(callee=True, cache=True, error_model="numpy")
def _put(zf, o, acc, bias, add_bias):
    """Stores an output vector, plus the bias vector when there is one."""
    vstore(zf, o, acc + bias if add_bias else acc)


@njit(callee=True, cache=True, error_model="numpy")
def _at(xf, i):
    """``xf[i]`` broadcast to a vector. ``i`` is never negative and is taken as unsigned,
    so Numba emits no negative-index wraparound: four integer instructions per broadcast,
    which made the blocks' inner loops issue-bound on cores with full-width 512-bit FMA
    units."""
    return vsplat(xf[np.uint64(i)])


@njit(callee=True, cache=True, error_model="numpy")
def _fma1(xf, i, u, a):
    """``xf[i] * u + a``, each lane one fused multiply-add."""
    return vfma(_at(xf, i), u, a)


@njit(callee=True, cache=True, error_model="numpy")
def _fma2(xf, i, u, v, a, b):
    """``(xf[i] * u + a, xf[i] * v + b)``, each lane one fused multiply-add."""
    s = _at(xf, i)
    return vfma(s, u, a), vfma(s, v, b)


@njit(callee=True, cache=True, error_model="numpy")
def _get2(part, p):
    return vload(part, p), vload(part, p + 16)


@njit(callee=True, cache=True, error_model="numpy")
def _set2(part, p, a, b):
    vstore(part, p, a)
    vstore(part, p + 16, b)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _out_block2(xf, wf, roff, nf, f0, offs, zf, zo, bias, add_bias):
    """Outputs ``zf[zo + i * nf + f0 : +32]`` of the 8 pixels at input offsets ``offs``."""
    o0, o1, o2, o3 = offs[0], offs[1], offs[2], offs[3]
    o4, o5, o6, o7 = offs[4], offs[5], offs[6], offs[7]
    a0 = b0 = a1 = b1 = a2 = b2 = a3 = b3 = vsplat(0.0)
    a4 = b4 = a5 = b5 = a6 = b6 = a7 = b7 = vsplat(0.0)
    wo = f0
    for r in range(roff.size):
        ro = roff[r]
        u = vload(wf, wo)
        v = vload(wf, wo + 16)
        wo += nf
        a0, b0 = _fma2(xf, o0 + ro, u, v, a0, b0)
        a1, b1 = _fma2(xf, o1 + ro, u, v, a1, b1)
        a2, b2 = _fma2(xf, o2 + ro, u, v, a2, b2)
        a3, b3 = _fma2(xf, o3 + ro, u, v, a3, b3)
        a4, b4 = _fma2(xf, o4 + ro, u, v, a4, b4)
        a5, b5 = _fma2(xf, o5 + ro, u, v, a5, b5)
        a6, b6 = _fma2(xf, o6 + ro, u, v, a6, b6)
        a7, b7 = _fma2(xf, o7 + ro, u, v, a7, b7)
    u = vload(bias, f0)
    v = vload(bias, f0 + 16)
    o = zo + f0
    _put(zf, o, a0, u, add_bias)
    _put(zf, o + 16, b0, v, add_bias)
    _put(zf, o + nf, a1, u, add_bias)
    _put(zf, o + nf + 16, b1, v, add_bias)
    _put(zf, o + 2 * nf, a2, u, add_bias)
    _put(zf, o + 2 * nf + 16, b2, v, add_bias)
    _put(zf, o + 3 * nf, a3, u, add_bias)
    _put(zf, o + 3 * nf + 16, b3, v, add_bias)
    _put(zf, o + 4 * nf, a4, u, add_bias)
    _put(zf, o + 4 * nf + 16, b4, v, add_bias)
    _put(zf, o + 5 * nf, a5, u, add_bias)
    _put(zf, o + 5 * nf + 16, b5, v, add_bias)
    _put(zf, o + 6 * nf, a6, u, add_bias)
    _put(zf, o + 6 * nf + 16, b6, v, add_bias)
    _put(zf, o + 7 * nf, a7, u, add_bias)
    _put(zf, o + 7 * nf + 16, b7, v, add_bias)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _out_block1(xf, wf, roff, nf, f0, offs, zf, zo, bias, add_bias):
    """:func:`_out_block2` for 16 output channels (the last 16 when ``nf % 32 == 16``)."""
    o0, o1, o2, o3 = offs[0], offs[1], offs[2], offs[3]
    o4, o5, o6, o7 = offs[4], offs[5], offs[6], offs[7]
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = vsplat(0.0)
    wo = f0
    for r in range(roff.size):
        ro = roff[r]
        u = vload(wf, wo)
        wo += nf
        a0 = _fma1(xf, o0 + ro, u, a0)
        a1 = _fma1(xf, o1 + ro, u, a1)
        a2 = _fma1(xf, o2 + ro, u, a2)
        a3 = _fma1(xf, o3 + ro, u, a3)
        a4 = _fma1(xf, o4 + ro, u, a4)
        a5 = _fma1(xf, o5 + ro, u, a5)
        a6 = _fma1(xf, o6 + ro, u, a6)
        a7 = _fma1(xf, o7 + ro, u, a7)
    u = vload(bias, f0)
    o = zo + f0
    _put(zf, o, a0, u, add_bias)
    _put(zf, o + nf, a1, u, add_bias)
    _put(zf, o + 2 * nf, a2, u, add_bias)
    _put(zf, o + 3 * nf, a3, u, add_bias)
    _put(zf, o + 4 * nf, a4, u, add_bias)
    _put(zf, o + 5 * nf, a5, u, add_bias)
    _put(zf, o + 6 * nf, a6, u, add_bias)
    _put(zf, o + 7 * nf, a7, u, add_bias)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _grad_block2(xf, gf, roff, r0, nf, f0, oh, ow, sh, sw, wp, ch, g0, part):
    """Kernel-gradient rows ``r0..r0+7``, filters ``f0..f0+31`` of one padded sample:
    the chains in ``part`` (``[Kpad * nf]``) continued over its pixels in order."""
    ro0, ro1, ro2, ro3 = roff[r0], roff[r0 + 1], roff[r0 + 2], roff[r0 + 3]
    ro4, ro5, ro6, ro7 = roff[r0 + 4], roff[r0 + 5], roff[r0 + 6], roff[r0 + 7]
    p = r0 * nf + f0
    a0, b0 = _get2(part, p)
    a1, b1 = _get2(part, p + nf)
    a2, b2 = _get2(part, p + 2 * nf)
    a3, b3 = _get2(part, p + 3 * nf)
    a4, b4 = _get2(part, p + 4 * nf)
    a5, b5 = _get2(part, p + 5 * nf)
    a6, b6 = _get2(part, p + 6 * nf)
    a7, b7 = _get2(part, p + 7 * nf)
    go = g0 * nf + f0
    for oy in range(oh):
        o = oy * sh * wp * ch
        for _ in range(ow):
            u = vload(gf, go)
            v = vload(gf, go + 16)
            go += nf
            a0, b0 = _fma2(xf, o + ro0, u, v, a0, b0)
            a1, b1 = _fma2(xf, o + ro1, u, v, a1, b1)
            a2, b2 = _fma2(xf, o + ro2, u, v, a2, b2)
            a3, b3 = _fma2(xf, o + ro3, u, v, a3, b3)
            a4, b4 = _fma2(xf, o + ro4, u, v, a4, b4)
            a5, b5 = _fma2(xf, o + ro5, u, v, a5, b5)
            a6, b6 = _fma2(xf, o + ro6, u, v, a6, b6)
            a7, b7 = _fma2(xf, o + ro7, u, v, a7, b7)
            o += sw * ch
    _set2(part, p, a0, b0)
    _set2(part, p + nf, a1, b1)
    _set2(part, p + 2 * nf, a2, b2)
    _set2(part, p + 3 * nf, a3, b3)
    _set2(part, p + 4 * nf, a4, b4)
    _set2(part, p + 5 * nf, a5, b5)
    _set2(part, p + 6 * nf, a6, b6)
    _set2(part, p + 7 * nf, a7, b7)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _grad_block1(xf, gf, roff, r0, nf, f0, oh, ow, sh, sw, wp, ch, g0, part):
    """:func:`_grad_block2` for 16 filters (the last 16 when ``nf % 32 == 16``)."""
    ro0, ro1, ro2, ro3 = roff[r0], roff[r0 + 1], roff[r0 + 2], roff[r0 + 3]
    ro4, ro5, ro6, ro7 = roff[r0 + 4], roff[r0 + 5], roff[r0 + 6], roff[r0 + 7]
    p = r0 * nf + f0
    a0 = vload(part, p)
    a1 = vload(part, p + nf)
    a2 = vload(part, p + 2 * nf)
    a3 = vload(part, p + 3 * nf)
    a4 = vload(part, p + 4 * nf)
    a5 = vload(part, p + 5 * nf)
    a6 = vload(part, p + 6 * nf)
    a7 = vload(part, p + 7 * nf)
    go = g0 * nf + f0
    for oy in range(oh):
        o = oy * sh * wp * ch
        for _ in range(ow):
            u = vload(gf, go)
            go += nf
            a0 = _fma1(xf, o + ro0, u, a0)
            a1 = _fma1(xf, o + ro1, u, a1)
            a2 = _fma1(xf, o + ro2, u, a2)
            a3 = _fma1(xf, o + ro3, u, a3)
            a4 = _fma1(xf, o + ro4, u, a4)
            a5 = _fma1(xf, o + ro5, u, a5)
            a6 = _fma1(xf, o + ro6, u, a6)
            a7 = _fma1(xf, o + ro7, u, a7)
            o += sw * ch
    vstore(part, p, a0)
    vstore(part, p + nf, a1)
    vstore(part, p + 2 * nf, a2)
    vstore(part, p + 3 * nf, a3)
    vstore(part, p + 4 * nf, a4)
    vstore(part, p + 5 * nf, a5)
    vstore(part, p + 6 * nf, a6)
    vstore(part, p + 7 * nf, a7)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _out_block6(xf, wf, roff, nf, f0, offs, zf, zo, bias, add_bias):
    """:func:`_out_block1` for the 6 pixels at ``offs[:6]`` (a narrow block)."""
    o0, o1, o2, o3, o4, o5 = offs[0], offs[1], offs[2], offs[3], offs[4], offs[5]
    a0 = a1 = a2 = a3 = a4 = a5 = vsplat(0.0)
    wo = f0
    for r in range(roff.size):
        ro = roff[r]
        u = vload(wf, wo)
        wo += nf
        a0 = _fma1(xf, o0 + ro, u, a0)
        a1 = _fma1(xf, o1 + ro, u, a1)
        a2 = _fma1(xf, o2 + ro, u, a2)
        a3 = _fma1(xf, o3 + ro, u, a3)
        a4 = _fma1(xf, o4 + ro, u, a4)
        a5 = _fma1(xf, o5 + ro, u, a5)
    u = vload(bias, f0)
    o = zo + f0
    _put(zf, o, a0, u, add_bias)
    _put(zf, o + nf, a1, u, add_bias)
    _put(zf, o + 2 * nf, a2, u, add_bias)
    _put(zf, o + 3 * nf, a3, u, add_bias)
    _put(zf, o + 4 * nf, a4, u, add_bias)
    _put(zf, o + 5 * nf, a5, u, add_bias)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _grad_block6(xf, gf, roff, r0, nf, f0, oh, ow, sh, sw, wp, ch, g0, part):
    """:func:`_grad_block1` for the 6 kernel rows ``r0..r0+5`` (a narrow block)."""
    ro0, ro1, ro2, ro3, ro4, ro5 = (roff[r0], roff[r0 + 1], roff[r0 + 2], roff[r0 + 3],
                                    roff[r0 + 4], roff[r0 + 5])
    p = r0 * nf + f0
    a0 = vload(part, p)
    a1 = vload(part, p + nf)
    a2 = vload(part, p + 2 * nf)
    a3 = vload(part, p + 3 * nf)
    a4 = vload(part, p + 4 * nf)
    a5 = vload(part, p + 5 * nf)
    go = g0 * nf + f0
    for oy in range(oh):
        o = oy * sh * wp * ch
        for _ in range(ow):
            u = vload(gf, go)
            go += nf
            a0 = _fma1(xf, o + ro0, u, a0)
            a1 = _fma1(xf, o + ro1, u, a1)
            a2 = _fma1(xf, o + ro2, u, a2)
            a3 = _fma1(xf, o + ro3, u, a3)
            a4 = _fma1(xf, o + ro4, u, a4)
            a5 = _fma1(xf, o + ro5, u, a5)
            o += sw * ch
    vstore(part, p, a0)
    vstore(part, p + nf, a1)
    vstore(part, p + 2 * nf, a2)
    vstore(part, p + 3 * nf, a3)
    vstore(part, p + 4 * nf, a4)
    vstore(part, p + 5 * nf, a5)


# ------------------------------------------------------------------ one sample
# Inlined into the slot drivers (one call site each): as called functions they linked the
# blocks and optimized them once more, so each block's code went through LLVM three times
# (its own module, the sample's, the slot's) instead of two.
@njit(cache=True, inline="always", error_model="numpy")
def _pixel_offsets(q0, n, ow, sh, sw, wp, ch, offs):
    """``offs[i]``, ``i < n``: offset in the padded sample of the corner of output pixel
    ``q0 + i``."""
    for i in range(n):
        oy = (q0 + i) // ow
        ox = q0 + i - oy * ow
        offs[i] = (oy * sh * wp + ox * sw) * ch


@njit(cache=True, inline="always", error_model="numpy")
def _out_sample_wide(xp, wf, roff, bias, add_bias, zf, row0, oh, ow, sh, sw, offs):
    """All outputs of one padded sample ``xp`` (``[Hp, Wp, C]``) into rows
    ``row0..row0 + oh * ow`` of ``zf`` (flat ``[rows * nf]``), in wide blocks."""
    wp, ch = xp.shape[1], xp.shape[2]
    xf = xp.reshape(-1)
    nf = bias.size
    per = oh * ow
    for q0 in range(0, per, BLOCK):
        qs = min(q0, per - BLOCK)  # the last block may overlap: same chains, same bits
        _pixel_offsets(qs, BLOCK, ow, sh, sw, wp, ch, offs)
        zo = (row0 + qs) * nf
        for f0 in range(0, nf - 31, 32):
            _out_block2(xf, wf, roff, nf, f0, offs, zf, zo, bias, add_bias)
        if nf % 32:
            _out_block1(xf, wf, roff, nf, nf - 16, offs, zf, zo, bias, add_bias)


@njit(cache=True, inline="always", error_model="numpy")
def _out_sample_narrow(xp, wf, roff, bias, add_bias, zf, row0, oh, ow, sh, sw, offs):
    """:func:`_out_sample_wide` in narrow blocks."""
    wp, ch = xp.shape[1], xp.shape[2]
    xf = xp.reshape(-1)
    nf = bias.size
    per = oh * ow
    for q0 in range(0, per, NARROW_BLOCK):
        qs = min(q0, per - NARROW_BLOCK)
        _pixel_offsets(qs, NARROW_BLOCK, ow, sh, sw, wp, ch, offs)
        zo = (row0 + qs) * nf
        for f0 in range(0, nf, 16):
            _out_block6(xf, wf, roff, nf, f0, offs, zf, zo, bias, add_bias)


@njit(cache=True, inline="always", error_model="numpy")
def _grad_sample_wide(xp, gf, roff, row0, oh, ow, sh, sw, part):
    """Continues the kernel-gradient chains in ``part`` over one padded sample ``xp`` and
    its output gradient rows ``row0..row0 + oh * ow`` of ``gf``, in wide blocks."""
    wp, ch = xp.shape[1], xp.shape[2]
    xf = xp.reshape(-1)
    nf = part.size // roff.size
    for r0 in range(0, roff.size, BLOCK):
        for f0 in range(0, nf - 31, 32):
            _grad_block2(xf, gf, roff, r0, nf, f0, oh, ow, sh, sw, wp, ch, row0, part)
        if nf % 32:
            _grad_block1(xf, gf, roff, r0, nf, nf - 16, oh, ow, sh, sw, wp, ch, row0, part)


@njit(cache=True, inline="always", error_model="numpy")
def _grad_sample_narrow(xp, gf, roff, row0, oh, ow, sh, sw, part):
    """:func:`_grad_sample_wide` in narrow blocks."""
    wp, ch = xp.shape[1], xp.shape[2]
    xf = xp.reshape(-1)
    nf = part.size // roff.size
    for r0 in range(0, roff.size, NARROW_BLOCK):
        for f0 in range(0, nf, 16):
            _grad_block6(xf, gf, roff, r0, nf, f0, oh, ow, sh, sw, wp, ch, row0, part)


# ------------------------------------------------------------- whole passes
# Forward: sample b runs on slot b % slots. Backward: ``tasks[t] = (b0, b1)``, a group of
# whole samples with its own kernel-gradient partial ``parts[t]`` and bias partial
# ``bparts[t]``, runs on slot t % slots. Each slot has its own padded buffer. The input
# gradient is no part of the backward: it is the forward pass run on the output gradient
# (the caller runs it), so the output blocks compile once, in the forward, and are not
# linked and optimized a second time inside the backward. The work of
# a range of slots ``s0..s1`` is one compiled function per ``narrow`` (a constant there, so
# it compiles only its own blocks): the serial driver calls it from Python on every slot,
# the parallel one runs it one slot a task over threads through its address
# (:func:`tinynet.kernels.address.run_parallel`), so the body compiles once and no parfor
# pass ever sees it.
def _slot_fns(narrow: bool):
    """``(forward_slots, backward_slots)`` for the blocks ``narrow`` chooses."""

    @njit(cache=True, variant=narrow, nogil=True, error_model="numpy")
    def forward_slots(x, wf, roff, bias, add_bias, z, pt, pl, oh, ow, sh, sw, xps, offss,
                      s0, s1):
        zf = z.reshape(-1)
        slots = xps.shape[0]
        for s in range(s0, s1):
            xp = xps[s]
            offs = offss[s]
            for b in range(s, x.shape[0], slots):
                pad_sample(x, b, pt, pl, xp)
                if narrow:
                    _out_sample_narrow(xp, wf, roff, bias, add_bias, zf, b * oh * ow, oh, ow,
                                       sh, sw, offs)
                else:
                    _out_sample_wide(xp, wf, roff, bias, add_bias, zf, b * oh * ow, oh, ow,
                                     sh, sw, offs)

    @njit(cache=True, variant=narrow, nogil=True, error_model="numpy")
    def backward_slots(x, dz4, roff, parts, bparts, want_dw, want_db, tasks, pt, pl, oh, ow,
                       sh, sw, xps, s0, s1):
        slots = xps.shape[0]
        nf = dz4.shape[3]
        per = oh * ow
        gf = dz4.reshape(-1)
        for s in range(s0, s1):
            xp = xps[s]
            for t in range(s, tasks.shape[0], slots):
                part = parts[t if want_dw else 0].reshape(-1)  # one dummy partial w/o dw
                db = bparts[t]
                if want_dw:
                    for i in range(part.size):
                        part[i] = np.float32(0.0)
                if want_db:
                    for f in range(nf):
                        db[f] = np.float32(0.0)
                for b in range(tasks[t, 0], tasks[t, 1]):
                    if want_dw:
                        pad_sample(x, b, pt, pl, xp)
                        if narrow:
                            _grad_sample_narrow(xp, gf, roff, b * per, oh, ow, sh, sw, part)
                        else:
                            _grad_sample_wide(xp, gf, roff, b * per, oh, ow, sh, sw, part)
                    if want_db:  # the sample's dz rows added in order
                        for q in range(b * per, (b + 1) * per):
                            g = gf[q * nf:(q + 1) * nf]
                            for f in range(nf):
                                db[f] += g[f]

    return forward_slots, backward_slots


# Module globals (a closure must not capture a dispatcher: Numba's cache keys a kernel by
# its closure's contents); each driver names its own, ``narrow`` being its constant.
_forward_slots_wide, _backward_slots_wide = _slot_fns(False)
_forward_slots_narrow, _backward_slots_narrow = _slot_fns(True)


@functools.cache
def forward_kernel(narrow: bool, parallel: bool):
    """``kernel(x, wf, roff, bias, add_bias, z, pt, pl, oh, ow, sh, sw, xps, offs)``:
    ``z = conv(x, w) (+ bias)`` (see the module docstring); ``z`` is ``[B * OH * OW, F]``,
    ``wf`` the kernel ``[K * F]`` flat, ``roff`` its row offsets; samples spread over
    ``len(xps)`` slots (threads when ``parallel``); ``narrow``: the narrow blocks
    (:data:`NARROW`). One compiled kernel per ``narrow`` serves both drivers."""
    slots = _forward_slots_narrow if narrow else _forward_slots_wide
    return functools.partial(_run_slots, slots, parallel)


def _run_slots(kernel, parallel, *args):
    """``kernel(*args, 0, slots)`` on the calling thread, or one slot a task over threads
    through its address (``args[-1]``: a per-slot array, one row a slot)."""
    run_tasks(kernel, args[-1].shape[0], parallel, *args)


@functools.cache
def backward_kernel(narrow: bool, parallel: bool):
    """``kernel(x, dz4, roff, parts, bparts, want_dw, want_db, tasks, pt, pl, oh, ow, sh, sw,
    xps)``: kernel-gradient partials ``parts[t]`` (``[Kpad, F]``) and bias partials
    ``bparts[t]``, the tasks spread over ``len(xps)`` slots (see the module docstring). The
    input gradient of a stride-1 convolution is
    :func:`forward_kernel` run on the zero-padded output gradient with the flipped,
    transposed kernel."""
    slots = _backward_slots_narrow if narrow else _backward_slots_wide
    return functools.partial(_run_slots, slots, parallel)
