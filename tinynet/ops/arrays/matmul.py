"""Deterministic float32 GEMM: tinynet's own fixed-order kernel, the same bits on any CPU.

Every element of a product is one chain of fused multiply-adds over the inner index in
increasing order (:mod:`tinynet.kernels.sgemm`), whatever the CPU, the blocking, the
thread count or the value of the ``matmul_parallel_min_flops`` gate: the parallel kernel
only hands bands of the output to Numba's threads (:func:`tinynet.tuning.get_num_threads`,
the same pool as every other tinynet kernel), so :func:`matmul` gives the same bits
serial or parallel. Products of fewer than :data:`SMALL_MULADDS` multiply-adds run
single-threaded in :func:`~tinynet.kernels.sgemm_small.gemm_small` instead, the same
chains in a kernel that compiles in a fraction of the blocked one's time (a small
model's first run never compiles the blocked GEMM). No BLAS takes part (a BLAS picks its
inner kernel by CPU, and its sums by its own thread count).

:func:`weight_gradient` (``x.T @ g`` over many sample positions) is the exception to the
one chain: it cuts a long inner index into row ranges fixed by the shape alone, each
range one chain per element, the ranges added in order; the threads share the ranges,
so its bits too are those of any thread count and gate.
"""

from __future__ import annotations

import threading

import numpy as np

from tinynet import tuning
from tinynet.kernels.sgemm import (MR, NR, gemm_parallel, gemm_parts_parallel, gemm_parts_serial,
                                   gemm_serial, ready, workspace_size)
from tinynet.kernels.sgemm_small import gemm_small, padded_columns
from tinynet.ops.arrays.streaming import empty_tasks

__all__ = ["SMALL_MULADDS", "PART_ROWS", "MAX_PARTS", "matmul", "weight_gradient"]

#: Products of fewer multiply-adds than this run in the small-product kernel (one thread).
SMALL_MULADDS = 1 << 22
#: :func:`weight_gradient` cuts its inner index into parts of at least this many rows...
PART_ROWS = 2048
#: ...and into at most this many.
MAX_PARTS = 8

_scratch_local = threading.local()  # this thread's packing scratch, reused across products


def _scratch(tasks: int, m: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's packing scratch for ``tasks`` tasks of an ``[m, k] @ [k, n]`` product
    (kept and grown: a fresh buffer of a few MiB would come from the system page by page)."""
    size = workspace_size(m, n, k)
    ws = getattr(_scratch_local, "ws", None)
    if ws is None or ws.shape[0] < tasks or ws.shape[1] < size:
        rows = max(tasks, 0 if ws is None else ws.shape[0])
        cols = max(-(-size // 16) * 16, 0 if ws is None else ws.shape[1])
        # each task's rows on whole 64-byte lines: two threads never write one line
        ws = _scratch_local.ws = empty_tasks((rows, cols))
        _scratch_local.wt = empty_tasks((rows, MR, NR))
    return ws[:tasks], _scratch_local.wt[:tasks]


def _small_scratch(k: int, npad: int) -> tuple[np.ndarray, np.ndarray]:
    """This thread's ``[k, npad]`` copy of ``op(b)`` and a vector's lanes (kept and grown)."""
    bp = getattr(_scratch_local, "bp", None)
    if bp is None or bp.size < k * npad:
        bp = _scratch_local.bp = np.empty(max(k * npad, 1), dtype=np.float32)
        _scratch_local.row = np.empty(16, dtype=np.float32)
    return bp[:k * npad].reshape(k, npad), _scratch_local.row


def _as_matrix(x, arg: str, fn: str = "matmul") -> np.ndarray:
    arr = np.ascontiguousarray(x, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"{fn}: {arg} must be a 2-D array, got shape {arr.shape}")
    return arr


def matmul(a, b, out: np.ndarray | None = None, *, trans_a: bool = False,
           trans_b: bool = False) -> np.ndarray:
    """Deterministic ``op(a) @ op(b)`` in float32, with ``op`` an optional transpose.

    Each element is :func:`tinynet.kernels.sgemm.gemm`'s chain of fused multiply-adds
    over the inner index in order: bitwise independent of the CPU, of
    :func:`tinynet.tuning.get_num_threads` and of the ``matmul_parallel_min_flops`` gate.

    Args:
        a: ``[M, K]`` (or ``[K, M]`` with ``trans_a``), converted to C-contiguous float32.
        b: ``[K, N]`` (or ``[N, K]`` with ``trans_b``), converted likewise.
        out: Optional C-contiguous float32 ``[M, N]`` array to write into; it must not
            overlap ``a`` or ``b``.
        trans_a: Use ``a.T``.
        trans_b: Use ``b.T``.

    Returns:
        The ``[M, N]`` float32 product (``out`` when given).

    Raises:
        ValueError: Not 2-D, mismatched inner sizes, or a bad ``out``.
    """
    a = _as_matrix(a, "a")
    b = _as_matrix(b, "b")
    av = a.T if trans_a else a
    bv = b.T if trans_b else b
    m, k = av.shape
    k2, n = bv.shape
    if k != k2:
        raise ValueError(
            f"matmul: inner sizes differ: op(a) is {av.shape}, op(b) is {bv.shape}")
    if out is None:
        out = np.empty((m, n), dtype=np.float32)
    else:
        if (not isinstance(out, np.ndarray) or out.dtype != np.float32
                or out.shape != (m, n) or not out.flags.c_contiguous):
            raise ValueError(
                f"matmul: out must be a C-contiguous float32 array of shape {(m, n)}, got "
                f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            raise ValueError("matmul: out must not overlap a or b")
    if m == 0 or n == 0:
        return out
    if k == 0:
        out.fill(0.0)
        return out
    if m * n * k < SMALL_MULADDS:
        bp, row = _small_scratch(k, padded_columns(n))
        gemm_small(a, b, out, trans_a, trans_b, bp, row)
        return out
    ready()
    if trans_a and not trans_b and m < n and n > 2 * NR and k >= 4 * n:
        # A long weight gradient ``x.T @ dz`` with fewer rows than columns runs as ``(dz.T @
        # x).T``: the same chains (a multiply-add's two factors commute exactly), with the
        # tiles over the longer side, so each packed panel serves more row strips (shorter
        # products lose more to the transposing copy than they gain).
        swapped = np.empty((n, m), dtype=np.float32)
        _blocked(b, a, swapped, True, False, m * n * k)
        np.copyto(out, swapped.T)
        return out
    _blocked(a, b, out, trans_a, trans_b, m * n * k)
    return out


def weight_gradient(x, g) -> np.ndarray:
    """``x.T @ g`` for a weight gradient: one row of ``x`` and ``g`` per sample position.

    A long inner index with a small output (``K >= 16 * max(M, N)``, at least
    ``2 * PART_ROWS`` rows and :data:`SMALL_MULADDS` multiply-adds) is cut into an even
    number, ``min(MAX_PARTS, K // PART_ROWS)`` rounded down, of consecutive ranges of rows
    (so two threads take half each): each range's product is
    :func:`matmul`'s chains over its rows, and the parts are added in order,
    ``((p0 + p1) + p2) + ...``. The cut depends on the shape alone, so the bits are
    independent of the thread count and the ``matmul_parallel_min_flops`` gate; the
    threads share the parts, each reading its own rows of both operands (bands of so small
    an output would give every thread all of one operand). Any other shape is
    ``matmul(x, g, trans_a=True)``.

    Args:
        x: ``[K, M]``, converted to C-contiguous float32.
        g: ``[K, N]``, converted likewise.

    Returns:
        The ``[M, N]`` float32 product.

    Raises:
        ValueError: Not 2-D, or different row counts.

    Shape:
        x: ``[K, M]``; g: ``[K, N]``; output: ``[M, N]``.
    """
    x = _as_matrix(x, "x", "weight_gradient")
    g = _as_matrix(g, "g", "weight_gradient")
    k, m = x.shape
    if g.shape[0] != k:
        raise ValueError(
            f"weight_gradient: x and g must have the same rows, got {x.shape} and {g.shape}")
    n = g.shape[1]
    parts = min(MAX_PARTS, k // PART_ROWS) // 2 * 2  # even: two threads take half each
    if parts < 2 or k < 16 * max(m, n) or m * n * k < SMALL_MULADDS:
        return matmul(x, g, trans_a=True)
    ready()
    out = np.empty((m, n), dtype=np.float32)
    tasks, ws, wt = _tasks(m * n * k, m, n, (k + parts - 1) // parts, parts)
    acc = empty_tasks((parts, m, n), parallel=tasks > 1)
    (gemm_parts_parallel if tasks > 1 else gemm_parts_serial)(x, g, out, acc, ws, wt)
    return out


def _tasks(muladds: int, m: int, n: int, k: int, most: int | None = None
           ) -> tuple[int, np.ndarray, np.ndarray]:
    """``(tasks, ws, wt)``: how many tasks (at most ``most``) the gate and the thread count
    give a product of ``muladds`` multiply-adds, and this thread's scratch for them (an
    ``[m, k] @ [k, n]`` product per task)."""
    tasks = 1
    if tuning.use_parallel("matmul_parallel_min_flops", muladds):
        tasks = tuning.get_num_threads()
        tasks = tasks if most is None else min(most, tasks)
    ws, wt = _scratch(tasks, m, n, k)
    return tasks, ws, wt


def _blocked(a: np.ndarray, b: np.ndarray, out: np.ndarray, trans_a: bool, trans_b: bool,
             muladds: int) -> None:
    """``out = op(a) @ op(b)`` in the blocked GEMM, on Numba's threads when the gate says so."""
    m, n = out.shape
    k = a.shape[0] if trans_a else a.shape[1]
    tasks, ws, wt = _tasks(muladds, m, n, k)
    (gemm_parallel if tasks > 1 else gemm_serial)(a, b, out, trans_a, trans_b, 0.0, ws, wt)
