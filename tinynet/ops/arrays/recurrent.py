"""The recurrent operations SimpleRNN, LSTM and GRU call: the step loops forward and
backward through time (:mod:`tinynet.kernels.recurrent`), serial or with the batch rows
on Numba's threads.

Sequences are time-major: ``xp`` ``[T, B, G]``, states ``[T + 1, B, units]``, gradients
``[T, B, ...]`` (the layers transpose the input once and the outputs back).
``smask`` is the sequence mask ``[B, T]`` (``False``: a padded step, which keeps the
state) or ``None``, in the order the steps are processed.

Each function converts its arrays once (C-contiguous float32), allocates the outputs and
runs the kernel in one thread or over Numba's threads
(:func:`tinynet.kernels.recurrent.run`) as the ``rnn_parallel_min_muladds`` gate says,
compared with the recurrent multiply-adds of the whole sequence (``B * T * units * G``).
Both ways compute each batch row alike, so the choice, and the thread count, never show
in a result. The input projection (``x @ kernel``) and the weight gradients are GEMMs
(:func:`tinynet.ops.arrays.matmul.matmul`) that :mod:`tinynet.ops.arrays.recurrent_layer`
takes around these loops, one operation a layer pass; LSTM's loops take their input
side (``x_t @ kernel``, and backward ``dz_t @ kernel.T``) in the step themselves, and its
two weight gradients are one product in a kernel of their own (:func:`lstm_weight_grads`,
the GEMM's bits).
"""

from __future__ import annotations

import numpy as np

from tinynet import tuning
from tinynet.kernels import recurrent as K
from tinynet.kernels.address import run_tasks
from tinynet.kernels.recurrent_products import weight_grads_tasks
from tinynet.kernels.simd import NARROW_REGISTERS

__all__ = ["GATE", "ACTIVATIONS", "simple_forward", "simple_backward", "lstm_forward",
           "lstm_backward", "lstm_weight_grads", "gru_forward", "gru_backward"]

GATE = "rnn_parallel_min_muladds"

#: Activation names the recurrent kernels compute, and their kernel kinds.
ACTIVATIONS = {"tanh": K.TANH, "sigmoid": K.SIGMOID, "relu": K.RELU,
               "hard_sigmoid": K.HARD_SIGMOID, "linear": K.LINEAR}


def _f32(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _mask(rmask: np.ndarray | None, gates: int, units: int) -> np.ndarray:
    """The recurrent-dropout masks ``[B, gates, units]``, or the empty "no mask"."""
    if rmask is None:
        return np.empty((0, gates, units), dtype=np.float32)
    return _f32(rmask)


def _bias(xb: np.ndarray | None) -> np.ndarray:
    """The input bias, or the empty "no bias"."""
    return np.empty(0, dtype=np.float32) if xb is None else _f32(xb)


def _steps_mask(smask: np.ndarray | None, steps: int) -> np.ndarray:
    """The sequence mask ``[B, T]`` bool, or the empty "every step valid"."""
    if smask is None:
        return np.empty((0, steps), dtype=np.bool_)
    return np.ascontiguousarray(smask, dtype=np.bool_)


def _parallel(xp_shape: tuple, units: int) -> bool:
    t, b, g = xp_shape
    return tuning.use_parallel(GATE, b * t * g * units)


def simple_forward(xp: np.ndarray, U: np.ndarray, h0: np.ndarray, rmask: np.ndarray | None,
                   act: int, smask: np.ndarray | None = None,
                   xb: np.ndarray | None = None) -> np.ndarray:
    """SimpleRNN's steps: ``hs[t + 1] = act(xp[t] + xb + (hs[t] * rmask) @ U)``.

    Shape:
        xp: ``[T, B, units]``; xb (input bias): ``[units]`` or ``None``; U: ``[units,
        units]``; h0: ``[B, units]``;
        rmask: ``[B, 1, units]`` or ``None``; returns hs ``[T + 1, B, units]``.
    """
    xp, U, h0 = _f32(xp), _f32(U), _f32(h0)
    t, b, units = xp.shape
    hs = np.empty((t + 1, b, units), dtype=np.float32)
    K.run(K.simple_forward_blocks, b, _parallel(xp.shape, units), xp, _bias(xb), U, h0,
          _mask(rmask, 1, units), _steps_mask(smask, t), act, hs)
    return hs


def simple_backward(dhs: np.ndarray, dhT: np.ndarray, U: np.ndarray, rmask: np.ndarray | None,
                    act: int, hs: np.ndarray,
                    smask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Backward of :func:`simple_forward`: ``(dz, dh0)``, dz the gradient of every step's
    pre-activation ``[T, B, units]``. ``dhs`` is dL/d each step's output, ``dhT`` dL/d
    the final state (both added)."""
    dhs, dhT = _f32(dhs), _f32(dhT)
    t, b, units = dhs.shape
    dz = np.empty((t, b, units), dtype=np.float32)
    dh0 = np.empty((b, units), dtype=np.float32)
    K.run(K.simple_backward_blocks, b, _parallel(dz.shape, units), dhs, dhT, _f32(U.T),
          _mask(rmask, 1, units), _steps_mask(smask, t), act, hs, dz, dh0)
    return dz, dh0


#: LSTM's steps read their weights as packed panels (:func:`_panels`) when no dropout
#: mask splits the products, on cores with 16 vector registers (with 32, the 4 x 64
#: tiles over the weights as they are). A fact of the machine, for speed only: the
#: same chains either way.
PANELS = NARROW_REGISTERS
_NO_PANELS = np.empty((0, 0, 16), dtype=np.float32)


def _panels(*parts: np.ndarray) -> np.ndarray:
    """The 2-D ``parts`` side by side, each padded with zero columns to whole 16-column
    panels, as ``[tiles, K, 16]`` (panel ``j`` the contiguous ``[K, 16]`` slice of columns
    ``16 j .. 16 j + 15``)."""
    k = parts[0].shape[0]
    widths = [16 * -(-p.shape[1] // 16) for p in parts]
    wide = np.zeros((k, sum(widths)), dtype=np.float32)
    col = 0
    for p, width in zip(parts, widths):
        wide[:, col:col + p.shape[1]] = p
        col += width
    return np.ascontiguousarray(wide.reshape(k, -1, 16).transpose(1, 0, 2))


def _step_panels(xmask: np.ndarray | None, rmask: np.ndarray | None,
                 *parts: np.ndarray) -> np.ndarray:
    """The panels LSTM's steps read (:data:`PANELS`, no dropout mask), else the empty
    "none" (the steps then read the weights as they are)."""
    return _panels(*parts) if PANELS and xmask is None and rmask is None else _NO_PANELS


def _xmask(xmask: np.ndarray | None, batch: int, features: int) -> np.ndarray:
    """The input dropout masks ``[n, B, features]``, or the empty "no mask"."""
    if xmask is None:
        return np.empty((0, batch, features), dtype=np.float32)
    return _f32(xmask)


def _batch_major(x: np.ndarray) -> tuple[np.ndarray, bool]:
    """The time-major ``x`` ``[T, B, F]`` as a C-contiguous float32 batch-major array
    ``[B, T, F]`` and whether its steps run back to front: the array a layer's
    (possibly reversed) transposed view was taken of, without a copy, else a copy."""
    xb = x.transpose(1, 0, 2)
    if xb.dtype == np.float32 and xb.flags.c_contiguous:
        return xb, False
    back = xb[:, ::-1]
    if back.dtype == np.float32 and back.flags.c_contiguous:
        return back, True
    return _f32(xb), False


def lstm_forward(x: np.ndarray, W: np.ndarray, xmask: np.ndarray | None, U: np.ndarray,
                 h0: np.ndarray, c0: np.ndarray, rmask: np.ndarray | None, act: int, ract: int,
                 smask: np.ndarray | None = None, xb: np.ndarray | None = None,
                 sequences: bool = False) -> tuple[np.ndarray, ...]:
    """LSTM's steps (gates i, f, c, o), each on ``(x_t * xmask) @ W + xb`` (``xmask`` the
    input dropout masks ``[1 or 4, B, features]`` or ``None``, ``xb`` the input bias
    ``[4 * units]`` or ``None``; the products the same chains as
    ``matmul(x * mask, W)``): ``(xh, cs, gates, out)``. ``xh`` ``[T + 1, B, features +
    units]`` holds the input and the states side by side: ``xh[:T, :, :features]`` is
    ``x`` (copied there: ``x`` may be any view, e.g. the layer's transpose),
    ``xh[:, :, features:]`` the states ``h`` (index 0 the initial state), so ``xh[:T]``
    is the ``[x_t | h_{t-1}]`` operand of both weight gradients, one product; cs ``[T +
    1, B, units]`` likewise; gates the activated gates and ``activation(c)`` ``[T, B, 5 *
    units]``; out every step's output batch-major ``[B, T, units]`` with ``sequences``
    (written by the steps, no transposing pass), else ``None``.

    Shape:
        x: ``[T, B, features]``; W: ``[features, 4 * units]``; U: ``[units, 4 * units]``;
        h0, c0: ``[B, units]``; rmask: ``[B, 4, units]`` or ``None``.
    """
    W, U, h0, c0 = _f32(W), _f32(U), _f32(h0), _f32(c0)
    t, b, features = x.shape
    units = U.shape[0]
    xh = np.empty((t + 1, b, features + units), dtype=np.float32)
    # the steps copy each step's input rows into xh from the batch-major array the
    # layer's time-major view was taken of (its own order, or read back to front)
    xs, rev = _batch_major(x)
    xh[t, :, :features] = 0.0  # not read; defined all the same
    cs = np.empty((t + 1, b, units), dtype=np.float32)
    gates = np.empty((t, b, 5 * units), dtype=np.float32)
    out = np.empty((b if sequences else 0, t, units), dtype=np.float32)
    P = _step_panels(xmask, rmask, np.concatenate([W, U]))
    xbp = np.zeros((1, 16 * P.shape[0]), dtype=np.float32)  # the bias, padded to the panels
    if xb is not None and P.shape[0]:
        xbp[0, :xb.shape[0]] = xb
    K.run(K.lstm_forward_blocks, b, _parallel((t, b, 4 * units), units), xs, rev, xh, W,
          _xmask(xmask, b, features), _bias(xb), U, P, xbp, h0, c0, _mask(rmask, 4, units),
          _steps_mask(smask, t), act, ract, cs, gates, out)
    return xh, cs, gates, (out if sequences else None)


def lstm_backward(dout: np.ndarray | None, dhT: np.ndarray, dcT: np.ndarray, U: np.ndarray,
                  W: np.ndarray, xmask: np.ndarray | None, rmask: np.ndarray | None, act: int,
                  ract: int, cs: np.ndarray, gates: np.ndarray,
                  smask: np.ndarray | None = None,
                  reverse: bool = False) -> tuple[np.ndarray, ...]:
    """Backward of :func:`lstm_forward` from ``dout``, dL/d every step's output batch-major
    ``[B, T, units]`` (or ``None``: none), and dL/d the final states ``dhT``, ``dcT``:
    ``(dz, dx, dh0, dc0)``, dz the gradient of the gate pre-activations ``[T, B, 4 *
    units]``, dx the input's, batch-major ``[B, T, features]`` (the chains of
    ``matmul(dz, W, trans_b=True)``, times the input masks), its steps in reverse order
    with ``reverse`` (the input was processed back to front)."""
    dhT, dcT = _f32(dhT), _f32(dcT)
    t, b, width = gates.shape
    units = width // 5
    features = W.shape[0]
    dout = np.empty((0, t, units), dtype=np.float32) if dout is None else _f32(dout)
    dz = np.empty((t, b, 4 * units), dtype=np.float32)
    dx = np.empty((b, t, features), dtype=np.float32)
    dh0 = np.empty((b, units), dtype=np.float32)
    dc0 = np.empty((b, units), dtype=np.float32)
    UT, WT = _f32(U.T), _f32(W.T)
    P = _step_panels(xmask, rmask, UT, WT)
    K.run(K.lstm_backward_blocks, b, _parallel(dz.shape, units), dout, dhT, dcT, UT, WT, P,
          _xmask(xmask, b, features), _mask(rmask, 4, units), _steps_mask(smask, t),
          act, ract, bool(reverse), cs, gates, dz, dx, dh0, dc0)
    return dz, dx, dh0, dc0


def lstm_weight_grads(xh: np.ndarray, dz: np.ndarray, bias: bool = False) -> np.ndarray:
    """Both LSTM weight gradients, ``xh.T @ dz`` over all ``T * B`` rows (``xh`` the
    ``[x_t | h_{t-1}]`` rows ``[T * B, features + units]``, ``dz`` ``[T * B, 4 * units]``):
    the chains of ``matmul(xh, dz, trans_a=True)``, so its bits
    (:func:`tinynet.kernels.recurrent_products.weight_grads_tasks`), on Numba's threads as
    the ``matmul_parallel_min_flops`` gate says, a band of columns per thread. With
    ``bias``, one row more: the bias gradient, ``dz``'s column sums (a column of ones
    beside ``xh``, as SeparableConv2D's bias; each a chain of additions over the rows in
    order), so ``dz`` is read once for all three.

    Shape:
        xh: ``[rows, m]``; dz: ``[rows, n]``; returns ``[m (+ 1), n]``.
    """
    xh, dz = _f32(xh), _f32(dz)
    rows, m = xh.shape
    n = dz.shape[1]
    out = np.empty((m + int(bias), n), dtype=np.float32)
    parallel = tuning.use_parallel("matmul_parallel_min_flops", rows * m * n)
    tasks = max(1, min((n + 15) // 16, tuning.get_num_threads())) if parallel else 1
    run_tasks(weight_grads_tasks, tasks, parallel, xh, dz, out, tasks)
    return out


def gru_forward(xp: np.ndarray, U: np.ndarray, rbias: np.ndarray, h0: np.ndarray,
                rmask: np.ndarray | None, act: int, ract: int,
                reset_after: bool, smask: np.ndarray | None = None,
                xb: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GRU's steps (gates z, r, h) on ``xp + xb`` (``xb`` the input bias or ``None``):
    ``(hs, gates, extra)`` (see
    :func:`tinynet.kernels.recurrent.gru_forward_blocks`)."""
    xp, U, rbias, h0 = _f32(xp), _f32(U), _f32(rbias), _f32(h0)
    t, b, g = xp.shape
    units = g // 3
    hs = np.empty((t + 1, b, units), dtype=np.float32)
    gates = np.empty((t, b, g), dtype=np.float32)
    extra = np.empty((t, b, units), dtype=np.float32)
    K.run(K.gru_forward_blocks, b, _parallel(xp.shape, units), xp, _bias(xb), U, rbias, h0,
          _mask(rmask, 3, units), _steps_mask(smask, t), act, ract, bool(reset_after), hs,
          gates, extra)
    return hs, gates, extra


def gru_backward(dhs: np.ndarray, dhT: np.ndarray, U: np.ndarray, rmask: np.ndarray | None,
                 act: int, ract: int, reset_after: bool, hs: np.ndarray, gates: np.ndarray,
                 extra: np.ndarray,
                 smask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Backward of :func:`gru_forward`: ``(dzx, dzr, dh0)``, the gradients of the input
    projection and of the recurrent products, ``[T, B, 3 * units]`` each."""
    dhs, dhT = _f32(dhs), _f32(dhT)
    t, b, units = dhs.shape
    dzx = np.empty((t, b, 3 * units), dtype=np.float32)
    dzr = np.empty((t, b, 3 * units), dtype=np.float32)
    dh0 = np.empty((b, units), dtype=np.float32)
    K.run(K.gru_backward_blocks, b, _parallel(dzx.shape, units), dhs, dhT, _f32(U.T),
          _mask(rmask, 3, units), _steps_mask(smask, t), act, ract, bool(reset_after), hs,
          gates, extra, dzx, dzr, dh0)
    return dzx, dzr, dh0
