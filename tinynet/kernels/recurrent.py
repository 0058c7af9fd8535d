"""Recurrent Numba kernels: the per-step loops of SimpleRNN, LSTM and GRU, forward and
backward through time.

The input side of every gate for the whole sequence is one GEMM done before these
kernels run (``xp = x @ kernel + bias``, ``[B, T, G]`` with ``G = k * units``, on
tinynet's fixed-order GEMM); what is left is the recurrence, which runs here one batch
row at a time: each row's steps depend only on that row, so the parallel drivers hand
whole rows to Numba's threads (``prange`` over the batch) and the serial drivers loop
over them; a row's arithmetic is the same either way, so both give the same bits.

The recurrent product of a step, ``z += h @ U`` (``U`` the ``[units, G]`` recurrent
kernel), is a chain over ``units`` in increasing order for every column, written as rows
of ``U`` scaled and added (a loop over the contiguous column axis, which vectorizes
without fastmath and keeps each column's order). Backward, ``dh_prev = dz @ U.T`` runs
likewise over the rows of ``UT = U.T`` (``[G, units]``, contiguous) in increasing gate
column order. The weight gradients are not accumulated here: the kernels store every
step's gate gradients (``[B, T, G]``) and the caller takes ``x.T @ dz`` and
``h_prev.T @ dz`` as GEMMs over all ``B * T`` rows, in the GEMM's fixed order.

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
from numba.extending import intrinsic, overload

from tinynet.kernels._jit import CALLEE_OPTIONS, njit

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
# machine, compiled or interpreted, and the step loops that call them vectorize.
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


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _act_span(kind, z, j0, j1):
    """``z[j0:j1] = act(z[j0:j1])`` in place: the kind chosen once, outside the loop, so
    the loop over the elements vectorizes."""
    if kind == TANH:
        for j in range(j0, j1):
            z[j] = _tanh_f32(z[j])
    elif kind == SIGMOID:
        for j in range(j0, j1):
            z[j] = _sigmoid_f32(z[j])
    else:
        for j in range(j0, j1):
            z[j] = _act(kind, z[j])


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _recur(h, U, rmask, b, g0, g1, units, z):
    """``z[g0*units:g1*units] += (h * rmask[b, g]) @ U[:, gate g]`` for gates ``g0..g1-1``
    (no mask when ``rmask`` is empty): per column, a chain over ``units`` in order.

    The inner loop runs over every column of the gates at once (rows of ``U`` scaled and
    added): split per gate, LLVM leaves the short loops scalar (7x slower)."""
    c0 = g0 * units
    c1 = g1 * units
    if rmask.shape[0] == 0:
        for k in range(units):
            hk = h[k]
            row = U[k]
            for j in range(c0, c1):
                z[j] += hk * row[j]
        return
    for k in range(units):
        row = U[k]
        for g in range(g0, g1):
            hk = h[k] * rmask[b, g, k]
            for j in range(g * units, (g + 1) * units):
                z[j] += hk * row[j]


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _recur_back(dz, UT, rmask, b, g0, g1, units, out, tmp):
    """``out += sum_g rmask[b, g] * (dz[gate g] @ UT[gate g])`` for gates ``g0..g1-1``,
    gate columns in increasing order (``tmp``: ``units`` floats of scratch)."""
    masked = rmask.shape[0] > 0
    for g in range(g0, g1):
        for k in range(units):
            tmp[k] = np.float32(0.0)
        for j in range(g * units, (g + 1) * units):
            d = dz[j]
            row = UT[j]
            for k in range(units):
                tmp[k] += d * row[k]
        if masked:
            for k in range(units):
                out[k] += tmp[k] * rmask[b, g, k]
        else:
            for k in range(units):
                out[k] += tmp[k]


# -- SimpleRNN: h = act(xp + h_prev @ U) ----------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _simple_fwd_row(b, xp, U, h0, rmask, smask, act, hs):
    steps = xp.shape[1]
    units = U.shape[0]
    seq = smask.shape[0] > 0
    z = np.empty(units, dtype=np.float32)
    for j in range(units):
        hs[b, 0, j] = h0[b, j]
    for t in range(steps):
        if seq and not smask[b, t]:
            for j in range(units):
                hs[b, t + 1, j] = hs[b, t, j]
            continue
        for j in range(units):
            z[j] = xp[b, t, j]
        _recur(hs[b, t], U, rmask, b, 0, 1, units, z)
        _act_span(act, z, 0, units)
        for j in range(units):
            hs[b, t + 1, j] = z[j]


@njit(cache=True, error_model="numpy")
def simple_forward_serial(xp, U, h0, rmask, smask, act, hs):
    """SimpleRNN forward, one row after another.

    Shape:
        xp: ``[B, T, units]``; U: ``[units, units]``; h0: ``[B, units]``;
        rmask: ``[B, 1, units]`` or ``[0, 1, units]``; smask: ``[B, T]`` bool or
        ``[0, T]``; hs (out): ``[B, T + 1, units]``
        (``hs[:, 0] = h0``, ``hs[:, t + 1]`` the output of step ``t``).
    """
    for b in range(xp.shape[0]):
        _simple_fwd_row(b, xp, U, h0, rmask, smask, act, hs)


@njit(cache=True, parallel=True, error_model="numpy")
def simple_forward_parallel(xp, U, h0, rmask, smask, act, hs):
    """:func:`simple_forward_serial` with the batch rows on Numba's threads."""
    for b in prange(xp.shape[0]):
        _simple_fwd_row(np.int64(b), xp, U, h0, rmask, smask, act, hs)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _simple_bwd_row(b, dhs, dhT, UT, rmask, smask, act, hs, dz, dh0):
    steps = dhs.shape[1]
    units = UT.shape[1]
    seq = smask.shape[0] > 0
    dh = np.empty(units, dtype=np.float32)
    tmp = np.empty(units, dtype=np.float32)
    for j in range(units):
        dh[j] = dhT[b, j]
    for t in range(steps - 1, -1, -1):
        if seq and not smask[b, t]:
            for j in range(units):
                dh[j] += dhs[b, t, j]
                dz[b, t, j] = np.float32(0.0)
            continue
        for j in range(units):
            dz[b, t, j] = (dh[j] + dhs[b, t, j]) * _dact(act, hs[b, t + 1, j])
            dh[j] = np.float32(0.0)
        _recur_back(dz[b, t], UT, rmask, b, 0, 1, units, dh, tmp)
    for j in range(units):
        dh0[b, j] = dh[j]


@njit(cache=True, error_model="numpy")
def simple_backward_serial(dhs, dhT, UT, rmask, smask, act, hs, dz, dh0):
    """SimpleRNN backward through time, one row after another.

    Shape:
        dhs: ``[B, T, units]`` (dL/d output of each step); dhT: ``[B, units]`` (dL/d the
        returned final state); UT: ``[units, units]`` (``U.T``); hs: the forward's;
        dz (out): ``[B, T, units]`` (dL/d pre-activation); dh0 (out): ``[B, units]``.
    """
    for b in range(dhs.shape[0]):
        _simple_bwd_row(b, dhs, dhT, UT, rmask, smask, act, hs, dz, dh0)


@njit(cache=True, parallel=True, error_model="numpy")
def simple_backward_parallel(dhs, dhT, UT, rmask, smask, act, hs, dz, dh0):
    """:func:`simple_backward_serial` with the batch rows on Numba's threads."""
    for b in prange(dhs.shape[0]):
        _simple_bwd_row(np.int64(b), dhs, dhT, UT, rmask, smask, act, hs, dz, dh0)


# -- LSTM: gates i, f, c, o (Keras order) ----------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _lstm_fwd_row(b, xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates):
    steps = xp.shape[1]
    units = U.shape[0]
    width = 4 * units
    seq = smask.shape[0] > 0
    z = np.empty(width, dtype=np.float32)
    tc = np.empty(units, dtype=np.float32)
    for j in range(units):
        hs[b, 0, j] = h0[b, j]
        cs[b, 0, j] = c0[b, j]
    for t in range(steps):
        if seq and not smask[b, t]:
            for j in range(units):
                hs[b, t + 1, j] = hs[b, t, j]
                cs[b, t + 1, j] = cs[b, t, j]
            for j in range(width + units):
                gates[b, t, j] = np.float32(0.0)
            continue
        for j in range(width):
            z[j] = xp[b, t, j]
        _recur(hs[b, t], U, rmask, b, 0, 4, units, z)
        _act_span(ract, z, 0, 2 * units)
        _act_span(act, z, 2 * units, 3 * units)
        _act_span(ract, z, 3 * units, width)
        for j in range(units):
            c = z[units + j] * cs[b, t, j] + z[j] * z[2 * units + j]
            cs[b, t + 1, j] = c
            tc[j] = c
        _act_span(act, tc, 0, units)
        for j in range(units):
            hs[b, t + 1, j] = z[3 * units + j] * tc[j]
            gates[b, t, width + j] = tc[j]
        for j in range(width):
            gates[b, t, j] = z[j]


@njit(cache=True, error_model="numpy")
def lstm_forward_serial(xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates):
    """LSTM forward, one row after another.

    Shape:
        xp: ``[B, T, 4 * units]``; U: ``[units, 4 * units]``; h0, c0: ``[B, units]``;
        rmask: ``[B, 4, units]`` or empty; smask: ``[B, T]`` or empty; hs, cs (out):
        ``[B, T + 1, units]`` (index 0 the initial state); gates (out):
        ``[B, T, 5 * units]`` (activated i, f, c, o, then ``activation(c_t)``).
    """
    for b in range(xp.shape[0]):
        _lstm_fwd_row(b, xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates)


@njit(cache=True, parallel=True, error_model="numpy")
def lstm_forward_parallel(xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates):
    """:func:`lstm_forward_serial` with the batch rows on Numba's threads."""
    for b in prange(xp.shape[0]):
        _lstm_fwd_row(np.int64(b), xp, U, h0, c0, rmask, smask, act, ract, hs, cs, gates)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _lstm_bwd_row(b, dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz, dh0, dc0):
    steps = dhs.shape[1]
    units = UT.shape[1]
    seq = smask.shape[0] > 0
    dh = np.empty(units, dtype=np.float32)
    dc = np.empty(units, dtype=np.float32)
    tmp = np.empty(units, dtype=np.float32)
    for j in range(units):
        dh[j] = dhT[b, j]
        dc[j] = dcT[b, j]
    for t in range(steps - 1, -1, -1):
        if seq and not smask[b, t]:
            for j in range(units):
                dh[j] += dhs[b, t, j]
            for j in range(4 * units):
                dz[b, t, j] = np.float32(0.0)
            continue
        for j in range(units):
            dhj = dh[j] + dhs[b, t, j]
            i = gates[b, t, j]
            f = gates[b, t, units + j]
            g = gates[b, t, 2 * units + j]
            o = gates[b, t, 3 * units + j]
            tc = gates[b, t, 4 * units + j]
            dcj = dc[j] + dhj * o * _dact(act, tc)
            dz[b, t, j] = dcj * g * _dact(ract, i)
            dz[b, t, units + j] = dcj * cs[b, t, j] * _dact(ract, f)
            dz[b, t, 2 * units + j] = dcj * i * _dact(act, g)
            dz[b, t, 3 * units + j] = dhj * tc * _dact(ract, o)
            dc[j] = dcj * f
            dh[j] = np.float32(0.0)
        _recur_back(dz[b, t], UT, rmask, b, 0, 4, units, dh, tmp)
    for j in range(units):
        dh0[b, j] = dh[j]
        dc0[b, j] = dc[j]


@njit(cache=True, error_model="numpy")
def lstm_backward_serial(dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz, dh0,
                         dc0):
    """LSTM backward through time, one row after another.

    Shape:
        dhs: ``[B, T, units]``; dhT, dcT: ``[B, units]`` (dL/d the returned final h and
        c); UT: ``[4 * units, units]``; hs, cs, gates (``[B, T, 5 * units]``): the
        forward's; dz (out): ``[B, T, 4 * units]`` (dL/d gate pre-activations); dh0, dc0
        (out): ``[B, units]``.
    """
    for b in range(dhs.shape[0]):
        _lstm_bwd_row(b, dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz, dh0,
                      dc0)


@njit(cache=True, parallel=True, error_model="numpy")
def lstm_backward_parallel(dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates, dz, dh0,
                           dc0):
    """:func:`lstm_backward_serial` with the batch rows on Numba's threads."""
    for b in prange(dhs.shape[0]):
        _lstm_bwd_row(np.int64(b), dhs, dhT, dcT, UT, rmask, smask, act, ract, hs, cs, gates,
                      dz, dh0, dc0)


# -- GRU: gates z, r, h (Keras order) --------------------------------------------------------
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _gru_fwd_row(b, xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates, extra):
    steps = xp.shape[1]
    units = U.shape[0]
    width = 3 * units
    masked = rmask.shape[0] > 0
    seq = smask.shape[0] > 0
    rec = np.empty(width, dtype=np.float32)
    pre = np.empty(width, dtype=np.float32)
    rh = np.empty(units, dtype=np.float32)
    for j in range(units):
        hs[b, 0, j] = h0[b, j]
    for t in range(steps):
        if seq and not smask[b, t]:
            for j in range(units):
                hs[b, t + 1, j] = hs[b, t, j]
                extra[b, t, j] = np.float32(0.0)
            for j in range(width):
                gates[b, t, j] = np.float32(0.0)
            continue
        hp = hs[b, t]
        for j in range(width):
            rec[j] = np.float32(0.0)
        if reset_after:
            _recur(hp, U, rmask, b, 0, 3, units, rec)
            for j in range(width):
                rec[j] += rbias[j]
        else:
            _recur(hp, U, rmask, b, 0, 2, units, rec)
        for j in range(2 * units):
            pre[j] = xp[b, t, j] + rec[j]
        _act_span(ract, pre, 0, 2 * units)
        for j in range(units):
            if reset_after:
                extra[b, t, j] = rec[2 * units + j]
            else:
                hm = hp[j] * rmask[b, 2, j] if masked else hp[j]
                rh[j] = pre[units + j] * hm
                extra[b, t, j] = rh[j]
        if not reset_after:
            for k in range(units):
                rk = rh[k]
                row = U[k]
                for j in range(units):
                    rec[2 * units + j] += rk * row[2 * units + j]
        for j in range(units):
            if reset_after:
                pre[2 * units + j] = xp[b, t, 2 * units + j] + pre[units + j] * rec[2 * units + j]
            else:
                pre[2 * units + j] = xp[b, t, 2 * units + j] + rec[2 * units + j]
        _act_span(act, pre, 2 * units, width)
        for j in range(width):
            gates[b, t, j] = pre[j]
        for j in range(units):
            zg = pre[j]
            hs[b, t + 1, j] = zg * hp[j] + (np.float32(1.0) - zg) * pre[2 * units + j]


@njit(cache=True, error_model="numpy")
def gru_forward_serial(xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates,
                       extra):
    """GRU forward, one row after another.

    Shape:
        xp: ``[B, T, 3 * units]`` (input bias included); U: ``[units, 3 * units]``;
        rbias: ``[3 * units]`` (the recurrent bias of ``reset_after``, else unused);
        h0: ``[B, units]``; rmask: ``[B, 3, units]`` or empty; smask: ``[B, T]`` or
        empty; hs (out):
        ``[B, T + 1, units]``; gates (out): ``[B, T, 3 * units]`` (z, r and the
        candidate); extra (out): ``[B, T, units]``: ``h @ U_h + b_h`` with
        ``reset_after``, else ``r * h`` (the recurrent product's operand).
    """
    for b in range(xp.shape[0]):
        _gru_fwd_row(b, xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates, extra)


@njit(cache=True, parallel=True, error_model="numpy")
def gru_forward_parallel(xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates,
                       extra):
    """:func:`gru_forward_serial` with the batch rows on Numba's threads."""
    for b in prange(xp.shape[0]):
        _gru_fwd_row(np.int64(b), xp, U, rbias, h0, rmask, smask, act, ract, reset_after, hs,
                     gates, extra)


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _gru_bwd_row(b, dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra, dzx,
                 dzr, dh0):
    steps = dhs.shape[1]
    units = UT.shape[1]
    masked = rmask.shape[0] > 0
    seq = smask.shape[0] > 0
    one = np.float32(1.0)
    dh = np.empty(units, dtype=np.float32)
    drh = np.empty(units, dtype=np.float32)
    tmp = np.empty(units, dtype=np.float32)
    for j in range(units):
        dh[j] = dhT[b, j]
    for t in range(steps - 1, -1, -1):
        if seq and not smask[b, t]:
            for j in range(units):
                dh[j] += dhs[b, t, j]
            for j in range(3 * units):
                dzx[b, t, j] = np.float32(0.0)
                dzr[b, t, j] = np.float32(0.0)
            continue
        hp = hs[b, t]
        for j in range(units):
            dhj = dh[j] + dhs[b, t, j]
            zg = gates[b, t, j]
            rg = gates[b, t, units + j]
            hh = gates[b, t, 2 * units + j]
            dzh = dhj * (one - zg) * _dact(act, hh)
            dzz = dhj * (hp[j] - hh) * _dact(ract, zg)
            dzx[b, t, j] = dzz
            dzx[b, t, 2 * units + j] = dzh
            dzr[b, t, j] = dzz
            if reset_after:
                dzrg = dzh * extra[b, t, j] * _dact(ract, rg)
                dzx[b, t, units + j] = dzrg
                dzr[b, t, units + j] = dzrg
                dzr[b, t, 2 * units + j] = dzh * rg
            else:
                dzr[b, t, 2 * units + j] = dzh
            dh[j] = dhj * zg
        if reset_after:
            _recur_back(dzr[b, t], UT, rmask, b, 0, 3, units, dh, tmp)
        else:
            # d(r * h_masked) = dz_h @ U_h.T, then the reset gate's pre-activation
            for k in range(units):
                drh[k] = np.float32(0.0)
            for j in range(2 * units, 3 * units):
                d = dzr[b, t, j]
                row = UT[j]
                for k in range(units):
                    drh[k] += d * row[k]
            for j in range(units):
                rg = gates[b, t, units + j]
                hm = hp[j] * rmask[b, 2, j] if masked else hp[j]
                dzrg = drh[j] * hm * _dact(ract, rg)
                dzx[b, t, units + j] = dzrg
                dzr[b, t, units + j] = dzrg
                back = drh[j] * rg
                dh[j] += back * rmask[b, 2, j] if masked else back
            _recur_back(dzr[b, t], UT, rmask, b, 0, 2, units, dh, tmp)
    for j in range(units):
        dh0[b, j] = dh[j]


@njit(cache=True, error_model="numpy")
def gru_backward_serial(dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra,
                        dzx, dzr, dh0):
    """GRU backward through time, one row after another.

    Shape:
        dhs: ``[B, T, units]``; dhT: ``[B, units]``; UT: ``[3 * units, units]``; hs,
        gates, extra: the forward's; dzx (out): ``[B, T, 3 * units]`` (dL/d the input
        projection, bias included); dzr (out): ``[B, T, 3 * units]`` (dL/d the
        recurrent products ``h @ U_z``, ``h @ U_r`` and ``h @ U_h + b_h`` with
        ``reset_after``, or ``(r * h) @ U_h`` without); dh0 (out): ``[B, units]``.
    """
    for b in range(dhs.shape[0]):
        _gru_bwd_row(b, dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra, dzx,
                     dzr, dh0)


@njit(cache=True, parallel=True, error_model="numpy")
def gru_backward_parallel(dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra,
                          dzx, dzr, dh0):
    """:func:`gru_backward_serial` with the batch rows on Numba's threads."""
    for b in prange(dhs.shape[0]):
        _gru_bwd_row(np.int64(b), dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates,
                     extra, dzx, dzr, dh0)
