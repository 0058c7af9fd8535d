"""Conv1D, Conv2DTranspose, DepthwiseConv2D and SeparableConv2D against Keras 3.15.1
(PyTorch backend) on fixed weights and inputs (``tests/data/keras/generate.py``): outputs,
input gradients and weight gradients, weight names and order; hand-derived values;
float64 NumPy references; bitwise serial = parallel = any thread count."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tinynet import tuning
from tinynet.layers import Conv1D, Conv2D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D

REFS = np.load(os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                            "keras_refs.npz"))
CASES = {
    "conv1d_valid": lambda: Conv1D(4, 3),
    "conv1d_causal_dilated": lambda: Conv1D(3, 3, padding="causal", dilation_rate=2),
    "conv1d_same_strided": lambda: Conv1D(16, 2, strides=2, padding="same",
                                          activation="tanh"),
    "conv2d_transpose_same_s2": lambda: Conv2DTranspose(3, 3, strides=2, padding="same"),
    "conv2d_transpose_valid_op": lambda: Conv2DTranspose(16, (2, 3), strides=(2, 1),
                                                         output_padding=(1, 0)),
    "conv2d_transpose_dilated": lambda: Conv2DTranspose(4, 3, dilation_rate=2,
                                                        padding="same"),
    "conv2d_transpose_k2_s3": lambda: Conv2DTranspose(2, 2, strides=3),
    "conv2d_transpose_same_op": lambda: Conv2DTranspose(3, 4, strides=2, padding="same",
                                                        output_padding=1, activation="tanh"),
    "conv2d_transpose_same_k4_s2": lambda: Conv2DTranspose(2, 4, strides=2, padding="same"),
    "depthwise_same_m2": lambda: DepthwiseConv2D(3, depth_multiplier=2, padding="same"),
    "depthwise_strided": lambda: DepthwiseConv2D((3, 2), strides=2, activation="tanh"),
    "depthwise_dilated": lambda: DepthwiseConv2D(3, dilation_rate=2, padding="same",
                                                 use_bias=False),
    "separable_same_m2": lambda: SeparableConv2D(5, 3, padding="same", depth_multiplier=2),
    "separable_strided": lambda: SeparableConv2D(4, 2, strides=2, activation="tanh"),
}


def _with_keras_weights(case):
    layer = CASES[case]()
    x = REFS[f"{case}/x"]
    layer.build(x.shape)
    names = [str(n) for n in REFS[f"{case}/names"]]
    assert [p.name for p in layer.parameters()] == names
    weights = [REFS[f"{case}/w{i}"] for i in range(len(names))]
    assert [w.shape for w in layer.get_weights()] == [w.shape for w in weights]
    layer.set_weights(weights)
    return layer, x


@pytest.mark.parametrize("case", sorted(CASES))
def test_values_and_gradients_match_keras(case):
    layer, x = _with_keras_weights(case)
    y = np.asarray(layer(x, training=True))
    dx = np.asarray(layer.backward(REFS[f"{case}/g"]))
    assert y.dtype == dx.dtype == np.float32
    assert layer.output_shape(x.shape) == y.shape
    np.testing.assert_allclose(y, REFS[f"{case}/y"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dx, REFS[f"{case}/dx"], rtol=1e-4, atol=1e-5)
    for i, p in enumerate(layer.parameters()):
        np.testing.assert_allclose(p.grad, REFS[f"{case}/dw{i}"], rtol=1e-4, atol=1e-5,
                                   err_msg=p.name)


def test_causal_conv1d_by_hand():
    """Output step t sees steps t - 2 and t only (kernel 2, dilation 2)."""
    layer = Conv1D(1, 2, padding="causal", dilation_rate=2, use_bias=False)
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 5, 1)
    layer.build(x.shape)
    layer.set_weights([np.array([[[10.0]], [[1.0]]], dtype=np.float32)])
    np.testing.assert_array_equal(np.asarray(layer(x)).ravel(), [1, 2, 13, 24, 35])


def test_conv_transpose_by_hand():
    """Stride 2, kernel 2, "valid": each input cell paints its own 2x2 block."""
    layer = Conv2DTranspose(1, 2, strides=2, use_bias=False)
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32).reshape(1, 2, 2, 1)
    layer.build(x.shape)
    layer.set_weights([np.array([[1.0, 10.0], [100.0, 1000.0]],
                                dtype=np.float32).reshape(2, 2, 1, 1)])
    y = np.asarray(layer(x))[0, :, :, 0]
    np.testing.assert_array_equal(y, [[1, 10, 2, 20], [100, 1000, 200, 2000],
                                      [3, 30, 4, 40], [300, 3000, 400, 4000]])


def _depthwise_f64(x, w, strides, dilation, same):
    """float64 depthwise convolution, straight from the definition."""
    b, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    ekh, ekw = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    if same:
        oh, ow = -(-h // strides[0]), -(-wd // strides[1])
        pt = max((oh - 1) * strides[0] + ekh - h, 0) // 2
        pl = max((ow - 1) * strides[1] + ekw - wd, 0) // 2
    else:
        oh, ow, pt, pl = (h - ekh) // strides[0] + 1, (wd - ekw) // strides[1] + 1, 0, 0
    xp = np.zeros((b, h + ekh + strides[0], wd + ekw + strides[1], c))
    xp[:, pt:pt + h, pl:pl + wd] = x
    y = np.zeros((b, oh, ow, c, m))
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dilation[0], j * dilation[1]
            patch = xp[:, r0:r0 + (oh - 1) * strides[0] + 1:strides[0],
                       c0:c0 + (ow - 1) * strides[1] + 1:strides[1]]
            y += patch[..., None] * w[i, j]
    return y.reshape(b, oh, ow, c * m)


@pytest.mark.parametrize("strides, dilation, padding", [((1, 1), (1, 1), "same"),
                                                        ((2, 3), (1, 1), "valid"),
                                                        ((1, 1), (2, 1), "same")])
def test_depthwise_matches_a_float64_reference(strides, dilation, padding):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 9, 10, 5)).astype(np.float32)
    layer = DepthwiseConv2D(3, strides, padding, depth_multiplier=3, dilation_rate=dilation,
                            use_bias=False)
    layer.build(x.shape)
    w = rng.standard_normal((3, 3, 5, 3)).astype(np.float32)
    layer.set_weights([w])
    ref = _depthwise_f64(x.astype(np.float64), w.astype(np.float64), strides, dilation,
                         padding == "same")
    np.testing.assert_allclose(np.asarray(layer(x)), ref, rtol=1e-5, atol=1e-5)


def _depthwise_grads_f64(x, w, g, strides, dilation, same):
    """float64 ``(dx, dkernel)`` of :func:`_depthwise_f64` for the output gradient ``g``:
    each output element's gradient scattered back over its taps."""
    b, h, wd, c = x.shape
    kh, kw, _, m = w.shape
    ekh, ekw = (kh - 1) * dilation[0] + 1, (kw - 1) * dilation[1] + 1
    oh, ow = g.shape[1], g.shape[2]
    if same:
        pt = max((oh - 1) * strides[0] + ekh - h, 0) // 2
        pl = max((ow - 1) * strides[1] + ekw - wd, 0) // 2
    else:
        pt = pl = 0
    xp = np.zeros((b, h + ekh + strides[0], wd + ekw + strides[1], c))
    xp[:, pt:pt + h, pl:pl + wd] = x
    dxp = np.zeros_like(xp)
    g5 = g.reshape(b, oh, ow, c, m)
    dw = np.zeros_like(w)
    for i in range(kh):
        for j in range(kw):
            r0, c0 = i * dilation[0], j * dilation[1]
            rows = slice(r0, r0 + (oh - 1) * strides[0] + 1, strides[0])
            cols = slice(c0, c0 + (ow - 1) * strides[1] + 1, strides[1])
            dw[i, j] = np.einsum("bhwc,bhwcm->cm", xp[:, rows, cols], g5)
            dxp[:, rows, cols] += np.einsum("bhwcm,cm->bhwc", g5, w[i, j])
    return dxp[:, pt:pt + h, pl:pl + wd], dw


@pytest.mark.parametrize("channels, mult, strides, dilation, padding", [
    (32, 1, (1, 1), (1, 1), "same"),   # whole 16-lane vectors, four-pixel blocks
    (5, 3, (2, 3), (1, 1), "valid"),   # 15 channels padded to 16, strided gather
    (7, 2, (1, 1), (2, 1), "same"),    # dilated rows, 14 channels padded to 16
    (20, 1, (2, 2), (1, 1), "same"),   # 20 channels padded to 32
])
def test_depthwise_gradients_match_a_float64_reference(channels, mult, strides, dilation,
                                                       padding):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 11, 13, channels)).astype(np.float32)
    layer = DepthwiseConv2D(3, strides, padding, depth_multiplier=mult,
                            dilation_rate=dilation)
    layer.build(x.shape)
    w = rng.standard_normal((3, 3, channels, mult)).astype(np.float32)
    bias = rng.standard_normal(channels * mult).astype(np.float32)
    layer.set_weights([w, bias])
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    ref = _depthwise_f64(x64, w64, strides, dilation, padding == "same") + bias
    y = np.asarray(layer(x, training=True))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal(y.shape).astype(np.float32)
    dx = np.asarray(layer.backward(g))
    dx_ref, dw_ref = _depthwise_grads_f64(x64, w64, g.astype(np.float64), strides, dilation,
                                          padding == "same")
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(layer.depthwise.grad, dw_ref, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(layer.bias.grad, g.astype(np.float64).sum(axis=(0, 1, 2)),
                               rtol=1e-5, atol=1e-4)


def test_conv1d_is_conv2d_on_one_row_bitwise():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 20, 6)).astype(np.float32)
    one, two = Conv1D(16, 3, padding="same"), Conv2D(16, (1, 3), padding="same")
    one.build(x.shape)
    two.build((4, 1, 20, 6))
    kernel = rng.standard_normal((3, 6, 16)).astype(np.float32)
    one.set_weights([kernel, np.zeros(16, np.float32)])
    two.set_weights([kernel[None], np.zeros(16, np.float32)])
    g = rng.standard_normal((4, 20, 16)).astype(np.float32)
    y1, y2 = np.asarray(one(x)), np.asarray(two(x[:, None]))
    np.testing.assert_array_equal(y1, y2[:, 0])
    np.testing.assert_array_equal(np.asarray(one.backward(g)),
                                  np.asarray(two.backward(g[:, None]))[:, 0])
    np.testing.assert_array_equal(one.kernel.grad, two.kernel.grad[0])


def _run(make, x, g):
    layer = make()
    layer.build(x.shape)
    layer.set_weights([np.random.default_rng(7).standard_normal(w.shape).astype(np.float32)
                       for w in layer.get_weights()])
    y = np.asarray(layer(x, training=True))
    dx = np.asarray(layer.backward(g(y.shape)))
    return [y, dx] + [p.grad for p in layer.parameters()]


@pytest.mark.parametrize("make", [
    lambda: DepthwiseConv2D(3, padding="same", depth_multiplier=2),
    lambda: DepthwiseConv2D((3, 2), strides=(2, 1), depth_multiplier=3, activation="relu"),
    lambda: DepthwiseConv2D(3, dilation_rate=2, padding="same"),
    lambda: SeparableConv2D(32, 3, strides=2, padding="same"),
    lambda: Conv2DTranspose(16, 3, strides=2, padding="same"),
    lambda: Conv1D(32, 5, padding="causal"),
], ids=["depthwise", "depthwise_padded_strided", "depthwise_padded_dilated", "separable",
        "transpose", "conv1d"])
def test_serial_parallel_and_thread_counts_give_the_same_bits(make):
    rng = np.random.default_rng(5)
    shape = (19, 50, 24) if make().__class__ is Conv1D else (19, 12, 11, 24)
    x = rng.standard_normal(shape).astype(np.float32)

    def g(s):
        return np.random.default_rng(6).standard_normal(s).astype(np.float32)

    threads = tuning.get_num_threads()
    with tuning.override(conv_parallel_min_elems=2**62):
        serial = _run(make, x, g)
    results = []
    for n in (1, 2):
        tuning.set_num_threads(n)
        try:
            with tuning.override(conv_parallel_min_elems=0):
                results.append(_run(make, x, g))
        finally:
            tuning.set_num_threads(threads)
    for other in results:
        for a, b in zip(serial, other):
            np.testing.assert_array_equal(a, b)
