"""What the keras-io guide "Making new layers and models via subclassing" relies on, with
Keras 3.15.1's semantics (examples/keras_compat/subclassing_layers_and_models.py runs it).

Pinned: ``layer.losses`` lists the losses each layer added itself (``add_loss`` belongs to
the layer that called it) since the last top-level call began, a sub-layer called twice
listing both; a model's top-level call clears what was added outside a call; a shape
query adds and clears nothing; ``assign``/``assign_add``/``assign_sub`` return the new
value; a subclassed VAE (random sampling from a fixed seed, the KL divergence added in
``call``) gets the gradient of its whole loss (finite differences).
"""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers, ops


class ActivityRegularization(layers.Layer):
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(inputs))
        return inputs


class Outer(layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularization(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


class Twice(layers.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularization(0.5)

    def call(self, inputs):
        return self.activity_reg(self.activity_reg(inputs) * 2.0)


def _values(losses):
    return [float(np.asarray(v)) for v in losses]


def test_losses_belong_to_the_layer_that_added_them():
    outer = Outer()
    outer(ops.ones((1, 1)))
    assert _values(outer.losses) == pytest.approx([0.01])
    assert _values(outer.activity_reg.losses) == pytest.approx([0.01])
    outer.activity_reg(ops.ones((1, 1)) * 3.0)  # a top-level call of the inner layer alone
    assert _values(outer.activity_reg.losses) == pytest.approx([0.03])
    assert _values(outer.losses) == pytest.approx([0.03])  # Keras 3.15.1: [0.03]
    outer(ops.zeros((1, 1)))
    assert _values(outer.losses) == pytest.approx([0.0])


def test_a_sublayer_called_twice_in_one_call_lists_both_losses():
    layer = Twice()
    layer(np.array([[1.0, 3.0]], dtype=np.float32))
    # 0.5 * mean([1, 3]) = 1, then 0.5 * mean([2, 6]) = 2
    assert _values(layer.activity_reg.losses) == pytest.approx([1.0, 2.0])
    assert _values(layer.losses) == pytest.approx([1.0, 2.0])
    layer(np.zeros((1, 2), dtype=np.float32))
    assert _values(layer.losses) == pytest.approx([0.0, 0.0])


class Regularized(tn.Model):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularization(0.5)

    def call(self, inputs):
        return self.activity_reg(inputs)


def test_a_model_call_clears_the_losses_added_outside_a_call():
    model = Regularized()
    assert model.losses == []
    model.add_loss(ops.ones(()) * 5.0)
    assert _values(model.losses) == [5.0]
    model(np.array([[2.0, 4.0]], dtype=np.float32))
    assert _values(model.losses) == pytest.approx([1.5])  # Keras 3.15.1: [1.5]


def test_a_shape_query_adds_and_clears_no_loss():
    outer = Outer()
    outer(ops.ones((1, 1)))
    before = outer.losses
    assert outer.compute_output_shape((None, 1)) == (None, 1)
    after = outer.losses
    assert len(after) == 1 and after[0] is before[0]


def test_assign_returns_the_new_value_as_keras():
    weight = tn.layers.Parameter(np.zeros(2, dtype=np.float32), "total", trainable=False)
    got = weight.assign_add(ops.sum(ops.ones((2, 2)), axis=0))
    assert isinstance(got, tn.Tensor) and got.numpy().tolist() == [2.0, 2.0]
    assert weight.assign_sub(np.float32(0.5)).numpy().tolist() == [1.5, 1.5]
    assert weight.assign([7.0, 8.0]).numpy().tolist() == [7.0, 8.0]
    assert got.numpy().tolist() == [2.0, 2.0]  # a copy: later updates leave it alone
    assert weight.numpy().tolist() == [7.0, 8.0]


class ComputeSum(layers.Layer):
    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(initializer="zeros", shape=(input_dim,), trainable=False)

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return self.total


def test_the_guides_non_trainable_sum():
    layer = ComputeSum(2)
    assert layer(ops.ones((2, 2))).numpy().tolist() == [2.0, 2.0]
    assert layer(ops.ones((2, 2))).numpy().tolist() == [4.0, 4.0]
    assert (len(layer.weights), len(layer.non_trainable_weights),
            layer.trainable_weights) == (1, 1, [])


class Sampling(layers.Layer):
    """z = mean + exp(log_var / 2) * epsilon, epsilon from a fixed seed (the same draw on
    every call, so the loss is a function of the weights alone)."""

    def call(self, inputs):
        z_mean, z_log_var = inputs
        epsilon = tn.random.normal(shape=(ops.shape(z_mean)[0], ops.shape(z_mean)[1]), seed=3)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


class TinyVAE(tn.Model):
    def __init__(self):
        super().__init__()
        self.mean = layers.Dense(2)
        self.log_var = layers.Dense(2)
        self.sampling = Sampling()
        self.out = layers.Dense(3, activation="sigmoid")

    def call(self, inputs):
        z_mean, z_log_var = self.mean(inputs), self.log_var(inputs)
        z = self.sampling((z_mean, z_log_var))
        self.add_loss(-0.5 * ops.mean(z_log_var - ops.square(z_mean) - ops.exp(z_log_var) + 1))
        return self.out(z)


def test_a_vae_gets_the_gradient_of_its_reconstruction_and_kl_losses():
    tn.set_seed(5)
    x = np.random.default_rng(0).random((4, 3)).astype(np.float32)
    model = TinyVAE()
    model.compile(tn.optimizers.SGD(learning_rate=1.0), loss=tn.losses.MeanSquaredError())
    model(x)
    weights = model.get_weights()

    def loss(ws):
        model.set_weights(ws)
        return float(model.evaluate(x, x, verbose=0))

    base = loss(weights)
    model.set_weights(weights)
    assert model.train_on_batch(x, x) == pytest.approx(base, rel=1e-6)
    grads = [w - n for w, n in zip(weights, model.get_weights())]  # SGD(1.0): w - grad
    delta = 1e-2
    for i, w in enumerate(weights):
        for idx in np.ndindex(w.shape):
            up = [v.copy() for v in weights]
            down = [v.copy() for v in weights]
            up[i][idx] += delta
            down[i][idx] -= delta
            numeric = (loss(up) - loss(down)) / (2 * delta)
            assert grads[i][idx] == pytest.approx(numeric, rel=2e-2, abs=1e-4), (i, idx)
