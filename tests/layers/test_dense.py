"""Dense: contract, references, gradients, determinism and errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tinynet import tuning
from tinynet.layers.dense import Dense
from tinynet.tensor import Tensor
from tinynet.testing import check_gradients

from tests.test_activations_fn import ref_backward, ref_forward


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("in_shape", [(None, 5), (None, 3, 5), (None, 2, 3, 5)])
def test_contract(in_shape):
    layer = Dense(4, activation="relu", seed=0)
    x = _x((2, *in_shape[1:]))
    y = layer(x)
    assert isinstance(y, Tensor) and y.dtype == np.float32
    assert layer.output_shape(in_shape) == (*in_shape[:-1], 4)
    assert y.shape == layer.output_shape(x.shape)
    assert layer.count_params() == 5 * 4 + 4
    assert [p.name for p in layer.parameters()] == ["kernel", "bias"]
    assert layer.kernel.shape == (5, 4) and layer.bias.shape == (4,)
    assert [p.path for p in layer.parameters()] == ["dense/kernel", "dense/bias"]
    assert Dense(3, use_bias=False, input_shape=(7,)).name == "dense"


def test_count_params_without_bias():
    layer = Dense(6, use_bias=False)
    layer.build((None, 10))
    assert layer.count_params() == 60
    assert [p.name for p in layer.parameters()] == ["kernel"]


def test_config_round_trip():
    layer = Dense(3, activation="softmax", use_bias=False, kernel_initializer="he_normal",
                  seed=7, name="head", input_shape=(4,), trainable=False)
    config = json.loads(json.dumps(layer.get_config()))
    assert config == {"name": "head", "trainable": False, "input_shape": [4], "units": 3,
                      "activation": "softmax", "use_bias": False,
                      "kernel_initializer": "he_normal", "seed": 7,
                      "kernel_regularizer": None, "bias_regularizer": None,
                      "activity_regularizer": None}
    clone = Dense.from_config(config)
    assert clone.get_config() == layer.get_config()
    assert Dense(2).get_config()["activation"] == "linear"


def test_seeded_glorot_uniform_init_and_zero_bias():
    a, b = Dense(8, seed=3), Dense(8, seed=3)
    a.build((None, 6))
    b.build((None, 6))
    np.testing.assert_array_equal(a.kernel.value, b.kernel.value)
    limit = np.sqrt(6.0 / (6 + 8))
    assert np.abs(a.kernel.value).max() <= limit
    assert a.kernel.value.std() > limit / 4
    np.testing.assert_array_equal(a.bias.value, np.zeros(8, np.float32))


@pytest.mark.parametrize("activation", [None, "relu", "sigmoid", "tanh", "softmax", "elu",
                                        "leaky_relu", "gelu", "silu"])
def test_matches_float64_reference(activation):
    layer = Dense(6, activation=activation, seed=1)
    x = _x((4, 3, 5), seed=2)
    layer.build((None, 3, 5))
    layer.bias.assign(np.linspace(-0.5, 0.5, 6))
    y = layer(x).numpy()
    z = x.astype(np.float64) @ layer.kernel.value.astype(np.float64) + layer.bias.value
    ref = z if activation is None else ref_forward(activation, z)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)
    g = _x(y.shape, seed=3)
    dx = layer.backward(g).numpy()
    dz = g.astype(np.float64) if activation is None else ref_backward(activation, z, g)
    dz2 = dz.reshape(-1, 6)
    np.testing.assert_allclose(dx, (dz @ layer.kernel.value.T.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.kernel.grad, x.reshape(-1, 5).T.astype(np.float64) @ dz2,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.bias.grad, dz2.sum(axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", [None, "relu", "tanh", "softmax", "gelu"])
@pytest.mark.parametrize("use_bias", [True, False])
def test_gradients(activation, use_bias):
    layer = Dense(4, activation=activation, use_bias=use_bias, seed=0)
    layer.build((None, 2, 3))
    if use_bias:
        layer.bias.assign([0.1, -0.2, 0.3, 0.05])
    check_gradients(layer, (3, 2, 3), seed=1)


def test_hand_values():
    layer = Dense(2, activation="relu")
    layer.build((None, 3))
    layer.kernel.assign([[1, -1], [2, 0], [0, 3]])
    layer.bias.assign([0.5, -10])
    y = layer(np.array([[1, 1, 1], [0, 0, 2]], np.float32)).numpy()
    np.testing.assert_array_equal(y, [[3.5, 0.0], [0.5, 0.0]])
    dx = layer.backward(np.ones((2, 2), np.float32)).numpy()
    np.testing.assert_array_equal(dx, [[1, 2, 0], [1, 2, 0]])
    np.testing.assert_array_equal(layer.kernel.grad, [[1, 0], [1, 0], [3, 0]])
    np.testing.assert_array_equal(layer.bias.grad, [2, 0])


def test_torch_parity():
    torch = pytest.importorskip("torch")
    layer = Dense(7, activation="gelu", seed=4)
    x = _x((5, 9), seed=5)
    y = layer(x).numpy()
    g = _x(y.shape, seed=6)
    dx = layer.backward(g).numpy()
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    wt = torch.tensor(layer.kernel.value, dtype=torch.float64, requires_grad=True)
    bt = torch.tensor(layer.bias.value, dtype=torch.float64, requires_grad=True)
    yt = torch.nn.functional.gelu(xt @ wt + bt)
    yt.backward(torch.tensor(g, dtype=torch.float64))
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.kernel.grad, wt.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.bias.grad, bt.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("activation", ["relu", "silu"])
def test_bitwise_across_gates_and_threads(activation):
    x = _x((512, 300), seed=8)
    g = _x((512, 256), seed=9)
    results = []
    for threads in (1, 2):
        tuning.set_num_threads(min(threads, tuning.max_threads()))
        for gate in (0, 2**62):
            with tuning.override(matmul_parallel_min_flops=gate,
                                 elementwise_parallel_min_elems=gate):
                layer = Dense(256, activation=activation, seed=0)
                layer.build((None, 300))
                layer.bias.assign(np.linspace(-1, 1, 256))
                y = layer(x).numpy()
                dx = layer.backward(g).numpy()
                results.append((y, dx, layer.kernel.grad, layer.bias.grad))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


def test_frozen_layer_computes_no_parameter_gradients():
    layer = Dense(3, seed=0, trainable=False)
    x = _x((2, 4))
    layer(x)
    dx = layer.backward(np.ones((2, 3), np.float32)).numpy()
    assert layer.kernel.grad is None and layer.bias.grad is None
    assert layer.trainable_parameters() == []
    np.testing.assert_allclose(dx, np.ones((2, 3)) @ layer.kernel.value.T, rtol=1e-6)
    layer.trainable = True
    layer(x)
    layer.backward(np.ones((2, 3), np.float32))
    assert layer.kernel.grad is not None


def test_backward_before_forward():
    layer = Dense(2)
    layer.build((None, 3))
    with pytest.raises(RuntimeError, match=re.escape(
            "Dense 'dense': backward called before forward")):
        layer.backward(np.ones((1, 2), np.float32))


@pytest.mark.parametrize("call,exc,text", [
    (lambda: Dense(0), ValueError, "Dense: units must be a positive int, got 0"),
    (lambda: Dense(-3), ValueError, "Dense: units must be a positive int, got -3"),
    (lambda: Dense(2.5), TypeError, "Dense: units must be a positive int, got 2.5"),
    (lambda: Dense(2, activation="swish"), ValueError,
     "Dense: activation must be one of 'elu', 'gelu', 'leaky_relu', 'linear', 'relu', "
     "'sigmoid', 'silu', 'softmax', 'tanh', got 'swish'"),
    (lambda: Dense(2, use_bias=1), TypeError, "Dense: use_bias must be a bool, got 1"),
    (lambda: Dense(2, kernel_initializer="uniformly"), ValueError,
     "Dense: kernel_initializer: unknown initializer 'uniformly'"),
    (lambda: Dense(2, seed=-1), ValueError,
     "Dense: seed must be None or a non-negative int, got -1"),
])
def test_argument_errors(call, exc, text):
    with pytest.raises(exc, match=re.escape(text)):
        call()


def test_input_errors():
    with pytest.raises(ValueError, match=re.escape(
            "Dense 'dense': input must have rank >= 2 (batch axis included), got shape (None,)")):
        Dense(2).output_shape((None,))
    layer = Dense(2)
    with pytest.raises(ValueError, match=re.escape(
            "Dense 'dense': input must have rank >= 2 (batch axis included), got shape (None,)")):
        layer(np.ones(3, np.float32))
    layer = Dense(2)
    layer(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "Dense 'dense': expected input of shape (batch, ..., 3), got shape (1, 4)")):
        layer(np.ones((1, 4), np.float32))


def test_building_again_replaces_the_weights():
    layer = Dense(3, seed=0)
    layer.build((None, 4))
    layer.build((None, 6))
    assert layer.count_params() == 6 * 3 + 3 and layer.kernel.shape == (6, 3)
    assert layer(np.ones((2, 6), np.float32)).shape == (2, 3)


def test_backward_params_matches_backward():
    """backward_params (a model's first layer) fills the same gradients as backward."""
    import numpy as np
    from tinynet.layers import Conv2D, Dense

    x = np.random.default_rng(0).standard_normal((4, 6, 6, 3)).astype(np.float32)
    for layer, inp in ((Dense(5, activation="relu", seed=1), x.reshape(4, -1)),
                       (Conv2D(4, 3, padding="same", activation="relu", seed=1), x)):
        y = np.asarray(layer(inp, training=True))
        g = np.ones_like(y)
        layer.backward(g)
        full = [p.grad.copy() for p in layer.parameters()]
        layer.forward(inp, training=True)
        layer.backward_params(g)
        assert all(np.array_equal(a, p.grad) for a, p in zip(full, layer.parameters()))
