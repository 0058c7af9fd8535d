"""Depthwise 2-D convolution on channels-last data: plans and calls of
:mod:`tinynet.kernels.depthwise`.

The kernel ``[KH, KW, C, M]`` is used as ``[KH, KW, C * M]`` (output channel ``c * M + m``,
Keras's order). The work is cut into tasks of whole samples, fixed by the shape (at least
``MIN_TASKS`` of them, so both cores get work); the ``conv_parallel_min_elems`` gate
(here multiply-adds of the batch, the patch elements of the equivalent convolution)
decides whether the serial or the parallel driver runs them, never what they compute.

The outputs (the forward's ``y``, the input gradient ``dx``) start on 64-byte lines
(:func:`tinynet.ops.arrays.streaming.empty_aligned`), so a layer after this one, or
SeparableConv2D's pointwise GEMM, reads whole cache lines per 16-lane vector; from
:data:`POOL_FROM_BYTES` on, into the pool's buffers that no one holds any more. Outputs of
whole vectors (``C * M`` a multiple of 16, no channel of ones) that are large enough
(:func:`tinynet.ops.arrays.streaming.streams`) are written with streaming stores: ``y``,
and ``dx`` when ``M == 1``; the values are the same either way.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tinynet import tuning
from tinynet.kernels import depthwise as dk
from tinynet.kernels.reduction import merge_cols
from tinynet.ops.arrays.streaming import empty_aligned, empty_tasks, streams

__all__ = ["MIN_TASKS", "POOL_FROM_BYTES", "depthwise_forward", "depthwise_backward"]

MIN_TASKS = 8
#: ``y`` and ``dx`` of at least this many bytes reuse the aligned pool's free buffers
#: (:func:`~tinynet.ops.arrays.streaming.empty_aligned`): glibc maps outputs of a few MB
#: afresh on every call in some processes, about 1,500 page faults a DepthwiseConv2D
#: 32x28x28x32 step without the pool.
POOL_FROM_BYTES = 1 << 20
_LANES = 16  # the kernels' vector width: channels are padded to a multiple of it
_GATE = "conv_parallel_min_elems"


@functools.lru_cache(maxsize=256)
def _tasks(batch: int) -> np.ndarray:
    """``[(b0, b1), ...]``: the batch in ``min(batch, MIN_TASKS)`` runs of whole samples."""
    per = -(-batch // MIN_TASKS) if batch else 1
    return np.array([(b, min(b + per, batch)) for b in range(0, batch, per)],
                    dtype=np.int64).reshape(-1, 2)


class _Plan:
    """One call's sizes: tasks, slots, the channels padded to whole vectors and the
    per-slot buffers (samples and output gradients widened to whole vectors; rows)."""

    def __init__(self, x_shape: tuple, w_shape: tuple, geometry: tuple) -> None:
        kh, kw, self.sh, self.sw, self.dh, self.dw, self.pt, self.pl, oh, ow = geometry
        self.batch, height, width, _ = x_shape
        self.cm = w_shape[-1]
        self.cp = -(-self.cm // _LANES) * _LANES
        # the kernels read x (and the output gradient) in place: no widened samples
        self.whole = self.cm == self.cp == x_shape[3]
        self.out_shape = (self.batch, oh, ow, self.cm)
        self.hp, self.wp, self.ghp, self.gwp = height, width, oh, ow  # widened buffers
        self.row = max(ow, width) * self.cp
        self.tasks = _tasks(self.batch)
        self.parallel = tuning.use_parallel(_GATE, self.batch * oh * ow * kh * kw * self.cm)
        threads = tuning.get_num_threads() if self.parallel else 1
        self.slots = max(min(threads, len(self.tasks)), 1)

    def samples(self) -> np.ndarray:
        """The widened samples' buffers (a stand-in when the kernels read ``x`` in place)."""
        if self.whole:
            return self.small()
        return empty_tasks((self.slots, self.hp, self.wp, self.cp), parallel=self.parallel)

    def small(self) -> np.ndarray:
        """A stand-in for a buffer the call does not use."""
        return np.empty((self.slots, 1, 1, self.cp), dtype=np.float32)

    def grads(self) -> np.ndarray:
        return empty_tasks((self.slots, self.ghp, self.gwp, self.cp), parallel=self.parallel)

    def rows(self) -> np.ndarray:
        return empty_tasks((self.slots, self.row), parallel=self.parallel)

    def streams(self, nbytes: int) -> bool:
        """Whether an output of ``nbytes`` in rows of ``CP`` floats is streamed."""
        return self.cm == self.cp and streams(nbytes, self.cp)

    def args(self) -> tuple:
        return (self.tasks, self.pt, self.pl, self.sh, self.sw, self.dh, self.dw)

    def padded(self, w3: np.ndarray) -> np.ndarray:
        """``w3`` with zero channels up to ``CP``: ``[KH, KW, CP]``."""
        if self.cp == self.cm:
            return np.ascontiguousarray(w3, dtype=np.float32)
        wf = np.zeros((*w3.shape[:2], self.cp), dtype=np.float32)
        wf[..., :self.cm] = w3
        return wf


def depthwise_forward(x: np.ndarray, w3: np.ndarray, geometry: tuple,
                      bias: np.ndarray | None = None, *, ones: bool = False) -> np.ndarray:
    """The depthwise convolution of ``x``, plus ``bias`` if given (added to each output
    element's finished sum, as a separate bias add would).

    Args:
        x: float32 C-contiguous ``[B, H, W, C]``.
        w3: float32 C-contiguous kernel ``[KH, KW, C * M]``.
        geometry: ``(kh, kw, sh, sw, dh, dw, pad_top, pad_left, oh, ow)``.
        bias: float32 ``[C * M]`` or ``None``.
        ones: Append a channel of ones to each output pixel (written in the same sweep),
            so that a GEMM of the output adds a bias as its last product.

    Returns:
        float32 ``[B, OH, OW, C * M]`` (``C * M + 1`` channels with ``ones``).

    Shape:
        x: ``[B, H, W, C]``; w3: ``[KH, KW, C*M]``; output: ``[B, OH, OW, C*M (+1)]``.
    """
    plan = _Plan(x.shape, w3.shape, geometry)
    shape = (*plan.out_shape[:3], plan.cm + 1 if ones else plan.cm)
    stream = not ones and plan.streams(4 * math.prod(shape))
    y = empty_aligned(shape, np.float32, pool_from=POOL_FROM_BYTES)
    if y.size == 0:
        return y
    wf = plan.padded(w3)
    bp = wf[0, 0] if bias is None else plan.padded(
        np.asarray(bias, dtype=np.float32).reshape(1, 1, -1))[0, 0]
    args = (x, wf, bp, bias is not None, ones, y, *plan.args(), plan.samples(), plan.rows(),
            stream)
    if plan.parallel:
        dk.forward_parallel(*args)
    else:
        dk.forward_serial(*args, 0, plan.slots)
    return y


def depthwise_backward(x: np.ndarray, w3: np.ndarray, g: np.ndarray, geometry: tuple, *,
                       want_dx: bool = True, want_dw: bool = True, want_db: bool = False
                       ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Input, kernel and bias gradients of :func:`depthwise_forward` for the output
    gradient ``g`` (float32 C-contiguous ``[B, OH, OW, C * M]``): ``(dx, dw3, db)``, each
    ``None`` unless wanted; the kernel and bias gradients' task partials are added in task
    order in float64.

    Shape:
        x, dx: ``[B, H, W, C]``; w3, dw3: ``[KH, KW, C*M]``; g: ``[B, OH, OW, C*M]``;
        db: ``[C*M]``.
    """
    plan = _Plan(x.shape, w3.shape, geometry)
    if not (want_dx or want_dw or want_db) or g.size == 0:
        return (np.zeros(x.shape, dtype=np.float32) if want_dx else None,
                np.zeros(w3.shape, dtype=np.float32) if want_dw else None,
                np.zeros(plan.cm, dtype=np.float32) if want_db else None)
    kh, kw = w3.shape[:2]
    stream = want_dx and plan.whole and plan.streams(4 * math.prod(x.shape))
    dx = empty_aligned(x.shape, np.float32, pool_from=POOL_FROM_BYTES) if want_dx else None
    parts = empty_tasks((len(plan.tasks) if want_dw or want_db else 1, kh * kw + 1, plan.cp),
                        parallel=plan.parallel)
    wf = plan.padded(w3)
    ges = plan.grads() if plan.cm != plan.cp else plan.small()
    rows = plan.rows()
    args = (x, wf, g, dx if want_dx else x, parts, want_dx, want_dw, want_db, *plan.args(),
            plan.samples() if want_dw else plan.small(), ges, rows, stream,
            *dk.addresses(wf, g, dx, ges, rows, stream, want_dx, want_dw))
    if plan.parallel:
        dk.backward_parallel(*args)
    else:
        dk.backward_serial(*args, 0, plan.slots)
    dw3 = db = None
    if want_dw or want_db:
        merged = merge_cols(parts.reshape(parts.shape[0], -1), 1.0).reshape(parts.shape[1:])
        if want_dw:
            dw3 = np.ascontiguousarray(merged[:-1, :plan.cm]).reshape(w3.shape)
        if want_db:
            db = np.ascontiguousarray(merged[-1, :plan.cm])
    return dx, dw3, db
