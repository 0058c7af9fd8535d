"""Elementwise Numba kernels: activations, optionally fused with a bias add.

Arrays are seen as rows of length ``C`` (the last axis; a ``bias`` has ``C`` entries or
none). Work is cut into blocks of whole rows, about ``ELEM_BLOCK`` elements each; the
parallel variants spread blocks with ``prange``, running the serial body on each block.
Activations are pure per-element (or, for softmax, per-row) functions, so serial and
parallel variants give the same bits.
(The bias gradient is the shared column fold, ``tinynet.ops.arrays.reduction.col_sum``, called
from :func:`tinynet.ops.fused.bias_grad`.)

Activation kinds (the ``kind`` of :func:`act_forward_kernel` and :func:`act_backward_kernel`;
each kind compiles its own body per direction, so a model compiles only the activations it
uses, and the parallel variants of every kind share one driver per direction):
``LINEAR`` (bias add only), ``RELU`` (max(x, 0)), ``LEAKY_RELU`` (``p0`` = slope),
``RELU_GENERAL`` (Keras ``relu(x, negative_slope=p0, max_value=p1, threshold=p2)``,
``p1 = inf`` for no maximum), ``SIGMOID``, ``TANH``, ``ELU`` (``p0`` = alpha), ``GELU``
(erf form), ``SILU`` and ``SOFTMAX`` (over each row).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit
from tinynet.kernels.address import call_at, entry_address
from tinynet.kernels.reduction import DET_REDUCE_BLOCK

__all__ = ["LINEAR", "RELU", "LEAKY_RELU", "RELU_GENERAL", "SIGMOID", "TANH", "ELU", "GELU",
           "SILU", "SOFTMAX", "ELEM_BLOCK", "act_forward_kernel", "act_backward_kernel"]

LINEAR, RELU, LEAKY_RELU, RELU_GENERAL, SIGMOID, TANH, ELU, GELU, SILU, SOFTMAX = range(10)
ELEM_BLOCK = DET_REDUCE_BLOCK

_SQRT1_2 = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327


# Transcendentals are evaluated in float64 through ``math`` and rounded once: compiled,
# they call the C library's double-precision functions; interpreted (NUMBA_DISABLE_JIT)
# Python calls the very same functions, so both give the same bits.
@njit(cache=True, error_model="numpy", inline="always")
def _exp32(v):
    return np.float32(math.exp(np.float64(v)))


@njit(cache=True, error_model="numpy", inline="always")
def _tanh32(v):
    return np.float32(math.tanh(np.float64(v)))


@njit(cache=True, error_model="numpy", inline="always")
def _expm1_32(v):
    return np.float32(math.expm1(np.float64(v)))


@njit(cache=True, error_model="numpy", inline="always")
def _erf32(v):
    return np.float32(math.erf(np.float64(v)))


@njit(callee=True, cache=True, error_model="numpy")
def _sigmoid(v):
    if v >= np.float32(0.0):
        return np.float32(1.0) / (np.float32(1.0) + _exp32(-v))
    e = _exp32(v)
    return e / (np.float32(1.0) + e)


@njit(callee=True, cache=True, error_model="numpy")
def _act(kind, v, p0, p1, p2):
    """One element of an elementwise activation (every kind but SOFTMAX). Callers pass
    ``kind`` as a runtime ``int64``: one compile serves every kind (a literal ``kind``
    would compile it once per kind)."""
    zero = np.float32(0.0)
    if kind == RELU:  # written so that NaN stays NaN
        return zero if v <= zero else v
    if kind == LEAKY_RELU:
        return v if v >= zero else v * p0
    if kind == RELU_GENERAL:  # Keras relu with p0, p1, p2 >= 0 (as the ReLU layer checks)
        pos = zero if v <= p2 else v
        pos = p1 if pos >= p1 else pos
        neg = p2 - v
        return pos - p0 * neg if neg > zero else pos
    if kind == SIGMOID:
        return _sigmoid(v)
    if kind == TANH:
        return _tanh32(v)
    if kind == ELU:
        return v if v > zero else p0 * _expm1_32(v)
    if kind == GELU:
        return np.float32(0.5) * v * (np.float32(1.0) + _erf32(v * np.float32(_SQRT1_2)))
    if kind == SILU:
        return v * _sigmoid(v)
    return v  # LINEAR


@njit(callee=True, cache=True, error_model="numpy")
def _softmax_row(t, o):
    n = t.size
    m = t[0]
    for c in range(1, n):
        m = t[c] if t[c] > m else m
    total = np.float64(0.0)
    for c in range(n):
        e = _exp32(t[c] - m)
        o[c] = e
        total += e
    inv = np.float32(1.0 / total)
    for c in range(n):
        o[c] *= inv


@njit(cache=True, inline="always", error_model="numpy")
def _forward_block(kind, x, bias, row_len, p0, p1, p2, out, r0, r1):
    """Rows ``r0..r1``: ``out = act(x + bias)``; ReLU and LINEAR get vectorizable loops.
    Inlined into each kind's driver, where ``kind`` is a constant: the other kinds'
    branches are pruned before typing, so a model compiles only its own activations."""
    n = x.size
    has_bias = bias.size > 0
    zero = np.float32(0.0)
    if kind == SOFTMAX:
        tmp = np.empty(row_len, dtype=np.float32)
        for r in range(r0, r1):
            s = r * row_len
            t = tmp[:min(s + row_len, n) - s]
            for c in range(t.size):
                t[c] = x[s + c] + bias[c] if has_bias else x[s + c]
            _softmax_row(t, out[s:s + t.size])
        return
    for r in range(r0, r1):
        s = r * row_len
        xs = x[s:min(s + row_len, n)]
        ot = out[s:s + xs.size]
        if kind == RELU:
            if has_bias:
                for c in range(xs.size):
                    v = xs[c] + bias[c]
                    ot[c] = zero if v <= zero else v
            else:
                for c in range(xs.size):
                    v = xs[c]
                    ot[c] = zero if v <= zero else v
        elif kind == LINEAR:
            if has_bias:
                for c in range(xs.size):
                    ot[c] = xs[c] + bias[c]
            else:
                for c in range(xs.size):
                    ot[c] = xs[c]
        elif has_bias:
            for c in range(xs.size):
                ot[c] = _act(np.int64(kind), xs[c] + bias[c], p0, p1, p2)
        else:
            for c in range(xs.size):
                ot[c] = _act(np.int64(kind), xs[c], p0, p1, p2)


@njit(cache=True, inline="always", error_model="numpy")
def _blocks(n, row_len):
    """``(nrows, rows per block, blocks)`` of ``n`` elements in rows of ``row_len``."""
    nrows = (n + row_len - 1) // row_len
    rpb = max(ELEM_BLOCK // row_len, 1)
    return nrows, rpb, (nrows + rpb - 1) // rpb


_ALL = 2**62  # a body's last block: every block


@functools.cache
def act_forward_kernel(kind: int, parallel: bool) -> Any:
    """The forward of activation ``kind``, serial or parallel (same bits), compiled on
    first use: ``kernel(x, bias, row_len, p0, p1, p2, out)`` sets ``out = act(x + bias)``
    over flat float32 ``x``/``out`` seen as rows of ``row_len`` (``bias``: ``row_len``
    floats or none). Each kind compiles one body, which runs a range of blocks; the
    parallel variant is :func:`act_forward_parallel`, one driver for every kind, calling
    the body through its address block by block (:mod:`tinynet.kernels.address`)."""
    body = _forward_body(kind)
    if parallel:
        def act_forward(x, bias, row_len, p0, p1, p2, out):
            args = (x, bias, row_len, p0, p1, p2, out, 0, 0)
            act_forward_parallel(entry_address(body, args), x, bias, row_len, p0, p1, p2, out)
    else:
        def act_forward(x, bias, row_len, p0, p1, p2, out):
            body(x, bias, row_len, p0, p1, p2, out, 0, _ALL)
    return act_forward


def _forward_body(kind: int) -> Any:
    @njit(cache=True, variant=f"{kind}_serial", error_model="numpy")
    def act_forward(x, bias, row_len, p0, p1, p2, out, b0, b1):
        nrows, rpb, nblocks = _blocks(x.size, row_len)
        for b in range(b0, min(b1, nblocks)):
            _forward_block(kind, x, bias, row_len, p0, p1, p2, out, b * rpb,
                           min((b + 1) * rpb, nrows))

    return act_forward


@njit(cache=True, parallel=True, error_model="numpy")
def act_forward_parallel(addr, x, bias, row_len, p0, p1, p2, out):
    """The blocks of an activation's forward over Numba's threads, each block run by the
    kind's body at ``addr``."""
    nblocks = _blocks(x.size, row_len)[2]
    for b in prange(nblocks):
        call_at(addr, (x, bias, row_len, p0, p1, p2, out, b, b + 1))


@njit(callee=True, cache=True, error_model="numpy")
def _act_grad(kind, v, w, p0, p1, p2):
    """d act / d x at input ``v`` / output ``w`` (kinds read what they need); ``kind`` a
    runtime ``int64``, as for :func:`_act`."""
    zero = np.float32(0.0)
    one = np.float32(1.0)
    if kind == LEAKY_RELU:
        return one if w > zero else p0
    if kind == RELU_GENERAL:
        if v > p2:
            return one if v < p1 else zero
        return p0 if v < p2 else zero
    if kind == ELU:
        return one if v > zero else p0 * _exp32(v)
    if kind == GELU:
        cdf = np.float32(0.5) * (one + _erf32(v * np.float32(_SQRT1_2)))
        return cdf + v * np.float32(_INV_SQRT_2PI) * _exp32(np.float32(-0.5) * v * v)
    if kind == SILU:
        sg = _sigmoid(v)
        return sg * (one + v * (one - sg))
    return one  # LINEAR


@njit(cache=True, inline="always", error_model="numpy")
def _backward_block(kind, x, y, g, row_len, p0, p1, p2, out, r0, r1):
    """Rows ``r0..r1`` of ``out = g * act'(x)`` (softmax: ``y * (g - sum(g * y))``);
    inlined into each kind's driver as :func:`_forward_block`."""
    n = g.size
    zero = np.float32(0.0)
    one = np.float32(1.0)
    for r in range(r0, r1):
        s = r * row_len
        e = min(s + row_len, n)
        xs = x[s:e]
        ys = y[s:e]
        gs = g[s:e]
        ot = out[s:e]
        if kind == RELU:
            for c in range(gs.size):
                ot[c] = gs[c] if ys[c] > zero else zero
        elif kind == SIGMOID:
            for c in range(gs.size):
                ot[c] = gs[c] * ys[c] * (one - ys[c])
        elif kind == TANH:
            for c in range(gs.size):
                ot[c] = gs[c] * (one - ys[c] * ys[c])
        elif kind == SOFTMAX:
            dot = np.float64(0.0)
            for c in range(gs.size):
                dot += gs[c] * ys[c]
            d32 = np.float32(dot)
            for c in range(gs.size):
                ot[c] = ys[c] * (gs[c] - d32)
        else:
            for c in range(gs.size):
                ot[c] = gs[c] * _act_grad(np.int64(kind), xs[c], ys[c], p0, p1, p2)


@functools.cache
def act_backward_kernel(kind: int, parallel: bool) -> Any:
    """The backward of activation ``kind`` (as :func:`act_forward_kernel`):
    ``kernel(x, y, g, row_len, p0, p1, p2, out)`` sets ``out = dL/dx`` from the
    activation input ``x``, output ``y`` and gradient ``g``. Kinds that do not read ``x``
    (or ``y``) accept any array of the same size in its place (e.g. ``g``); ``out`` may
    alias ``g``."""
    body = _backward_body(kind)
    if parallel:
        def act_backward(x, y, g, row_len, p0, p1, p2, out):
            args = (x, y, g, row_len, p0, p1, p2, out, 0, 0)
            act_backward_parallel(entry_address(body, args), x, y, g, row_len, p0, p1, p2,
                                  out)
    else:
        def act_backward(x, y, g, row_len, p0, p1, p2, out):
            body(x, y, g, row_len, p0, p1, p2, out, 0, _ALL)
    return act_backward


def _backward_body(kind: int) -> Any:
    @njit(cache=True, variant=f"{kind}_serial", error_model="numpy")
    def act_backward(x, y, g, row_len, p0, p1, p2, out, b0, b1):
        nrows, rpb, nblocks = _blocks(g.size, row_len)
        for b in range(b0, min(b1, nblocks)):
            _backward_block(kind, x, y, g, row_len, p0, p1, p2, out, b * rpb,
                            min((b + 1) * rpb, nrows))

    return act_backward


@njit(cache=True, parallel=True, error_model="numpy")
def act_backward_parallel(addr, x, y, g, row_len, p0, p1, p2, out):
    """The blocks of an activation's backward over Numba's threads, each block run by the
    kind's body at ``addr``."""
    nblocks = _blocks(g.size, row_len)[2]
    for b in prange(nblocks):
        call_at(addr, (x, y, g, row_len, p0, p1, p2, out, b, b + 1))
