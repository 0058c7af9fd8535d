"""The functional activation registry: Keras semantics, derivatives, fused bias, determinism."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tinynet import activations, tuning

ALL = ["relu", "sigmoid", "tanh", "softmax", "elu", "leaky_relu", "gelu", "silu"]


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


def _erf(x):
    return np.vectorize(math.erf)(x)


def ref_forward(name, x):
    x = x.astype(np.float64)
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-x))
    if name == "tanh":
        return np.tanh(x)
    if name == "softmax":
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
    if name == "elu":
        return np.where(x > 0, x, np.expm1(x))
    if name == "leaky_relu":
        return np.where(x >= 0, x, 0.2 * x)
    if name == "gelu":
        return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))
    if name == "silu":
        return x / (1.0 + np.exp(-x))
    raise AssertionError(name)


def ref_backward(name, x, g):
    x = x.astype(np.float64)
    g = g.astype(np.float64)
    y = ref_forward(name, x)
    if name == "relu":
        return g * (x > 0)
    if name == "sigmoid":
        return g * y * (1 - y)
    if name == "tanh":
        return g * (1 - y * y)
    if name == "softmax":
        return y * (g - (g * y).sum(axis=-1, keepdims=True))
    if name == "elu":
        return g * np.where(x > 0, 1.0, np.exp(x))
    if name == "leaky_relu":
        return g * np.where(x > 0, 1.0, 0.2)
    if name == "gelu":
        pdf = np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi)
        return g * (0.5 * (1 + _erf(x / np.sqrt(2))) + x * pdf)
    if name == "silu":
        s = 1 / (1 + np.exp(-x))
        return g * s * (1 + x * (1 - s))
    raise AssertionError(name)


def _data(shape=(7, 13), seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32) * 3
    x[np.abs(x) < 1e-3] = 0.5  # keep away from the kinks
    return x, rng.standard_normal(shape).astype(np.float32)


def test_registry_lookup():
    assert activations.get(None) is None
    assert activations.get("linear") is None
    assert activations.names() == ("elu", "gelu", "leaky_relu", "linear", "relu", "sigmoid",
                                   "silu", "softmax", "tanh")
    for name in ALL:
        fn = activations.get(name)
        assert fn.name == name


def test_registry_errors():
    valid = ("'elu', 'gelu', 'leaky_relu', 'linear', 'relu', 'sigmoid', 'silu', 'softmax', "
             "'tanh'")
    with pytest.raises(ValueError, match=re.escape(
            f"activation must be one of {valid}, got 'swish'")):
        activations.get("swish")
    with pytest.raises(ValueError, match=re.escape(
            f"Dense: activation must be one of {valid}, got 'Relu'")):
        activations.get("Relu", owner="Dense")
    with pytest.raises(TypeError, match=re.escape(
            f"activation must be a string, a function of a tensor or None (one of {valid}), "
            f"got 3")):
        activations.get(3)


@pytest.mark.parametrize("name", ALL)
def test_forward_and_backward_match_float64(name):
    x, g = _data()
    fn = activations.get(name)
    y = fn.forward(x)
    assert y.dtype == np.float32 and y.shape == x.shape
    np.testing.assert_allclose(y, ref_forward(name, x), rtol=2e-6, atol=2e-6)
    dx = fn.backward(x, y, g)
    assert dx.dtype == np.float32
    np.testing.assert_allclose(dx, ref_backward(name, x, g), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", ALL)
def test_backward_matches_central_differences(name):
    x, g = _data((3, 5), seed=3)
    fn = activations.get(name)
    dx = fn.backward(x, fn.forward(x), g)
    x64 = x.astype(np.float64)
    h = 1e-3
    for i in np.ndindex(x.shape):
        up, down = x64.copy(), x64.copy()
        up[i] += h
        down[i] -= h
        num = ((ref_forward(name, up) - ref_forward(name, down)) * g).sum() / (2 * h)
        assert abs(dx[i] - num) <= 1e-3 + 1e-3 * abs(num)


def test_keras_values():
    x = np.array([-10, -5, 0.0, 5, 10], np.float32)
    np.testing.assert_array_equal(activations.get("leaky_relu").forward(x), [-2, -1, 0, 5, 10])
    np.testing.assert_allclose(activations.get("gelu").forward(np.array([-1.0, 0.0, 1.0])),
                               [-0.15865525, 0.0, 0.84134475], rtol=1e-6)
    np.testing.assert_allclose(activations.get("softmax").forward(np.array([1.0, 2.0, 1.0])),
                               [0.21194157, 0.5761169, 0.21194157], rtol=1e-6)
    np.testing.assert_allclose(activations.get("elu").forward(np.array([-1.0, 2.0])),
                               [math.expm1(-1.0), 2.0], rtol=1e-6)


def test_relu_general_matches_keras_examples():
    x = np.array([-10, -5, 0.0, 5, 10], np.float32)
    np.testing.assert_array_equal(activations.relu_fn(negative_slope=0.5).forward(x),
                                  [-5, -2.5, 0, 5, 10])
    np.testing.assert_array_equal(activations.relu_fn(max_value=5.0).forward(x), [0, 0, 0, 5, 5])
    np.testing.assert_array_equal(activations.relu_fn(threshold=5.0).forward(x), [0, 0, 0, 0, 10])
    np.testing.assert_array_equal(
        activations.relu_fn(negative_slope=0.5, max_value=10.0).forward(x), [-5, -2.5, 0, 5, 10])
    fn = activations.relu_fn(negative_slope=0.1, max_value=4.0, threshold=1.0)
    x = np.array([-2.0, 0.5, 2.0, 6.0], np.float32)
    np.testing.assert_allclose(fn.forward(x), [-0.3, -0.05, 2.0, 4.0], rtol=1e-6)
    np.testing.assert_allclose(fn.backward(x, None, np.ones(4, np.float32)), [0.1, 0.1, 1, 0],
                               rtol=1e-6)


def test_sigmoid_and_softmax_are_stable():
    x = np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0], np.float32)
    y = activations.get("sigmoid").forward(x)
    assert np.all(np.isfinite(y))
    np.testing.assert_array_equal(y[[0, 2, 4]], [0.0, 0.5, 1.0])
    silu = activations.get("silu").forward(x)
    np.testing.assert_array_equal(silu[[0, 2, 4]], [0.0, 0.0, 1000.0])
    s = activations.get("softmax").forward(np.array([[1000.0, 1000.0, -1000.0]], np.float32))
    np.testing.assert_allclose(s, [[0.5, 0.5, 0.0]])


def test_linear_from_get_is_none_and_empty_input():
    fn = activations.get("relu")
    out = fn.forward(np.zeros((0, 3), np.float32))
    assert out.shape == (0, 3)


@pytest.mark.parametrize("name", ALL)
def test_fused_bias_equals_separate_add(name):
    x, _ = _data((9, 6))
    bias = np.linspace(-1, 1, 6).astype(np.float32)
    fn = activations.get(name)
    fused = fn.forward(x, bias=bias)
    np.testing.assert_array_equal(fused, fn.forward(x + bias))


def test_in_place_forward_and_backward():
    x, g = _data((4, 8))
    fn = activations.get("tanh")
    expect = fn.forward(x)
    buf = x.copy()
    assert fn.forward(buf, out=buf) is buf
    np.testing.assert_array_equal(buf, expect)
    dexpect = fn.backward(None, expect, g)
    gbuf = g.copy()
    fn.backward(None, expect, gbuf, out=gbuf)
    np.testing.assert_array_equal(gbuf, dexpect)


def test_bad_out_buffer():
    with pytest.raises(ValueError, match=re.escape(
            "activation relu: out must be a C-contiguous float32 array of shape (2, 3), "
            "got (3, 2)")):
        activations.get("relu").forward(np.ones((2, 3)), out=np.empty((3, 2), np.float32))


def test_backward_shape_mismatch():
    fn = activations.get("gelu")
    with pytest.raises(ValueError, match=re.escape(
            "activation gelu: x, y and grad must have one shape, got (2,), (3,) and (3,)")):
        fn.backward(np.ones(2, np.float32), None, np.ones(3, np.float32))


@pytest.mark.parametrize("name", ALL)
def test_bitwise_serial_vs_parallel_and_threads(name):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1500, 33)).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    bias = rng.standard_normal(33).astype(np.float32)
    fn = activations.get(name)
    results = []
    for threads in (1, 2):
        tuning.set_num_threads(min(threads, tuning.max_threads()))
        for gate in (0, 2**62):
            with tuning.override(elementwise_parallel_min_elems=gate):
                y = fn.forward(x, bias=bias)
                results.append((y, fn.backward(x + bias, y, g),
                                activations.bias_grad(g)))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_bias_grad_matches_float64():
    rng = np.random.default_rng(2)
    g = rng.standard_normal((70000, 5)).astype(np.float32)
    np.testing.assert_allclose(activations.bias_grad(g), g.astype(np.float64).sum(axis=0),
                               rtol=1e-5, atol=1e-3)
    assert activations.bias_grad(np.zeros((0, 3), np.float32)).tolist() == [0.0, 0.0, 0.0]


def test_linear_bias_add_same_bits_serial_and_parallel():
    """The bias add of a layer without activation: serial calls add with NumPy (no kernel to
    compile), parallel ones run the kernel; both give x + bias in float32, bit for bit."""
    from tinynet.ops.fused import bias_act_forward

    rng = np.random.default_rng(7)
    x = rng.standard_normal((700, 10)).astype(np.float32)
    x[0, :3] = [-0.0, np.nan, np.inf]
    bias = rng.standard_normal(10).astype(np.float32)
    bias[:3] = [0.0, 1.0, -1.0]
    results = []
    for gate in (0, 2**62):
        with tuning.override(elementwise_parallel_min_elems=gate):
            z = x.copy()
            y, pre = bias_act_forward(z, bias, None)
            assert y is z and pre is None
            results.append(y)
    assert results[0].tobytes() == results[1].tobytes()
    assert results[0].tobytes() == (x + bias).tobytes()
    assert results[0][0, 0] == 0.0 and not np.signbit(results[0][0, 0])  # -0 + 0 = +0
    assert np.isnan(results[0][0, 1]) and results[0][0, 2] == np.inf
