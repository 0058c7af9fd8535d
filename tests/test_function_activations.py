"""An activation given as a function of a tensor (Keras's ``Dense(8, activation=fn)``):
values and gradients as the built-in activation it equals, a registered function saved
by name in both formats, and Keras's function reference in .keras configs."""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet import ops


@tn.saving.register_keras_serializable(package="fa_tests", name="squared")
def squared(x):
    return x**2


def my_tanh(x):
    return ops.tanh(x)


def test_a_function_gives_the_values_and_gradients_of_the_named_activation():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 4)).astype(np.float32)
    g = rng.standard_normal((5, 3)).astype(np.float32)
    named, fn = L.Dense(3, activation="tanh"), L.Dense(3, activation=my_tanh)
    named.build((None, 4))
    fn.build((None, 4))
    fn.set_weights(named.get_weights())
    np.testing.assert_allclose(np.asarray(fn(x, training=True)), np.asarray(named(x, training=True)),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.asarray(fn.backward(g)), np.asarray(named.backward(g)),
                               rtol=1e-5, atol=1e-6)
    for a, b in zip(fn.parameters(), named.parameters()):
        np.testing.assert_allclose(a.grad, b.grad, rtol=1e-5, atol=1e-6)


def test_a_function_activation_matches_a_float64_reference_and_its_derivative():
    layer = L.Dense(3, activation=squared)
    x = np.random.default_rng(2).standard_normal((2, 5)).astype(np.float32)
    g = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    out = np.asarray(layer(x, training=True))
    w, b = (np.asarray(p.value, dtype=np.float64) for p in layer.parameters())
    z = x.astype(np.float64) @ w + b
    np.testing.assert_allclose(out, z**2, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(layer.backward(g)), (2 * z * g) @ w.T, rtol=1e-4,
                               atol=1e-6)


def test_a_registered_function_saves_by_name(tmp_path):
    model = tn.Sequential([tn.Input((4,)), L.Dense(3, activation=squared), L.Dense(1)])
    assert model.layers[0].get_config()["activation"] == "fa_tests>squared"
    x = np.random.default_rng(3).standard_normal((2, 4)).astype(np.float32)
    model.save(tmp_path / "m.safetensors")
    again = tn.load_model(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))


def test_an_unregistered_name_in_a_config_is_refused():
    with pytest.raises(ValueError, match=r"Dense: activation must be one of .*, got 'nope>fn' "
                                         r"\(a function of your own is found by name once "
                                         r"registered with register_keras_serializable\)"):
        L.Dense(3, activation="nope>fn")


def test_keras_files_refer_to_registered_functions_and_layers(tmp_path):
    pytest.importorskip("h5py")

    @tn.saving.register_keras_serializable(package="fa_tests")
    class Scale(L.Layer):
        def __init__(self, factor, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            return x * self.factor * self.w

        def get_config(self):
            return {"factor": self.factor, **super().get_config()}

    inp = tn.Input((4,))
    hidden = L.Dense(3, activation=squared, name="hidden")(inp)
    model = tn.Model(inp, L.Dense(1, name="out")(Scale(0.5)(hidden)))
    model.layers[2].w.assign(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    path = tmp_path / "m.keras"
    model.save(path)
    import json
    import zipfile

    config = json.loads(zipfile.ZipFile(path).read("config.json"))
    entries = {e["config"]["name"]: e for e in config["config"]["layers"]}
    assert entries["hidden"]["config"]["activation"] == {
        "module": "builtins", "class_name": "function", "config": "fa_tests>squared",
        "registered_name": "function"}
    assert entries["scale"]["registered_name"] == "fa_tests>Scale"
    again = tn.models.load_model(path)
    x = np.random.default_rng(4).standard_normal((2, 4)).astype(np.float32)
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0),
                               rtol=1e-6)
