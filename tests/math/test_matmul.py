"""Deterministic GEMM: values, tiling, and bitwise independence of gates and threads."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels import blas as blas_module
from tinynet.math import matmul as matmul_module
from tinynet.math.matmul import _blas, matmul, plan, single_threaded_blas


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


def _operands(m, n, k, trans_a=False, trans_b=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    return a, b


def _reference(a, b, trans_a=False, trans_b=False):
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    return (a64.T if trans_a else a64) @ (b64.T if trans_b else b64)


# shapes that exercise each tiling: one call, row blocks (M not a multiple of the block),
# column blocks, and inner-dimension chunks (weight-gradient shape)
SHAPES = [(1, 1, 1), (37, 19, 23), (1000, 64, 70), (20, 2048, 128), (64, 32, 16384)]


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True),
                                             (True, True)])
def test_matches_float64_reference(m, n, k, trans_a, trans_b):
    a, b = _operands(m, n, k, trans_a, trans_b)
    got = matmul(a, b, trans_a=trans_a, trans_b=trans_b)
    assert got.dtype == np.float32 and got.shape == (m, n) and got.flags.c_contiguous
    ref = _reference(a, b, trans_a, trans_b)
    tol = 1e-5 * np.sqrt(k) * np.abs(ref).max() + 1e-6
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol)


def test_plan_covers_the_output_and_depends_on_shape_only():
    assert plan(10, 10, 10) == ([0, 10], [0, 10], [0, 10])
    rows, cols, ks = plan(1000, 64, 70)
    assert len(rows) > 2 and cols == [0, 64] and ks == [0, 70]
    assert rows[-1] == 1000 and all(r % 16 == 0 for r in rows[:-1])
    rows, cols, ks = plan(20, 2048, 128)
    assert rows == [0, 20] and len(cols) > 2 and cols[-1] == 2048
    rows, cols, ks = plan(64, 32, 16384)
    assert rows == [0, 64] and cols == [0, 32] and len(ks) > 2 and ks[-1] == 16384
    with tuning.override(matmul_parallel_min_flops=0):
        tuning.set_num_threads(1)
        assert plan(1000, 64, 70) == plan(1000, 64, 70)


@pytest.mark.parametrize("m,n,k", SHAPES[2:] + [(300, 300, 300)])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True)])
def test_bitwise_independent_of_gate_and_threads(m, n, k, trans_a, trans_b):
    a, b = _operands(m, n, k, trans_a, trans_b, seed=1)
    results = []
    for threads in (1, 2):
        tuning.set_num_threads(min(threads, tuning.max_threads()))
        for gate in (0, 2**62):
            with tuning.override(matmul_parallel_min_flops=gate):
                results.append(matmul(a, b, trans_a=trans_a, trans_b=trans_b))
    for other in results[1:]:
        assert np.array_equal(results[0], other)


def test_out_argument_is_filled_and_returned():
    a, b = _operands(300, 40, 50)
    out = np.full((300, 40), np.nan, dtype=np.float32)
    got = matmul(a, b, out=out)
    assert got is out
    assert np.array_equal(out, matmul(a, b))


def test_empty_dimensions():
    a = np.ones((3, 0), np.float32)
    b = np.ones((0, 4), np.float32)
    assert np.array_equal(matmul(a, b), np.zeros((3, 4), np.float32))
    assert matmul(np.ones((0, 5), np.float32), np.ones((5, 2), np.float32)).shape == (0, 2)


def test_accepts_other_dtypes_and_layouts():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = np.asfortranarray(np.arange(8, dtype=np.int64).reshape(4, 2))
    np.testing.assert_array_equal(matmul(a, b), (a @ b).astype(np.float32))


def test_errors():
    a, b = _operands(4, 5, 6)
    with pytest.raises(ValueError, match=re.escape(
            "matmul: a must be a 2-D array, got shape (6,)")):
        matmul(np.ones(6, np.float32), b)
    with pytest.raises(ValueError, match=re.escape(
            "matmul: inner sizes differ: op(a) is (4, 6), op(b) is (5, 6)")):
        matmul(a, b.T)
    with pytest.raises(ValueError, match=re.escape(
            "matmul: out must be a C-contiguous float32 array of shape (4, 5)")):
        matmul(a, b, out=np.empty((4, 5), np.float64))
    sq = np.ones((4, 4), np.float32)
    with pytest.raises(ValueError, match=re.escape("matmul: out must not overlap a or b")):
        matmul(sq, np.ones((4, 4), np.float32), out=sq)


def test_blas_thread_control_found():
    assert _blas(), "threadpoolctl found no BLAS under NumPy"


def _numpy_blas_threads():
    from threadpoolctl import threadpool_info

    ours = {lib.filepath for lib in _blas()}  # NumPy's BLAS (SciPy may load another)
    return [lib["num_threads"] for lib in threadpool_info() if lib["filepath"] in ours]


def test_without_a_thread_local_setting_the_blas_is_held_at_one_thread(monkeypatch):
    """The fallback for a BLAS without OpenBLAS's thread-local setting."""
    from threadpoolctl import threadpool_limits

    monkeypatch.setattr(matmul_module, "LOCAL_THREADS", False)
    with threadpool_limits(2, user_api="blas"):
        with single_threaded_blas():
            with single_threaded_blas():  # nested: still one thread, restored once
                assert _numpy_blas_threads() == [1] * len(_numpy_blas_threads())
            assert _numpy_blas_threads() == [1] * len(_numpy_blas_threads())
        assert _numpy_blas_threads() == [2] * len(_numpy_blas_threads())


@pytest.mark.skipif(not blas_module.LOCAL_THREADS, reason="the BLAS has no thread-local setting")
def test_each_gemm_call_sets_its_own_thread_and_puts_it_back():
    from threadpoolctl import threadpool_limits

    with threadpool_limits(2, user_api="blas"):
        previous = blas_module._py_local_threads(1)  # what a GEMM call does first
        assert previous == 2
        assert blas_module._py_local_threads(previous) == 1  # ... and last
        c = np.empty((64, 64), np.float32)
        blas_module.gemm(np.ones((64, 32), np.float32), np.ones((32, 64), np.float32), c)
        assert np.all(c == 32.0)
        with single_threaded_blas():  # holds nothing: the calls set their own threads
            matmul(np.ones((300, 200), np.float32), np.ones((200, 100), np.float32))
            assert _numpy_blas_threads() == [2] * len(_numpy_blas_threads())
        assert _numpy_blas_threads() == [2] * len(_numpy_blas_threads())
        assert blas_module._py_local_threads(2) == 2  # the calling thread left as found


@pytest.mark.parametrize("m,n,k", [(1024, 512, 512), (512, 512, 1024), (256, 128, 1600),
                                   (64, 128, 3136), (128, 128, 65536)])
def test_plan_makes_at_most_eight_tiles(m, n, k):
    # each tile is a BLAS call that packs its operands again; 8 keep 8 threads busy
    rows, cols, ks = plan(m, n, k)
    assert (len(rows) - 1) * (len(cols) - 1) * (len(ks) - 1) <= 8
    assert plan(1024, 512, 512) == ([0, 128, 256, 384, 512, 640, 768, 896, 1024], [0, 512],
                                    [0, 512])
