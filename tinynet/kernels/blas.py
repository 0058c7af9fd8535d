"""Single-threaded ``sgemm`` from NumPy's own BLAS, callable inside Numba kernels.

tinynet's convolution runs whole tiles — im2col, GEMM, col2im — inside one Numba
parallel region, so the GEMM must be callable from compiled code. Numba's ``np.dot``
needs SciPy; instead this module finds the CBLAS ``sgemm`` of the BLAS NumPy already
loaded (OpenBLAS from the NumPy wheel: ``scipy_cblas_sgemm64_``) and registers its
address with LLVM under the fixed symbol ``tinynet_cblas_sgemm``, which the kernels
declare as an external function. The address is resolved when a kernel is compiled or
loaded from Numba's cache, so caching works. Each call computes one tile on the calling
thread, single-threaded: where the BLAS has OpenBLAS's thread-local setting
(``openblas_set_num_threads_local``, registered as ``tinynet_blas_local_threads``, and
checked at import to be per thread: :func:`is_thread_local`), each
call sets its own thread to one BLAS thread and puts the previous value back, which costs
a thread-local write and leaves every thread as it was; elsewhere
(:data:`LOCAL_THREADS` false) :func:`tinynet.math.matmul.single_threaded_blas` holds the
whole BLAS at one thread around tinynet's products.

If NumPy's BLAS has 32-bit integers (``cblas_sgemm``, e.g. MKL), a small compiled
adapter takes the symbol; if no CBLAS ``sgemm`` is found at all, a plain compiled loop
(correct, slow) does, and :data:`BLAS` says so. Under ``NUMBA_DISABLE_JIT=1``
:func:`gemm` calls the very same function through ``ctypes``, so interpreted kernels
compute the compiled kernels' bits.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from typing import Callable

import llvmlite.binding as ll
import numpy as np
from numba import cfunc, prange, types
from numba.core import config as numba_config
from numba.extending import overload

from tinynet.kernels._jit import inlined, njit

__all__ = ["gemm", "gemm_tiles_serial", "gemm_tiles_parallel", "blas_library_paths", "BLAS",
           "LOCAL_THREADS"]

SYMBOL = "tinynet_cblas_sgemm"
LOCAL_SYMBOL = "tinynet_blas_local_threads"
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
_JIT = not numba_config.DISABLE_JIT

_i32, _i64, _f32 = types.int32, types.int64, types.float32
# cblas_sgemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
_SIG64 = types.void(_i32, _i32, _i32, _i64, _i64, _i64, _f32, _i64, _i64, _i64, _i64, _f32,
                    _i64, _i64)
_SIG32 = types.void(_i32, _i32, _i32, _i32, _i32, _i32, _f32, _i64, _i32, _i64, _i32, _f32,
                    _i64, _i32)
_CT64 = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                         ctypes.c_int64, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p,
                         ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_float,
                         ctypes.c_void_p, ctypes.c_int64)
_CANDIDATES = (("scipy_cblas_sgemm64_", 64), ("cblas_sgemm64_", 64),
               ("scipy_cblas_sgemm", 32), ("cblas_sgemm", 32))

_sgemm = types.ExternalFunction(SYMBOL, _SIG64)
_LOCAL_SIG = types.int32(types.int32)  # int openblas_set_num_threads_local(int)
_local_threads = types.ExternalFunction(LOCAL_SYMBOL, _LOCAL_SIG)
_LOCAL_NAME = "openblas_set_num_threads_local"


def blas_library_paths() -> list[str]:
    """Shared libraries that may hold NumPy's BLAS: the ones NumPy's wheel bundles first,
    then any loaded into the process (a NumPy built against a system BLAS). The bundled
    ones come first because SciPy's wheel loads an OpenBLAS of its own, which may sit
    earlier in the address map; taking it would make the products depend on what the
    user imported first."""
    names = ("openblas", "mkl_rt")
    paths: list[str] = []
    root = os.path.dirname(os.path.dirname(np.__file__))
    for pattern in ("numpy.libs/*", "numpy/.dylibs/*"):
        for path in sorted(glob.glob(os.path.join(root, pattern))):
            if any(n in os.path.basename(path).lower() for n in names) and path not in paths:
                paths.append(path)
    try:
        with open("/proc/self/maps", encoding="utf-8") as fh:
            for line in fh:
                path = line.rsplit(None, 1)[-1] if "/" in line else ""
                if any(n in os.path.basename(path).lower() for n in names) and path not in paths:
                    paths.append(path)
    except OSError:
        pass
    return paths


def _find_cblas() -> tuple[int, int, str, ctypes.CDLL] | None:
    """``(address, int bits, description, library)`` of NumPy's CBLAS sgemm, or ``None``."""
    np.dot(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))  # BLAS is loaded
    for path in blas_library_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name, bits in _CANDIDATES:
            fn = getattr(lib, name, None)
            if fn is not None:
                address = ctypes.cast(fn, ctypes.c_void_p).value
                return (address, bits, f"{name} ({bits}-bit ints) from {os.path.basename(path)}",
                        lib)
    return None


def is_thread_local(set_local: Callable[[int], int]) -> bool:
    """Whether ``set_local(n)`` (set the calling thread's BLAS threads, return the previous
    value) really is per thread: this thread sets one thread, another thread must not see
    it. OpenBLAS built with pthreads exports ``openblas_set_num_threads_local`` as the
    process-wide setting (the OpenBLAS 0.3.31 in NumPy 2.4.6's wheel does); worker threads calling it at once would
    race and leave the process at one thread. Undecidable when the BLAS already runs one
    thread; then ``False`` (holding the whole BLAS at one thread is right either way)."""
    seen: list[int] = []

    def other() -> None:
        seen.append(set_local(1))
        set_local(seen[0])

    previous = set_local(1)
    try:
        if previous == 1:
            return False
        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
    finally:
        set_local(previous)
    return seen[0] != 1


def _register_local(lib: ctypes.CDLL | None) -> tuple[bool, Callable[[int], int]]:
    """Registers :data:`LOCAL_SYMBOL`: the BLAS's thread-local thread setting where it has
    one and it is per thread (``True``), else a stand-in that changes nothing and
    returns -1."""
    fn = getattr(lib, _LOCAL_NAME, None) if lib is not None else None
    if fn is not None:
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
    if fn is not None and is_thread_local(fn):
        ll.add_symbol(LOCAL_SYMBOL, ctypes.cast(fn, ctypes.c_void_p).value)
        return True, fn
    if _JIT:
        ll.add_symbol(LOCAL_SYMBOL, _no_local_threads_address())
    return False, lambda n: -1


_engines: list = []  # execution engines whose code is registered (kept alive)


def _no_local_threads_address() -> int:
    """Address of ``int f(int) { return -1; }``, built from LLVM IR directly: a Numba
    ``cfunc`` would cost a third of a second at every import (it cannot be cached)."""
    name = LOCAL_SYMBOL + "_none"
    ll.initialize_native_target()  # idempotent; Numba does it only on its first compile
    ll.initialize_native_asmprinter()
    module = ll.parse_assembly(f"define i32 @{name}(i32 %n) {{\n  ret i32 -1\n}}\n")
    machine = ll.Target.from_default_triple().create_target_machine()
    engine = ll.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    _engines.append(engine)
    return engine.get_function_address(name)


def _lp64_adapter(address: int) -> int:
    """Address of a compiled function with the 64-bit-int signature calling ``address``."""
    ll.add_symbol(SYMBOL + "_lp64", address)
    lp64 = types.ExternalFunction(SYMBOL + "_lp64", _SIG32)

    # compiled on demand, only where NumPy's BLAS has 32-bit ints (not cached: a closure)
    @cfunc(_SIG64)
    def adapter(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):  # pragma: no cover
        lp64(order, ta, tb, np.int32(m), np.int32(n), np.int32(k), alpha, a, np.int32(lda), b,
             np.int32(ldb), beta, c, np.int32(ldc))

    return adapter.address


_FP = types.CPointer(types.float32)
# the same ABI as _SIG64 (a pointer travels like a 64-bit int), typed pointers for carray
_SIG64_PTR = types.void(_i32, _i32, _i32, _i64, _i64, _i64, _f32, _FP, _i64, _FP, _i64, _f32,
                        _FP, _i64)


def _naive_address() -> int:
    """Address of a compiled CBLAS-compatible loop (used when no BLAS is found)."""
    from numba import carray

    # compiled on demand, only where no CBLAS sgemm is found (not cached: a closure)
    @cfunc(_SIG64_PTR)
    def naive(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):  # pragma: no cover
        av = carray(a, max((k if ta == _TRANS else m) * lda, 1))
        bv = carray(b, max((n if tb == _TRANS else k) * ldb, 1))
        cv = carray(c, max(m * ldc, 1))
        for i in range(m):
            for j in range(n):
                acc = np.float32(0.0)
                for p in range(k):
                    x = av[p * lda + i] if ta == _TRANS else av[i * lda + p]
                    y = bv[j * ldb + p] if tb == _TRANS else bv[p * ldb + j]
                    acc += x * y
                prev = cv[i * ldc + j] * beta if beta != 0 else np.float32(0.0)
                cv[i * ldc + j] = alpha * acc + prev

    return naive.address


def _register(found: tuple | None) -> tuple[str, Callable | None]:
    if found is None:
        if not _JIT:
            return "none found: NumPy matmul (interpreted kernels)", None
        address, what = _naive_address(), "none found: tinynet's compiled loop (slow)"
    else:
        address, bits, what, _ = found
        if bits == 32:
            if not _JIT:
                raw = ctypes.CFUNCTYPE(None, *([ctypes.c_int] * 6 + [ctypes.c_float,
                                       ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                       ctypes.c_int, ctypes.c_float, ctypes.c_void_p,
                                       ctypes.c_int]))(address)
                return what, _narrowing(raw)
            address = _lp64_adapter(address)
    ll.add_symbol(SYMBOL, address)
    return what, _CT64(address)


def _narrowing(raw):
    def call(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        raw(order, ta, tb, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c,
            int(ldc))
    return call


_FOUND = _find_cblas()
BLAS, _py_sgemm = _register(_FOUND)
#: Whether each GEMM call sets its own thread to one BLAS thread (OpenBLAS's thread-local
#: setting); if not, tinynet's products hold the whole BLAS at one thread instead.
LOCAL_THREADS, _py_local_threads = _register_local(_FOUND[3] if _FOUND else None)


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, trans_a: bool = False,
         trans_b: bool = False, beta: float = 0.0) -> None:
    """``c = op(a) @ op(b) + beta * c`` in float32, single-threaded BLAS, in place.

    ``a``, ``b`` and ``c`` are 2-D float32 arrays whose rows are contiguous (unit stride
    along the last axis; the row stride may be larger). ``op(a)`` is ``a.T`` when
    ``trans_a``. Works in Numba kernels and in plain Python (the same BLAS function).

    Shape:
        op(a): ``[M, K]``; op(b): ``[K, N]``; c: ``[M, N]``.
    """
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    if _py_sgemm is None:
        prod = (a.T if trans_a else a) @ (b.T if trans_b else b)
        c[...] = prod + c * np.float32(beta) if beta else prod
        return
    previous = _py_local_threads(1)
    _py_sgemm(_ROW_MAJOR, _TRANS if trans_a else _NO_TRANS, _TRANS if trans_b else _NO_TRANS,
              m, n, k, 1.0, a.ctypes.data, a.strides[0] // 4, b.ctypes.data,
              b.strides[0] // 4, float(beta), c.ctypes.data, c.strides[0] // 4)
    if previous >= 0:
        _py_local_threads(previous)


@overload(gemm, jit_options={"nogil": True})
def _gemm_jit(a, b, c, trans_a=False, trans_b=False, beta=0.0):
    def impl(a, b, c, trans_a=False, trans_b=False, beta=0.0):  # pragma: no cover
        m, n = c.shape
        k = a.shape[0] if trans_a else a.shape[1]
        previous = _local_threads(np.int32(1))  # this thread: one BLAS thread
        _sgemm(np.int32(_ROW_MAJOR), np.int32(_TRANS if trans_a else _NO_TRANS),
               np.int32(_TRANS if trans_b else _NO_TRANS), m, n, k, np.float32(1.0),
               a.ctypes.data, a.strides[0] // 4, b.ctypes.data, b.strides[0] // 4,
               np.float32(beta), c.ctypes.data, c.strides[0] // 4)
        if previous >= 0:
            _local_threads(previous)  # ... and back as it was
    return impl


# ------------------------------------------------------------------ tiled products
# ``tiles[t] = (r0, r1, c0, c1, k0, k1, dest)``: ``op(a)[r0:r1, k0:k1] @ op(b)[k0:k1, c0:c1]``
# into ``dests[dest][r0:r1, c0:c1]``. Each tile is one single-threaded BLAS call and writes
# only its own block, so the serial loop and the parallel one give the same bits.
@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def _gemm_tile(a, b, dests, trans_a, trans_b, tile):
    r0, r1, c0, c1, k0, k1, d = tile[0], tile[1], tile[2], tile[3], tile[4], tile[5], tile[6]
    lhs = a[k0:k1, r0:r1] if trans_a else a[r0:r1, k0:k1]
    rhs = b[c0:c1, k0:k1] if trans_b else b[k0:k1, c0:c1]
    gemm(lhs, rhs, dests[d][r0:r1, c0:c1], trans_a, trans_b)


_gemm_tile_inline = inlined(_gemm_tile)


@njit(cache=True, nogil=True, error_model="numpy")
def gemm_tiles_serial(a, b, dests, trans_a, trans_b, tiles):
    """Every tile of a product, in order (see :mod:`tinynet.math.matmul`)."""
    for t in range(tiles.shape[0]):
        _gemm_tile_inline(a, b, dests, trans_a, trans_b, tiles[t])


@njit(cache=True, parallel=True, error_model="numpy")
def gemm_tiles_parallel(a, b, dests, trans_a, trans_b, tiles):
    """:func:`gemm_tiles_serial` with the tiles spread over Numba's threads (same bits)."""
    for t in prange(tiles.shape[0]):
        _gemm_tile(a, b, dests, trans_a, trans_b, tiles[t])
