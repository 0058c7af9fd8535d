"""``tn.models`` / ``tn.saving`` / ``tn.layers`` serialization names (Keras 3.15):
``to_json`` / ``model_from_json``, ``get_config`` / ``from_config`` round trips,
``clone_model`` (same architecture, new weights), ``serialize_keras_object`` /
``deserialize_keras_object``, ``layers.serialize`` / ``deserialize``."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tinynet as keras
from tinynet import layers, saving

X = np.random.default_rng(0).random((6, 4)).astype("float32")


def _sequential():
    return keras.Sequential([keras.Input((4,)), layers.Dense(5, activation="relu", name="h"),
                             layers.Dense(2, name="out")], name="seq")


def _functional():
    a = keras.Input((4,), name="a")
    h = layers.Dense(5, activation="relu", name="h")(a)
    b = layers.Dense(3, name="b")(a)
    out = layers.Dense(2, name="out")(layers.Concatenate(name="cat")([h, b]))
    return keras.Model(a, out, name="fun")


def _summary(model) -> str:
    lines = []
    model.summary(print_fn=lines.append)
    return "\n".join(lines)


@keras.saving.register_keras_serializable(package="ns_test")
class Sub(keras.Model):
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.d = layers.Dense(units)

    def call(self, x):
        return self.d(x)

    def get_config(self):
        return {**super().get_config(), "units": self.units}


def test_namespaces_exist():
    for name in ("Sequential", "Model", "load_model", "save_model", "clone_model",
                 "model_from_json"):
        assert name in keras.models.__all__ and callable(getattr(keras.models, name))
    for name in ("load_model", "save_model", "register_keras_serializable",
                 "serialize_keras_object", "deserialize_keras_object", "custom_object_scope"):
        assert callable(getattr(keras.saving, name))
    assert keras.models.load_model is keras.saving.load_model
    assert callable(keras.layers.serialize) and callable(keras.layers.deserialize)


@pytest.mark.parametrize("make", [_sequential, _functional])
def test_to_json_model_from_json_round_trip(make):
    model = make()
    text = model.to_json()
    data = json.loads(text)
    assert set(data) == {"module", "class_name", "config", "registered_name"}
    assert data["class_name"] == type(model).__name__ and data["module"] == "tinynet.models"
    rebuilt = keras.models.model_from_json(text)
    assert type(rebuilt) is type(model) and rebuilt.to_json() == text
    assert _summary(rebuilt) == _summary(model)
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_array_equal(rebuilt.predict(X, verbose=0), model.predict(X, verbose=0))
    assert model.to_json(indent=2) != text and json.loads(model.to_json(indent=2)) == data


def test_get_config_from_config_round_trips():
    seq, fun = _sequential(), _functional()
    assert keras.Sequential.from_config(seq.get_config()).get_config() == seq.get_config()
    assert keras.Model.from_config(fun.get_config()).get_config() == fun.get_config()


@pytest.mark.parametrize("make", [_sequential, _functional])
def test_clone_model_same_architecture_new_weights(make):
    model = make()
    model.compile(optimizer="adam", loss="mse")
    clone = keras.models.clone_model(model)
    assert type(clone) is type(model) and clone is not model
    assert _summary(clone) == _summary(model)
    assert clone.get_config() == model.get_config()
    kernels = [(a, b) for a, b in zip(model.get_weights(), clone.get_weights()) if a.ndim == 2]
    assert kernels and all(not np.array_equal(a, b) for a, b in kernels)
    assert not any(l1 is l2 for l1, l2 in zip(model.layers, clone.layers))
    assert not clone.compiled
    clone.set_weights(model.get_weights())
    np.testing.assert_array_equal(clone.predict(X, verbose=0), model.predict(X, verbose=0))


def test_clone_model_clone_function_and_input_tensors():
    model = _sequential()
    clone = keras.models.clone_model(
        model, clone_function=lambda l: layers.Dense(7, name="x") if l.name == "out" else l)
    assert clone.layers[0] is model.layers[0] and clone.output_shape == (None, 7)
    fun = _functional()
    new_input = keras.Input((4,), name="new")
    clone = keras.models.clone_model(fun, input_tensors=new_input)
    assert clone.inputs[0] is new_input if hasattr(clone, "inputs") else True
    assert clone.predict(X, verbose=0).shape == (6, 2)
    seq = keras.models.clone_model(model, input_tensors=[keras.Input((4,))])
    assert seq.predict(X, verbose=0).shape == (6, 2)


def test_clone_nested_and_not_trainable():
    inner = keras.Sequential([layers.Dense(3, name="in_d")], name="inner")
    outer = keras.Sequential([keras.Input((4,)), inner, layers.Dense(1)], name="outer")
    outer.trainable = False
    for recursive in (False, True):
        clone = keras.models.clone_model(outer, recursive=recursive)
        assert clone.layers[0] is not inner and not clone.trainable
        assert _summary(clone) == _summary(outer)


def test_clone_subclassed_model():
    model = Sub(4)
    model(X)
    clone = keras.models.clone_model(model)
    assert type(clone) is Sub and clone.units == 4 and clone.built
    assert not np.array_equal(clone.get_weights()[0], model.get_weights()[0])
    with pytest.raises(ValueError, match="only supported for Sequential and functional"):
        keras.models.clone_model(model, clone_function=lambda l: l)


def test_model_from_json_subclassed_registered():
    model = Sub(2, name="sub")
    model(X)
    data = json.loads(model.to_json())
    assert data["registered_name"] == "ns_test>Sub"
    rebuilt = keras.models.model_from_json(model.to_json())
    assert type(rebuilt) is Sub and rebuilt.units == 2


@pytest.mark.parametrize("obj", [
    keras.losses.MeanSquaredError(), keras.losses.CategoricalCrossentropy(from_logits=True),
    keras.optimizers.Adam(0.01), keras.optimizers.SGD(momentum=0.5),
    keras.metrics.BinaryAccuracy(threshold=0.3), layers.Dense(3, activation="relu"),
], ids=lambda o: type(o).__name__)
def test_serialize_deserialize_keras_object(obj):
    data = saving.serialize_keras_object(obj)
    assert set(data) == {"module", "class_name", "config", "registered_name"}
    assert data["class_name"] == type(obj).__name__
    again = saving.deserialize_keras_object(json.loads(json.dumps(data)))
    assert type(again) is type(obj) and again is not obj
    assert saving.serialize_keras_object(again) == data
    bare = {"class_name": data["class_name"], "config": data["config"]}  # no module
    assert type(saving.deserialize_keras_object(bare)) is type(obj)


def test_serialize_plain_values_and_models():
    assert saving.serialize_keras_object(None) is None
    assert saving.serialize_keras_object([1, "a", (np.float32(2.5),)]) == [1, "a", [2.5]]
    assert saving.deserialize_keras_object("relu") == "relu"
    model = _sequential()
    again = saving.deserialize_keras_object(saving.serialize_keras_object(model))
    assert type(again) is keras.Sequential and again.get_config() == model.get_config()


def test_layers_serialize_deserialize():
    layer = layers.Conv1D(4, 3, padding="same", name="c")
    data = layers.serialize(layer)
    assert data["module"] == "tinynet.layers" and data["class_name"] == "Conv1D"
    again = layers.deserialize(data)
    assert type(again) is layers.Conv1D and again.get_config() == layer.get_config()

    class Mine(layers.Dense):
        pass

    data = layers.serialize(Mine(2))
    assert type(layers.deserialize(data, custom_objects={"Mine": Mine})) is Mine
    with saving.custom_object_scope({"Mine": Mine}):
        assert type(layers.deserialize(data)) is Mine


def test_registered_function_round_trip():
    @saving.register_keras_serializable(package="ns_test")
    def my_fn(x):
        return x

    data = saving.serialize_keras_object(my_fn)
    assert data["class_name"] == "function" and data["registered_name"] == "ns_test>my_fn"
    assert saving.deserialize_keras_object(data) is my_fn


@pytest.mark.parametrize("text, match", [
    ("{bad", "model_from_json: json_string is not valid JSON"),
    ("[1]", "expected the JSON object model.to_json\\(\\) writes"),
    ('{"class_name": "Nope", "config": {"name": "x", "layers": []}}',
     "unknown model class 'Nope'.*register_keras_serializable"),
    ('{"class_name": "Sequential", "config": {"name": "s", "layers": '
     '[{"class_name": "Nope", "config": {}}]}}',
     "unknown layer class 'Nope'.*custom_objects=\\{'Nope': Nope\\}"),
    ('{"class_name": "Sequential", "config": {"name": "s", "layers": '
     '[{"class_name": "os.system", "config": {}}]}}', "unknown layer class 'os.system'"),
    ('{"class_name": "Sequential", "config": {"name": "s", "layers": '
     '[{"class_name": "Dense", "config": {"units": "x"}}]}}', "cannot rebuild the model"),
])
def test_model_from_json_bad_inputs(text, match):
    with pytest.raises(ValueError, match=match):
        keras.models.model_from_json(text)


def test_bad_inputs_type_errors_and_unknown_names():
    with pytest.raises(TypeError, match="model_from_json: json_string must be a str"):
        keras.models.model_from_json(3)
    with pytest.raises(TypeError, match="custom_objects must be a dict"):
        keras.models.model_from_json(_sequential().to_json(), custom_objects=[1])
    with pytest.raises(TypeError, match="clone_model: expected a tinynet model"):
        keras.models.clone_model("x")
    with pytest.raises(TypeError, match="clone_function must be a callable"):
        keras.models.clone_model(_sequential(), clone_function=3)
    with pytest.raises(TypeError, match="clone_function must return a tinynet Layer"):
        keras.models.clone_model(_sequential(), clone_function=lambda l: 3)
    with pytest.raises(ValueError, match="input_tensors must hold 1 tensor"):
        keras.models.clone_model(_functional(), input_tensors=[keras.Input((4,))] * 2)
    with pytest.raises(ValueError, match="input_tensors must be tn.Input tensors"):
        keras.models.clone_model(_functional(), input_tensors=np.zeros((1, 4)))
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        keras.models.clone_model(_sequential(), bogus=1)
    with pytest.raises(ValueError, match="unknown class 'Nope'.*register_keras_serializable"):
        saving.deserialize_keras_object({"class_name": "Nope", "config": {}})
    with pytest.raises(ValueError, match="layers.deserialize: unknown class 'Nope'"):
        layers.deserialize({"class_name": "Nope", "config": {}})
    with pytest.raises(ValueError, match="needs a 'class_name'"):
        layers.deserialize({"config": {}})
    with pytest.raises(TypeError, match="layers.deserialize: config must be a dict"):
        layers.deserialize("Dense")
    with pytest.raises(TypeError, match="layers.serialize: expected a tinynet Layer"):
        layers.serialize(keras.losses.MeanSquaredError())
    with pytest.raises(TypeError, match="cannot serialize object"):
        saving.serialize_keras_object(object())
    with pytest.raises(ValueError, match="non-finite"):
        saving.serialize_keras_object(float("nan"))
    with pytest.raises(ValueError, match="unknown class 'no_such_fn'"):
        saving.deserialize_keras_object({"class_name": "function", "config": "no_such_fn"})
    with pytest.raises(ValueError, match="cannot rebuild 'Adam'"):
        saving.deserialize_keras_object({"class_name": "Adam", "config": {"bogus": 1}})
