"""Pooling operations: window geometry, and the serial or parallel kernel of each pass.

The operation step between the pooling layers and their kernels
(:mod:`tinynet.kernels.pooling`, where the blocks and their order are described): it
converts the input, computes the window geometry once per call (TF/Keras "valid" and
"same", the odd pad cell at the end) as small per-row and per-column bound arrays, so
kernels never divide inside their loops, and picks the serial or parallel kernel with the
``pool_parallel_min_elems`` gate (compared with the input element count). Both give the
same bits.
"""

from __future__ import annotations

import functools

import numpy as np

from tinynet import tuning
from tinynet.kernels import pooling as pk
from tinynet.kernels.address import run_tasks
from tinynet.kernels.reduction import rows_per_block
from tinynet.ops.arrays.windows import window_axis

__all__ = [
    "GATE", "window_bounds", "rows_per_block",
    "max_pool2d_forward", "max_pool2d_backward", "avg_pool2d_forward", "avg_pool2d_backward",
    "global_avg_pool2d_forward", "global_avg_pool2d_backward",
    "global_max_pool2d_forward", "global_max_pool2d_backward",
]

GATE = "pool_parallel_min_elems"


def window_bounds(size: int, pool: int, stride: int, padding: str) -> tuple[np.ndarray, np.ndarray]:
    """In-bounds ``[lo, hi)`` input range of every output position along one axis (int64)."""
    out, pad = window_axis(size, pool, stride, padding)
    starts = np.arange(out, dtype=np.int64) * stride - pad
    return np.maximum(starts, 0), np.minimum(starts + pool, size)


def _covering(lo: np.ndarray, hi: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """For each input index ``i``, the output range ``[first, stop)`` whose windows hold ``i``."""
    pos = np.arange(size, dtype=np.int64)
    first = np.searchsorted(hi, pos, side="right").astype(np.int64)
    stop = np.searchsorted(lo, pos, side="right").astype(np.int64)
    return first, stop


def _f32(x) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


def _geometry(shape: tuple, pool_size: tuple[int, int], strides: tuple[int, int], padding: str):
    return _bounds(int(shape[1]), int(shape[2]), *pool_size, *strides, padding)


# Per shape, not per call (a training step pools a few small tensors; building the bound
# arrays cost about as much as the kernel). The arrays are shared: nothing writes them.
@functools.lru_cache(maxsize=256)
def _bounds(height: int, width: int, ph: int, pw: int, sh: int, sw: int, padding: str):
    hlo, hhi = window_bounds(height, ph, sh, padding)
    wlo, whi = window_bounds(width, pw, sw, padding)
    return hlo, hhi, wlo, whi


@functools.lru_cache(maxsize=256)
def _covering_rows(height: int, width: int, ph: int, pw: int, sh: int, sw: int,
                   padding: str) -> tuple[np.ndarray, np.ndarray]:
    hlo, hhi = _bounds(height, width, ph, pw, sh, sw, padding)[:2]
    return _covering(hlo, hhi, height)


def max_pool2d_forward(x, pool_size: tuple[int, int], strides: tuple[int, int],
                       padding: str) -> tuple[np.ndarray, np.ndarray]:
    """Max pooling of ``x`` ``[N, H, W, C]``.

    Returns:
        ``(out, argmax)``: ``out`` ``[N, OH, OW, C]`` float32 and ``argmax`` (same shape,
        int32) holding the flat in-sample position ``h * W + w`` of each maximum (the
        first in row-major window order on ties; NaN propagates).
    """
    x = _f32(x)
    hlo, hhi, wlo, whi = _geometry(x.shape, pool_size, strides, padding)
    shape = (x.shape[0], hlo.size, wlo.size, x.shape[3])
    out = np.empty(shape, dtype=np.float32)
    arg = np.empty(shape, dtype=np.int32)
    run_tasks(pk.max_fwd_serial, shape[0] * shape[1], tuning.use_parallel(GATE, x.size),
              x, out, arg, hlo, hhi, wlo, whi)
    return out, arg


def max_pool2d_backward(grad_output, argmax: np.ndarray, input_shape: tuple,
                        pool_size: tuple[int, int], strides: tuple[int, int],
                        padding: str) -> np.ndarray:
    """Routes ``grad_output`` ``[N, OH, OW, C]`` to the recorded maxima; returns ``[N, H, W, C]``."""
    g = _f32(grad_output)
    arg = np.ascontiguousarray(argmax, dtype=np.int32)
    hlo, hhi, wlo, whi = _geometry(input_shape, pool_size, strides, padding)
    ofirst, ostop = _covering_rows(int(input_shape[1]), int(input_shape[2]), *pool_size,
                                   *strides, padding)
    gx = np.empty(tuple(input_shape), dtype=np.float32)
    run_tasks(pk.max_bwd_serial, gx.shape[0] * gx.shape[1], tuning.use_parallel(GATE, gx.size),
              g, arg, gx, ofirst, ostop, wlo, whi)
    return gx


def avg_pool2d_forward(x, pool_size: tuple[int, int], strides: tuple[int, int],
                       padding: str) -> np.ndarray:
    """Average pooling of ``x`` ``[N, H, W, C]`` over in-bounds cells; returns ``[N, OH, OW, C]``.

    Each window is summed in float32 in row-major window order, then divided by its
    in-bounds cell count (TF/Keras "same" semantics).
    """
    x = _f32(x)
    hlo, hhi, wlo, whi = _geometry(x.shape, pool_size, strides, padding)
    out = np.empty((x.shape[0], hlo.size, wlo.size, x.shape[3]), dtype=np.float32)
    run_tasks(pk.avg_fwd_serial, out.shape[0] * out.shape[1], tuning.use_parallel(GATE, x.size),
              x, out, hlo, hhi, wlo, whi)
    return out


def avg_pool2d_backward(grad_output, input_shape: tuple, pool_size: tuple[int, int],
                        strides: tuple[int, int], padding: str) -> np.ndarray:
    """Spreads ``grad_output / count`` over each window; returns ``[N, H, W, C]``."""
    g = _f32(grad_output)
    hlo, hhi, wlo, whi = _geometry(input_shape, pool_size, strides, padding)
    ofirst, ostop = _covering_rows(int(input_shape[1]), int(input_shape[2]), *pool_size,
                                   *strides, padding)
    gx = np.empty(tuple(input_shape), dtype=np.float32)
    run_tasks(pk.avg_bwd_serial, gx.shape[0] * gx.shape[1], tuning.use_parallel(GATE, gx.size),
              g, gx, ofirst, ostop, hlo, hhi, wlo, whi)
    return gx


def global_avg_pool2d_forward(x) -> np.ndarray:
    """Mean over every position of ``x`` ``[N, H, W, C]``; returns ``[N, C]`` float32.

    Positions are summed in order in float64, in fixed blocks of ``rows_per_block(C)``
    positions per sample; block partials are merged in block order.
    """
    x = _f32(x)
    N, H, W, C = x.shape
    out = np.empty((N, C), dtype=np.float32)
    kernel = pk.gap_fwd_parallel if tuning.use_parallel(GATE, x.size) else pk.gap_fwd_serial
    kernel(x.reshape(N, H * W, C), out, rows_per_block(C))
    return out


def global_avg_pool2d_backward(grad_output, input_shape: tuple) -> np.ndarray:
    """Broadcasts ``grad_output`` ``[N, C]`` divided by ``H * W`` to ``[N, H, W, C]``."""
    N, H, W, C = input_shape
    g = np.asarray(grad_output, dtype=np.float32).reshape(N, C)
    share = np.ascontiguousarray((g.astype(np.float64) / (H * W)).astype(np.float32))
    gx = np.empty((N, H, W, C), dtype=np.float32)
    run_tasks(pk.broadcast_serial, N * H, tuning.use_parallel(GATE, gx.size), share, gx)
    return gx


def global_max_pool2d_forward(x) -> tuple[np.ndarray, np.ndarray]:
    """Max over every position of ``x`` ``[N, H, W, C]``.

    Returns:
        ``(out, argmax)``, both ``[N, C]``: the maxima (float32) and their flat in-sample
        positions ``h * W + w`` (int32; the first on ties; NaN propagates).
    """
    x = _f32(x)
    N, H, W, C = x.shape
    out = np.empty((N, C), dtype=np.float32)
    arg = np.empty((N, C), dtype=np.int32)
    kernel = pk.gmp_fwd_parallel if tuning.use_parallel(GATE, x.size) else pk.gmp_fwd_serial
    kernel(x.reshape(N, H * W, C), out, arg, rows_per_block(C))
    return out, arg


def global_max_pool2d_backward(grad_output, argmax: np.ndarray, input_shape: tuple) -> np.ndarray:
    """Puts ``grad_output`` ``[N, C]`` at each recorded maximum; zeros elsewhere."""
    N, H, W, C = input_shape
    g = np.asarray(grad_output, dtype=np.float32).reshape(N, C)
    gx = np.zeros((N, H * W, C), dtype=np.float32)
    gx[np.arange(N)[:, None], argmax, np.arange(C)[None, :]] = g
    return gx.reshape(N, H, W, C)
