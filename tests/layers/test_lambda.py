"""``tn.layers.Lambda`` (issue 44): a layer from a function written with ``tinynet.ops``,
its backward from automatic differentiation; saved by the function's registered name
only (a file never holds or runs code)."""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet import ops
from tinynet.testing import check_gradients


@tn.saving.register_keras_serializable(package="tests.lambda")
def antirectify(x, axis=-1):
    """The keras-io "antirectifier" as a function."""
    x = x - ops.mean(x, axis=axis, keepdims=True)
    x = ops.normalize(x, axis=axis)
    return ops.concatenate([ops.relu(x), ops.relu(-x)], axis=-1)


@tn.saving.register_keras_serializable(package="tests.lambda")
def doubled_shape(input_shape):
    return (*input_shape[:-1], 2 * input_shape[-1])


def x_of(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_values_shape_and_gradients():
    layer = L.Lambda(antirectify, arguments={"axis": -1})
    x = x_of(3, 4)
    out = np.asarray(layer(x))
    c = x - x.mean(-1, keepdims=True)
    c = c / np.linalg.norm(c, axis=-1, keepdims=True)
    np.testing.assert_allclose(out, np.concatenate([np.maximum(c, 0), np.maximum(-c, 0)], -1),
                               rtol=1e-5, atol=1e-6)
    assert layer.output_shape((None, 4)) == (None, 8)
    assert layer.compute_output_shape((5, 4)) == (5, 8)
    check_gradients(layer, x=x, seed=1)


def test_output_shape_argument():
    assert L.Lambda(lambda t: t, output_shape=(7,)).compute_output_shape((None, 3)) == (None, 7)
    assert L.Lambda(lambda t: t, output_shape=doubled_shape).compute_output_shape(
        (None, 3)) == (None, 6)
    inp = tn.Input((4,))
    a, b = L.Dense(2)(inp), L.Dense(2)(inp)
    out = L.Lambda(lambda xs: xs[0] * xs[1], output_shape=(2,))([a, b])
    model = tn.Model(inp, out)
    assert model.output_shape == (None, 2)
    assert model.predict(x_of(3, 4), verbose=0).shape == (3, 2)


def test_training_flag_reaches_a_function_that_takes_it():
    seen = []

    def fn(x, training=None):
        seen.append(training)
        return x * 2.0

    layer = L.Lambda(fn)
    model = tn.Sequential([tn.Input((3,)), L.Dense(2), layer])
    model.compile(optimizer="sgd", loss="mse")
    seen.clear()
    model.train_on_batch(x_of(4, 3), np.zeros((4, 2), np.float32))
    model.predict(x_of(4, 3), verbose=0)
    assert seen == [True, False]


def test_trains_like_the_same_computation_in_a_built_in_layer():
    x, y = x_of(16, 3), x_of(16, 2, seed=1)
    histories = []
    for last in (L.Activation("tanh"), L.Lambda(lambda t: ops.tanh(t))):
        tn.set_seed(4)
        model = tn.Sequential([tn.Input((3,)), L.Dense(5), last, L.Dense(2)])
        model.compile(optimizer=tn.optimizers.SGD(0.1), loss="mse")
        histories.append(model.fit(x, y, epochs=3, batch_size=8, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[0], histories[1], rtol=1e-5)


def test_a_lambda_function_refuses_to_save_and_a_registered_one_round_trips(tmp_path):
    model = tn.Sequential([tn.Input((4,)), L.Dense(3), L.Lambda(lambda t: ops.square(t))])
    with pytest.raises(ValueError, match=r"Lambda 'lambda': cannot save its function, a Python "
                                         r"lambda: tinynet never stores code in a file.*"
                                         r"register_keras_serializable.*write a custom layer"):
        model.save(tmp_path / "a.safetensors")
    model = tn.Sequential([tn.Input((4,)), L.Dense(3),
                           L.Lambda(antirectify, output_shape=doubled_shape,
                                    arguments={"axis": -1})])
    x = x_of(5, 4)
    model.save(tmp_path / "b.safetensors")
    again = tn.load_model(tmp_path / "b.safetensors")
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    config = again.layers[-1].get_config()
    assert config["function"] == {"module": "builtins", "class_name": "function",
                                  "config": "tests.lambda>antirectify",
                                  "registered_name": "function"}
    assert config["arguments"] == {"axis": -1}


def test_load_looks_the_name_up_in_custom_objects(tmp_path):
    model = tn.Sequential([tn.Input((4,)), L.Lambda(antirectify)])
    model.save(tmp_path / "m.safetensors")

    def other(x, axis=-1):
        return ops.concatenate([x, -x], axis=-1)

    again = tn.load_model(tmp_path / "m.safetensors",
                          custom_objects={"tests.lambda>antirectify": other})
    x = x_of(2, 4)
    np.testing.assert_array_equal(again.predict(x, verbose=0), np.concatenate([x, -x], -1))


def test_config_errors():
    with pytest.raises(ValueError, match="a Python lambda stored as bytecode"):
        L.Lambda.from_config({"function": {"class_name": "__lambda__", "config": {}}})
    with pytest.raises(ValueError, match="unknown object 'os>system'"):
        L.Lambda.from_config({"function": {"class_name": "function", "config": "os>system"}})
    with pytest.raises(ValueError, match="cannot save arguments"):
        L.Lambda(antirectify, arguments={"axis": np.int64(1)}).get_config()


def test_a_function_that_leaves_the_ops_is_named_at_backward():
    layer = L.Lambda(lambda t: np.tanh(np.asarray(t)), output_shape=(3,))
    model = tn.Sequential([tn.Input((3,)), L.Dense(3), layer])
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(RuntimeError, match="Lambda 'lambda': cannot run backward.*tinynet.ops"):
        model.train_on_batch(x_of(2, 3), np.zeros((2, 3), np.float32))
