"""tinynet's own GEMM: serial, parallel, in a kernel and its NumPy twin give the same bits."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels import sgemm
from tinynet.kernels._jit import njit
from tinynet.kernels.sgemm_small import gemm_small, padded_columns
from tinynet.ops.arrays.matmul import matmul

SIZES = (1, 5, 6, 7, 31, 33, 257)


@njit(cache=True)
def _gemm_in_kernel(a, b, c, trans_a, trans_b, beta):
    sgemm.gemm(a, b, c, trans_a, trans_b, beta)


def _case(m, n, k, trans_a, trans_b, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)
    c = rng.standard_normal((m, n)).astype(np.float32)
    return a, b, c


def _kernels(a, b, c0, trans_a, trans_b, beta):
    """The product by every route: serial, parallel in 2 and 3 tasks (the C GEMM, with the
    tiles this machine runs), one task with the wide and with the narrow tiles (the task
    compiled here with Python entry, whichever the machine runs), in a kernel, and (without
    ``beta``) the small-product kernel."""
    sgemm.ready()  # what matmul and the convolutions do before their kernels
    m, n = c0.shape
    k = a.shape[0] if trans_a else a.shape[1]
    size = sgemm.workspace_size(m, n, k)
    out = []
    for kernel, tasks in ((sgemm.gemm_serial, 1), (sgemm.gemm_parallel, 2),
                          (sgemm.gemm_parallel, 3)):
        c = c0.copy()
        kernel(a, b, c, trans_a, trans_b, beta, np.empty((tasks, size), np.float32),
               np.empty((tasks, sgemm.MR, sgemm.NR), np.float32))
        out.append(c)
    for task in (sgemm._run_wide, sgemm._run_narrow):
        c = c0.copy()
        saved = c0.copy() if beta != 0.0 and k > sgemm.KC else np.empty((0, 0), np.float32)
        task(a, b, c, trans_a, trans_b, beta, saved, 0, m, 0, n, np.empty(size, np.float32),
             np.empty((sgemm.MR, sgemm.NR), np.float32))
        out.append(c)
    c = c0.copy()
    _gemm_in_kernel(a, b, c, trans_a, trans_b, beta)
    out.append(c)
    if beta == 0.0:  # the small-product kernel (matmul's route for small sizes)
        c = c0.copy()
        gemm_small(a, b, c, trans_a, trans_b,
                   np.empty((k, padded_columns(n)), np.float32), np.empty(16, np.float32))
        out.append(c)
    return out


@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product((False, True), repeat=2)))
@pytest.mark.parametrize("beta", [0.0, 1.0, 0.5])
def test_every_route_gives_the_twins_bits(trans_a, trans_b, beta):
    rng = np.random.default_rng(7)
    shapes = [(m, n, k) for m in SIZES for n in SIZES for k in SIZES]
    picked = [shapes[i] for i in rng.choice(len(shapes), 40, replace=False)]
    picked += [(1, 1, 1), (7, 33, 257), (257, 31, 33), (33, 257, 6), (6, 16, 300)]
    for seed, (m, n, k) in enumerate(picked):
        a, b, c0 = _case(m, n, k, trans_a, trans_b, seed)
        ref = c0.copy()
        sgemm.gemm(a, b, ref, trans_a, trans_b, beta)  # the NumPy twin
        for got in _kernels(a, b, c0, trans_a, trans_b, beta):
            assert np.array_equal(got, ref), (m, n, k, trans_a, trans_b, beta)


@pytest.mark.parametrize("trans_a,trans_b", list(itertools.product((False, True), repeat=2)))
def test_row_strided_operands_across_row_and_inner_blocks(trans_a, trans_b):
    """Views whose rows are longer than their width (the packing of ``op(b)`` by rows and
    of a transposed ``a`` by strips read them through the row stride), with ``M`` over
    two row blocks (:data:`sgemm.MC`), a last strip of 5 rows and ``K`` over two inner
    blocks (:data:`sgemm.KC`), by every route."""
    m, k = 2 * sgemm.MC + 5, sgemm.KC + 19
    for n in (45, 2 * sgemm.NR + 13):  # a.T read in place, a.T packed
        _strided_case(m, n, k, trans_a, trans_b)


def _strided_case(m, n, k, trans_a, trans_b):
    a, b, c0 = _case(m, n, k, trans_a, trans_b, 11)
    wide_a = np.zeros((a.shape[0], a.shape[1] + 3), np.float32)
    wide_b = np.zeros((b.shape[0], b.shape[1] + 5), np.float32)
    wide_a[:, :a.shape[1]] = a
    wide_b[:, :b.shape[1]] = b
    va, vb = wide_a[:, :a.shape[1]], wide_b[:, :b.shape[1]]
    for beta in (0.0, 0.5):
        ref = c0.copy()
        sgemm.gemm(a, b, ref, trans_a, trans_b, beta)
        for got in _kernels(va, vb, c0, trans_a, trans_b, beta):
            assert np.array_equal(got, ref), (trans_a, trans_b, beta)


def test_twin_is_the_fma_chain():
    a, b, _ = _case(3, 4, 9, False, False, 0)
    c = np.empty((3, 4), np.float32)
    sgemm.gemm(a, b, c)
    for i in range(3):
        for j in range(4):
            acc = np.float32(0.0)
            for kk in range(9):  # fma through float64: exact product, one rounding
                acc = np.float32(np.float64(a[i, kk]) * np.float64(b[kk, j]) + np.float64(acc))
            assert c[i, j] == acc


def test_zero_inner_size_and_strided_output_in_a_kernel():
    a = np.ones((3, 0), np.float32)
    b = np.ones((0, 4), np.float32)
    c = np.full((3, 4), 2.0, np.float32)
    _gemm_in_kernel(a, b, c, False, False, 0.5)
    assert np.all(c == 1.0)
    a, b, c0 = _case(9, 40, 20, False, False, 3)
    wide = np.zeros((9, 80), np.float32)
    wide[:, ::2] = c0
    _gemm_in_kernel(a, b, wide[:, ::2], False, False, 1.0)
    ref = c0.copy()
    sgemm.gemm(a, b, ref, beta=1.0)
    assert np.array_equal(wide[:, ::2], ref) and np.all(wide[:, 1::2] == 0.0)


@pytest.mark.parametrize("m,n,k", [(64, 10, 128), (300, 70, 1030), (40, 700, 300)])
def test_matmul_is_the_twin_for_any_thread_count(m, n, k):
    for trans_a, trans_b in itertools.product((False, True), repeat=2):
        a, b, _ = _case(m, n, k, trans_a, trans_b, 5)
        ref = np.empty((m, n), np.float32)
        sgemm.gemm(a, b, ref, trans_a, trans_b)
        for threads in (1, 2):
            tuning.set_num_threads(min(threads, tuning.max_threads()))
            for gate in (0, 2**62):
                with tuning.override(matmul_parallel_min_flops=gate):
                    got = matmul(a, b, trans_a=trans_a, trans_b=trans_b)
                assert np.array_equal(got, ref), (trans_a, trans_b, threads, gate)
    tuning.reset()
