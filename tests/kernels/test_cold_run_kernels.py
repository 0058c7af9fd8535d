"""The first run's kernels compile less without computing anything else: the direct
convolution's input gradient is its forward pass over the output gradient, Adam's
common case runs on kernels of its own, and the serial row merge is the parallel merge's
chunk kernel. Each is checked byte for byte against the path it stands in for, and
against float64 references where the values are new."""

from __future__ import annotations

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels import optimizers as ok
from tinynet.kernels.normalization import folds
from tinynet.ops.arrays.conv2d import conv2d_backward, conv2d_forward

F32 = np.float32


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- the direct convolution's input gradient ----------------------------------------------
@pytest.mark.parametrize("shape, filters, k, d", [
    ((4, 4, 4, 16), 32, 3, 1),   # the README example's second convolution
    ((3, 7, 5, 32), 16, 3, 1),
    ((2, 9, 9, 16), 48, 5, 1),
    ((2, 9, 8, 16), 16, 3, 2),   # dilated
])
@pytest.mark.parametrize("gate", [0, 2**62])
def test_input_gradient_is_the_forward_over_the_padded_output_gradient(shape, filters, k, d,
                                                                       gate):
    """``dx`` of a stride-1 "same" convolution is the forward pass, byte for byte, over
    ``dz`` zero-padded by ``(k - 1) * d - pad`` with the kernel flipped in space and its
    channel axes swapped (and no bias), serial and parallel alike; and it is the float64
    transposed convolution to float32 accuracy."""
    b, h, w, c = shape
    pad = (k - 1) * d // 2
    geometry = (k, k, 1, 1, d, d, pad, pad, h, w)
    x = _rand(shape, 1)
    w2 = _rand((k * k * c, filters), 2)
    dz = _rand((b * h * w, filters), 3)
    with tuning.override(conv_parallel_min_elems=gate):
        dx = conv2d_backward(x, w2, dz, geometry, want_dx=True, want_dw=False)[0]
        flipped = np.ascontiguousarray(
            w2.reshape(k, k, c, filters)[::-1, ::-1].transpose(0, 1, 3, 2)).reshape(-1, c)
        tail = (k - 1) * d - pad
        z = conv2d_forward(dz.reshape(b, h, w, filters), flipped,
                           (k, k, 1, 1, d, d, tail, tail, h, w))
    assert dx.tobytes() == z.reshape(shape).tobytes()
    # float64 reference: dx[b, y, x, c] = sum over taps and filters of dz at (y - i*d + pad)
    ref = np.zeros(shape)
    w4 = w2.reshape(k, k, c, filters).astype(np.float64)
    g4 = dz.reshape(b, h, w, filters).astype(np.float64)
    for i in range(k):
        for j in range(k):
            for oy in range(h):
                for ox in range(w):
                    iy, ix = oy + i * d - pad, ox + j * d - pad
                    if 0 <= iy < h and 0 <= ix < w:
                        ref[:, iy, ix, :] += g4[:, oy, ox, :] @ w4[i, j].T
    np.testing.assert_allclose(dx, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())


def test_weight_and_bias_gradients_without_the_input_gradient_keep_their_bits():
    """The backward slots compute only the kernel and bias gradients now: asking for
    ``dx`` too, or not, changes none of their bytes."""
    shape, filters = (5, 6, 6, 16), 32
    geometry = (3, 3, 1, 1, 1, 1, 1, 1, 6, 6)
    x, w2 = _rand(shape, 4), _rand((144, filters), 5)
    dz = _rand((5 * 36, filters), 6)
    _, dw_a, db_a = conv2d_backward(x, w2, dz, geometry, want_dx=True, want_db=True)
    _, dw_b, db_b = conv2d_backward(x, w2, dz, geometry, want_dx=False, want_db=True)
    assert dw_a.tobytes() == dw_b.tobytes() and db_a.tobytes() == db_b.tobytes()
    np.testing.assert_allclose(db_a, dz.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


# -- Adam's common case ---------------------------------------------------------------------
def _adam_state(n, seed):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n).astype(F32)
    g = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 3, n)).astype(F32)
    m = (rng.standard_normal(n) * 0.1).astype(F32)
    v = np.abs(rng.standard_normal(n) * 0.01).astype(F32)
    edge = np.array([0.0, -0.0, 1e30, -1e-30], dtype=F32)  # zeros, an overflowing square
    g[:min(n, 4)] = edge[:min(n, 4)]
    return w, g, m, v


# one_minus_b1, b2 (1 - beta_2), k0 (alpha), eps, gscale
_SCALARS = (F32(0.1), F32(0.001), F32(0.0031622776), F32(1e-7), F32(0.5))


def _general_step(w, g, m, v):
    one_minus_b1, b2, k0, eps, gscale = _SCALARS
    ok.moments_blocks(w, g, m, v, np.empty(0, F32), ok.ADAM, one_minus_b1, b2, k0, F32(0),
                      F32(0), F32(0), F32(0), eps, False, F32(0.01), gscale, False, F32(0),
                      False, F32(0), 0, ok.nblocks(w.size))


@pytest.mark.parametrize("n", [1, 37, ok.UPDATE_BLOCK * 2 + 5])
def test_plain_adam_kernel_matches_the_general_one_and_float64(n):
    """``adam_plain_blocks`` (what a plain Adam step runs) writes the bytes the general
    moments kernel writes for rule ADAM without AMSGrad, clipping or decay, and the
    serial and parallel wrappers route to it; the values are Keras's update in float64 to
    float32 accuracy."""
    one_minus_b1, b2, k0, eps, gscale = _SCALARS
    state = _adam_state(n, 7)
    general = [a.copy() for a in state]
    _general_step(*general)
    plain = [a.copy() for a in state]
    ok.adam_plain_blocks(*plain[:2], *plain[2:], one_minus_b1, b2, k0, eps, gscale, 0,
                         ok.nblocks(n))
    for a, b in zip(general, plain):
        assert a.tobytes() == b.tobytes()
    for wrapper in (ok.moments_serial, ok.moments_parallel):
        routed = [a.copy() for a in state]
        wrapper(*routed, np.empty(0, F32), ok.ADAM, one_minus_b1, b2,
                (k0, F32(0), F32(0), F32(0), F32(0)), eps, False, F32(0.01), gscale, False,
                F32(0), False, F32(0))
        for a, b in zip(general, routed):
            assert a.tobytes() == b.tobytes()
    w, g, m, v = (a.astype(np.float64) for a in state)
    g = g * float(gscale)
    m_new = m + (g - m) * float(one_minus_b1)
    v_new = v + (g * g - v) * float(b2)
    w_new = w - (m_new * float(k0)) / (np.sqrt(v_new) + float(eps))
    # float32 rounding of m, g and the difference: a few ulps of the larger term
    scale = np.abs(m) + np.abs(g) * float(one_minus_b1)
    assert np.all(np.abs(plain[2] - m_new) <= 4e-7 * scale)
    fits = np.isfinite(plain[3])  # where g * g overflows float32, v is inf and w stays
    assert fits.sum() == n - (n > 2)
    np.testing.assert_allclose(plain[0][fits], w_new[fits], rtol=1e-5, atol=1e-6)
    assert np.array_equal(plain[0][~fits], state[0][~fits])


@pytest.mark.parametrize("bad_at", [None, 0, 3, ok.UPDATE_BLOCK + 1, 2 * ok.UPDATE_BLOCK + 4])
def test_plain_adam_check_finds_what_the_general_check_finds(bad_at):
    """The plain check kernel returns the general check's first non-finite index (or -1),
    serial and parallel, and writes nothing."""
    n = ok.UPDATE_BLOCK * 2 + 5
    w, g, m, v = _adam_state(n, 8)
    if bad_at is not None:
        w[bad_at] = np.inf
        w[n - 1] = np.nan  # a later one never wins
    one_minus_b1, b2, k0, eps, gscale = _SCALARS
    before = [a.tobytes() for a in (w, g, m, v)]
    found = set()
    for check in (ok.adam_check_serial, ok.adam_check_parallel):
        for amsgrad in (False, True):  # True runs the general kernel (vhat = v: same step)
            vhat = v.copy() if amsgrad else np.empty(0, F32)
            found.add(check(w, g, m, v, vhat, one_minus_b1, b2, k0, eps, amsgrad, F32(0.01),
                            gscale, False, F32(0), False, F32(0)))
    first = ok.adam_plain_check_blocks
    hits = np.empty(1, dtype=np.int64)
    first(w, g, m, v, one_minus_b1, b2, k0, eps, gscale, hits, 0, ok.nblocks(n))
    found.add(int(hits[0]))
    assert found == {-1 if bad_at is None else bad_at}
    assert [a.tobytes() for a in (w, g, m, v)] == before


# -- the serial row merge -----------------------------------------------------------------
@pytest.mark.parametrize("channels", [1, 63, 64, 65, 200])
def test_serial_row_merge_is_float64_in_row_order(channels):
    """``merge_rows_serial`` adds each column's rows in row order in float64 and rounds
    once (a sum that float32 accumulation would lose: 1 + 1e-8 * 1e4 rows), the bytes of
    the parallel merge."""
    rows = 10001
    parts = np.full((2, rows, channels), 1e-8)
    parts[:, 0, :] = 1.0
    parts[1] *= 3.0
    out = folds.merge_rows_serial(parts)
    assert out.dtype == np.float32 and out.shape == (2, channels)
    expected0 = np.float32(np.cumsum(parts[0, :, 0])[-1])
    assert expected0 == np.float32(1.0001)
    assert np.all(out[0] == expected0) and np.all(out[1] == np.float32(3.0003))
    assert out.tobytes() == folds.merge_rows_parallel(parts).tobytes()
