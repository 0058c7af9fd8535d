"""2-D convolution on channels-last data: direct register kernels, or im2col -> GEMM -> col2im.

**Direct** (:mod:`tinynet.kernels.conv_direct`): when the output channels come in
multiples of 16 (and a sample has at least 8 output pixels), the forward runs fused
multiply-adds on 8-pixel by 32-channel register blocks straight from a zero-padded copy
of each sample, with no patch matrix; the kernel gradient the same way with 8 kernel
rows by 32 filters per block; the input gradient of a stride-1 convolution with at least
16 input channels is the same correlation as the forward, of the zero-padded output
gradient with the flipped, transposed kernel. Whatever these cannot do runs on the
tiled path below; the choice depends on the shape alone.

**Tiled**: a whole-batch patch matrix is ``KH * KW`` times the input (19 MB for a
``32x32x32x16`` batch and a 3x3 kernel): writing it, reading it back for the GEMM and
doing the same for its gradient costs more than the multiplications. Here the patch
matrix only ever exists as a tile of :func:`tile_rows` rows (about 512 KB) in a
per-slot scratch buffer, which stays in the core's cache from the im2col through the
GEMMs (tinynet's own fixed-order GEMM, :mod:`tinynet.kernels.sgemm`, called from the
kernel) to the col2im. The work is cut into *tasks* by shape alone:

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
from tinynet.kernels import _jit
from tinynet.kernels import conv as ck
from tinynet.kernels import conv_direct as cd
from tinynet.kernels import sgemm
from tinynet.kernels.reduction import merge_cols
from tinynet.ops.arrays.streaming import empty_tasks

__all__ = ["TILE_ELEMS", "MIN_TASKS", "tile_rows", "conv2d_forward", "conv2d_backward",
           "conv2d_input_grad"]

TILE_ELEMS = 1 << 17  # patch-matrix elements per tile (512 KB of float32)
MIN_TASKS = 8         # small samples are grouped, but into at least this many tasks
_GATE = "conv_parallel_min_elems"
_NO_BIAS = np.zeros(0, dtype=np.float32)  # the tiled backward's dx_bias when none is added


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


@functools.lru_cache(maxsize=256)
def _row_offsets(kh: int, kw: int, dh: int, dw: int, channels: int, wp: int,
                 multiple: int) -> np.ndarray:
    taps = (np.arange(kh)[:, None] * dh * wp + np.arange(kw)[None, :] * dw) * channels
    roff = (taps.reshape(-1, 1) + np.arange(channels)).reshape(-1)
    # shared, so never written to (kept writeable: a read-only array is another Numba type)
    return np.concatenate([roff, np.zeros(-roff.size % multiple, roff.dtype)])


class _Plan:
    """The sizes of one convolution, its fixed tasks and its scratch buffers."""

    __slots__ = ("batch", "ch", "per", "width", "filters", "step", "tasks", "hp", "wp",
                 "args", "parallel", "slots", "threads", "geometry", "in_hw")

    def __init__(self, x_shape: tuple, w_shape: tuple, geometry: tuple) -> None:
        kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = self.geometry = tuple(int(v) for v in geometry)
        self.batch, height, width, self.ch = (int(v) for v in x_shape)
        self.in_hw = (height, width)
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
        self.threads = tuning.get_num_threads() if self.parallel else 1
        self.slots = max(min(self.threads, len(self.tasks)), 1)

    def scratch(self, slots: int | None = None) -> np.ndarray:
        """One padded-sample buffer per slot."""
        return empty_tasks((slots or self.slots, self.hp, self.wp, self.ch),
                           parallel=self.parallel)

    def direct_forward(self) -> bool:
        """Whether the forward (and the kernel gradient) run on the direct kernels."""
        return self.filters % 16 == 0 and self.per >= cd.BLOCK

    def direct_input_grad(self) -> tuple[int, int] | None:
        """The output gradient's top/left padding when the input gradient runs on the
        direct kernels (stride 1, input channels a multiple of 16), else ``None``."""
        kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = self.geometry
        height, width = self.in_hw
        ptd, pld = (kh - 1) * dh - pt, (kw - 1) * dw - pl
        ok = (sh == sw == 1 and self.ch % 16 == 0 and height * width >= cd.BLOCK
              and ptd >= 0 and pld >= 0 and oh <= height + pt and ow <= width + pl)
        return (ptd, pld) if ok else None

    def row_offsets(self, channels: int, wp: int, multiple: int = 1) -> np.ndarray:
        """``roff[r]``, kernel row ``r = (i * KW + j) * channels + c`` -> its offset from a
        pixel's corner in a padded sample ``wp`` wide; zeros appended up to a multiple of
        ``multiple`` rows (shared by every call with the same sizes; never written)."""
        kh, kw, _, _, dh, dw = self.geometry[:6]
        return _row_offsets(kh, kw, dh, dw, channels, wp, multiple)

    def offsets(self, slots: int) -> np.ndarray:
        """One block of pixel offsets per slot."""
        return empty_tasks((slots, cd.BLOCK), np.int64, parallel=self.parallel)

    def tiles(self) -> np.ndarray:
        """One patch tile per slot."""
        return empty_tasks((self.slots, min(self.step, self.batch * self.per), self.width),
                           parallel=self.parallel)


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
    if z.size == 0 or _jit.SHAPES_ONLY:  # (the compile-ahead helper's backward-first runs)
        return z
    add_bias = bias is not None
    bias = (np.ascontiguousarray(bias, dtype=np.float32).reshape(-1) if add_bias
            else np.zeros(plan.filters, dtype=np.float32))
    if plan.direct_forward():
        kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = plan.geometry
        slots = max(min(plan.threads, plan.batch), 1)
        kernel = cd.forward_kernel(cd.NARROW, plan.parallel)
        kernel(x, w2.reshape(-1), plan.row_offsets(plan.ch, plan.wp), bias, add_bias, z, pt,
               pl, oh, ow, sh, sw, plan.scratch(slots), plan.offsets(slots))
        return z
    sgemm.ready()  # the tiled kernels' products call the C GEMM
    args = (x, w2, bias, add_bias, z, plan.tasks, *plan.args, plan.scratch(), plan.tiles())
    if plan.parallel:
        ck.conv_forward_parallel(*args)
    else:
        ck.conv_forward_serial(*args, 0, args[-1].shape[0])
    return z


def conv2d_backward(x: np.ndarray, w2: np.ndarray, dz: np.ndarray, geometry: tuple, *,
                    want_dx: bool = True, want_dw: bool = True, want_db: bool = False,
                    dx_bias: np.ndarray | None = None
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
        dx_bias: Optional ``[C]``, added to every finished ``dx`` element (a transposed
            convolution's bias; on the tiled path while the sample is in cache).

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
        if want_dx and dx_bias is not None:
            np.add(dx, _bias_vector(dx_bias, plan.ch), out=dx)
        return dx, dw2, db
    ntasks = len(plan.tasks)
    bparts = empty_tasks((ntasks, plan.filters), parallel=plan.parallel)
    direct_dw = want_dw and plan.direct_forward()
    pads = plan.direct_input_grad() if want_dx else None
    if direct_dw or pads is not None:  # the bias gradient comes with the direct pass
        dw_direct = _direct_backward(plan, x, w2, dz, dx, bparts, pads, direct_dw, want_db,
                                     dx_bias)
        if direct_dw:
            dw2 = dw_direct
        if want_db:
            db = _merge(bparts)
        want_db = False
    tiled_dx = want_dx and pads is None
    tiled_dw = want_dw and not direct_dw
    if tiled_dx or tiled_dw or want_db:
        parts = empty_tasks((ntasks if tiled_dw else 1, plan.width, plan.filters),
                            parallel=plan.parallel)
        sgemm.ready()  # the tiled kernels' products call the C GEMM
        add_dx_bias = tiled_dx and dx_bias is not None
        bias = _bias_vector(dx_bias, plan.ch) if add_dx_bias else _NO_BIAS
        args = (x, w2, dz, dx if tiled_dx else x, bias, add_dx_bias, parts, bparts, tiled_dx,
                tiled_dw, want_db,
                plan.tasks, *plan.args, plan.scratch(), plan.scratch(), plan.tiles())
        if plan.parallel:
            ck.conv_backward_parallel(*args)
        else:
            ck.conv_backward_serial(*args, 0, args[-1].shape[0])
        if tiled_dw:
            dw2 = _merge(parts)
        if want_db:
            db = _merge(bparts)
    return dx, dw2, db


def conv2d_input_grad(dz: np.ndarray, w2: np.ndarray, geometry: tuple, x_shape: tuple,
                      bias: np.ndarray | None = None) -> np.ndarray:
    """The input gradient alone of :func:`conv2d_forward` on an input of ``x_shape``: the
    transposed convolution of ``dz``, plus ``bias`` (``[C]``) if given, added to each
    finished sum (the bits of a bias pass after it). (Without the kernel gradient the
    kernels never read the forward input, so an unfilled array of its shape stands in
    for it.)

    Shape:
        dz: ``[B*OH*OW, F]``; w2: ``[KH*KW*C, F]``; bias: ``[C]``; output: ``x_shape`` =
        ``[B, H, W, C]``.
    """
    placeholder = np.empty(x_shape, dtype=np.float32)
    return conv2d_backward(placeholder, w2, dz, geometry, want_dx=True, want_dw=False,
                           dx_bias=bias)[0]


def _bias_vector(bias: np.ndarray, channels: int) -> np.ndarray:
    """``bias`` as a C-contiguous float32 ``[channels]`` vector."""
    return np.ascontiguousarray(bias, dtype=np.float32).reshape(channels)


def _direct_backward(plan: _Plan, x: np.ndarray, w2: np.ndarray, dz: np.ndarray,
                     dx: np.ndarray | None, bparts: np.ndarray, pads: tuple[int, int] | None,
                     want_dw: bool, want_db: bool,
                     dx_bias: np.ndarray | None = None) -> np.ndarray | None:
    """The direct kernels' share of the backward: the kernel gradient (returned) if
    ``want_dw``, ``dx`` if ``pads`` (the output gradient's top/left padding) is given,
    plus ``dx_bias`` if given (the forward pass's bias add), the bias partials ``bparts``
    if ``want_db``."""
    kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = plan.geometry
    height, width = plan.in_hw
    dz4 = dz.reshape(plan.batch, oh, ow, plan.filters)
    parts = None
    if want_dw or want_db:
        roff = plan.row_offsets(plan.ch, plan.wp, cd.GRAD_ROWS)
        parts = empty_tasks((len(plan.tasks) if want_dw else 1, roff.size, plan.filters),
                            parallel=plan.parallel)
        kernel = cd.backward_kernel(cd.NARROW, plan.parallel)
        kernel(x, dz4, roff, parts, bparts, want_dw, want_db, plan.tasks, pt, pl, oh, ow, sh,
               sw, plan.scratch())
    if pads is not None:
        # dx = the forward pass over dz zero-padded by ``pads``, with the kernel flipped
        # in space and transposed, [KH, KW, F, C]; dx_bias as its bias (added to each
        # finished sum, the bits of a bias pass after it)
        ptd, pld = pads
        hpd, wpd = height + (kh - 1) * dh, width + (kw - 1) * dw
        wt = np.ascontiguousarray(w2.reshape(kh, kw, plan.ch, plan.filters)[::-1, ::-1]
                                  .transpose(0, 1, 3, 2)).reshape(-1)
        slots = max(min(plan.threads, plan.batch), 1)
        dzps = empty_tasks((slots, hpd, wpd, plan.filters), parallel=plan.parallel)
        kernel = cd.forward_kernel(cd.NARROW, plan.parallel)
        add_bias = dx_bias is not None
        bias = _bias_vector(dx_bias, plan.ch) if add_bias else np.zeros(plan.ch, np.float32)
        kernel(dz4, wt, plan.row_offsets(plan.filters, wpd), bias,
               add_bias, dx.reshape(-1, plan.ch), ptd, pld, height, width, 1, 1, dzps,
               plan.offsets(slots))
    return _merge(parts)[:plan.width] if want_dw else None


def _merge(parts: np.ndarray) -> np.ndarray:
    """Sum of the task partials ``parts[task, ...]``, added in task order in float64
    (the shared ordered merge of :mod:`tinynet.kernels.reduction`), as float32."""
    flat = parts.reshape(parts.shape[0], -1)
    return merge_cols(flat, 1.0).reshape(parts.shape[1:])
