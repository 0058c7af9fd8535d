"""The activations of the recurrent kernels (:mod:`tinynet.kernels.recurrent`): the kinds'
codes, each function and its derivative (taken from the output) in float32 arithmetic,
and the same over a span of a row 16 lanes at a time, with the scalar function's bits.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.simd import LANES, vload, vsplat, vstore
from tinynet.kernels.simd_math import EXP_LOW, exp_poly, vdiv, vexp_poly, vpick_ge, vpick_lt

__all__ = ["LINEAR", "TANH", "SIGMOID", "RELU", "HARD_SIGMOID"]

LINEAR, TANH, SIGMOID, RELU, HARD_SIGMOID = range(5)


# -- tanh and sigmoid in float32 arithmetic ---------------------------------------------------
# libm's exp/tanh are calls LLVM cannot vectorize, and they were most of a step's time.
# These are Cephes's float32 approximations (within 2 ulp of the exact value), written
# with IEEE float32 operations only (no fast-math), so they give the same bits on every
# machine, compiled or interpreted; the spans below run them 16 lanes at a time.
@njit(cache=True, error_model="numpy", inline="always")
def _exp_neg(v):
    """``exp(v)`` for ``v <= 0`` (float32; below -87, ``exp(-87)``)."""
    return exp_poly(EXP_LOW if v < EXP_LOW else v)


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
@njit(cache=True, error_model="numpy", inline="always")
def _vexp_neg(v):
    """:func:`_exp_neg` in 16 lanes."""
    low = vsplat(EXP_LOW)
    return vexp_poly(vpick_lt(v, low, low, v))


@njit(cache=True, error_model="numpy", inline="always")
def _vsigmoid(v):
    """:func:`_sigmoid_f32` in 16 lanes."""
    zero = vsplat(0.0)
    one = vsplat(1.0)
    e = _vexp_neg(vpick_ge(v, zero, v * vsplat(-1.0), v))
    # one division: each lane's numerator picked first (1 or e), the scalar's quotient
    return vdiv(vpick_ge(v, zero, one, e), one + e)


@njit(cache=True, error_model="numpy", inline="always")
def _vtanh(v):
    """:func:`_tanh_f32` in 16 lanes."""
    zero = vsplat(0.0)
    one = vsplat(1.0)
    a = vpick_lt(v, zero, v * vsplat(-1.0), v)
    z = v * v
    p = vsplat(-5.70498872745e-3) * z + vsplat(2.06390887954e-2)
    p = p * z - vsplat(5.37397155531e-2)
    p = p * z + vsplat(1.33314422036e-1)
    p = p * z - vsplat(3.33332819422e-1)
    small = p * z * v + v
    e = _vexp_neg(vsplat(-2.0) * a)
    t = vdiv(one - e, one + e)
    big = vpick_lt(v, zero, t * vsplat(-1.0), t)
    return vpick_lt(a, vsplat(0.625), small, big)


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
