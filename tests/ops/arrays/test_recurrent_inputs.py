"""LSTM's step loops take the input side themselves (``x_t @ kernel`` forward,
``dz_t @ kernel.T`` backward): each product has the bits of the GEMM over all rows
(:func:`tinynet.ops.arrays.matmul.matmul`), with no input mask, one mask for all gates and
one mask per gate, serial and parallel; the steps write the outputs and the input
gradient batch-major (the latter reversed for a sequence processed back to front)."""

from __future__ import annotations

import numpy as np
import pytest

from tinynet import tuning
from tinynet.ops.arrays import recurrent as R
from tinynet.ops.arrays.matmul import matmul

T, B, F, U = 5, 11, 7, 9  # odd sizes: partial 4-row tiles and 64-column tiles
LINEAR = R.ACTIVATIONS["linear"]


def _data(masks: int):
    rng = np.random.default_rng(masks)
    x = rng.standard_normal((T, B, F)).astype(np.float32)
    w = rng.standard_normal((F, 4 * U)).astype(np.float32)
    xb = rng.standard_normal(4 * U).astype(np.float32)
    xmask = None
    if masks:
        xmask = ((rng.random((masks, B, F)) >= 0.3) / 0.7).astype(np.float32)
    return x, w, xb, xmask


def _inputs_by_gemm(x, w, xb, xmask):
    """``(x * mask) @ kernel + bias`` as the GEMM over all rows (per gate with a mask each)."""
    rows = x.reshape(T * B, F)
    if xmask is None or xmask.shape[0] == 1:
        xm = rows if xmask is None else (x * xmask[0]).reshape(T * B, F)
        z = matmul(xm, w)
    else:
        z = np.empty((T * B, 4 * U), dtype=np.float32)
        for g in range(4):
            cols = slice(g * U, (g + 1) * U)
            z[:, cols] = matmul((x * xmask[g]).reshape(T * B, F), w[:, cols])
    return (z + xb).reshape(T, B, 4 * U)


def _input_grads_by_gemm(dz, w, xmask):
    rows = dz.reshape(T * B, 4 * U)
    if xmask is None or xmask.shape[0] == 1:
        dx = matmul(rows, w, trans_b=True).reshape(T, B, F)
        return dx if xmask is None else dx * xmask[0]
    dx = np.zeros((T, B, F), dtype=np.float32)
    for g in range(4):
        cols = slice(g * U, (g + 1) * U)
        dzg = np.ascontiguousarray(rows[:, cols])
        dx += matmul(dzg, w[:, cols], trans_b=True).reshape(T, B, F) * xmask[g]
    return dx


@pytest.mark.parametrize("gate", [2**62, 0], ids=["serial", "parallel"])
@pytest.mark.parametrize("masks", [0, 1, 4], ids=["no-mask", "one-mask", "mask-per-gate"])
def test_lstm_input_products_have_the_gemm_bits(masks, gate):
    x, w, xb, xmask = _data(masks)
    zeros = np.zeros((B, U), dtype=np.float32)
    u = np.zeros((U, 4 * U), dtype=np.float32)  # no recurrent term: the gates are z itself
    with tuning.override(**{R.GATE: gate}):
        xh, cs, gates, out = R.lstm_forward(x, w, xmask, u, zeros, zeros, None, LINEAR, LINEAR,
                                            None, xb, True)
        want = _inputs_by_gemm(x, w, xb, xmask)
        assert np.array_equal(gates[:, :, :4 * U].view(np.uint32), want.view(np.uint32))
        assert np.array_equal(xh[:T, :, :F], x)  # the input beside the states
        assert np.array_equal(out, xh[1:, :, F:].transpose(1, 0, 2))
        dout = np.random.default_rng(9).standard_normal((B, T, U)).astype(np.float32)
        dz, dx, dh0, dc0 = R.lstm_backward(dout, zeros, zeros, u, w, xmask, None, LINEAR,
                                           LINEAR, cs, gates)
        _, dx_rev, _, _ = R.lstm_backward(dout, zeros, zeros, u, w, xmask, None, LINEAR,
                                          LINEAR, cs, gates, None, True)
    assert dx.shape == (B, T, F) and dz.shape == (T, B, 4 * U)
    want = _input_grads_by_gemm(dz, w, xmask).transpose(1, 0, 2)
    assert np.array_equal(dx.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(dx_rev, dx[:, ::-1])


def test_lstm_input_gradient_matches_a_float64_reference():
    """``dx = sum_g (dz_g @ W_g.T) * mask_g`` in float64, to float32 accuracy."""
    x, w, xb, xmask = _data(4)
    zeros = np.zeros((B, U), dtype=np.float32)
    u = np.zeros((U, 4 * U), dtype=np.float32)
    _, cs, gates, _ = R.lstm_forward(x, w, xmask, u, zeros, zeros, None, LINEAR, LINEAR, None,
                                     xb)
    dout = np.random.default_rng(3).standard_normal((B, T, U)).astype(np.float32)
    dz, dx, _, _ = R.lstm_backward(dout, zeros, zeros, u, w, xmask, None, LINEAR, LINEAR, cs,
                                   gates)
    d64, w64 = dz.astype(np.float64), w.astype(np.float64)
    want = sum((d64[..., g * U:(g + 1) * U] @ w64[:, g * U:(g + 1) * U].T) * xmask[g]
               for g in range(4)).transpose(1, 0, 2)
    np.testing.assert_allclose(dx, want, rtol=1e-5, atol=1e-6 * float(np.max(np.abs(want))))


@pytest.mark.parametrize("sizes", [(T, B, F, U), (50, 40, 32, 32)], ids=["small", "blocked"])
@pytest.mark.parametrize("gate", [2**62, 0], ids=["serial", "parallel"])
def test_lstm_weight_gradients_in_one_product_have_the_two_products_bits(sizes, gate):
    """Without dropout, LSTM's backward takes both weight gradients as one product over the
    ``[x_t | h_{t-1}]`` rows its forward wrote side by side: the bits of ``x.T @ dz`` and
    ``h_prev.T @ dz`` taken apart (the small product's kernel and the blocked GEMM)."""
    from tinynet.ops.arrays.recurrent_layer import Cell, rnn_backward, rnn_forward

    t, b, f, u = sizes
    rng = np.random.default_rng(7)
    x = rng.standard_normal((b, t, f)).astype(np.float32)
    w = (rng.standard_normal((f, 4 * u)) * 0.3).astype(np.float32)
    uk = (rng.standard_normal((u, 4 * u)) * 0.3).astype(np.float32)
    bias = rng.standard_normal(4 * u).astype(np.float32)
    dout = rng.standard_normal((b, t, u)).astype(np.float32)
    zeros = np.zeros((b, u), dtype=np.float32)
    cell = Cell("lstm", 4, u, R.ACTIVATIONS["tanh"], R.ACTIVATIONS["sigmoid"])
    with tuning.override(**{R.GATE: gate, "matmul_parallel_min_flops": gate}):
        xt, hs, finals, saved, _ = rnn_forward(cell, x.transpose(1, 0, 2), w, uk, bias, None,
                                               None, [zeros, zeros], None, None, sequences=True)
        _, dkernel, drecurrent, _, _ = rnn_backward(
            cell, xt, w, uk, None, None, hs, saved, None, dout, [zeros, zeros], reverse=False,
            want_kernel=True, want_recurrent=True, want_bias=True)
        dz = R.lstm_backward(dout, zeros, zeros, uk, w, None, None, cell.act, cell.ract,
                             saved[0], saved[1])[0].reshape(t * b, 4 * u)
    assert np.array_equal(xt, x.transpose(1, 0, 2))
    want_k = matmul(np.ascontiguousarray(xt).reshape(t * b, f), dz, trans_a=True)
    want_r = matmul(np.ascontiguousarray(hs[:-1]).reshape(t * b, u), dz, trans_a=True)
    assert np.array_equal(dkernel.view(np.uint32), want_k.view(np.uint32))
    assert np.array_equal(drecurrent.view(np.uint32), want_r.view(np.uint32))


@pytest.mark.parametrize("sizes", [(T, B, F, U), (7, 64, 64, 64), (3, 9, 33, 20)],
                         ids=["odd", "whole-panels", "padded-panels"])
@pytest.mark.parametrize("gate", [2**62, 0], ids=["serial", "parallel"])
def test_lstm_steps_over_packed_panels_have_the_unpacked_bits(sizes, gate, monkeypatch):
    """On cores with 16 vector registers, LSTM's steps without dropout read ``[W; U]``
    and ``[U.T | W.T]`` as packed 16-column panels (one register pass a tile) and take
    the gate gradients 16 units at a time: every output has the bits of the products
    through the weights as they are, with a sequence mask and without, both directions."""
    t, b, f, u = sizes
    rng = np.random.default_rng(11)
    x = rng.standard_normal((t, b, f)).astype(np.float32)
    w = (rng.standard_normal((f, 4 * u)) * 0.3).astype(np.float32)
    uk = (rng.standard_normal((u, 4 * u)) * 0.3).astype(np.float32)
    xb = rng.standard_normal(4 * u).astype(np.float32)
    h0, c0, dhT, dcT = (rng.standard_normal((b, u)).astype(np.float32) for _ in range(4))
    dout = rng.standard_normal((b, t, u)).astype(np.float32)
    smask = rng.random((b, t)) > 0.25
    tanh, sigmoid = R.ACTIVATIONS["tanh"], R.ACTIVATIONS["sigmoid"]
    runs = {}
    for panels in (True, False):
        monkeypatch.setattr(R, "PANELS", panels)
        got = []
        with tuning.override(**{R.GATE: gate}):
            for mask, bias, rev in ((None, xb, False), (smask, None, True)):
                xh, cs, gates, out = R.lstm_forward(x, w, None, uk, h0, c0, None, tanh,
                                                    sigmoid, mask, bias, True)
                got += [xh, cs, gates, out]
                got += R.lstm_backward(dout, dhT, dcT, uk, w, None, None, tanh, sigmoid, cs,
                                       gates, mask, rev)
        runs[panels] = got
    for packed, plain in zip(runs[True], runs[False]):
        assert np.array_equal(packed.view(np.uint32), plain.view(np.uint32))


@pytest.mark.parametrize("rows,m,n", [(1, 1, 1), (7, 5, 13), (300, 70, 280), (513, 33, 17),
                                      (6400, 128, 256)])
@pytest.mark.parametrize("gate", [2**62, 0], ids=["serial", "parallel"])
def test_lstm_weight_grads_have_the_gemm_bits(rows, m, n, gate):
    """LSTM's weight-gradient kernel (packed 6 x 16 tiles, blocks of rows, bands of
    columns per task) has ``matmul(xh, dz, trans_a=True)``'s bits: partial strips and
    panels, one and several blocks of rows, serial and parallel."""
    from tinynet.kernels.recurrent_products import weight_grads_tasks

    rng = np.random.default_rng(rows + m + n)
    xh = rng.standard_normal((rows, m)).astype(np.float32)
    dz = rng.standard_normal((rows, n)).astype(np.float32)
    want = matmul(xh, dz, trans_a=True).view(np.uint32)
    with tuning.override(matmul_parallel_min_flops=gate):
        got = R.lstm_weight_grads(xh, dz)
    assert np.array_equal(got.view(np.uint32), want)
    for tasks in (3, (n + 15) // 16 + 2):  # more tasks than panels: some have none
        out = np.full((m, n), np.nan, dtype=np.float32)
        weight_grads_tasks(xh, dz, out, tasks, 0, tasks)
        assert np.array_equal(out.view(np.uint32), want)


@pytest.mark.parametrize("rows,m,n", [(1, 1, 1), (7, 6, 13), (300, 70, 280), (513, 33, 17),
                                      (600, 128, 256)])
@pytest.mark.parametrize("gate", [2**62, 0], ids=["serial", "parallel"])
def test_lstm_weight_grads_take_the_bias_gradient_from_a_column_of_ones(rows, m, n, gate):
    """With ``bias``, one row more: ``dz``'s column sums, each the chain of float32
    additions over the rows in order (``1 * dz`` is exact, so a fused multiply-add onto
    the running sum is that addition); the weight rows keep their bits. ``m = 6`` puts
    the ones in a strip of their own, the other sizes beside the last columns."""
    rng = np.random.default_rng(rows * m + n)
    xh = rng.standard_normal((rows, m)).astype(np.float32)
    dz = rng.standard_normal((rows, n)).astype(np.float32)
    with tuning.override(matmul_parallel_min_flops=gate):
        got = R.lstm_weight_grads(xh, dz, True)
        plain = R.lstm_weight_grads(xh, dz)
    want = np.zeros(n, dtype=np.float32)
    for r in range(rows):
        want = want + dz[r]
    assert got.shape == (m + 1, n)
    assert np.array_equal(got[:m].view(np.uint32), plain.view(np.uint32))
    assert np.array_equal(got[m].view(np.uint32), want.view(np.uint32))
