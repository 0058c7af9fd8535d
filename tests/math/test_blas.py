"""The sgemm bridge: NumPy's own BLAS called from Numba kernels and from Python."""

from __future__ import annotations

import ctypes
import glob
import os

import numpy as np
import pytest
from numba import njit

from tinynet.kernels import blas


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


@njit(cache=False)
def _gemm_in_kernel(a, b, c, trans_a, trans_b, beta):
    blas.gemm(a, b, c, trans_a, trans_b, beta)


def test_a_cblas_sgemm_was_found_on_this_machine():
    # NumPy's wheel ships OpenBLAS with 64-bit ints: the fast path, no adapter, no fallback
    assert blas.BLAS.startswith("scipy_cblas_sgemm64_"), blas.BLAS


def test_numpys_blas_is_taken_even_when_scipy_loaded_its_own_first():
    # SciPy's wheel brings another OpenBLAS, which may sit first in the address map; the
    # products (and their bits) must not depend on what the user imported first
    import subprocess
    import sys

    code = ("import scipy.linalg, sklearn.datasets\n"
            "from tinynet.kernels import blas\n"
            "print(blas.BLAS)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    numpy_libs = [os.path.basename(p) for p in blas.blas_library_paths()
                  if os.sep + "numpy" in p]
    assert numpy_libs, blas.blas_library_paths()
    assert out.startswith("scipy_cblas_sgemm64_") and out.endswith(numpy_libs[0]), out


def _fake_setting(per_thread: bool, start: int):
    import threading

    local, shared = threading.local(), [start]

    def set_local(n: int) -> int:
        if per_thread:
            previous = getattr(local, "n", start)
            local.n = n
        else:
            previous, shared[0] = shared[0], n
        return previous

    return set_local, shared


@pytest.mark.parametrize("per_thread,start,expected", [(True, 2, True), (False, 2, False),
                                                       (True, 1, False), (False, 1, False)])
def test_is_thread_local_tells_a_per_thread_setting_from_a_process_wide_one(
        per_thread, start, expected):
    set_local, shared = _fake_setting(per_thread, start)
    assert blas.is_thread_local(set_local) is expected
    assert shared[0] == start and set_local(start) == start  # left as found


def test_local_threads_only_where_the_setting_is_per_thread():
    if blas.LOCAL_THREADS:
        assert blas.is_thread_local(blas._py_local_threads)
    else:
        assert blas._py_local_threads(1) == -1  # the stand-in: changes nothing


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             (True, True)])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (7, 5, 3), (64, 32, 144), (300, 17, 1000)])
def test_gemm_matches_float64_in_python_and_in_a_kernel(m, n, k, trans_a, trans_b):
    rng = np.random.default_rng(m * 100 + n + k)
    a = _f32(rng, k, m) if trans_a else _f32(rng, m, k)
    b = _f32(rng, n, k) if trans_b else _f32(rng, k, n)
    ref = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b)
    c_py = np.full((m, n), np.nan, np.float32)
    blas.gemm(a, b, c_py, trans_a, trans_b)
    c_jit = np.full((m, n), np.nan, np.float32)
    _gemm_in_kernel(a, b, c_jit, trans_a, trans_b, 0.0)
    np.testing.assert_allclose(c_py, ref, rtol=1e-4, atol=1e-4 * np.sqrt(k))
    assert np.array_equal(c_py, c_jit)  # one BLAS function, the same bits both ways


def test_gemm_beta_one_accumulates_and_row_strided_views_work():
    rng = np.random.default_rng(3)
    big_a = _f32(rng, 40, 50)
    a = big_a[5:25, 3:13]  # rows of 10 contiguous floats, row stride 50
    b = _f32(rng, 10, 6)
    c0 = _f32(rng, 20, 6)
    c = c0.copy()
    blas.gemm(a, b, c, beta=1.0)
    np.testing.assert_allclose(c, c0 + a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    c2 = c0.copy()
    _gemm_in_kernel(a, b, c2, False, False, 1.0)
    assert np.array_equal(c, c2)
    # NumPy's matmul calls the same sgemm: identical bits for a plain product
    out = np.empty((20, 6), np.float32)
    blas.gemm(np.ascontiguousarray(a), b, out)
    assert np.array_equal(out, np.matmul(np.ascontiguousarray(a), b))


def test_naive_fallback_is_cblas_compatible():
    fn = blas._CT64(blas._naive_address())
    rng = np.random.default_rng(5)
    for ta, tb in [(False, False), (True, True)]:
        a = _f32(rng, 9, 4) if ta else _f32(rng, 4, 9)
        b = _f32(rng, 3, 9) if tb else _f32(rng, 9, 3)
        c0 = _f32(rng, 4, 3)
        c = c0.copy()
        fn(101, 112 if ta else 111, 112 if tb else 111, 4, 3, 9, 1.0, a.ctypes.data,
           a.shape[1], b.ctypes.data, b.shape[1], 1.0, c.ctypes.data, 3)
        ref = c0 + (a.T if ta else a).astype(np.float64) @ (b.T if tb else b)
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def _scipy_lp64_cblas():
    """A CBLAS sgemm with 32-bit ints, where SciPy's wheel provides one."""
    try:
        import scipy
    except ImportError:
        return None
    root = os.path.dirname(os.path.dirname(scipy.__file__))
    for path in sorted(glob.glob(os.path.join(root, "scipy.libs", "*openblas*"))):
        lib = ctypes.CDLL(path)
        for name in ("scipy_cblas_sgemm", "cblas_sgemm"):
            fn = getattr(lib, name, None)
            if fn is not None:
                return ctypes.cast(fn, ctypes.c_void_p).value
    return None


def test_lp64_adapter_narrows_the_integers():
    address = _scipy_lp64_cblas()
    if address is None:
        pytest.skip("no 32-bit-int CBLAS (SciPy's OpenBLAS) installed")
    fn = blas._CT64(blas._lp64_adapter(address))
    rng = np.random.default_rng(6)
    a, b = _f32(rng, 12, 7), _f32(rng, 7, 5)
    c = np.empty((12, 5), np.float32)
    fn(101, 111, 111, 12, 5, 7, 1.0, a.ctypes.data, 7, b.ctypes.data, 5, 0.0, c.ctypes.data, 5)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
