"""``tinynet.kernels.simd``: 16-lane float32 vectors in Numba kernels.

The compiled vector operations must give the bits of the same float32 operations done
one element at a time (and of the interpreted versions used under NUMBA_DISABLE_JIT).
"""

import os

import numpy as np
import pytest

from tinynet.kernels._jit import njit
from numba import prange

from tinynet.kernels.simd import (LANES, add4, load4, mul4, splat4, store4, sub4, vfma,
                                  vfold8x4, vhighs, vload, vload8x2, vlows, vprefetch, vsplat,
                                  vsplat8x2, vstore, zero4)


@njit(cache=True)
def _axpy_shift(x, y, out, a, start):
    """out[i] = (x[i] - y[i]) * a + x[i] for 16-lane chunks from ``start``."""
    av = vsplat(a)
    for i in range(start, x.size - LANES + 1, LANES):
        xv = vload(x, i)
        vstore(out, i, (xv - vload(y, i)) * av + xv)


@njit(cache=True)
def _lane_sums(x, rows):
    """Two accumulators over rows of 32 floats, carried in registers across the loop."""
    a = vsplat(0.0)
    b = vsplat(0.0)
    for r in range(rows):
        a = a + vload(x, r * 32)
        b = b + vload(x, r * 32 + 16) * vload(x, r * 32 + 16)
    out = np.empty(32, dtype=np.float32)
    vstore(out, 0, a)
    vstore(out, 16, b)
    return out


@njit(cache=True, parallel=True)
def _quad_rows(x, y, out, sums, a):
    """Per 64-float row: out = (x - y) * a + x, and each row's lanes summed into sums[r]
    (quads in a parallel kernel: the normalization passes use them that way)."""
    for r in prange(x.size // 64):
        i = r * 64
        xq = load4(x, i)
        m = sub4(xq, load4(y, i))
        store4(out, i, add4(mul4(m, splat4(a)), xq))
        acc = zero4()
        acc = add4(acc, mul4(m, m))
        store4(sums, i, acc)


@njit(cache=True)
def _scaled_with_prefetch(x, out, ahead):
    """out = 2 * x in 16-lane chunks, each chunk asking for the line ``ahead`` floats on."""
    two = vsplat(2.0)
    for i in range(0, x.size, LANES):
        if i + ahead < x.size:
            vprefetch(x, i + ahead)
        vstore(out, i, vload(x, i) * two)


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * 1e3).astype(np.float32)


@pytest.mark.parametrize("start", [0, 3])
def test_lanewise_arithmetic_matches_scalar_float32(start):
    x, y = _data(16 * 9 + 5), _data(16 * 9 + 5, 1)
    out = np.full_like(x, np.nan)
    _axpy_shift(x, y, out, np.float32(0.37), start)
    stop = start + ((x.size - start) // LANES) * LANES
    ref = (x - y) * np.float32(0.37) + x  # NumPy float32: one rounding per operation
    assert ref.dtype == np.float32
    assert np.array_equal(out[start:stop], ref[start:stop])
    assert np.isnan(out[:start]).all() and np.isnan(out[stop:]).all()  # nothing else written


def test_register_accumulators_match_sequential_float32_sums():
    x = _data(32 * 50, 2)
    got = _lane_sums(x, 50)
    rows = x.reshape(50, 32)
    a = np.zeros(16, np.float32)
    b = np.zeros(16, np.float32)
    for r in range(50):  # the same additions in the same order, lane by lane
        a = a + rows[r, :16]
        b = b + rows[r, 16:] * rows[r, 16:]
    assert np.array_equal(got, np.concatenate([a, b]))


def test_interpreted_versions_give_the_compiled_bits():
    x, y = _data(16 * 4), _data(16 * 4, 3)
    compiled = np.empty_like(x)
    interpreted = np.empty_like(x)
    _axpy_shift(x, y, compiled, np.float32(-1.5), 0)
    getattr(_axpy_shift, "py_func", _axpy_shift)(x, y, interpreted, np.float32(-1.5), 0)
    assert np.array_equal(compiled, interpreted)
    assert np.array_equal(_lane_sums(x, 2), getattr(_lane_sums, "py_func", _lane_sums)(x, 2))


def test_vprefetch_is_a_hint_that_changes_no_value():
    x = _data(16 * 64)
    before = x.copy()
    for ahead in (0, 16, 512):
        out = np.empty_like(x)
        _scaled_with_prefetch(x, out, ahead)
        assert out.tobytes() == (x * np.float32(2.0)).tobytes()
        assert x.tobytes() == before.tobytes()


def test_vsplat_rounds_to_float32():
    assert vsplat(0.1).dtype == np.float32
    assert np.all(vsplat(0.1) == np.float32(0.1))


@pytest.mark.skipif(os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0"),
                    reason="typing checks need the JIT")
def test_vload_rejects_other_arrays():
    @njit
    def load_f64(a):
        return vload(a, 0)

    with pytest.raises(Exception, match="expected a 1-D float32 array"):
        load_f64(np.zeros(16))


def test_quads_in_a_parallel_kernel_match_numpy():
    x, y = _data(64 * 7, 4), _data(64 * 7, 5)
    out, sums = np.empty_like(x), np.empty_like(x)
    _quad_rows(x, y, out, sums, np.float32(0.5))
    d = x - y
    assert np.array_equal(out, d * np.float32(0.5) + x)
    assert np.array_equal(sums, np.float32(0.0) + d * d)


@njit(cache=True)
def _fma_lanes(a, b, c, out):
    for i in range(0, a.size, LANES):
        vstore(out, i, vfma(vload(a, i), vload(b, i), vload(c, i)))


def _fma_cases(n):
    """Random triples, plus ones where the product and the addend nearly cancel (the sum
    is then exact or needs the product's low bits: where a separate rounding differs)."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal(n).astype(np.float32)
    b = (rng.standard_normal(n) * np.exp2(rng.integers(-30, 30, n))).astype(np.float32)
    c = rng.standard_normal(n).astype(np.float32)
    near = slice(0, n // 2)
    c[near] = -(a[near].astype(np.float64) * b[near]).astype(np.float32)
    c[near] *= (1 + rng.integers(-3, 4, n // 2) * np.float32(2.0 ** -23)).astype(np.float32)
    return a, b, c


def _rounded_exactly(a, b, c):
    """float32 nearest to the exact a * b + c (ties to even), with fractions."""
    from fractions import Fraction

    out = np.empty(a.size, dtype=np.float32)
    for i, (x, y, z) in enumerate(zip(a.tolist(), b.tolist(), c.tolist())):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        f = np.float32(float(exact))
        best = min((f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))),
                   key=lambda v: (abs(Fraction(float(v)) - exact),
                                  int(np.array(v).view(np.int32)) & 1))
        out[i] = best
    return out


def test_vfma_rounds_once():
    a, b, c = _fma_cases(16 * 128)
    exact = _rounded_exactly(a, b, c)
    interpreted = np.concatenate([vfma(a[i:i + LANES], b[i:i + LANES], c[i:i + LANES])
                                  for i in range(0, a.size, LANES)])
    compiled = np.empty_like(a)
    _fma_lanes(a, b, c, compiled)
    assert np.array_equal(interpreted, exact)
    assert np.array_equal(compiled, exact)
    # and it is not the twice-rounded product-then-sum in many of the near-cancelling cases
    assert np.sum(exact != a * b + c) > 100


@njit(cache=True)
def _halves(a, i, j, x, y, out):
    vstore(out, 0, vload8x2(a, i, j) * vsplat8x2(x, y))
    vstore(out, 16, vlows(vload(a, i), vload(a, j)))
    vstore(out, 32, vhighs(vload(a, i), vload(a, j)))


def test_half_vectors_pair_two_pieces():
    a = _data(48, 6)
    out = np.empty(48, dtype=np.float32)
    _halves(a, 3, 29, 0.5, -2.0, out)
    expected = np.concatenate((a[3:11] * np.float32(0.5), a[29:37] * np.float32(-2.0)))
    assert np.array_equal(out[:16], expected)
    assert np.array_equal(vload8x2(a, 3, 29) * vsplat8x2(0.5, -2.0), expected)
    assert np.array_equal(out[16:32], np.concatenate((a[3:11], a[29:37])))
    assert np.array_equal(out[32:], np.concatenate((a[11:19], a[37:45])))
    assert np.array_equal(vlows(vload(a, 3), vload(a, 29)), out[16:32])
    assert np.array_equal(vhighs(vload(a, 3), vload(a, 29)), out[32:])


@njit(cache=True)
def _folds(a, b):
    return vfold8x4(vload(a, 0), vload(b, 0))


def _lane_order_folds(a, b):
    """The four 8-lane groups of ``a`` and ``b`` each added in lane order, in float32."""
    expected = []
    for v, o in ((a, 0), (a, 8), (b, 0), (b, 8)):
        acc = v[o]
        for k in range(1, 8):
            acc = np.float32(acc + v[o + k])
        expected.append(acc)
    return expected


def test_fold8x4_adds_each_group_in_lane_order():
    a, b = _data(16, 7), _data(16, 8)
    a[:8] = [1e8, 1.0, -1e8, 1.0, 0.5, 0.25, 3.0, -2.0]  # the order decides the result
    expected = _lane_order_folds(a, b)
    assert expected[0] == np.float32(2.75)  # (1e8 + 1) rounds to 1e8: the 1.0 is lost
    assert _folds(a, b) == tuple(expected)
    assert vfold8x4(a, b) == tuple(expected)


def test_fold8x4_every_group_and_lane_in_order():
    """Each of the four groups, with magnitudes spread so that any other order of the
    additions (or a lane taken from the wrong group) changes the bits."""
    rng = np.random.default_rng(3)
    for _ in range(200):
        a, b = (rng.standard_normal(16).astype(np.float32)
                * np.float32(10.0) ** rng.integers(-4, 9, 16).astype(np.float32)
                for _ in range(2))
        expected = _lane_order_folds(a, b)
        got = _folds(a, b)
        assert np.array(got, np.float32).tobytes() == np.array(expected, np.float32).tobytes()
