"""Tiled 2-D convolution on channels-last data: im2col -> GEMM -> col2im, tile by tile.

A whole-batch patch matrix is ``KH * KW`` times the input (19 MB for a
``32x32x32x16`` batch and a 3x3 kernel): writing it, reading it back for the GEMM and
doing the same for its gradient costs more than the multiplications. Here the patch
matrix only ever exists as a tile of :func:`tile_rows` rows (about 512 KB) in a
per-slot scratch buffer, which stays in the core's cache from the im2col through the
GEMMs (single-threaded BLAS called from the kernel, :mod:`tinynet.kernels.blas`) to the
col2im. The work is cut into *tasks* by shape alone:

* samples smaller than a tile are grouped, whole, into tiles (but into at least
  ``MIN_TASKS`` tasks, so both cores get work); a larger sample is one task whose
  output pixels are cut into tiles.
* **Forward**: per tile, im2col (each sample first copied into a zero-padded buffer, so
  patch rows need no boundary tests), one GEMM by the kernel ``[KH * KW * C, F]``
  into the tile's rows of the output, and the bias added to those rows.
* **Backward**: per tile, in order: the tile's ``dz`` rows added to the task's
  bias-gradient partial, im2col again (cheaper than keeping the patches),
  ``cols^T @ dz`` accumulated into the task's kernel-gradient partial, ``dz @ W^T`` into
  the patch tile, col2im into the sample's padded gradient, whose interior goes to
  ``dx[b]`` when the sample is complete. The task partials are summed in task order in
  float64.

Every task writes only its own output rows, samples and partial, so the serial kernel
(tasks in order) and the parallel one (tasks spread over the thread slots) give the same
bits for any thread count; the ``conv_parallel_min_elems`` gate (patch elements of the
batch) decides which runs. Everything runs inside one Numba region on Numba's thread
pool.
"""

from __future__ import annotations

import functools

import numpy as np

from tinynet import tuning
from tinynet.kernels import conv as ck
from tinynet.math.matmul import pin_blas_threads

__all__ = ["TILE_ELEMS", "MIN_TASKS", "tile_rows", "conv2d_forward", "conv2d_backward"]

TILE_ELEMS = 1 << 17  # patch-matrix elements per tile (512 KB of float32)
MIN_TASKS = 8         # small samples are grouped, but into at least this many tasks
_GATE = "conv_parallel_min_elems"


def tile_rows(patch_width: int) -> int:
    """Patch rows per tile: about ``TILE_ELEMS`` elements, at least one row."""
    return max(TILE_ELEMS // max(int(patch_width), 1), 1)


@functools.lru_cache(maxsize=256)
def _task_table(batch: int, per: int, step: int) -> np.ndarray:
    """``[(b0, b1), ...]``: whole samples grouped into tiles of at most ``step`` patch rows
    (but into at least ``MIN_TASKS`` tasks), or one sample per task when it needs
    several tiles. Depends on the shape alone."""
    spt = max(min(step // max(per, 1), -(-batch // MIN_TASKS)), 1)
    return np.array([(b, min(b + spt, batch)) for b in range(0, batch, spt)], dtype=np.int64)


class _Plan:
    """The sizes of one convolution, its fixed tasks and its scratch buffers."""

    __slots__ = ("batch", "ch", "per", "width", "filters", "step", "tasks", "hp", "wp",
                 "args", "parallel", "slots")

    def __init__(self, x_shape: tuple, w_shape: tuple, geometry: tuple) -> None:
        kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = (int(v) for v in geometry)
        self.batch, height, width, self.ch = (int(v) for v in x_shape)
        self.per = oh * ow
        self.width, self.filters = (int(v) for v in w_shape)
        self.step = tile_rows(self.width)
        if self.per > self.step:  # a sample in several tiles: equal tiles, no thin last one
            self.step = -(-self.per // -(-self.per // self.step))
        self.tasks = _task_table(self.batch, self.per, self.step)
        # the padded extent every tap of every output pixel needs (at least the input)
        self.hp = max((oh - 1) * sh + (kh - 1) * dh + 1, pt + height)
        self.wp = max((ow - 1) * sw + (kw - 1) * dw + 1, pl + width)
        self.args = (self.per, self.step, pt, pl, kh, kw, sh, sw, dh, dw, oh, ow)
        self.parallel = tuning.use_parallel(_GATE, self.batch * self.per * self.width)
        threads = tuning.get_num_threads() if self.parallel else 1
        self.slots = max(min(threads, len(self.tasks)), 1)

    def scratch(self) -> np.ndarray:
        """One padded-sample buffer per slot."""
        return np.empty((self.slots, self.hp, self.wp, self.ch), dtype=np.float32)

    def tiles(self) -> np.ndarray:
        """One patch tile per slot."""
        return np.empty((self.slots, min(self.step, self.batch * self.per), self.width),
                        dtype=np.float32)


def conv2d_forward(x: np.ndarray, w2: np.ndarray, geometry: tuple,
                   bias: np.ndarray | None = None) -> np.ndarray:
    """``im2col(x) @ w2 + bias`` without the whole patch matrix.

    Args:
        x: float32 C-contiguous ``[B, H, W, C]``.
        w2: float32 C-contiguous kernel ``[KH * KW * C, F]``.
        geometry: ``(kh, kw, sh, sw, dh, dw, pad_top, pad_left, oh, ow)``.
        bias: Optional ``[F]``, added to each tile while it is in cache.

    Returns:
        float32 ``[B * OH * OW, F]``, the (pre-activation) output of every output pixel.

    Shape:
        x: ``[B, H, W, C]``; w2: ``[KH*KW*C, F]``; output: ``[B*OH*OW, F]``.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    w2 = np.ascontiguousarray(w2, dtype=np.float32)
    plan = _Plan(x.shape, w2.shape, geometry)
    z = np.empty((plan.batch * plan.per, plan.filters), dtype=np.float32)
    if z.size == 0:
        return z
    pin_blas_threads()
    add_bias = bias is not None
    bias = (np.ascontiguousarray(bias, dtype=np.float32).reshape(-1) if add_bias
            else np.zeros(plan.filters, dtype=np.float32))
    kernel = ck.conv_forward_parallel if plan.parallel else ck.conv_forward_serial
    kernel(x, w2, bias, add_bias, z, plan.tasks, *plan.args, plan.scratch(), plan.tiles())
    return z


def conv2d_backward(x: np.ndarray, w2: np.ndarray, dz: np.ndarray, geometry: tuple, *,
                    want_dx: bool = True, want_dw: bool = True, want_db: bool = False
                    ) -> tuple[np.ndarray | None, np.ndarray | None, np.ndarray | None]:
    """Input and kernel gradients of :func:`conv2d_forward`.

    Args:
        x: The forward input, float32 C-contiguous ``[B, H, W, C]``.
        w2: The kernel ``[KH * KW * C, F]``.
        dz: dL/d(pre-bias output), float32 C-contiguous ``[B * OH * OW, F]``.
        geometry: As for :func:`conv2d_forward`.
        want_dx: Compute ``dx`` (``None`` otherwise).
        want_dw: Compute the kernel gradient (``None`` otherwise).
        want_db: Compute the bias gradient, the column sums of ``dz`` (``None`` otherwise).

    Returns:
        ``(dx [B, H, W, C], dw2 [KH * KW * C, F], db [F])``; each task's partial sums are
        added in task order in float64.

    Shape:
        x, dx: ``[B, H, W, C]``; w2, dw2: ``[KH*KW*C, F]``; dz: ``[B*OH*OW, F]``; db: ``[F]``.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    w2 = np.ascontiguousarray(w2, dtype=np.float32)
    dz = np.ascontiguousarray(dz, dtype=np.float32)
    plan = _Plan(x.shape, w2.shape, geometry)
    # every sample of dx is written by the kernel (unless there is nothing to compute)
    dx = (np.empty if dz.size else np.zeros)(x.shape, dtype=np.float32) if want_dx else None
    dw2 = np.zeros(w2.shape, dtype=np.float32) if want_dw else None
    db = np.zeros(plan.filters, dtype=np.float32) if want_db else None
    if not (want_dx or want_dw or want_db) or dz.size == 0:
        return dx, dw2, db
    ntasks = len(plan.tasks)
    parts = np.empty((ntasks if want_dw else 1, plan.width, plan.filters), dtype=np.float32)
    bparts = np.empty((ntasks, plan.filters), dtype=np.float32)
    pin_blas_threads()
    kernel = ck.conv_backward_parallel if plan.parallel else ck.conv_backward_serial
    kernel(x, w2, dz, dx if want_dx else x, parts, bparts, want_dx, want_dw, want_db,
           plan.tasks, *plan.args, plan.scratch(), plan.scratch(), plan.tiles())
    if want_dw:
        dw2 = _merge(parts)
    if want_db:
        db = _merge(bparts)
    return dx, dw2, db


def _merge(parts: np.ndarray) -> np.ndarray:
    """Sum of the task partials, added in task order in float64, as float32."""
    acc = np.zeros(parts.shape[1:], dtype=np.float64)
    for part in parts:
        acc += part
    return acc.astype(np.float32)
