"""Deterministic float32 GEMM: fixed, shape-derived blocks, each one single-threaded BLAS call.

OpenBLAS splits a multi-threaded GEMM by its own thread count, and the bits change with
it (an sgemm of 1000x1000x1000 differs between 1 and 2 threads). tinynet therefore runs
each of its BLAS calls single-threaded (each call sets its own thread to one BLAS thread
and back, :mod:`tinynet.kernels.blas`; a BLAS without that thread-local setting is held at
one thread around tinynet's products by :func:`single_threaded_blas`, which puts the
user's thread count back afterwards) and does the splitting itself:

* the output is tiled into row blocks (and column blocks when the rows run out), or, for
  reduction-heavy products such as weight gradients ``X^T @ dY`` (a long inner dimension
  and a small output), the inner dimension is cut into fixed chunks whose partial
  products are added in chunk order;
* the tiling depends on ``(M, N, K)`` alone, never on the thread count or on a gate;
  a product is cut into at most 8 tiles, since every tile is a BLAS call that packs its
  operands again (with 32, Dense 1024x512 -> 512 forward and backward took 1.45x as
  long on 2 threads; 8 tiles still keep 8 threads busy);
* every tile is one single-threaded BLAS call made from a Numba kernel
  (:mod:`tinynet.kernels.blas`); the serial kernel runs the tiles in order, the parallel
  one spreads them over Numba's threads (:func:`tinynet.tuning.get_num_threads`), the
  same pool as every other tinynet kernel.

So :func:`matmul` gives the same bits serial or parallel, for any thread count and any
value of the ``matmul_parallel_min_flops`` gate.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from collections.abc import Iterator

import numpy as np

from tinynet import tuning
from tinynet.kernels.blas import LOCAL_THREADS, gemm_tiles_parallel, gemm_tiles_serial

__all__ = ["matmul", "plan", "single_threaded_blas"]

_MIN_TASK_WORK = 1 << 20   # multiply-adds per tile, at least (keeps call overhead small)
_MAX_TASKS = 8             # most tiles per product (each re-packs its operands)
_ROW_ALIGN = 16            # row-block sizes are multiples of this
_COL_ALIGN = 64            # column-block sizes are multiples of this
_K_ALIGN = 256             # inner-dimension chunk sizes are multiples of this
_K_SPLIT_MIN = 4096        # the inner dimension is split only from this length on
_K_SPLIT_MAX_ELEMS = 1 << 22  # most partial-product elements kept for an inner split

# -- BLAS threads ---------------------------------------------------------------------

_blas_lock = threading.Lock()
_blas_libs: list | None = None  # threadpoolctl's controllers of the BLAS NumPy loaded
_blas_depth = 0                  # open single_threaded_blas() scopes, all threads
_blas_saved: list = []           # (library, the thread count to put back)


def _blas() -> list:
    global _blas_libs
    if _blas_libs is None:
        with _blas_lock:
            if _blas_libs is None:
                np.dot(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))  # load BLAS
                from threadpoolctl import ThreadpoolController

                libs = ThreadpoolController().select(user_api="blas").lib_controllers
                if not libs:
                    warnings.warn(
                        "tinynet.math.matmul: could not find NumPy's BLAS thread control; "
                        "GEMM results may depend on the BLAS thread count", RuntimeWarning,
                        stacklevel=3)
                _blas_libs = libs
    return _blas_libs


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """NumPy's BLAS runs single-threaded inside (tinynet's GEMM kernels split the work
    themselves, in a fixed way); the thread count the user had is put back when the last
    open scope of any thread closes, so the process is left as it was found. Where the
    BLAS has a thread-local setting (:data:`tinynet.kernels.blas.LOCAL_THREADS`), each GEMM
    call sets its own thread and this holds nothing.

    Scopes nest and are cheap inside another (no BLAS call): :func:`matmul` and the
    convolutions open one per call, the training loop one per step.
    """
    global _blas_depth
    if LOCAL_THREADS:  # each GEMM call sets its own thread (kernels.blas): nothing to hold
        yield
        return
    libs = _blas()
    with _blas_lock:
        if _blas_depth == 0:
            for lib in libs:
                n = lib.get_num_threads()
                if n != 1:
                    lib.set_num_threads(1)
                    _blas_saved.append((lib, n))
        _blas_depth += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_depth -= 1
            if _blas_depth == 0:
                for lib, n in _blas_saved:
                    lib.set_num_threads(n)
                _blas_saved.clear()


# -- tiling ---------------------------------------------------------------------------

def _edges(n: int, parts: int, align: int) -> list[int]:
    """Cuts ``range(n)`` into about ``parts`` pieces whose size is a multiple of ``align``."""
    if parts <= 1 or n <= align:
        return [0, n]
    size = -(-n // parts)
    size = -(-size // align) * align
    return list(range(0, n, size)) + [n]


@functools.lru_cache(maxsize=256)
def plan(m: int, n: int, k: int) -> tuple[list[int], list[int], list[int]]:
    """The fixed tiling of an ``[m, k] @ [k, n]`` product: row, column and inner edges.

    Depends on the three sizes only. Tiles are ``rows x cols`` blocks of the output; when
    the inner dimension is cut, each chunk's partial product is added in chunk order.

    Returns:
        ``(row_edges, col_edges, k_edges)``, each a list starting at 0 and ending at the size.
    """
    tasks = min(_MAX_TASKS, (m * n * k) // _MIN_TASK_WORK)
    if tasks < 2:
        return [0, m], [0, n], [0, k]
    chunks = min(tasks, _K_SPLIT_MAX_ELEMS // (m * n))
    if k >= _K_SPLIT_MIN and k >= 4 * max(m, n) and chunks >= 2:
        return [0, m], [0, n], _edges(k, chunks, _K_ALIGN)
    rows = _edges(m, min(tasks, max(m // (2 * _ROW_ALIGN), 1)), _ROW_ALIGN)
    col_parts = tasks // (len(rows) - 1)
    cols = _edges(n, min(col_parts, max(n // _COL_ALIGN, 1)), _COL_ALIGN)
    return rows, cols, [0, k]


@functools.lru_cache(maxsize=256)
def _tile_table(m: int, n: int, k: int) -> tuple[np.ndarray, int]:
    """:func:`plan` as the kernels' tile table ``(r0, r1, c0, c1, k0, k1, dest)`` per row,
    and the number of inner chunks (destinations); cached like the plan."""
    rows, cols, ks = plan(m, n, k)
    if len(ks) == 2:
        table = [(r0, r1, c0, c1, 0, k, 0) for r0, r1 in zip(rows[:-1], rows[1:])
                 for c0, c1 in zip(cols[:-1], cols[1:])]
    else:
        table = [(0, m, 0, n, ks[j], ks[j + 1], j) for j in range(len(ks) - 1)]
    return np.array(table, dtype=np.int64), len(ks) - 1


# -- GEMM -----------------------------------------------------------------------------

def _as_matrix(x, arg: str) -> np.ndarray:
    arr = np.ascontiguousarray(x, dtype=np.float32)
    if arr.ndim != 2:
        raise ValueError(f"matmul: {arg} must be a 2-D array, got shape {arr.shape}")
    return arr


def matmul(a, b, out: np.ndarray | None = None, *, trans_a: bool = False,
           trans_b: bool = False) -> np.ndarray:
    """Deterministic ``op(a) @ op(b)`` in float32, with ``op`` an optional transpose.

    The result is bitwise independent of :func:`tinynet.tuning.get_num_threads` and of
    the ``matmul_parallel_min_flops`` gate (see the module docstring).

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
    tiles, nchunks = _tile_table(m, n, k)
    kernel = (gemm_tiles_parallel if tuning.use_parallel("matmul_parallel_min_flops", m * n * k)
              else gemm_tiles_serial)
    # one inner chunk writes ``out``; more write partial products, added in chunk order
    parts = out[None] if nchunks == 1 else np.empty((nchunks, m, n), dtype=np.float32)
    with single_threaded_blas():
        kernel(a, b, parts, trans_a, trans_b, tiles)
    if nchunks == 1:
        return out
    np.copyto(out, parts[0])
    for j in range(1, nchunks):
        np.add(out, parts[j], out=out)
    return out
