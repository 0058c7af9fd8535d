"""The passes of SimpleRNN, LSTM and GRU, one operation each: the forward projects the
input (``(x * dropout mask) @ kernel``, one GEMM over all ``T * B`` rows; LSTM's step
loop takes it step by step, the same chains) and runs the cell's step loop
(:mod:`tinynet.ops.arrays.recurrent`); the backward runs the loop back through time
(LSTM's taking the input gradient too), then the weight gradients as GEMMs over all rows
in the GEMM's fixed order (LSTM's two as one product over the ``[x | h_prev]`` rows its
forward wrote side by side, when no dropout mask makes them differ), the input gradient
and the bias gradient, each only when asked for.

Sequences are time-major (``[T, B, ...]``). A :class:`Cell` names what differs between the
three layers.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tinynet.ops.arrays import recurrent as R
from tinynet.ops.arrays.matmul import matmul
from tinynet.ops.fused import bias_grad

__all__ = ["Cell", "rnn_forward", "rnn_backward"]


class Cell(NamedTuple):
    """A recurrent layer's cell: ``kind`` (``"simple"``, ``"lstm"`` or ``"gru"``), its
    gate count and units, the kernel codes of its activations
    (:data:`tinynet.ops.arrays.recurrent.ACTIVATIONS`), and GRU's ``reset_after``."""

    kind: str
    gates: int
    units: int
    act: int
    ract: int = 0
    reset_after: bool = True


def _project(x: np.ndarray, w: np.ndarray, xmask: np.ndarray | None, cell: Cell) -> np.ndarray:
    """``xp = (x * mask) @ kernel``, ``[T, B, G]`` for time-major ``x`` (``[T, B,
    features]``; ``xmask`` is ``[n, B, features]``); the step kernels add the input bias."""
    t, b, f = x.shape
    width = cell.gates * cell.units
    if xmask is None:
        xp = matmul(x.reshape(t * b, f), w)
    elif xmask.shape[0] == 1:
        xp = matmul((x * xmask[0]).reshape(t * b, f), w)
    else:
        xp = np.empty((t * b, width), dtype=np.float32)
        u = cell.units
        for g in range(cell.gates):
            xg = (x * xmask[g]).reshape(t * b, f)
            xp[:, g * u:(g + 1) * u] = matmul(xg, w[:, g * u:(g + 1) * u])
    return xp.reshape(t, b, width)


def rnn_forward(cell: Cell, xt: np.ndarray, kernel: np.ndarray, recurrent_kernel: np.ndarray,
                input_bias: np.ndarray | None, recurrent_bias: np.ndarray | None,
                xmask: np.ndarray | None, states0: list[np.ndarray],
                rmask: np.ndarray | None, smask: np.ndarray | None, *, sequences: bool = False
                ) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], Any, np.ndarray | None]:
    """The layer's forward on time-major ``xt`` ``[T, B, features]``.

    Args:
        cell: The cell.
        xt: The input, time-major ``[T, B, features]`` (processing order), any layout
            (a transposed view of the layer's input): the one copy made of it is the
            time-major float32 array the steps read.
        kernel: ``[features, G]``; ``recurrent_kernel``: ``[units, G]``.
        input_bias: ``[G]`` or ``None``; ``recurrent_bias``: GRU's ``[G]`` (else ``None``).
        xmask: Input dropout masks ``[n, B, features]`` or ``None``.
        states0: The initial states, ``[B, units]`` each.
        rmask: Recurrent dropout masks ``[B, gates, units]`` or ``None``.
        smask: The sequence mask ``[B, T]`` or ``None``.
        sequences: Also return every step's output, batch-major.

    Returns:
        ``(xt, hs, finals, saved, out)``: the time-major float32 input the steps read (for
        :func:`rnn_backward`), the states ``[T + 1, B, units]``, the final states, what
        :func:`rnn_backward` reads, and with ``sequences`` the outputs ``[B, T, units]``
        (``hs[1:]`` batch-major; LSTM's steps write them), else ``None``. LSTM's input
        and states are views of one ``[T + 1, B, features + units]`` array (see
        :func:`tinynet.ops.arrays.recurrent.lstm_forward`), kept in ``saved``.
    """
    u = recurrent_kernel
    if cell.kind == "lstm":
        xh, cs, gates, out = R.lstm_forward(xt, kernel, xmask, u, states0[0], states0[1],
                                            rmask, cell.act, cell.ract, smask, input_bias,
                                            sequences)
        f = xt.shape[2]
        hs = xh[:, :, f:]
        return xh[:-1, :, :f], hs, [hs[-1], cs[-1]], (cs, gates, xh), out
    xt = np.ascontiguousarray(xt, dtype=np.float32)
    xp = _project(xt, kernel, xmask, cell)
    if cell.kind == "gru":
        hs, gates, extra = R.gru_forward(xp, u, recurrent_bias, states0[0], rmask, cell.act,
                                         cell.ract, cell.reset_after, smask, input_bias)
        saved = (gates, extra)
    else:
        hs = R.simple_forward(xp, u, states0[0], rmask, cell.act, smask, input_bias)
        saved = None
    out = np.ascontiguousarray(hs[1:].transpose(1, 0, 2)) if sequences else None
    return xt, hs, [hs[-1]], saved, out


def _back(cell: Cell, kernel: np.ndarray, recurrent_kernel: np.ndarray, xmask: Any,
          dout: np.ndarray | None, finals: list, rmask: Any, hs: np.ndarray, saved: Any,
          smask: Any, reverse: bool) -> tuple:
    """The step loop back through time: ``(dzx, dzr, d_initial_states, dx)``, ``dx``
    (batch-major, in the input's order) ``None`` unless the loop took it (LSTM)."""
    u = recurrent_kernel
    if cell.kind == "lstm":
        cs, gates, _ = saved
        dz, dx, dh0, dc0 = R.lstm_backward(dout, finals[0], finals[1], u, kernel, xmask,
                                           rmask, cell.act, cell.ract, cs, gates, smask,
                                           reverse)
        return dz, dz, [dh0, dc0], dx
    t, b, units = hs.shape[0] - 1, hs.shape[1], hs.shape[2]
    dhs = (np.zeros((t, b, units), dtype=np.float32) if dout is None
           else np.ascontiguousarray(dout.transpose(1, 0, 2), dtype=np.float32))
    if cell.kind == "gru":
        gates, extra = saved
        dzx, dzr, dh0 = R.gru_backward(dhs, finals[0], u, rmask, cell.act, cell.ract,
                                       cell.reset_after, hs, gates, extra, smask)
        return dzx, dzr, [dh0], None
    dz, dh0 = R.simple_backward(dhs, finals[0], u, rmask, cell.act, hs, smask)
    return dz, dz, [dh0], None


def _recurrent_operands(cell: Cell, hprev: np.ndarray, rmask: np.ndarray | None,
                        saved: Any) -> list[tuple[int, int, np.ndarray]]:
    """``(g0, g1, operand)``: the recurrent kernel's gates ``g0..g1-1`` were multiplied
    by ``operand`` ``[T, B, units]`` (the previous state, masked per gate; GRU without
    ``reset_after``: the candidate's product took ``r * h``, which the forward kept)."""
    if cell.kind == "gru" and not cell.reset_after:
        if rmask is None:
            first = [(0, 2, hprev)]
        else:
            first = [(g, g + 1, hprev * rmask[:, g]) for g in range(2)]
        return first + [(2, 3, saved[1])]
    if rmask is None:
        return [(0, cell.gates, hprev)]
    return [(g, g + 1, hprev * rmask[:, g]) for g in range(cell.gates)]


def rnn_backward(cell: Cell, xt: np.ndarray, kernel: np.ndarray,
                 recurrent_kernel: np.ndarray, xmask: np.ndarray | None,
                 rmask: np.ndarray | None, hs: np.ndarray, saved: Any,
                 smask: np.ndarray | None, dout: np.ndarray | None,
                 finals: list[np.ndarray], *, reverse: bool, want_kernel: bool,
                 want_recurrent: bool, want_bias: bool
                 ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None,
                            np.ndarray | None, list[np.ndarray]]:
    """The gradients of :func:`rnn_forward` from the outputs' gradients: ``dout``
    batch-major ``[B, T, units]`` (of every step's output, in processing order) or
    ``None``, and ``finals`` (of the final states).

    Returns:
        ``(dx [B, T, features], dkernel, drecurrent_kernel, dbias, d_initial_states)``,
        ``dx`` in the input's order (its steps reversed back with ``reverse``, the input
        having been processed back to front), the parameter gradients ``None`` unless
        asked for (GRU with ``reset_after``: the bias gradient ``[2, G]``, input and
        recurrent).
    """
    t, b, f = xt.shape
    u = cell.units
    dzx, dzr, d0, dx = _back(cell, kernel, recurrent_kernel, xmask, dout, finals, rmask, hs,
                             saved, smask, reverse)
    taken = dx is not None  # LSTM's loop took the input gradient
    dxt = None
    width = cell.gates * u
    dzx2 = dzx.reshape(t * b, width)
    dzr2 = dzr.reshape(t * b, width)
    w = kernel
    dkernel = drecurrent = dbias = None
    if (cell.kind == "lstm" and xmask is None and rmask is None and want_kernel
            and want_recurrent):
        # both weight gradients in one product, [x_t | h_{t-1}].T @ dz over the rows the
        # forward wrote side by side: dz read once, the same chains as two products
        # (and the bias gradient from a column of ones beside them)
        both = R.lstm_weight_grads(saved[2][:-1].reshape(t * b, f + u), dzx2, want_bias)
        dkernel, drecurrent = both[:f], both[f:f + u]
        if want_bias:
            dbias = both[f + u]
        want_kernel = want_recurrent = want_bias = False
    if xmask is None or xmask.shape[0] == 1:
        xm = xt if xmask is None else xt * xmask[0]
        if want_kernel:
            dkernel = matmul(xm.reshape(t * b, f), dzx2, trans_a=True)
        if not taken:
            dxt = matmul(dzx2, w, trans_b=True).reshape(t, b, f)
            if xmask is not None:
                dxt *= xmask[0]
    else:
        kgrad = np.empty_like(w)
        if not taken:
            dxt = np.zeros((t, b, f), dtype=np.float32)
        for g in range(cell.gates):
            cols = slice(g * u, (g + 1) * u)
            dzg = np.ascontiguousarray(dzx2[:, cols])
            if want_kernel:
                xg = (xt * xmask[g]).reshape(t * b, f)
                kgrad[:, cols] = matmul(xg, dzg, trans_a=True)
            if not taken:
                dxt += matmul(dzg, w[:, cols], trans_b=True).reshape(t, b, f) * xmask[g]
        if want_kernel:
            dkernel = kgrad
    if want_recurrent:
        drecurrent = np.empty_like(recurrent_kernel)
        for g0, g1, operand in _recurrent_operands(cell, hs[:-1], rmask, saved):
            cols = slice(g0 * u, g1 * u)
            op2 = np.ascontiguousarray(operand, dtype=np.float32).reshape(t * b, u)
            dz = dzr2 if (g0, g1) == (0, cell.gates) else np.ascontiguousarray(dzr2[:, cols])
            drecurrent[:, cols] = matmul(op2, dz, trans_a=True)
    if want_bias:
        if cell.kind == "gru" and cell.reset_after:
            dbias = np.stack([bias_grad(dzx2), bias_grad(dzr2)])
        else:
            dbias = bias_grad(dzx2)
    if not taken:
        dxt = dxt[::-1] if reverse else dxt
        dx = np.ascontiguousarray(dxt.transpose(1, 0, 2))
    return dx, dkernel, drecurrent, dbias, d0
