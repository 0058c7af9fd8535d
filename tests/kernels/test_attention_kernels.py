"""The fused attention passes (``tinynet.ops.arrays.attention.attend`` and its backward).

Values and gradients against a float64 NumPy reference on odd sizes (heads read from
column bands of shared arrays, rows not whole vectors), the float32 exp against float64,
and the same bits serial and parallel, at one and at two threads.
"""

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels.attention import exp_nonpositive
from tinynet.ops.arrays import attention as A

B, T, S, H, DK, DV = 3, 7, 21, 2, 5, 17
SCALE = np.float32(1.0 / np.sqrt(DK))


def _inputs(seed=0):
    """A query array whose query band starts at column 3, and one key/value array with
    the key band at column 1 and the value band after it."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((B * T, 2 * H * DK + 3)).astype(np.float32)
    kv = rng.standard_normal((B * S, H * (DK + DV) + 1)).astype(np.float32)
    return q, kv, (3, 1, 1 + H * DK)


def _heads(x, start, n, width):
    return x[:, start:start + H * width].astype(np.float64).reshape(
        B, n, H, width).transpose(0, 2, 1, 3)


def _flat(x):
    return x.transpose(0, 2, 1, 3).reshape(x.shape[0] * x.shape[2], -1)


def _reference(q, kv, offsets, do, gp):
    qh = _heads(q, offsets[0], T, DK) * float(SCALE)
    kh, vh = _heads(kv, offsets[1], S, DK), _heads(kv, offsets[2], S, DV)
    s = qh @ kh.transpose(0, 1, 3, 2)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = p @ vh
    doh = do.astype(np.float64).reshape(B, T, H, DV).transpose(0, 2, 1, 3)
    dp = doh @ vh.transpose(0, 1, 3, 2) + gp
    ds = p * (dp - (dp * p).sum(-1, keepdims=True))
    grads = (_flat(ds @ kh) * float(SCALE), _flat(ds.transpose(0, 1, 3, 2) @ qh),
             _flat(p.transpose(0, 1, 3, 2) @ doh))
    return p, _flat(o), grads


def _run(q, kv, offsets, do, gp):
    p, o = A.attend(q, kv, kv, offsets, B, H, DK, DV, SCALE)
    dq, dk, dv = A.attend_backward(q, kv, kv, offsets, H, DK, SCALE, p, do, gp)
    assert dk is dv  # one gradient array for the one key/value array
    bands = (dq[:, offsets[0]:offsets[0] + H * DK], dk[:, offsets[1]:offsets[1] + H * DK],
             dv[:, offsets[2]:offsets[2] + H * DV])
    return p, o, bands


def test_values_and_gradients_match_float64():
    q, kv, offsets = _inputs()
    rng = np.random.default_rng(1)
    do = rng.standard_normal((B * T, H * DV)).astype(np.float32)
    gp = rng.standard_normal((B, H, T, S)).astype(np.float32)
    p, o, grads = _run(q, kv, offsets, do, gp)
    p64, o64, grads64 = _reference(q, kv, offsets, do, gp)
    np.testing.assert_allclose(p, p64, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(o, o64, rtol=1e-5, atol=1e-6)
    for got, want, name in zip(grads, grads64, ("query", "key", "value")):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=1e-6)


def test_without_a_weights_gradient_and_with_separate_arrays():
    q, kv, offsets = _inputs(2)
    k = np.ascontiguousarray(kv[:, 1:1 + H * DK])
    v = np.ascontiguousarray(kv[:, 1 + H * DK:])
    do = np.random.default_rng(3).standard_normal((B * T, H * DV)).astype(np.float32)
    p, o = A.attend(q, k, v, (3, 0, 0), B, H, DK, DV, SCALE)
    dq, dk, dv = A.attend_backward(q, k, v, (3, 0, 0), H, DK, SCALE, p, do)
    p64, o64, grads64 = _reference(q, kv, offsets, do, 0.0)
    np.testing.assert_allclose(o, o64, rtol=1e-5, atol=1e-6)
    for got, want in zip((dq[:, 3:3 + H * DK], dk, dv), grads64):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_one_row_of_huge_scores_is_one_hot():
    """A score far above the rest takes all the weight (the others' exp is 0)."""
    q = np.zeros((T, H * DK), dtype=np.float32)
    kv = np.zeros((T, H * 2 * DK), dtype=np.float32)
    q[:, 0] = 100.0
    kv[2, 0] = 100.0
    p, _ = A.attend(q, kv, kv, (0, 0, H * DK), 1, H, DK, DK, np.float32(1.0))
    assert np.array_equal(p[0, 0], np.tile(np.eye(T, dtype=np.float32)[2], (T, 1)))


def test_exp_matches_float64_within_two_ulp():
    v = np.concatenate([-np.geomspace(1e-8, 87.0, 20000), [0.0, -86.99]]).astype(np.float32)
    got = np.array([exp_nonpositive(x) for x in v], dtype=np.float32)
    want = np.exp(v.astype(np.float64))
    ulp = np.spacing(want.astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 2.0
    assert exp_nonpositive(np.float32(0.0)) == np.float32(1.0)
    assert exp_nonpositive(np.float32(-87.5)) == 0.0
    assert exp_nonpositive(np.float32(-1e9)) == 0.0


def _all(threads, gate):
    q, kv, offsets = _inputs(4)
    rng = np.random.default_rng(5)
    do = rng.standard_normal((B * T, H * DV)).astype(np.float32)
    gp = rng.standard_normal((B, H, T, S)).astype(np.float32)
    before, adaptive = tuning.get_num_threads(), tuning.get_adaptive_threads()
    tuning.set_num_threads(threads)
    tuning.set_adaptive_threads(False)
    try:
        with tuning.override(matmul_parallel_min_flops=gate):
            p, o, grads = _run(q, kv, offsets, do, gp)
    finally:
        tuning.set_num_threads(before)
        tuning.set_adaptive_threads(adaptive)
    return [p, o, *grads]


@pytest.mark.parametrize("threads,gate", [(1, 0), (2, 0)])
def test_serial_and_parallel_give_the_same_bits(threads, gate):
    serial = _all(1, 2**62)
    assert all(np.array_equal(a, b) for a, b in zip(serial, _all(threads, gate)))
