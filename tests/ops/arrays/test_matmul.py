"""Deterministic GEMM: values, tiling, and bitwise independence of gates and threads."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels.sgemm import gemm
from tinynet.ops.arrays.matmul import MAX_PARTS, PART_ROWS, matmul, weight_gradient


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


# shapes that exercise the blocking: one tile, row bands (M not a multiple of the tile),
# column bands (wider than tall), and a long inner dimension (weight-gradient shape)
SHAPES = [(1, 1, 1), (37, 19, 23), (1000, 64, 70), (20, 2048, 128), (64, 32, 16384),
          (40, 160, 700)]


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


@pytest.mark.parametrize("m,n,k", [(40, 160, 700), (64, 256, 6400), (7, 100, 400)])
def test_long_weight_gradient_runs_swapped_with_the_same_bits(m, n, k):
    # x.T @ dz with fewer rows than columns and a long inner index runs as (dz.T @ x).T:
    # bitwise the product of the transposed copy of x, which takes the direct path
    a, b = _operands(m, n, k, trans_a=True, seed=2)
    got = matmul(a, b, trans_a=True)
    assert got.flags.c_contiguous and got.shape == (m, n)
    assert np.array_equal(got.view(np.int32),
                          matmul(np.ascontiguousarray(a.T), b).view(np.int32))
    out = np.full((m, n), np.nan, dtype=np.float32)
    assert matmul(a, b, out, trans_a=True) is out
    assert np.array_equal(out, got)


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


def _parts_reference(x, g, parts):
    """The definition: each range's chains (the GEMM's, from its NumPy form), the parts
    added in order in float32."""
    k = x.shape[0]
    total = None
    for p in range(parts):
        k0, k1 = k * p // parts, k * (p + 1) // parts
        part = np.empty((x.shape[1], g.shape[1]), np.float32)
        gemm(np.ascontiguousarray(x[k0:k1]), np.ascontiguousarray(g[k0:k1]), part,
             trans_a=True)
        total = part if total is None else total + part
    return total


@pytest.mark.parametrize("k, m, n, parts", [(25088, 33, 64, MAX_PARTS),
                                            (3 * PART_ROWS + 5, 40, 70, 2),
                                            (7 * PART_ROWS, 40, 70, 6),
                                            (2 * PART_ROWS, 64, 128, 2)])
def test_weight_gradient_in_parts_is_its_definition_whatever_the_threads(k, m, n, parts):
    # a long inner index with a small output: consecutive row ranges, fixed by the shape,
    # each the GEMM's chains, added in order; bitwise the same on 1 and 2 threads and
    # either side of the gate
    assert min(MAX_PARTS, k // PART_ROWS) // 2 * 2 == parts  # an even number of ranges
    x, g = _operands(m, n, k, trans_a=True, seed=3)
    expected = _parts_reference(x, g, parts)
    for threads in (1, 2):
        tuning.set_num_threads(min(threads, tuning.max_threads()))
        for gate in (0, 2**62):
            with tuning.override(matmul_parallel_min_flops=gate):
                got = weight_gradient(x, g)
            assert got.dtype == np.float32 and got.shape == (m, n)
            assert np.array_equal(got.view(np.int32), expected.view(np.int32))
    ref = _reference(x, g, trans_a=True)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * np.sqrt(k) * np.abs(ref).max())


@pytest.mark.parametrize("k, m, n", [(2 * PART_ROWS - 1, 8, 64), (4096, 300, 64),
                                     (16384, 4, 8), (700, 40, 160)])
def test_weight_gradient_of_other_shapes_is_the_plain_product(k, m, n):
    # too few rows for two parts, an output too large against the rows, or too few
    # multiply-adds: matmul's chains over the whole inner index
    x, g = _operands(m, n, k, trans_a=True, seed=4)
    assert np.array_equal(weight_gradient(x, g).view(np.int32),
                          matmul(x, g, trans_a=True).view(np.int32))


def test_weight_gradient_errors():
    with pytest.raises(ValueError, match=re.escape(
            "weight_gradient: x must be a 2-D array, got shape (6,)")):
        weight_gradient(np.ones(6, np.float32), np.ones((6, 2), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "weight_gradient: x and g must have the same rows, got (6, 3) and (5, 2)")):
        weight_gradient(np.ones((6, 3), np.float32), np.ones((5, 2), np.float32))
