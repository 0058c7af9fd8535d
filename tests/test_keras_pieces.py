"""The Keras pieces that Keras tutorial code leans on (custom-layer recipes, the guide to
subclassing layers and models), with Keras 3's names and semantics:

* ``Parameter.assign_add`` / ``assign_sub`` (a Keras ``Variable``'s), state updates that
  record nothing inside ``call()``, and a ``call()`` that returns a weight;
* ``tinynet.activations`` as ``keras.activations``: ``relu(x, negative_slope, max_value,
  threshold)``, ``gelu(x, approximate=False)``, ... on tensors, accepted by ``get``;
* ``tinynet.random`` as ``keras.random``: ``SeedGenerator``, ``normal``, ``uniform``,
  ``truncated_normal``, ``randint``, ``dropout``, ``shuffle`` and their ``seed=``;
* ``tinynet.initializers`` as ``keras.initializers``: the classes, ``get`` from a name,
  config or object, ``serialize`` / ``deserialize`` in Keras's config format.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tinynet as tn
from tinynet import activations, initializers, layers, ops
from tinynet import random as tn_random
from tinynet.layers.parameter import Parameter
from tinynet.testing import check_gradients

# -- Variable surface: assign_add / assign_sub, state updates inside call() ---------------------
def test_assign_add_and_assign_sub_update_in_place():
    p = Parameter(np.zeros(3, np.float32), "total", trainable=False)
    view = p.value
    new = p.assign_add(np.array([1.0, 2.0, 3.0]))  # the new value, as Keras returns it
    assert isinstance(new, tn.Tensor) and new.numpy().tolist() == [1.0, 2.0, 3.0]
    p.assign_add(ops.ones((3,)))
    p.assign_sub(tn.Tensor([0.5, 0.5, 0.5]))
    p.assign_add(1.0)  # broadcasts, as self + value does in Keras
    np.testing.assert_array_equal(p.numpy(), [2.5, 3.5, 4.5])
    assert p.value is view and p.value.dtype == np.float32
    for bad in (np.ones(2), np.ones((2, 3))):
        with pytest.raises(ValueError, match=re.escape(f"expected shape (3,), got {bad.shape}")):
            p.assign_add(bad)


class _CountingLinear(layers.Layer):
    """A weight used by the ops, and a non-trainable counter updated in ``call()``."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 2), initializer="random_normal")
        self.seen = self.add_weight(shape=(input_shape[-1],), initializer="zeros",
                                    trainable=False)

    def call(self, inputs):
        self.seen.assign_add(ops.sum(inputs, axis=0))  # a tracked tensor: no escape
        return ops.matmul(inputs, self.w)


def test_state_update_inside_call_records_nothing_and_keeps_backward():
    tn.set_seed(3)
    layer = _CountingLinear()
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    layer(x)
    np.testing.assert_allclose(layer.seen.numpy(), x.sum(axis=0), rtol=1e-6)
    g = np.ones((4, 2), np.float32)
    dx = layer.backward(g)  # the record is whole: no "turned into NumPy" error
    np.testing.assert_allclose(np.asarray(dx), g @ layer.w.value.T, rtol=1e-6)
    np.testing.assert_allclose(layer.w.grad, x.T @ g, rtol=1e-5)
    np.testing.assert_array_equal(layer.seen.grad, np.zeros(3))


class _ComputeSum(layers.Layer):
    """The guide's ``ComputeSum``: returns its non-trainable weight."""

    def __init__(self, input_dim):
        super().__init__()
        self.total = self.add_weight(initializer="zeros", shape=(input_dim,), trainable=False)

    def call(self, inputs):
        self.total.assign_add(ops.sum(inputs, axis=0))
        return self.total


def test_call_returning_a_weight_gives_its_values_then():
    my_sum = _ComputeSum(2)
    y1 = my_sum(ops.ones((2, 2)))
    y2 = my_sum(ops.ones((2, 2)))
    assert isinstance(y1, tn.Tensor)
    np.testing.assert_array_equal(y1.numpy(), [2.0, 2.0])  # not a view of the weight
    np.testing.assert_array_equal(y2.numpy(), [4.0, 4.0])
    assert len(my_sum.weights) == 1 and len(my_sum.non_trainable_weights) == 1
    assert my_sum.trainable_weights == []


class _Bias(layers.Layer):
    """Returns a trainable weight as it is (its gradient is the output gradient)."""

    def build(self, input_shape):
        self.b = self.add_weight(shape=(3,), initializer="ones")

    def call(self, inputs):
        return self.b


def test_call_returning_a_trainable_weight_passes_its_gradient():
    layer = _Bias()
    layer(np.zeros((2, 3), np.float32))
    layer.backward(np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(layer.b.grad, [1.0, 2.0, 3.0])


# -- keras.activations --------------------------------------------------------------------------
RELU_ARGS = [{}, {"negative_slope": 0.5}, {"max_value": 5.0}, {"threshold": 5.0},
             {"max_value": 6}, {"negative_slope": 0.5, "max_value": 10.0},
             {"negative_slope": 0.1, "max_value": 4.0, "threshold": 1.0},
             {"negative_slope": 0.2, "threshold": -1.0}]


@pytest.mark.parametrize("kwargs", RELU_ARGS, ids=lambda k: ",".join(k) or "plain")
def test_keras_relu_matches_the_relu_kernel(kwargs):
    x = np.linspace(-8, 8, 65, dtype=np.float32)
    got = activations.relu(x, **kwargs)
    assert isinstance(got, tn.Tensor) and got.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(got), activations.relu_fn(**kwargs).forward(x))


def test_keras_activation_functions_are_the_ops_with_keras_defaults():
    x = np.linspace(-4, 4, 17, dtype=np.float32).reshape(1, 17)
    same = {"relu6": ops.relu6, "sigmoid": ops.sigmoid, "tanh": ops.tanh,
            "softplus": ops.softplus, "softsign": ops.softsign, "silu": ops.silu,
            "swish": ops.silu, "selu": ops.selu, "hard_sigmoid": ops.hard_sigmoid,
            "hard_silu": ops.hard_silu, "hard_swish": ops.hard_silu,
            "log_sigmoid": ops.log_sigmoid, "exponential": ops.exp,
            "softmax": ops.softmax, "log_softmax": ops.log_softmax}
    for name, op in same.items():
        np.testing.assert_array_equal(np.asarray(getattr(activations, name)(x)),
                                      np.asarray(op(x)), err_msg=name)
    # Keras's activations.gelu is exact by default (ops.gelu approximates)
    np.testing.assert_array_equal(np.asarray(activations.gelu(x)),
                                  np.asarray(ops.gelu(x, approximate=False)))
    np.testing.assert_array_equal(np.asarray(activations.leaky_relu(x)),
                                  np.asarray(ops.leaky_relu(x, negative_slope=0.2)))
    np.testing.assert_array_equal(np.asarray(activations.elu(x, alpha=0.5)),
                                  np.asarray(ops.elu(x, alpha=0.5)))
    np.testing.assert_array_equal(np.asarray(activations.softmax(x.T, axis=0)),
                                  np.asarray(ops.softmax(x.T, axis=0)))
    assert activations.linear(x) is x


class _KerasActivations(layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], 4), initializer="random_normal")

    def call(self, inputs):
        h = activations.relu(ops.matmul(inputs, self.w), negative_slope=0.1, max_value=0.5)
        return activations.gelu(h) + activations.sigmoid(inputs[:, :4])


def test_keras_activations_are_recorded_inside_call():
    tn.set_seed(0)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    # a small step: relu's kinks (0, max_value) are near some pre-activations
    assert check_gradients(_KerasActivations(), x=x, delta=1e-3, atol=2e-3) <= 1.0


def test_get_accepts_the_keras_activation_functions():
    assert activations.get(activations.relu) is activations.get("relu")
    assert activations.get(activations.swish) is activations.get("silu")
    assert activations.get(activations.gelu) is activations.get("gelu")
    assert activations.get(activations.linear) is None
    for other in (activations.selu, lambda x: x, ops.relu):  # no kernel of their own
        assert isinstance(activations.get(other), activations.FunctionActivation)
    with pytest.raises(TypeError, match="activation must be a string, a function of a tensor "
                                        "or None"):
        activations.get(3)
    dense = layers.Dense(3, activation=activations.relu)
    assert dense.get_config()["activation"] == "relu"
    y = dense(np.full((2, 4), -1.0, np.float32))
    assert np.all(np.asarray(y) >= 0)


# -- keras.random -------------------------------------------------------------------------------
def test_seed_generator_draws_new_values_reproducibly():
    a, b = tn_random.SeedGenerator(1337), tn_random.SeedGenerator(1337)
    first = [np.asarray(tn_random.normal((4,), seed=a)) for _ in range(3)]
    second = [np.asarray(tn_random.normal((4,), seed=b)) for _ in range(3)]
    for u, v in zip(first, second):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(first[0], first[1])
    np.testing.assert_array_equal(a.state, [1337, 3])
    assert a.get_config() == {"seed": 1337}
    assert tn_random.SeedGenerator.from_config(a.get_config()).state.tolist() == [1337, 0]


def test_int_seed_gives_the_same_values_as_a_generators_first_draw():
    one = np.asarray(tn_random.normal((2, 3), seed=7))
    np.testing.assert_array_equal(one, np.asarray(tn_random.normal((2, 3), seed=7)))
    np.testing.assert_array_equal(
        one, np.asarray(tn_random.normal((2, 3), seed=tn_random.SeedGenerator(7))))


def test_no_seed_follows_the_global_seed():
    tn.set_seed(11)
    a = np.asarray(tn_random.uniform((5,)))
    gen_a = tn_random.SeedGenerator()
    tn.set_seed(11)
    b = np.asarray(tn_random.uniform((5,)))
    gen_b = tn_random.SeedGenerator()
    np.testing.assert_array_equal(a, b)
    assert gen_a.get_config() == gen_b.get_config()


def test_samplers_follow_their_arguments():
    x = np.asarray(tn_random.normal((20000,), mean=2.0, stddev=0.5, seed=0))
    assert x.dtype == np.float32 and abs(x.mean() - 2.0) < 0.02 and abs(x.std() - 0.5) < 0.02
    assert tn_random.normal([2, 3], dtype="float64", seed=0).dtype == np.float64
    u = np.asarray(tn_random.uniform((1000,), minval=-3.0, maxval=-1.0, seed=1))
    assert u.min() >= -3.0 and u.max() < -1.0
    t = np.asarray(tn_random.truncated_normal((5000,), mean=1.0, stddev=0.1, seed=2))
    assert t.min() >= 0.8 - 1e-6 and t.max() <= 1.2 + 1e-6
    r = np.asarray(tn_random.randint((1000,), 3, 7, seed=3))
    assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6}
    s = np.asarray(tn_random.shuffle(np.arange(10), seed=4))
    assert sorted(s.tolist()) == list(range(10)) and s.tolist() != list(range(10))


def test_random_bad_arguments():
    with pytest.raises(TypeError, match="random.normal: seed must be a keras.random."
                                        "SeedGenerator"):
        tn_random.normal((2,), seed="a")
    with pytest.raises(ValueError, match="seed must be"):
        tn_random.normal((2,), seed=-1)
    with pytest.raises(TypeError, match="SeedGenerator: seed must be"):
        tn_random.SeedGenerator(1.5)
    with pytest.raises(ValueError, match=r"random.dropout: rate must be a float in \[0, 1\)"):
        tn_random.dropout(np.ones(3), rate=1.0)
    with pytest.raises(TypeError, match="random.uniform: dtype must be a float dtype"):
        tn_random.uniform((2,), dtype="int32")
    with pytest.raises(ValueError, match="shape must hold known non-negative ints"):
        tn_random.normal((2, -1))


def test_dropout_keeps_and_scales():
    x = np.ones((200, 50), np.float32)
    np.testing.assert_array_equal(np.asarray(tn_random.dropout(x, rate=0.0, seed=0)), x)
    y = np.asarray(tn_random.dropout(x, rate=0.25, seed=0))
    assert set(np.unique(y)) == {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.02
    shared = np.asarray(tn_random.dropout(x, rate=0.5, noise_shape=(1, 50), seed=1))
    assert np.all(shared == shared[:1])  # one mask for every row


class _CustomDropout(layers.Layer):
    """The guide's ``CustomDropout``."""

    def __init__(self, rate, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.seed_generator = tn.random.SeedGenerator(1337)

    def call(self, inputs, training=None):
        if training:
            return tn.random.dropout(inputs, rate=self.rate, seed=self.seed_generator)
        return inputs


def test_guide_custom_dropout_in_and_out_of_training():
    layer = _CustomDropout(0.5)
    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(layer(x)), x)
    y = np.asarray(layer(x, training=True))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 2 * x[kept], rtol=1e-6)
    g = np.random.default_rng(1).standard_normal((8, 6)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(layer.backward(g)), np.where(kept, 2 * g, 0),
                               rtol=1e-6)
    assert not np.array_equal(y, np.asarray(layer(x, training=True)))  # a new mask


class _Sampling(layers.Layer):
    """The guide's ``Sampling``."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = tn.random.SeedGenerator(1337)

    def call(self, inputs):
        z_mean, z_log_var = inputs
        batch = ops.shape(z_mean)[0]
        dim = ops.shape(z_mean)[1]
        epsilon = tn.random.normal(shape=(batch, dim), seed=self.seed_generator)
        return z_mean + ops.exp(0.5 * z_log_var) * epsilon


def test_guide_sampling_gradient_is_the_reparametrisation():
    layer = _Sampling()
    rng = np.random.default_rng(2)
    mean, log_var = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(2))
    z = np.asarray(layer([mean, log_var]))
    eps = np.asarray(tn.random.normal((4, 3), seed=tn.random.SeedGenerator(1337)))
    np.testing.assert_allclose(z, mean + np.exp(0.5 * log_var) * eps, rtol=1e-5, atol=1e-6)
    g = np.ones((4, 3), np.float32)
    d_mean, d_log_var = layer.backward(g)
    np.testing.assert_array_equal(np.asarray(d_mean), g)
    np.testing.assert_allclose(np.asarray(d_log_var), 0.5 * np.exp(0.5 * log_var) * eps,
                               rtol=1e-5, atol=1e-6)


# -- keras.initializers -------------------------------------------------------------------------
def test_initializer_names_give_keras_classes_and_configs():
    # Keras 3.15.1's serialize(get(name)), without its new input_axes / output_axes
    expected = {
        "he_normal": ("HeNormal", {"seed": None}),
        "glorot_uniform": ("GlorotUniform", {"seed": None}),
        "zeros": ("Zeros", {}),
        "random_normal": ("RandomNormal", {"seed": None, "mean": 0.0, "stddev": 0.05}),
        "normal": ("RandomNormal", {"seed": None, "mean": 0.0, "stddev": 0.05}),
        "uniform": ("RandomUniform", {"seed": None, "minval": -0.05, "maxval": 0.05}),
    }
    for name, (cls, config) in expected.items():
        init = initializers.get(name)
        assert isinstance(init, initializers.Initializer) and type(init).__name__ == cls
        assert initializers.serialize(init) == {
            "module": "keras.initializers", "class_name": cls, "config": config,
            "registered_name": None}
    assert initializers.serialize(initializers.Constant(2.0))["config"] == {"value": 2.0}
    assert initializers.serialize("he_normal") == "he_normal"
    assert initializers.serialize(None) is None


def test_initializers_round_trip_and_seeded_ones_repeat():
    init = initializers.RandomNormal(mean=1.0, stddev=0.1, seed=3)
    again = initializers.deserialize(initializers.serialize(init))
    assert type(again) is initializers.RandomNormal and again.get_config() == init.get_config()
    np.testing.assert_array_equal(init((3, 4)), again((3, 4)))
    np.testing.assert_array_equal(init((3, 4)), init((3, 4)))
    assert initializers.get(initializers.serialize(init)).get_config() == init.get_config()
    he = initializers.get("he_normal", seed=5)
    np.testing.assert_array_equal(he((6, 4)), initializers.HeNormal(seed=5)((6, 4)))
    assert initializers.HeNormal(seed=5)((6, 4), dtype="float64").dtype == np.float64
    values = np.asarray(initializers.TruncatedNormal(stddev=0.2, seed=1)((4000,)))
    assert np.abs(values).max() <= 0.4 + 1e-6
    with pytest.raises(ValueError, match="unknown initializer class 'Nope'"):
        initializers.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(TypeError, match="only names and Initializer objects have a config"):
        initializers.serialize(lambda shape: np.zeros(shape))


@tn.saving.register_keras_serializable(package="keras_pieces")
class Antirectifier(layers.Layer):
    """Centre the features, keep both signs apart and mix them back to the input width;
    the initializer is an argument serialized in Keras's format."""

    def __init__(self, initializer="he_normal", **kwargs):
        super().__init__(**kwargs)
        self.initializer = tn.initializers.get(initializer)

    def build(self, input_shape):
        width = input_shape[-1]
        self.kernel = self.add_weight(shape=(2 * width, width), initializer=self.initializer,
                                      name="kernel")

    def call(self, inputs):
        centred = inputs - ops.mean(inputs, axis=-1, keepdims=True)
        both = ops.concatenate([ops.relu(centred), ops.relu(ops.negative(centred))], axis=-1)
        return both @ self.kernel

    def get_config(self):
        return {**super().get_config(),
                "initializer": tn.initializers.serialize(self.initializer)}


def test_antirectifier_config_saves_and_reloads(tmp_path):
    tn.set_seed(0)
    model = tn.Sequential([tn.Input(shape=(6,)), layers.Dense(4),
                           Antirectifier(initializer=tn.initializers.HeUniform(seed=2)),
                           layers.Dense(3)])
    assert model.layers[1].get_config()["initializer"] == {
        "module": "keras.initializers", "class_name": "HeUniform", "config": {"seed": 2},
        "registered_name": None}
    model.compile(loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  optimizer=tn.optimizers.RMSprop(),
                  metrics=[tn.metrics.SparseCategoricalAccuracy()])
    rng = np.random.default_rng(0)
    x, y = rng.random((16, 6)).astype(np.float32), rng.integers(0, 3, 16)
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    path = tmp_path / "antirectifier.safetensors"
    model.save(path)
    loaded = tn.load_model(path)
    assert isinstance(loaded.layers[1].initializer, tn.initializers.HeUniform)
    np.testing.assert_array_equal(np.asarray(loaded.predict(x, verbose=0)),
                                  np.asarray(model.predict(x, verbose=0)))


def test_add_weight_takes_initializer_objects_and_configs():
    class Layer2(layers.Layer):
        def build(self, input_shape):
            self.a = self.add_weight(shape=(2, 3),
                                     initializer=tn.initializers.RandomNormal(seed=4))
            self.b = self.add_weight(shape=(2, 3), initializer=tn.initializers.serialize(
                tn.initializers.RandomNormal(seed=4)))
            self.c = self.add_weight(shape=(3,), initializer=tn.initializers.Constant(0.5))

        def call(self, inputs):
            return inputs

    layer = Layer2()
    layer(np.zeros((1, 2), np.float32))
    np.testing.assert_array_equal(layer.a.numpy(), layer.b.numpy())
    np.testing.assert_array_equal(layer.c.numpy(), [0.5, 0.5, 0.5])
