"""The convolution layers' passes (tinynet.ops.arrays.convolution): each gradient is
returned only when asked for, with the same bits whichever others are asked for, and the
forwards match a float64 NumPy reference."""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
import pytest

from tinynet import tuning
from tinynet.activations import get
from tinynet.ops.arrays import convolution as cv
from tinynet.ops.arrays.matmul import matmul, weight_gradient

GELU = get("gelu")  # reads its input in the backward: ``pre`` is kept


def _rand(rng, *shape):
    return rng.standard_normal(shape, dtype=np.float32)


def _geometry(k, s, pad, out):
    """A square geometry: ``k``x``k`` kernel, stride ``s``, leading pad ``pad``, ``out``x``out``."""
    return (k, k, s, s, 1, 1, pad, pad, out, out)


def _im2col64(x, k, s, pad, out):
    """float64 patches ``[B * out * out, k * k * C]`` (rows kernel-row major, as the kernels)."""
    b, h, w, c = x.shape
    xp = np.zeros((b, h + 2 * k, w + 2 * k, c))
    xp[:, pad:pad + h, pad:pad + w] = x
    cols = np.empty((b, out, out, k, k, c))
    for i in range(k):
        for j in range(k):
            cols[:, :, :, i, j] = xp[:, i:i + s * out:s, j:j + s * out:s]
    return cols.reshape(b * out * out, k * k * c)


def _gelu64(z):
    """Exact GELU in float64 (Keras's default, ``approximate=False``)."""
    return 0.5 * z * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))


CONV_FLAGS = ("input", "kernel", "bias")
SEPARABLE_FLAGS = ("input", "depthwise", "pointwise", "bias")
CASES = ["conv 3x3", "conv 1x1", "conv_transpose", "depthwise_conv", "separable_conv"]


def _backward_of(name, rng):
    """The backward of case ``name`` after its forward, its arguments bound but the flags,
    and the names of its flags."""
    x, b = _rand(rng, 3, 7, 7, 4), _rand(rng, 6)
    same3 = _geometry(3, 1, 1, 7)
    if name.startswith("conv "):
        k = 3 if name == "conv 3x3" else 1
        w, geometry = _rand(rng, k * k * 4, 6), _geometry(k, 1, k // 2, 7)
        y, pre = cv.conv_forward(x, w, b, GELU, geometry)
        g = _rand(rng, *y.shape)
        return functools.partial(cv.conv_backward, x, w, pre, y, g, GELU, geometry), CONV_FLAGS
    if name == "conv_transpose":  # the equivalent convolution takes 14x14x5 to 7x7x4
        w, geometry, out_shape = _rand(rng, 9 * 5, 4), _geometry(3, 2, 1, 7), (3, 14, 14, 5)
        y, pre = cv.conv_transpose_forward(x, w, b[:5], GELU, geometry, out_shape)
        g = _rand(rng, *y.shape)
        return functools.partial(cv.conv_transpose_backward, x, w, pre, y, g, GELU, geometry,
                                 out_shape), CONV_FLAGS
    wd = _rand(rng, 3, 3, 8)  # depth multiplier 2
    if name == "depthwise_conv":
        y, pre = cv.depthwise_conv_forward(x, wd, _rand(rng, 8), GELU, same3)
        g = _rand(rng, *y.shape)
        return functools.partial(cv.depthwise_conv_backward, x, wd, pre, y, g, GELU,
                                 same3), CONV_FLAGS
    wp = _rand(rng, 8, 6)
    y, pre, d = cv.separable_conv_forward(x, wd, wp, b, GELU, same3)
    g = _rand(rng, *y.shape)
    return functools.partial(cv.separable_conv_backward, x, wd, wp, d, pre, y, g, GELU,
                             same3), SEPARABLE_FLAGS


@pytest.mark.parametrize("name", CASES)
def test_each_gradient_only_when_asked_and_with_the_same_bits(name):
    backward, flags = _backward_of(name, np.random.default_rng(1))
    every = backward(**{f"want_{f}": True for f in flags})
    assert all(r is not None for r in every)
    for asked in itertools.product((False, True), repeat=len(flags)):
        result = backward(**{f"want_{f}": a for f, a in zip(flags, asked)})
        for flag, want, got, full in zip(flags, asked, result, every):
            if want:
                assert got.dtype == np.float32 and np.array_equal(got, full), (flag, asked)
            else:
                assert got is None, (flag, asked)


def test_conv_forward_matches_float64_reference():
    rng = np.random.default_rng(2)
    x, w, b = _rand(rng, 2, 6, 6, 3), _rand(rng, 9 * 3, 5), _rand(rng, 5)
    for k, pad, w2 in ((3, 1, w), (1, 0, w[:3])):
        y, pre = cv.conv_forward(x, np.ascontiguousarray(w2), b, GELU,
                                 _geometry(k, 1, pad, 6))
        z = _im2col64(x.astype(np.float64), k, 1, pad, 6) @ w2.astype(np.float64) + b
        np.testing.assert_allclose(pre, z, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(y, _gelu64(z), rtol=1e-5, atol=1e-5)
    y, pre = cv.conv_forward(x, w, None, None, _geometry(3, 2, 0, 2))  # linear: no pre
    assert pre is None
    np.testing.assert_allclose(y, _im2col64(x.astype(np.float64), 3, 2, 0, 2) @ w,
                               rtol=1e-5, atol=1e-5)


def test_depthwise_and_separable_forwards_match_float64_reference():
    rng = np.random.default_rng(3)
    x, wd, bd = _rand(rng, 2, 5, 5, 3), _rand(rng, 3, 3, 6), _rand(rng, 6)
    wp, b = _rand(rng, 6, 4), _rand(rng, 4)
    geometry = _geometry(3, 1, 1, 5)
    cols = _im2col64(x.astype(np.float64), 3, 1, 1, 5).reshape(-1, 9, 3)
    # output channel c * 2 + m reads input channel c
    d64 = np.einsum("rkc,kcm->rcm", cols, wd.reshape(9, 3, 2).astype(np.float64))
    d64 = d64.reshape(-1, 6)
    y, pre = cv.depthwise_conv_forward(x, wd, bd, GELU, geometry)
    np.testing.assert_allclose(pre, d64 + bd, rtol=1e-5, atol=1e-5)
    y, pre, d = cv.separable_conv_forward(x, wd, wp, b, GELU, geometry)
    assert d.shape == (2, 5, 5, 7)  # with a bias: a last channel of ones
    np.testing.assert_allclose(d[..., :6].reshape(-1, 6), d64, rtol=1e-5, atol=1e-5)
    assert np.all(d[..., 6] == 1.0)
    np.testing.assert_allclose(y, _gelu64(d64 @ wp + b), rtol=1e-5, atol=1e-5)
    y, pre, d = cv.separable_conv_forward(x, wd, wp, None, None, geometry)
    assert d.shape == (2, 5, 5, 6) and pre is None
    np.testing.assert_allclose(y, d64 @ wp, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape, mult, filters", [((2, 5, 5, 3), 2, 4), ((3, 6, 6, 16), 1, 40),
                                                  ((4, 30, 30, 32), 1, 64)])
def test_separable_bias_is_the_gemms_last_product_with_the_bits_of_a_bias_add(shape, mult,
                                                                               filters):
    # the chain ends with 1 * bias: one rounded float32 add after the product, as a bias
    # pass over the product gives (small products and the blocked GEMM alike)
    rng = np.random.default_rng(5)
    x, wd = _rand(rng, *shape), _rand(rng, 3, 3, shape[3] * mult)
    wp, b = _rand(rng, shape[3] * mult, filters), _rand(rng, filters)
    geometry = _geometry(3, 1, 1, shape[1])
    y, pre, d = cv.separable_conv_forward(x, wd, wp, b, GELU, geometry)
    z = matmul(cv.separable_conv_forward(x, wd, wp, None, None, geometry)[2].reshape(
        -1, shape[3] * mult), wp)
    np.testing.assert_array_equal(pre, z + b)
    np.testing.assert_array_equal(d[..., :-1], cv.separable_conv_forward(
        x, wd, wp, None, None, geometry)[2])


def test_separable_bias_gradient_is_the_column_sum_of_the_output_gradient():
    rng = np.random.default_rng(6)
    x, wd, wp, b = _rand(rng, 2, 4, 4, 3), _rand(rng, 3, 3, 3), _rand(rng, 3, 5), _rand(rng, 5)
    geometry = _geometry(3, 1, 1, 4)
    y, pre, d = cv.separable_conv_forward(x, wd, wp, b, None, geometry)
    # small integers: every partial sum is exact, so the gradient is too
    g = rng.integers(-4, 5, size=y.shape).astype(np.float32)
    _, _, dwp, db = cv.separable_conv_backward(x, wd, wp, d, pre, y, g, None, geometry,
                                               want_input=False, want_depthwise=False,
                                               want_pointwise=False, want_bias=True)
    np.testing.assert_array_equal(db, g.astype(np.float64).sum(axis=0))
    assert dwp is None
    g = _rand(rng, *y.shape)
    _, _, dwp, db = cv.separable_conv_backward(x, wd, wp, d, pre, y, g, None, geometry,
                                               want_input=False, want_depthwise=False,
                                               want_pointwise=True, want_bias=True)
    d64 = d[..., :3].reshape(-1, 3).astype(np.float64)
    np.testing.assert_allclose(db, g.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dwp, d64.T @ g, rtol=1e-5, atol=1e-5)
    assert dwp.shape == (3, 5) and db.shape == (5,)


def test_pointwise_weight_gradients_of_many_positions_are_weight_gradients_parts():
    # 8 x 32 x 32 positions: SeparableConv2D's pointwise kernel and bias gradients (the
    # channel of ones as the last row) and a 1x1 Conv2D's kernel gradient are
    # weight_gradient's fixed parts, the same bits on 1 and 2 threads
    rng = np.random.default_rng(9)
    x, wd = _rand(rng, 8, 32, 32, 32), _rand(rng, 3, 3, 32)
    wp, b = _rand(rng, 32, 64), _rand(rng, 64)
    geometry = _geometry(3, 1, 1, 32)
    y, pre, d = cv.separable_conv_forward(x, wd, wp, b, None, geometry)
    g = _rand(rng, *y.shape)
    w1 = _rand(rng, 32, 64)
    y1, _ = cv.conv_forward(x, w1, None, None, _geometry(1, 1, 0, 32))
    results = []
    for threads in (1, 2):
        tuning.set_num_threads(min(threads, tuning.max_threads()))
        _, _, dwp, db = cv.separable_conv_backward(x, wd, wp, d, pre, y, g, None, geometry,
                                                   want_input=False, want_depthwise=False,
                                                   want_pointwise=True, want_bias=True)
        _, dk, _ = cv.conv_backward(x, w1, None, y1, g, None, _geometry(1, 1, 0, 32),
                                    want_input=False, want_kernel=True, want_bias=False)
        results.append((dwp, db, dk))
    tuning.reset()
    expected = weight_gradient(d.reshape(-1, 33), g)
    np.testing.assert_array_equal(results[0][0], expected[:32])
    np.testing.assert_array_equal(results[0][1], expected[32])
    np.testing.assert_array_equal(results[0][2], weight_gradient(x.reshape(-1, 32), g))
    for got, first in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, first)
    np.testing.assert_allclose(db, g.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4)


def test_conv_transpose_forward_is_the_convolutions_input_gradient():
    # the convolution is a matrix M (8x8x5 -> 4x4x3 per sample); the transposed one is M^T
    rng = np.random.default_rng(4)
    x, w = _rand(rng, 2, 4, 4, 3), _rand(rng, 9 * 5, 3)
    geometry = _geometry(3, 2, 1, 4)
    y, pre = cv.conv_transpose_forward(x, w, None, None, geometry, (2, 8, 8, 5))
    assert pre is None and y.shape == (2 * 8 * 8, 5)
    basis = np.eye(8 * 8 * 5).reshape(-1, 8, 8, 5)
    m_t = (_im2col64(basis, 3, 2, 1, 4) @ w.astype(np.float64)).reshape(8 * 8 * 5, 4 * 4 * 3)
    expected = x.reshape(2, -1).astype(np.float64) @ m_t.T
    np.testing.assert_allclose(y.reshape(2, -1), expected, rtol=1e-5, atol=1e-5)



@pytest.mark.parametrize("stride, pad, size, out, filters",
                         [(2, 1, 4, 8, 5), (2, 0, 4, 9, 16), (1, 1, 6, 6, 16), (1, 1, 6, 6, 5)],
                         ids=["s2 same", "s2 valid 16", "s1 direct", "s1 tiled"])
@pytest.mark.parametrize("act", [None, "relu", GELU], ids=["linear", "relu", "gelu"])
def test_conv_transpose_bias_has_the_bits_of_a_bias_add_after_the_transposed_convolution(
        stride, pad, size, out, filters, act):
    # the bias joins each finished output sample (in the col2im crop, or at the direct
    # kernel's store): one rounded float32 add per element, the bits of a bias pass
    fn = get(act) if isinstance(act, str) else act
    rng = np.random.default_rng(7)
    x, w, b = _rand(rng, 3, size, size, 4), _rand(rng, 9 * filters, 4), _rand(rng, filters)
    geometry, out_shape = _geometry(3, stride, pad, size), (3, out, out, filters)
    for gate in (0, 2**62):
        with tuning.override(conv_parallel_min_elems=gate):
            y, pre = cv.conv_transpose_forward(x, w, b, fn, geometry, out_shape)
            z, _ = cv.conv_transpose_forward(x, w, None, None, geometry, out_shape)
        expected = (z + b) if fn is None else fn.forward(z + b)
        np.testing.assert_array_equal(y, expected)
        if fn is GELU:
            np.testing.assert_array_equal(pre, z + b)


@pytest.mark.parametrize("k, size, channels, filters", [(2, 4, 4, 5), (2, 7, 16, 32),
                                                         (3, 5, 3, 2), (2, 40, 8, 64)],
                         ids=["k2", "k2 wide", "k3 s3", "k2 samples in several tiles"])
@pytest.mark.parametrize("with_bias", [False, True], ids=["no bias", "bias"])
def test_conv_transpose_with_stride_equal_to_kernel_gives_each_product_in_its_place(
        k, size, channels, filters, with_bias):
    # stride = kernel, no padding: output pixel (k*y + i, k*x + j) is the one product of
    # input pixel (y, x) with tap (i, j) (the GEMM's chain, bit for bit), plus the bias
    rng = np.random.default_rng(8)
    x, w = _rand(rng, 3, size, size, channels), _rand(rng, k * k * filters, channels)
    b = _rand(rng, filters) if with_bias else None
    geometry, out_shape = _geometry(k, k, 0, size), (3, k * size, k * size, filters)
    products = matmul(x.reshape(-1, channels), w, trans_b=True).reshape(
        3, size, size, k, k, filters)
    expected = products.transpose(0, 1, 3, 2, 4, 5).reshape(out_shape)
    if with_bias:
        expected = expected + b
    for gate in (0, 2**62):
        with tuning.override(conv_parallel_min_elems=gate):
            y, _ = cv.conv_transpose_forward(x, w, b, None, geometry, out_shape)
        np.testing.assert_array_equal(y.reshape(out_shape), expected)
