"""Recurrent Numba kernels: the per-step loops of SimpleRNN, LSTM and GRU, forward and
backward through time.

SimpleRNN's and GRU's input side of every gate for the whole sequence is one GEMM done
before these kernels run (``xp = x @ kernel``, ``[T, B, G]`` with ``G = k * units``, on
tinynet's fixed-order GEMM; the kernels add the input bias as a step loads its rows).
LSTM's kernels take each step's input side themselves, the same chains as that GEMM
(``x_t @ kernel`` forward, ``dz_t @ kernel.T`` backward): no ``[T, B, G]`` pass through
memory, and the products share the step loop's threads; they also write the outputs and
read their gradients batch-major (``[B, T, units]``, the layer's order) and write the
input gradient so, sparing the layer three transposing passes. Each kernel splits the
batch into blocks of whole 4-row tiles (at most 32 rows) and runs a range of them, each
block every step for its rows; :func:`run` calls it on all its blocks in one thread, or
makes at least a block per thread and runs each as a task on Numba's threads through the
kernel's address (:func:`tinynet.kernels.address.run_parallel`: no parallel copy of the
kernel to compile, and the serial kernel's bits). A block's loop over the steps is
written in the kernel's own loop over its blocks, not in a callee: Numba optimizes a
callee's code again in every kernel it is linked into, which cost each kernel 1-2 s of
compile.
Every sequence array is time-major (``[T, B, ...]``): a step reads and writes one
contiguous run of rows, where batch-major arrays made each step touch a separate page
per row and array (hundreds of interleaved streams the prefetchers could not follow).

A step's recurrent product, ``z += h @ U`` (``U`` the ``[units, G]`` recurrent kernel),
is a small GEMM on the block's rows (:func:`_tile`: 4 rows x 64 columns of ``z`` in
registers over the whole loop over ``units``, each row slice of ``U`` loaded once for the
four rows; 4 x 16 on cores without AVX-512, whose 16 registers the 4 x 64 block
overflows). Backward, ``dh_prev = dz @ U.T`` is the same GEMM over ``UT = U.T``
(``[G, units]``, contiguous). On those cores LSTM's steps without dropout masks read
their weights as packed 16-column panels (``[W; U]`` forward, ``[U.T | W.T]`` backward;
:func:`~tinynet.kernels.recurrent_products._tile_panel`): a step's input product, bias
and recurrent product in one register pass, backward ``dh_prev`` and ``dx_t`` in one
pass, the same operations. Every element is one chain of fused multiply-adds in a
fixed order (over ``units``, or over the gate columns backward), whatever the tiles,
blocks, driver or thread count, so all of them give the same bits. The weight gradients
are not accumulated here: the kernels store every step's gate gradients (``[T, B, G]``)
and the caller takes ``x.T @ dz`` and ``h_prev.T @ dz`` as GEMMs over all ``T * B`` rows
(LSTM's forward writes its states beside the input, ``[x_t | h_t]`` rows, so the two are
one product over ``[x | h_prev]``: ``dz`` read once).

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

from typing import Any

import numba
import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import run_parallel
from tinynet.kernels.recurrent_activations import (HARD_SIGMOID, LINEAR, RELU, SIGMOID, TANH,
                                                   _act_span, _dact_span)
from tinynet.kernels.recurrent_products import (_block_rows, _input_grads, _inputs,
                                                _panel_products, _product, _recur,
                                                _recur_back, block_count)
from tinynet.kernels.simd import LANES, vload, vsplat, vstore

__all__ = ["LINEAR", "TANH", "SIGMOID", "RELU", "HARD_SIGMOID",
           "run", "simple_forward_blocks", "simple_backward_blocks", "lstm_forward_blocks",
           "lstm_backward_blocks", "gru_forward_blocks", "gru_backward_blocks"]


def run(kernel: Any, batch: int, parallel: bool, *args: Any) -> None:
    """``kernel(*args, blocks, 0, blocks)``: one of this module's ``*_blocks`` kernels on
    all the blocks of a batch of ``batch`` rows, one after another in this thread, or
    (``parallel``) at least a block per Numba thread, spread over them, each a call of
    the same compiled kernel. A row's bits do not depend on its block, so both give the
    same bits, whatever the thread count."""
    blocks = block_count(batch, numba.get_num_threads() if parallel else 1)
    if parallel:
        run_parallel(kernel, blocks, *args, blocks)
    else:
        kernel(*args, blocks, 0, blocks)


# -- what the three kernels share: state rows in and out, a masked step, the input rows ----
@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _copy_rows(src, s0, dst, d0, nb):
    """``dst[d0 + i] = src[s0 + i]`` for ``i < nb``: a block's initial states, or the
    state gradients it carries in and out."""
    for i in range(nb):
        for j in range(src.shape[1]):
            dst[d0 + i, j] = src[s0 + i, j]


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _keep(states, t, b, c0, n):
    """A masked step keeps row ``b``'s state: ``states[t + 1, b, c0:c0 + n] = states[t, b,
    c0:c0 + n]``."""
    for j in range(c0, c0 + n):
        states[t + 1, b, j] = states[t, b, j]


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _load_input(xp, xb, t, r0, nb, width, z):
    """``z[i] = xp[t, r0 + i] + xb`` (``xb`` the input bias, or empty: none); the same
    bits as adding the bias to ``xp`` beforehand, without that pass over the sequence."""
    if xb.shape[0] > 0:
        for i in range(nb):
            for j in range(width):
                z[i, j] = xp[t, r0 + i, j] + xb[j]
    else:
        for i in range(nb):
            for j in range(width):
                z[i, j] = xp[t, r0 + i, j]


# -- SimpleRNN: h = act(xp + h_prev @ U) ----------------------------------------------------
@njit(cache=True, error_model="numpy", boundscheck=False)
def simple_forward_blocks(xp, xb, U, h0, rmask, smask, act, hs, blocks, k0, k1):
    """SimpleRNN forward, blocks ``k0 .. k1 - 1`` of ``blocks`` (:func:`run`).

    Shape:
        xp: ``[T, B, units]`` (``x @ kernel``); xb: ``[units]`` (the input bias) or
        ``[0]`` (none); U: ``[units, units]``; h0: ``[B, units]``;
        rmask: ``[B, 1, units]`` or ``[0, 1, units]``; smask: ``[B, T]`` bool or
        ``[0, T]``; hs (out): ``[T + 1, B, units]``
        (``hs[:, 0] = h0``, ``hs[:, t + 1]`` the output of step ``t``).
    """
    batch = xp.shape[1]
    for blk in range(k0, k1):
        r0, r1 = _block_rows(batch, blocks, blk)
        steps = xp.shape[0]
        units = U.shape[0]
        nb = r1 - r0
        izero = np.int64(0)  # not a literal: a literal argument compiles a callee per value
        seq = smask.shape[0] > 0
        z = np.empty((nb, units), dtype=np.float32)
        hop = np.empty((nb, units), dtype=np.float32)
        _copy_rows(h0, r0, hs[0], r0, nb)
        for t in range(steps):
            _load_input(xp, xb, t, r0, nb, units, z)
            _recur(hs, t, izero, U, rmask, r0, nb, izero, np.int64(1), units, hop, z,
                   np.bool_(True))
            for i in range(nb):
                b = r0 + i
                if seq and not smask[b, t]:
                    _keep(hs, t, b, izero, units)
                    continue
                zr = z[i]
                _act_span(act, zr, izero, units)
                for j in range(units):
                    hs[t + 1, b, j] = zr[j]


@njit(cache=True, error_model="numpy", boundscheck=False)
def simple_backward_blocks(dhs, dhT, UT, rmask, smask, act, hs, dz, dh0, blocks, k0, k1):
    """SimpleRNN backward through time, blocks ``k0 .. k1 - 1`` of ``blocks`` (:func:`run`).

    Shape:
        dhs: ``[T, B, units]`` (dL/d output of each step); dhT: ``[B, units]`` (dL/d the
        returned final state); UT: ``[units, units]`` (``U.T``); hs: the forward's;
        dz (out): ``[T, B, units]`` (dL/d pre-activation); dh0 (out): ``[B, units]``.
    """
    batch = dhs.shape[1]
    for blk in range(k0, k1):
        r0, r1 = _block_rows(batch, blocks, blk)
        steps = dhs.shape[0]
        units = UT.shape[1]
        nb = r1 - r0
        izero = np.int64(0)  # not a literal: a literal argument compiles a callee per value
        seq = smask.shape[0] > 0
        dh = np.empty((nb, units), dtype=np.float32)
        dzb = np.empty((nb, units), dtype=np.float32)
        tmp = np.empty((nb, units), dtype=np.float32)
        live = np.empty(nb, dtype=np.bool_)
        dg = np.empty(units, dtype=np.float32)
        _copy_rows(dhT, r0, dh, izero, nb)
        for t in range(steps - 1, -1, -1):
            for i in range(nb):
                b = r0 + i
                live[i] = not (seq and not smask[b, t])
                if not live[i]:
                    for j in range(units):
                        dh[i, j] += dhs[t, b, j]
                        dz[t, b, j] = np.float32(0.0)
                        dzb[i, j] = np.float32(0.0)
                    continue
                _dact_span(act, hs[t + 1, b], izero, units, dg)
                for j in range(units):
                    d = (dh[i, j] + dhs[t, b, j]) * dg[j]
                    dz[t, b, j] = d
                    dzb[i, j] = d
                    dh[i, j] = np.float32(0.0)
            _recur_back(dzb, UT, rmask, r0, nb, izero, np.int64(1), units, live, tmp, dh)
        _copy_rows(dh, izero, dh0, r0, nb)


# -- LSTM: gates i, f, c, o (Keras order) ----------------------------------------------------
@njit(cache=True, error_model="numpy", boundscheck=False)
def lstm_forward_blocks(xs, rev, xh, W, xmask, xb, U, P, xbp, h0, c0, rmask, smask, act, ract,
                        cs, gates, out, blocks, k0, k1):
    """LSTM forward, blocks ``k0 .. k1 - 1`` of ``blocks`` (:func:`run`); each step takes
    its input side ``(x_t * xmask) @ W + xb`` itself (:func:`~tinynet.kernels.recurrent_products._inputs`).

    Shape:
        xs: the input batch-major, ``[B, T, features]``, its steps taken back to front
        when ``rev``;
        xh: ``[T + 1, B, features + units]``, the input and the states side by side: the
        kernel copies step ``t``'s input to ``xh[t, :, :features]`` (``t < T``; row
        ``T``'s are not read) and writes ``h_t`` to ``xh[t, :, features:]`` (index 0 the
        initial state), so ``xh[:T]`` is the operand of both weight gradients, one
        product; W: ``[features, 4 * units]`` (the kernel); xmask: the
        input dropout masks ``[1 or 4, B, features]`` or ``[0, B, features]`` (none);
        xb: ``[4 * units]`` or ``[0]``; U: ``[units, 4 * units]``; P: ``[W; U]`` in
        panels ``[tiles, features + units, 16]`` (:func:`~tinynet.kernels.recurrent_products._tile_panel`;
        without dropout masks), or ``[0, 0, 16]``: the products through ``W`` and ``U``;
        xbp: ``[1, 16 * tiles]``, the bias padded to the panels (or any, unused);
        h0, c0: ``[B, units]``;
        rmask: ``[B, 4, units]`` or empty; smask: ``[B, T]`` or empty; cs (out):
        ``[T + 1, B, units]`` (index 0 the initial state); gates (out):
        ``[T, B, 5 * units]`` (activated i, f, c, o, then ``activation(c_t)``); out (out):
        every step's output batch-major, ``[B, T, units]`` (``out[:, t] = hs[t + 1]``),
        or ``[0, T, units]`` (not wanted).
    """
    batch = xh.shape[1]
    for blk in range(k0, k1):
        r0, r1 = _block_rows(batch, blocks, blk)
        steps = gates.shape[0]
        units = U.shape[0]
        hc = W.shape[0]  # the state's first column in xh, after the features
        width = 4 * units
        nb = r1 - r0
        izero = np.int64(0)  # not a literal: a literal argument compiles a callee per value
        seq = smask.shape[0] > 0
        biased = xb.shape[0] > 0
        outs = out.shape[0] > 0
        # with panels, the step's products and bias in one register pass a tile
        fused = P.shape[0] > 0
        z = np.empty((nb, max(width, 16 * P.shape[0])), dtype=np.float32)
        hop = np.empty((nb, units), dtype=np.float32)
        xop = np.empty((nb, hc), dtype=np.float32)
        tc = np.empty(units, dtype=np.float32)
        for i in range(nb):
            for j in range(units):
                xh[0, r0 + i, hc + j] = h0[r0 + i, j]
        _copy_rows(c0, r0, cs[0], r0, nb)
        for t in range(steps):
            ts = steps - 1 - t if rev else t
            for i in range(nb):
                for j in range(hc):
                    xh[t, r0 + i, j] = xs[r0 + i, ts, j]
            if fused:
                _panel_products(xh[t], r0, nb, hc, P, xbp, biased, z)
            else:
                _inputs(xh, t, W, xmask, r0, nb, xop, z)
                if biased:
                    for i in range(nb):
                        for j in range(width):
                            z[i, j] = z[i, j] + xb[j]
                _recur(xh, t, hc, U, rmask, r0, nb, izero, np.int64(4), units, hop, z,
                       np.bool_(True))
            for i in range(nb):
                b = r0 + i
                if seq and not smask[b, t]:
                    _keep(xh, t, b, hc, units)
                    _keep(cs, t, b, izero, units)
                    for j in range(width + units):
                        gates[t, b, j] = np.float32(0.0)
                else:
                    zr = z[i]
                    _act_span(ract, zr, izero, 2 * units)
                    _act_span(act, zr, 2 * units, 3 * units)
                    _act_span(ract, zr, 3 * units, width)
                    for j in range(units):
                        c = zr[units + j] * cs[t, b, j] + zr[j] * zr[2 * units + j]
                        cs[t + 1, b, j] = c
                        tc[j] = c
                    _act_span(act, tc, izero, units)
                    for j in range(units):
                        xh[t + 1, b, hc + j] = zr[3 * units + j] * tc[j]
                        gates[t, b, width + j] = tc[j]
                    for j in range(width):
                        gates[t, b, j] = zr[j]
                if outs:
                    for j in range(units):
                        out[b, t, j] = xh[t + 1, b, hc + j]


@njit(callee=True, cache=True, error_model="numpy", boundscheck=False)
def _dgates16(gr, dg, csr, dor, douts, dhr, dcr, units, dzr, dzo):
    """A step's gate gradients for one row, 16 units at a time over the whole 16-unit
    groups: ``dzr`` and ``dzo`` (``[4 * units]``) get ``d i, d f, d c~, d o``, ``dcr``
    the cell state's gradient carried back, ``dhr`` zeros (its sum was taken); ``dor``
    the gradient of the step's output when ``douts``. Returns the first unit not done."""
    vz = vsplat(0.0)
    jv = 0
    while jv + LANES <= units:
        dhj = vload(dhr, jv) + (vload(dor, jv) if douts else vz)
        dcj = vload(dcr, jv) + dhj * vload(gr, 3 * units + jv) * vload(dg, 4 * units + jv)
        d0 = dcj * vload(gr, 2 * units + jv) * vload(dg, jv)
        d1 = dcj * vload(csr, jv) * vload(dg, units + jv)
        d2 = dcj * vload(gr, jv) * vload(dg, 2 * units + jv)
        d3 = dhj * vload(gr, 4 * units + jv) * vload(dg, 3 * units + jv)
        for q, d in ((0, d0), (1, d1), (2, d2), (3, d3)):
            vstore(dzr, q * units + jv, d)
            vstore(dzo, q * units + jv, d)
        vstore(dcr, jv, dcj * vload(gr, units + jv))
        vstore(dhr, jv, vz)
        jv += LANES
    return jv


@njit(cache=True, error_model="numpy", boundscheck=False)
def lstm_backward_blocks(dout, dhT, dcT, UT, WT, P, xmask, rmask, smask, act, ract, rev, cs,
                         gates, dz, dx, dh0, dc0, blocks, k0, k1):
    """LSTM backward through time, blocks ``k0 .. k1 - 1`` of ``blocks`` (:func:`run`); each
    step also takes its input gradient ``dx_t`` (:func:`~tinynet.kernels.recurrent_products._input_grads`).

    Shape:
        dout: dL/d every step's output, batch-major ``[B, T, units]``, or ``[0, T, units]``
        (none); dhT, dcT: ``[B, units]`` (dL/d the returned final h and c); UT: ``[4 *
        units, units]``; WT: ``[4 * units, features]`` (the kernel's transpose); P:
        ``[U.T | W.T]`` in panels (:func:`~tinynet.kernels.recurrent_products._tile_panel`),
        ``U.T``'s columns padded to whole panels, without dropout masks; or ``[0, 0,
        16]``: the products through ``UT`` and ``WT``; xmask:
        the forward's; cs, gates (``[T, B, 5 * units]``): the forward's; dz (out):
        ``[T, B, 4 * units]`` (dL/d gate pre-activations); dx (out): batch-major ``[B, T,
        features]``, step ``t`` at ``T - 1 - t`` when ``rev`` (the input was processed
        in reverse); dh0, dc0 (out): ``[B, units]``.
    """
    batch = gates.shape[1]
    for blk in range(k0, k1):
        r0, r1 = _block_rows(batch, blocks, blk)
        steps = gates.shape[0]
        units = UT.shape[1]
        douts = dout.shape[0] > 0
        zero = np.float32(0.0)
        width = 4 * units
        nb = r1 - r0
        izero = np.int64(0)  # not a literal: a literal argument compiles a callee per value
        seq = smask.shape[0] > 0
        dh = np.empty((nb, units), dtype=np.float32)
        dc = np.empty((nb, units), dtype=np.float32)
        dzb = np.empty((nb, width), dtype=np.float32)
        tmp = np.empty((nb, units), dtype=np.float32)
        dxb = np.empty((nb, WT.shape[1]), dtype=np.float32)
        fused = P.shape[0] > 0
        du = 16 * ((units + 15) // 16)  # dx's first column in a panel product's row
        pz = np.empty((nb, 16 * P.shape[0]), dtype=np.float32)
        live = np.empty(nb, dtype=np.bool_)
        dg = np.empty(width + units, dtype=np.float32)
        _copy_rows(dhT, r0, dh, izero, nb)
        _copy_rows(dcT, r0, dc, izero, nb)
        for t in range(steps - 1, -1, -1):
            for i in range(nb):
                b = r0 + i
                live[i] = not (seq and not smask[b, t])
                if not live[i]:
                    for j in range(units):
                        dh[i, j] += dout[b, t, j] if douts else zero
                    for j in range(width):
                        dz[t, b, j] = np.float32(0.0)
                        dzb[i, j] = np.float32(0.0)
                    continue
                gr = gates[t, b]
                _dact_span(ract, gr, izero, 2 * units, dg)
                _dact_span(act, gr, 2 * units, 3 * units, dg)
                _dact_span(ract, gr, 3 * units, width, dg)
                _dact_span(act, gr, width, width + units, dg)
                # 16 units at a time (LLVM leaves this loop scalar), the rest one by one:
                # the same operations in the same order
                dzr = dzb[i]
                dzo = dz[t, b]
                jv = _dgates16(gr, dg, cs[t, b], dout[b, t] if douts else dh[i], douts,
                               dh[i], dc[i], units, dzr, dzo)
                for j in range(jv, units):
                    dhj = dh[i, j] + (dout[b, t, j] if douts else zero)
                    ig = gr[j]
                    f = gr[units + j]
                    g = gr[2 * units + j]
                    tc = gr[4 * units + j]
                    dcj = dc[i, j] + dhj * gr[3 * units + j] * dg[4 * units + j]
                    dzr[j] = dcj * g * dg[j]
                    dzr[units + j] = dcj * cs[t, b, j] * dg[units + j]
                    dzr[2 * units + j] = dcj * ig * dg[2 * units + j]
                    dzr[3 * units + j] = dhj * tc * dg[3 * units + j]
                    dc[i, j] = dcj * f
                    dh[i, j] = np.float32(0.0)
                    for q in range(4):
                        dzo[q * units + j] = dzr[q * units + j]
            tt = steps - 1 - t if rev else t
            if fused:
                # dh_prev and dx_t, one chain each over the gate columns from zero, in
                # one pass over the panels (the chains of the two products below)
                _panel_products(dzb, izero, nb, width, P, dzb, np.bool_(False), pz)
                for i in range(nb):
                    if live[i]:
                        for k in range(units):
                            dh[i, k] += pz[i, k]
                    for j in range(WT.shape[1]):
                        dx[r0 + i, tt, j] = pz[i, du + j]
            else:
                _recur_back(dzb, UT, rmask, r0, nb, izero, np.int64(4), units, live, tmp, dh)
                _input_grads(dzb, WT, xmask, tt, r0, nb, dxb, dx)
        _copy_rows(dh, izero, dh0, r0, nb)
        _copy_rows(dc, izero, dc0, r0, nb)


# -- GRU: gates z, r, h (Keras order) --------------------------------------------------------
@njit(cache=True, error_model="numpy", boundscheck=False)
def gru_forward_blocks(xp, xb, U, rbias, h0, rmask, smask, act, ract, reset_after, hs, gates,
                       extra, blocks, k0, k1):
    """GRU forward, blocks ``k0 .. k1 - 1`` of ``blocks`` (:func:`run`).

    Shape:
        xp: ``[T, B, 3 * units]``; xb: ``[3 * units]`` (the input bias) or ``[0]``;
        U: ``[units, 3 * units]``;
        rbias: ``[3 * units]`` (the recurrent bias of ``reset_after``, else unused);
        h0: ``[B, units]``; rmask: ``[B, 3, units]`` or empty; smask: ``[B, T]`` or
        empty; hs (out):
        ``[T + 1, B, units]``; gates (out): ``[T, B, 3 * units]`` (z, r and the
        candidate); extra (out): ``[T, B, units]``: ``h @ U_h + b_h`` with
        ``reset_after``, else ``r * h`` (the recurrent product's operand).
    """
    batch = xp.shape[1]
    for blk in range(k0, k1):
        r0, r1 = _block_rows(batch, blocks, blk)
        steps = xp.shape[0]
        units = U.shape[0]
        width = 3 * units
        nb = r1 - r0
        izero = np.int64(0)  # not a literal: a literal argument compiles a callee per value
        no = np.bool_(False)
        masked = rmask.shape[0] > 0
        seq = smask.shape[0] > 0
        biased = xb.shape[0] > 0
        rec = np.empty((nb, width), dtype=np.float32)
        pre = np.empty((nb, width), dtype=np.float32)
        hop = np.empty((nb, units), dtype=np.float32)
        _copy_rows(h0, r0, hs[0], r0, nb)
        for t in range(steps):
            if reset_after:
                _recur(hs, t, izero, U, rmask, r0, nb, izero, np.int64(3), units, hop, rec, no)
                for i in range(nb):
                    for j in range(width):
                        rec[i, j] += rbias[j]
            else:
                _recur(hs, t, izero, U, rmask, r0, nb, izero, np.int64(2), units, hop, rec, no)
            for i in range(nb):
                b = r0 + i
                if seq and not smask[b, t]:
                    for j in range(units):
                        hop[i, j] = np.float32(0.0)
                    continue
                pr = pre[i]
                for j in range(2 * units):
                    xv = xp[t, b, j] + xb[j] if biased else xp[t, b, j]
                    pr[j] = xv + rec[i, j]
                _act_span(ract, pr, izero, 2 * units)
                for j in range(units):
                    if reset_after:
                        extra[t, b, j] = rec[i, 2 * units + j]
                    else:
                        hm = hs[t, b, j] * rmask[b, 2, j] if masked else hs[t, b, j]
                        rh = pr[units + j] * hm
                        hop[i, j] = rh
                        extra[t, b, j] = rh
            if not reset_after:
                # the candidate's recurrent product, of r * h
                _product(hop, nb, izero, units, U, 2 * units, width, rec, 2 * units, no)
            for i in range(nb):
                b = r0 + i
                if seq and not smask[b, t]:
                    _keep(hs, t, b, izero, units)
                    for j in range(units):
                        extra[t, b, j] = np.float32(0.0)
                    for j in range(width):
                        gates[t, b, j] = np.float32(0.0)
                    continue
                pr = pre[i]
                for j in range(units):
                    k = 2 * units + j
                    xv = xp[t, b, k] + xb[k] if biased else xp[t, b, k]
                    if reset_after:
                        pr[k] = xv + pr[units + j] * rec[i, k]
                    else:
                        pr[k] = xv + rec[i, k]
                _act_span(act, pr, 2 * units, width)
                for j in range(width):
                    gates[t, b, j] = pr[j]
                for j in range(units):
                    zg = pr[j]
                    hs[t + 1, b, j] = zg * hs[t, b, j] + (np.float32(1.0) - zg) * pr[2 * units + j]


@njit(cache=True, error_model="numpy", boundscheck=False)
def gru_backward_blocks(dhs, dhT, UT, rmask, smask, act, ract, reset_after, hs, gates, extra,
                        dzx, dzr, dh0, blocks, k0, k1):
    """GRU backward through time, blocks ``k0 .. k1 - 1`` of ``blocks`` (:func:`run`).

    Shape:
        dhs: ``[T, B, units]``; dhT: ``[B, units]``; UT: ``[3 * units, units]``; hs,
        gates, extra: the forward's; dzx (out): ``[T, B, 3 * units]`` (dL/d the input
        projection, bias included); dzr (out): ``[T, B, 3 * units]`` (dL/d the
        recurrent products ``h @ U_z``, ``h @ U_r`` and ``h @ U_h + b_h`` with
        ``reset_after``, or ``(r * h) @ U_h`` without); dh0 (out): ``[B, units]``.
    """
    batch = dhs.shape[1]
    for blk in range(k0, k1):
        r0, r1 = _block_rows(batch, blocks, blk)
        steps = dhs.shape[0]
        units = UT.shape[1]
        width = 3 * units
        nb = r1 - r0
        izero = np.int64(0)  # not a literal: a literal argument compiles a callee per value
        no = np.bool_(False)
        masked = rmask.shape[0] > 0
        seq = smask.shape[0] > 0
        one = np.float32(1.0)
        dh = np.empty((nb, units), dtype=np.float32)
        dzb = np.empty((nb, width), dtype=np.float32)
        tmp = np.empty((nb, units), dtype=np.float32)
        live = np.empty(nb, dtype=np.bool_)
        dg = np.empty((nb, width), dtype=np.float32)
        _copy_rows(dhT, r0, dh, izero, nb)
        for t in range(steps - 1, -1, -1):
            for i in range(nb):
                b = r0 + i
                live[i] = not (seq and not smask[b, t])
                if not live[i]:
                    for j in range(units):
                        dh[i, j] += dhs[t, b, j]
                    for j in range(width):
                        dzx[t, b, j] = np.float32(0.0)
                        dzr[t, b, j] = np.float32(0.0)
                        dzb[i, j] = np.float32(0.0)
                    continue
                gr = gates[t, b]
                dgr = dg[i]
                _dact_span(ract, gr, izero, 2 * units, dgr)
                _dact_span(act, gr, 2 * units, width, dgr)
                for j in range(units):
                    dhj = dh[i, j] + dhs[t, b, j]
                    zg = gr[j]
                    hh = gr[2 * units + j]
                    dzh = dhj * (one - zg) * dgr[2 * units + j]
                    dzz = dhj * (hs[t, b, j] - hh) * dgr[j]
                    dzx[t, b, j] = dzz
                    dzx[t, b, 2 * units + j] = dzh
                    dzb[i, j] = dzz
                    rg = gr[units + j]
                    if reset_after:
                        dzrg = dzh * extra[t, b, j] * dgr[units + j]
                        dzx[t, b, units + j] = dzrg
                        dzb[i, units + j] = dzrg
                        dzb[i, 2 * units + j] = dzh * rg
                    else:
                        dzb[i, 2 * units + j] = dzh
                    dh[i, j] = dhj * zg
            if reset_after:
                _recur_back(dzb, UT, rmask, r0, nb, izero, np.int64(3), units, live, tmp, dh)
            else:
                # d(r * h_masked) = dz_h @ U_h.T, then the reset gate's pre-activation
                _product(dzb, nb, 2 * units, width, UT, izero, units, tmp, izero, no)
                for i in range(nb):
                    if not live[i]:
                        continue
                    b = r0 + i
                    for j in range(units):
                        rg = gates[t, b, units + j]
                        hm = hs[t, b, j] * rmask[b, 2, j] if masked else hs[t, b, j]
                        dzrg = tmp[i, j] * hm * dg[i, units + j]
                        dzx[t, b, units + j] = dzrg
                        dzb[i, units + j] = dzrg
                        back = tmp[i, j] * rg
                        dh[i, j] += back * rmask[b, 2, j] if masked else back
                _recur_back(dzb, UT, rmask, r0, nb, izero, np.int64(2), units, live, tmp, dh)
            for i in range(nb):
                if live[i]:
                    for j in range(width):
                        dzr[t, r0 + i, j] = dzb[i, j]
        _copy_rows(dh, izero, dh0, r0, nb)
