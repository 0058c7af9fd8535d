"""Depthwise 2-D convolution on channels-last data: plans and calls of
:mod:`tinynet.kernels.depthwise`.

The kernel ``[KH, KW, C, M]`` is used as ``[KH, KW, C * M]`` (output channel ``c * M + m``,
Keras's order). The work is cut into tasks of whole samples, fixed by the shape (at least
``MIN_TASKS`` of them, so both cores get work); the ``conv_parallel_min_elems`` gate
(here multiply-adds of the batch, the patch elements of the equivalent convolution)
decides whether the serial or the parallel driver runs them, never what they compute.
"""

from __future__ import annotations

import functools

import numpy as np

from tinynet import tuning
from tinynet.kernels import depthwise as dk
from tinynet.kernels.reduction import merge_cols

__all__ = ["MIN_TASKS", "depthwise_forward", "depthwise_backward"]

MIN_TASKS = 8
_GATE = "conv_parallel_min_elems"


@functools.lru_cache(maxsize=256)
def _tasks(batch: int) -> np.ndarray:
    """``[(b0, b1), ...]``: the batch in ``min(batch, MIN_TASKS)`` runs of whole samples."""
    per = -(-batch // MIN_TASKS) if batch else 1
    return np.array([(b, min(b + per, batch)) for b in range(0, batch, per)],
                    dtype=np.int64).reshape(-1, 2)


class _Plan:
    """One call's sizes: tasks, slots and the padded, expanded sample buffers."""

    def __init__(self, x_shape: tuple, w_shape: tuple, geometry: tuple) -> None:
        kh, kw, self.sh, self.sw, self.dh, self.dw, self.pt, self.pl, oh, ow = geometry
        self.batch, height, width, _ = x_shape
        self.cm = w_shape[-1]
        self.out_shape = (self.batch, oh, ow, self.cm)
        self.hp = max((oh - 1) * self.sh + (kh - 1) * self.dh + 1, self.pt + height)
        self.wp = max((ow - 1) * self.sw + (kw - 1) * self.dw + 1, self.pl + width)
        self.tasks = _tasks(self.batch)
        self.parallel = tuning.use_parallel(_GATE, self.batch * oh * ow * kh * kw * self.cm)
        threads = tuning.get_num_threads() if self.parallel else 1
        self.slots = max(min(threads, len(self.tasks)), 1)

    def buffers(self) -> np.ndarray:
        return np.empty((self.slots, self.hp, self.wp, self.cm), dtype=np.float32)

    def args(self) -> tuple:
        return (self.tasks, self.pt, self.pl, self.sh, self.sw, self.dh, self.dw)

    def rows(self, w3: np.ndarray) -> np.ndarray:
        """``w3[i, j]`` repeated across a padded row: ``[KH, KW, WP * C * M]``."""
        return np.ascontiguousarray(np.tile(w3, (1, 1, self.wp)))


def depthwise_forward(x: np.ndarray, w3: np.ndarray, geometry: tuple) -> np.ndarray:
    """The depthwise convolution of ``x`` (no bias).

    Args:
        x: float32 C-contiguous ``[B, H, W, C]``.
        w3: float32 C-contiguous kernel ``[KH, KW, C * M]``.
        geometry: ``(kh, kw, sh, sw, dh, dw, pad_top, pad_left, oh, ow)``.

    Returns:
        float32 ``[B, OH, OW, C * M]``.

    Shape:
        x: ``[B, H, W, C]``; w3: ``[KH, KW, C*M]``; output: ``[B, OH, OW, C*M]``.
    """
    plan = _Plan(x.shape, w3.shape, geometry)
    y = np.empty(plan.out_shape, dtype=np.float32)
    if y.size == 0:
        return y
    kernel = dk.forward_parallel if plan.parallel else dk.forward_serial
    kernel(x, w3, plan.rows(w3), y, *plan.args(), plan.buffers())
    return y


def depthwise_backward(x: np.ndarray, w3: np.ndarray, g: np.ndarray, geometry: tuple, *,
                       want_dx: bool = True, want_dw: bool = True
                       ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Input and kernel gradients of :func:`depthwise_forward` for the output gradient
    ``g`` (float32 C-contiguous ``[B, OH, OW, C * M]``): ``(dx, dw3)``, each ``None`` unless
    wanted; the kernel gradient's task partials are added in task order in float64.

    Shape:
        x, dx: ``[B, H, W, C]``; w3, dw3: ``[KH, KW, C*M]``; g: ``[B, OH, OW, C*M]``.
    """
    plan = _Plan(x.shape, w3.shape, geometry)
    dx = np.zeros(x.shape, dtype=np.float32) if want_dx else None
    dw3 = np.zeros(w3.shape, dtype=np.float32) if want_dw else None
    if not (want_dx or want_dw) or g.size == 0:
        return dx, dw3
    parts = np.empty((len(plan.tasks) if want_dw else 1, *w3.shape), dtype=np.float32)
    kernel = dk.backward_parallel if plan.parallel else dk.backward_serial
    wrow = plan.rows(w3)
    lead = (w3.shape[1] - 1) * plan.dw  # zero pixels before an output row's gradient
    kernel(x, w3, wrow, g, dx if want_dx else x, parts, want_dx, want_dw, *plan.args(),
           plan.buffers(), plan.buffers(), np.empty((plan.slots, *wrow.shape), np.float32),
           np.empty((plan.slots, (lead + plan.wp) * plan.cm), np.float32))
    if want_dw:
        dw3 = merge_cols(parts.reshape(parts.shape[0], -1), 1.0).reshape(w3.shape)
    return dx, dw3
