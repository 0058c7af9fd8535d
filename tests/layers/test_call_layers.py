"""Keras-style ``call()`` layers and subclassed models: the recorded ops give ``backward``.

Pinned: gradients match central finite differences (float64 through the same ops), a
built-in layer inside ``call()`` gives the bits it gives alone, a subclassed model trains
to the bits of the equivalent Sequential, unused weights get zero gradients, and the
errors for a cut record and for a layer with no computation.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers, ops
from tinynet.testing import check_gradients


class Antirectifier(layers.Layer):
    """Centre the features, keep both signs apart and mix them back to the input width
    (an in-place ``-=`` on the input, ``add_weight`` with keywords, a name)."""

    def __init__(self, initializer="he_normal", **kwargs):
        super().__init__(**kwargs)
        self.initializer = initializer

    def build(self, input_shape):
        width = input_shape[-1]
        self.kernel = self.add_weight(shape=(2 * width, width), initializer=self.initializer,
                                      name="kernel", trainable=True)

    def call(self, inputs):
        inputs -= ops.mean(inputs, axis=-1, keepdims=True)
        both = ops.concatenate([ops.relu(inputs), ops.relu(-inputs)], axis=-1)
        return ops.matmul(both, self.kernel)

    def get_config(self):
        return {**super().get_config(), "initializer": self.initializer}


class Linear(layers.Layer):
    """Weights without names (``variable``, ``variable_1``) and Tensor operators."""

    def __init__(self, units=4):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="random_normal", trainable=True)
        self.b = self.add_weight(shape=(self.units,), initializer="zeros", trainable=True)

    def call(self, inputs):
        return inputs @ self.w + self.b


class Block(layers.Layer):
    """Built-in layers and ops mixed in one call()."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = layers.Dense(5)
        self.norm = layers.LayerNormalization()

    def call(self, inputs, training=None):
        return ops.tanh(self.norm(self.dense(inputs), training=training)) + inputs[..., :1]


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_antirectifier_gradients_match_finite_differences():
    tn.set_seed(1)
    layer = Antirectifier()
    assert check_gradients(layer, x=_x((3, 6))) <= 1.0
    assert [p.name for p in layer.parameters()] == ["kernel"]
    assert layer.compute_output_shape((None, 6)) == (None, 6)


def test_unnamed_weights_get_unique_names_and_operators_record():
    tn.set_seed(2)
    layer = Linear(3)
    assert check_gradients(layer, x=_x((4, 5))) <= 1.0
    assert [p.name for p in layer.parameters()] == ["variable", "variable_1"]


def test_builtin_layer_inside_call_gives_its_own_bits():
    tn.set_seed(3)
    block = Block()
    x = _x((4, 3))
    y = block(x, training=True)
    g = _x(y.shape, seed=5)
    dx = block.backward(g)
    dense, norm = block.dense, block.norm
    # the same layers run by hand: forward, backward, through the op between them
    h = dense.forward(x)
    n = norm.forward(h, training=True)
    t = np.tanh(n.data)
    assert np.array_equal(y.data, t + x[..., :1])
    gn = (g * (1 - t * t)).astype(np.float32)
    dh = norm.backward(gn)
    dx_ref = dense.backward(dh).data.copy()
    dx_ref[..., :1] += g.sum(axis=-1, keepdims=True)
    assert np.array_equal(dx.data, dx_ref)
    assert [name for name, _ in block.named_weights()] == [
        "dense/kernel", "dense/bias", "layer_normalization/gamma", "layer_normalization/beta"]


def test_block_gradients_match_finite_differences():
    tn.set_seed(4)
    assert check_gradients(Block(), x=_x((3, 4))) <= 1.0


def test_call_layer_in_sequential_and_functional_trains_and_matches():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((48, 6)).astype(np.float32)
    y = rng.integers(0, 3, 48)
    results = []
    for kind in ("sequential", "functional"):
        tn.set_seed(7)
        if kind == "sequential":
            model = tn.Sequential([layers.Input((6,)), layers.Dense(8), Antirectifier(),
                                   layers.Dense(3)])
        else:
            inp = tn.Input((6,))
            out = layers.Dense(3)(Antirectifier()(layers.Dense(8)(inp)))
            model = tn.Model(inp, out)
        model.compile("adam", tn.losses.SparseCategoricalCrossentropy(from_logits=True))
        h = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
        results.append((h.history["loss"], model.predict(x, verbose=0)))
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])
    assert results[0][0][1] < results[0][0][0]


class MLP(tn.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense1 = layers.Dense(16, activation="relu")
        self.dense2 = layers.Dense(3)

    def call(self, inputs, training=False):
        return self.dense2(self.dense1(inputs))


def test_subclassed_model_trains_to_the_bits_of_the_sequential():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((40, 8)).astype(np.float32)
    y = rng.integers(0, 3, 40)
    tn.set_seed(0)
    sub = MLP()
    sub.build((None, 8))
    seq = tn.Sequential([layers.Input((8,)), layers.Dense(16, activation="relu"),
                         layers.Dense(3)])
    seq.set_weights(sub.get_weights())
    hist = []
    for model in (sub, seq):
        tn.set_seed(5)
        model.compile("sgd", tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
        hist.append(model.fit(x, y, batch_size=8, epochs=2, verbose=0).history)
    assert hist[0] == hist[1]
    assert np.array_equal(sub.predict(x, verbose=0), seq.predict(x, verbose=0))
    assert [layer.name for layer in sub.layers] == ["dense", "dense_1"]


def test_unused_weight_gets_a_zero_gradient():
    class Unused(layers.Layer):
        def build(self, input_shape):
            self.a = self.add_weight(shape=(input_shape[-1],), initializer="ones")
            self.b = self.add_weight(shape=(2,), initializer="ones")

        def call(self, inputs):
            return inputs * self.a

    layer = Unused()
    layer(_x((2, 3)))
    layer.backward(np.ones((2, 3), np.float32))
    assert np.array_equal(layer.b.grad, np.zeros(2, np.float32))


def test_numpy_inside_call_is_refused_at_backward():
    class Leaky(layers.Layer):
        def call(self, inputs):
            return ops.convert_to_tensor(np.tanh(np.asarray(inputs)))

    layer = Leaky(name="leaky")
    layer(_x((2, 3)))
    with pytest.raises(RuntimeError, match=re.escape(
            "Leaky 'leaky': cannot run backward: it turned a tensor of shape (2, 3) into a "
            "NumPy array inside call(), which cuts the record of the ops; write call() with "
            "tinynet.ops (ops.matmul, ops.relu, ...) or Tensor operators, not NumPy")):
        layer.backward(np.ones((2, 3), np.float32))


def test_a_layer_with_no_computation_says_what_to_define():
    class Empty(layers.Layer):
        pass

    with pytest.raises(NotImplementedError, match=re.escape(
            "Empty 'empty' has no computation: define call(self, inputs) with tinynet.ops "
            "(backward is derived), or forward(self, x, training=False) and "
            "backward(self, grad_output)")):
        Empty()(_x((2, 3)))


def test_add_weight_refuses_bad_shapes_and_initializers():
    layer = layers.Layer(name="l")
    with pytest.raises(ValueError, match=re.escape(
            "Layer 'l': add_weight: shape must hold known non-negative ints, got (None, 2)")):
        layer.add_weight(shape=(None, 2))
    with pytest.raises(TypeError, match=re.escape(
            "Layer 'l': add_weight: initializer must be an initializer name, None or a "
            "callable shape -> array, got 3")):
        layer.add_weight(shape=(2,), initializer=3)
    with pytest.raises(ValueError, match=re.escape(
            "Layer 'l': add_weight: initializer: unknown initializer 'glorot'")):
        layer.add_weight(shape=(2,), initializer="glorot")


def test_two_positional_tensors_to_a_builtin_layer_are_refused():
    with pytest.raises(TypeError, match=re.escape(
            "Add 'add': called with 2 positional arguments; pass several inputs as one list, "
            "layer([a, b]), and training as a keyword, training=True")):
        layers.Add()(_x((2, 3)), _x((2, 3)))


def test_thread_count_does_not_change_the_automatic_backward():
    x = _x((64, 96))
    grads = []
    before = tn.tuning.get_num_threads()
    for threads in (1, 2):
        tn.set_seed(9)
        layer = Block()
        with tn.tuning.override(matmul_parallel_min_flops=0):
            tn.tuning.set_num_threads(threads)
            try:
                y = layer(x, training=True)
                dx = layer.backward(np.ones(y.shape, np.float32))
            finally:
                tn.tuning.set_num_threads(before)
        grads.append((y.data.copy(), dx.data.copy(),
                      [p.grad.copy() for p in layer.parameters()]))
    assert np.array_equal(grads[0][0], grads[1][0])
    assert np.array_equal(grads[0][1], grads[1][1])
    assert all(np.array_equal(a, b) for a, b in zip(grads[0][2], grads[1][2]))


def test_freezing_a_call_layer_freezes_its_sublayers():
    block = Block()
    block(_x((2, 3)))
    block.trainable = False
    assert not block.dense.trainable and not block.norm.trainable
    assert block.trainable_weights == []
    block.trainable = True
    assert len(block.trainable_weights) == 4
