"""det_reduce and the normalization fold kernels: values and bitwise invariance."""

import numpy as np
import pytest

from tinynet import tuning
from tinynet.ops.arrays import reduction
from tinynet.ops.arrays.reduction import DET_REDUCE_BLOCK, det_reduce
from tinynet.kernels.normalization import folds


@pytest.fixture(autouse=True)
def _reset():
    yield
    tuning.reset()


def test_block_constant():
    assert DET_REDUCE_BLOCK == 16384
    assert folds.rows_per_block(1) == 16384
    assert folds.rows_per_block(64) == 256
    assert folds.rows_per_block(20000) == 1


def test_det_reduce_values():
    assert det_reduce(np.arange(10, dtype=np.float32)) == 45.0
    assert det_reduce(np.zeros(0)) == 0.0
    x = np.random.default_rng(0).standard_normal(100_003).astype(np.float32)
    assert det_reduce(x) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-9, abs=1e-9)


def test_det_reduce_bitwise_across_gates_and_threads():
    x = np.random.default_rng(1).standard_normal(300_001).astype(np.float32)
    results = set()
    for threads in (1, tuning.max_threads()):
        tuning.set_num_threads(threads)
        for gate in (0, 2**62):
            with tuning.override(reduce_parallel_min_elems=gate):
                results.add(np.float64(det_reduce(x)).tobytes())
    assert len(results) == 1


def test_segment_sums():
    x = np.arange(1, 20, dtype=np.float32)
    assert folds.segment_sum(x, 0, 19) == 190.0
    assert folds.segment_sum(x, 3, 5) == 9.0
    assert folds.segment_dot(x, x, 0, 3) == 14.0


def test_called_segment_sum_has_the_inlined_folds_bits():
    """``segment_sum_fn`` (the group sums' called fold, written out for a plain sum) gives
    ``segment_sum``'s bits for every start and length, whole lanes and tails alike: the
    lanes take elements ``k, 8 + k, ...``: with ``x = [1, ..., 1, 1e8]`` of length 9 the
    tail element joins lane 0 (``1 + 1e8`` rounds to 1e8 in float32) and each of the
    other seven ones is lost against 1e8 in the fold, so the sum is 1e8, where a plain
    left-to-right float32 sum gives ``8 + 1e8 = 100000008``."""
    x = np.ones(9, dtype=np.float32)
    x[8] = 1e8
    assert folds.segment_sum_fn(x, 0, 9) == np.float32(1e8)
    assert np.float32(np.sum(x[:8]) + x[8]) == np.float32(100000008.0)
    assert folds.segment_sum_fn(x, 0, 9) == folds.segment_sum(x, 0, 9)
    rng = np.random.default_rng(7)
    y = (rng.standard_normal(120) * 10.0 ** rng.integers(-6, 7, 120)).astype(np.float32)
    for start in range(0, 17):
        for stop in range(start, start + 90):
            called = np.float32(folds.segment_sum_fn(y, start, stop))
            assert called.tobytes() == np.float32(folds.segment_sum(y, start, stop)).tobytes()


@pytest.mark.parametrize("n", [8, 16, 32, 200, 256])
def test_pair_folds_give_each_segment_its_own_bits(n):
    """Two 8-lane folds side by side in one 16-lane vector: each result byte-equal to the
    single-segment fold (shifted sums with their own shifts, and the two dots)."""
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(4 * n + 5) * 3 + 1e4).astype(np.float32)
    w = rng.standard_normal(n).astype(np.float32)
    v = rng.standard_normal(3 * n).astype(np.float32)
    ra, rb = 3, 2 * n + 5
    s1a, s2a, s1b, s2b = folds.shifted_sums_pair(x, ra, rb, n)
    assert (s1a, s2a) == folds.shifted_segment_sums(x, ra, ra + n, x[ra])
    assert (s1b, s2b) == folds.shifted_segment_sums(x, rb, rb + n, x[rb])
    da, ea, db, eb = folds.segment_dot2_pair(w, x, ra, rb, v, 0, 2 * n, n)
    assert (da, ea) == folds.segment_dot2(w, x[ra:ra + n], v[:n], 0, n)
    assert (db, eb) == folds.segment_dot2(w, x[rb:rb + n], v[2 * n:3 * n], 0, n)


@pytest.mark.parametrize("rows,channels", [(1, 1), (7, 3), (1000, 64), (40_000, 5)])
def test_col_folds_match_float64(rows, channels):
    rng = np.random.default_rng(rows)
    a = rng.standard_normal((rows, channels)).astype(np.float32)
    b = rng.standard_normal((rows, channels)).astype(np.float32)
    np.testing.assert_allclose(reduction.col_sum(a, channels), a.astype(np.float64).sum(0),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(reduction.col_dot(a, b, channels, scale=0.5),
                               0.5 * (a.astype(np.float64) * b).sum(0), rtol=1e-5, atol=1e-4)
    for fn, args in ((reduction.col_sum, (a,)), (reduction.col_dot, (a, b))):
        assert fn(*args, channels, False).tobytes() == fn(*args, channels, True).tobytes()


def test_merge_rows_serial_parallel_bitwise():
    parts = np.random.default_rng(3).standard_normal((2, 37, 300))
    assert folds.merge_rows_serial(parts).tobytes() == folds.merge_rows_parallel(parts).tobytes()
