"""Activation layers: contract, Keras values, gradients, configs and errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tinynet import tuning
from tinynet.layers.activations import (ELU, Activation, LeakyReLU, ReLU, Sigmoid, Softmax,
                                        Tanh)
from tinynet.tensor import Tensor
from tinynet.testing import check_gradients


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


LAYERS = [
    (lambda: Activation("relu"), "activation"),
    (lambda: Activation("gelu"), "activation"),
    (lambda: Activation(None), "activation"),
    (lambda: ReLU(), "re_lu"),
    (lambda: ReLU(max_value=1.5, negative_slope=0.1, threshold=0.2), "re_lu"),
    (lambda: LeakyReLU(), "leaky_re_lu"),
    (lambda: ELU(alpha=0.7), "elu"),
    (lambda: Sigmoid(), "sigmoid"),
    (lambda: Tanh(), "tanh"),
    (lambda: Softmax(), "softmax"),
    (lambda: Softmax(axis=1), "softmax"),
]


def _away_from_kinks(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 2
    for kink in (0.0, 0.2, 1.5):
        x[np.abs(x - kink) < 0.05] += 0.2
    return x


@pytest.mark.parametrize("make,name", LAYERS)
def test_contract_and_config_round_trip(make, name):
    layer = make()
    assert layer.name == name
    x = _away_from_kinks((2, 3, 4))
    y = layer(x)
    assert isinstance(y, Tensor) and y.dtype == np.float32
    assert layer.output_shape((None, 3, 4)) == (None, 3, 4)
    assert y.shape == layer.output_shape(x.shape)
    assert layer.count_params() == 0 and layer.parameters() == []
    config = json.loads(json.dumps(layer.get_config()))
    clone = type(layer).from_config(config)
    assert clone.get_config() == layer.get_config()
    np.testing.assert_array_equal(clone(x).numpy(), y.numpy())


@pytest.mark.parametrize("make,name", LAYERS)
def test_gradients(make, name):
    layer = make()
    check_gradients(layer, x=_away_from_kinks((3, 4, 5), seed=1), delta=1e-2)


def test_backward_before_forward():
    with pytest.raises(RuntimeError, match=re.escape(
            "ReLU 're_lu': backward called before forward")):
        ReLU().backward(np.ones((1, 2), np.float32))


def test_keras_reference_values():
    x = np.array([[-10, -5, 0.0, 5, 10]], np.float32)
    np.testing.assert_array_equal(ReLU()(x).numpy(), [[0, 0, 0, 5, 10]])
    np.testing.assert_array_equal(
        ReLU(max_value=10, negative_slope=0.5, threshold=0)(x).numpy(), [[-5, -2.5, 0, 5, 10]])
    np.testing.assert_array_equal(ReLU(max_value=1.0)(np.array([[-3.0, -1.0, 0.0, 2.0]])).numpy(),
                                  [[0, 0, 0, 1]])
    np.testing.assert_array_equal(ReLU(threshold=1.5)(np.array([[-3.0, -1.0, 1.0, 2.0]])).numpy(),
                                  [[0, 0, 0, 2]])
    np.testing.assert_allclose(LeakyReLU()(np.array([[-3.0, -1.0, 0.0, 2.0]])).numpy(),
                               [[-0.9, -0.3, 0.0, 2.0]], rtol=1e-6)
    np.testing.assert_array_equal(LeakyReLU(negative_slope=0.5)(x).numpy(),
                                  [[-5, -2.5, 0, 5, 10]])
    np.testing.assert_allclose(Softmax()(np.array([[1.0, 2.0, 1.0]])).numpy(),
                               [[0.21194157, 0.5761169, 0.21194157]], rtol=1e-6)
    np.testing.assert_allclose(ELU(alpha=2.0)(np.array([[-1.0, 3.0]])).numpy(),
                               [[2.0 * np.expm1(-1.0), 3.0]], rtol=1e-6)
    np.testing.assert_allclose(Sigmoid()(np.array([[0.0, 2.0]])).numpy(),
                               [[0.5, 1 / (1 + np.exp(-2.0))]], rtol=1e-6)
    np.testing.assert_allclose(Tanh()(np.array([[0.5]])).numpy(), [[np.tanh(0.5)]], rtol=1e-6)


def test_softmax_axis():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    y = Softmax(axis=1)(x).numpy()
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6)
    np.testing.assert_array_equal(Softmax(axis=-1)(x).numpy(), Softmax(axis=2)(x).numpy())
    with pytest.raises(ValueError, match=re.escape(
            "Softmax 'softmax': axis 3 is out of range for input of shape (2, 3, 4)")):
        Softmax(axis=3)(x)


def test_default_configs():
    assert ReLU().get_config() == {"name": "re_lu", "trainable": True, "max_value": None,
                                   "negative_slope": 0.0, "threshold": 0.0}
    assert LeakyReLU().get_config()["negative_slope"] == 0.3
    assert ELU().get_config()["alpha"] == 1.0
    assert Softmax().get_config()["axis"] == -1
    assert Activation("tanh", input_shape=(3,)).get_config() == {
        "name": "activation", "trainable": True, "input_shape": [3], "activation": "tanh"}
    assert Activation(None).get_config()["activation"] == "linear"


def test_bitwise_serial_vs_parallel():
    x = np.random.default_rng(3).standard_normal((64, 40, 41)).astype(np.float32)
    g = np.random.default_rng(4).standard_normal(x.shape).astype(np.float32)
    for make in (ReLU, LeakyReLU, ELU, Softmax, lambda: ReLU(max_value=1.0, threshold=0.1)):
        results = []
        for threads in (1, 2):
            tuning.set_num_threads(min(threads, tuning.max_threads()))
            for gate in (0, 2**62):
                with tuning.override(elementwise_parallel_min_elems=gate):
                    layer = make()
                    y = layer(x).numpy()
                    results.append((y, layer.backward(g).numpy()))
        for y, dx in results[1:]:
            assert np.array_equal(y, results[0][0]) and np.array_equal(dx, results[0][1])


@pytest.mark.parametrize("call,exc,text", [
    (lambda: Activation("swish"), ValueError,
     "Activation: activation must be one of 'elu', 'gelu', 'leaky_relu', 'linear', 'relu', "
     "'sigmoid', 'silu', 'softmax', 'tanh', got 'swish'"),
    (lambda: Activation(5), TypeError,
     "Activation: activation must be a string, a function of a tensor or None"),
    (lambda: ReLU(max_value=-1), ValueError,
     "ReLU: max_value must be None or a non-negative float, got -1.0"),
    (lambda: ReLU(negative_slope=-0.1), ValueError,
     "ReLU: negative_slope must be a non-negative float, got -0.1"),
    (lambda: ReLU(threshold=None), TypeError,
     "ReLU: threshold must be a non-negative float, got None"),
    (lambda: LeakyReLU(negative_slope=-1), ValueError,
     "LeakyReLU: negative_slope must be a non-negative float, got -1.0"),
    (lambda: ELU(alpha="1"), TypeError, "ELU: alpha must be a finite float, got '1'"),
    (lambda: ELU(alpha=float("inf")), ValueError, "ELU: alpha must be a finite float, got inf"),
    (lambda: Softmax(axis=1.0), TypeError, "Softmax: axis must be an int, got 1.0"),
])
def test_argument_errors(call, exc, text):
    with pytest.raises(exc, match=re.escape(text)):
        call()


def test_grad_shape_error():
    layer = Tanh()
    layer(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "Tanh 'tanh': grad_output must have shape (2, 3), got (3, 2)")):
        layer.backward(np.ones((3, 2), np.float32))
