"""Saving custom code (issue 44 item 4): Keras-style ``call()`` layers, function and
``Loss`` subclass losses and custom metrics, found on load by registered name only
(``register_keras_serializable``, ``custom_objects=``, ``custom_object_scope``)."""

import json
import re
import sys

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

import tinynet as tn
from tinynet import ops, saving
from tinynet.layers import Dense, Input, Layer
from tinynet import custom_objects as objects


# -- the custom code (registered per test, in private registries) ---------------------------
class Scaled(Layer):
    """``dense(relu(x @ w + b)) * scale``: ``add_weight`` weights and a Dense sub-layer;
    no get_config (Keras's automatic config from the constructor arguments)."""

    def __init__(self, units=4, scale=1.5, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.scale = scale
        self.dense = Dense(3)

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1], self.units),
                                 initializer="glorot_uniform")
        self.b = self.add_weight(shape=(self.units,), initializer="zeros", name="b")

    def call(self, x):
        return self.dense(ops.relu(ops.matmul(x, self.w) + self.b)) * self.scale


class TwoDense(Layer):
    """Two sub-layers with the same automatic name (``dense``)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.first = Dense(3)
        self.second = Dense(3)

    def call(self, x):
        return self.second(ops.tanh(self.first(x)))


def mean_abs(y_true, y_pred):
    return ops.mean(ops.abs(y_true - y_pred), axis=-1)


class ScaledSquare(tn.losses.Loss):
    def __init__(self, factor=2.0, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, y_true, y_pred):
        return self.factor * ops.mean(ops.square(y_true - y_pred), axis=-1)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


def max_error(y_true, y_pred):
    return ops.max(ops.abs(y_true - y_pred), axis=-1)


class Zero(tn.metrics.Metric):
    def __init__(self, level=0.0, name="zero"):
        super().__init__(name=name)
        self.level = level

    def values(self, y_true, y_pred):
        return np.full(len(y_pred), self.level)

    def get_config(self):
        return {"name": self.name, "level": self.level}


@pytest.fixture(autouse=True)
def registries(monkeypatch):
    """Private layer and object registries, dropped after each test."""
    from tinynet.layers import registry as layer_registry

    monkeypatch.setattr(layer_registry, "_LAYERS", dict(layer_registry._layers()))
    monkeypatch.setattr(objects, "_GLOBAL", {})
    monkeypatch.setattr(objects, "_NAMES", {})


def register(*items, package="Test"):
    for item in items:
        saving.register_keras_serializable(package=package)(item)


# -- helpers -------------------------------------------------------------------------------------
def _data(n=16):
    rng = np.random.default_rng(0)
    return rng.random((n, 5), dtype=np.float32), rng.random((n, 2), dtype=np.float32)


def _sequential(layer=None):
    tn.set_seed(1)
    return tn.Sequential([Input((5,)), layer or Scaled(4, scale=0.5), Dense(2)])


def _functional(layer=None):
    tn.set_seed(1)
    inputs = Input((5,))
    hidden = (layer or Scaled(4))(inputs)
    return tn.Model(inputs, Dense(2)(hidden))


def _fit_save(model, tmp_path, loss="mse", metrics=None, name="m.safetensors"):
    x, y = _data()
    model.compile("adam", loss, metrics=metrics)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    path = tmp_path / name
    model.save(path)
    return path


def _same(a, b):
    x, _ = _data()
    return np.array_equal(a.predict(x, verbose=0), b.predict(x, verbose=0))


def _tensor_names(path):
    with safe_open(str(path), "np") as f:
        return sorted(f.keys())


def _edit(path, out, edit):
    with safe_open(str(path), "np") as f:
        meta = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    save_file(tensors, str(out), metadata=edit(dict(meta)))
    return out


def _continues(model, loaded):
    """One more epoch on each gives bitwise the same weights."""
    x, y = _data()
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0)
    return all(np.array_equal(a, b) for a, b in zip(model.get_weights(), loaded.get_weights()))


# -- call() layers -------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [_sequential, _functional])
def test_registered_call_layer_round_trip(tmp_path, build):
    register(Scaled)
    model = build()
    path = _fit_save(model, tmp_path)
    names = _tensor_names(path)
    assert {"scaled/variable", "scaled/b", "scaled/dense/kernel", "scaled/dense/bias",
            "dense/kernel", "dense/bias"} <= set(names)
    loaded = tn.load_model(path)
    layer = loaded.get_layer("scaled")
    assert type(layer) is Scaled and layer.units == 4
    assert _same(model, loaded)
    assert _continues(model, loaded)


def test_register_layer_works_too(tmp_path):
    saving.register_layer(Scaled)
    model = _sequential()
    loaded = tn.load_model(_fit_save(model, tmp_path))
    assert _same(model, loaded)


def test_automatic_config_holds_the_constructor_arguments():
    layer = Scaled(7, scale=0.25, name="s")
    assert layer.get_config() == {"name": "s", "trainable": True, "units": 7, "scale": 0.25}
    rebuilt = Scaled.from_config(layer.get_config())
    assert (rebuilt.units, rebuilt.scale, rebuilt.name) == (7, 0.25, "s")
    assert Scaled().get_config() == {"name": "scaled", "trainable": True}  # defaults: as Keras


def test_automatic_config_refuses_arguments_that_are_not_json(tmp_path):
    register(Scaled)
    model = _sequential(Scaled(4, scale=np.float32(0.5)))
    with pytest.raises(NotImplementedError, match="define get_config"):
        model.layers[0].get_config()
    with pytest.raises(ValueError, match=re.escape(
            "save_model: Scaled 'scaled': cannot make its config: it was created with "
            "arguments that are not JSON-able (scale=np.float32(0.5)); define "
            "get_config(self)")):
        model.save(tmp_path / "m.safetensors")
    assert not (tmp_path / "m.safetensors").exists()


def test_sub_layers_with_one_name_get_unique_weight_names(tmp_path):
    register(TwoDense)
    model = _sequential(TwoDense())
    path = _fit_save(model, tmp_path)
    assert [n for n in _tensor_names(path) if n.startswith("two_dense/")] == [
        "two_dense/dense/bias", "two_dense/dense/kernel", "two_dense/dense_1/bias",
        "two_dense/dense_1/kernel"]
    loaded = tn.load_model(path)
    assert _same(model, loaded) and _continues(model, loaded)


class Noisy(Layer):
    """A Dropout sub-layer: its random generator is saved and restored with the model."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.drop = tn.layers.Dropout(0.5)
        self.dense = Dense(3)

    def call(self, x, training=False):
        return self.dense(self.drop(x, training=training))


def test_sub_layer_random_generators_are_saved(tmp_path):
    register(Noisy)
    model = _functional(Noisy())
    path = _fit_save(model, tmp_path)
    state = json.loads(safe_open(str(path), "np").metadata()["training_state"])
    assert "noisy/dropout" in state["layer_rngs"]
    loaded = tn.load_model(path)
    assert _same(model, loaded) and _continues(model, loaded)


UNKNOWN = ("load_model: {path!r}: unknown layer class 'Scaled' (layer 1); decorate the class "
           "with @tinynet.saving.register_keras_serializable() (or "
           "@tinynet.saving.register_layer), or pass it to load_model in "
           "custom_objects={{'Scaled': Scaled}}")


def test_unregistered_layer_needs_custom_objects(tmp_path):
    model = _sequential()
    path = _fit_save(model, tmp_path)  # saving needs no registration, as in Keras
    with pytest.raises(ValueError) as info:
        tn.load_model(path)
    assert str(info.value) == UNKNOWN.format(path=str(path))
    loaded = saving.load_model(path, {"Scaled": Scaled}, compile=False)
    assert not loaded.compiled and _same(model, loaded)
    loaded = tn.load_model(path, custom_objects={"Scaled": Scaled})
    assert _same(model, loaded) and _continues(model, loaded)


def test_custom_object_scope(tmp_path):
    model = _functional()
    path = _fit_save(model, tmp_path)
    with saving.custom_object_scope({"Scaled": Scaled}) as scope:
        assert scope.custom_objects == {"Scaled": Scaled}
        assert saving.get_registered_object("Scaled") is Scaled
        loaded = tn.load_model(path)
    assert _same(model, loaded)
    assert saving.get_registered_object("Scaled") is None  # the scope is gone
    with pytest.raises(ValueError, match="unknown layer class 'Scaled'"):
        tn.load_model(path)


def test_registered_names(tmp_path):
    register(Scaled, mean_abs, package="Pkg")
    assert saving.get_custom_objects()["Pkg>Scaled"] is Scaled
    assert saving.get_registered_name(Scaled) == "Pkg>Scaled"
    assert saving.get_registered_object("Pkg>mean_abs") is mean_abs
    assert saving.get_registered_name(max_error) == "max_error"  # not registered
    assert saving.registered_layers()["Scaled"] is Scaled
    # a class whose name another class holds is found by its registered name
    clash = saving.register_keras_serializable(package="Pkg", name="MyDense")(
        type("Dense", (Scaled,), {}))
    assert saving.registered_layers()["MyDense"] is clash
    assert saving.registered_layers()["Dense"] is Dense
    model = _sequential(clash())
    loaded = tn.load_model(_fit_save(model, tmp_path))
    assert type(loaded.layers[0]) is clash and _same(model, loaded)


def test_a_class_saved_under_another_class_name_is_refused(tmp_path):
    clash = type("Dense", (Scaled,), {})
    model = _sequential(clash())
    with pytest.raises(ValueError, match=r"would be saved as 'Dense', which names another "
                                         r"registered class, tinynet.layers.dense.Dense"):
        model.save(tmp_path / "m.safetensors")


class MLP(tn.Model):
    """A subclassed model: constructor arguments, layers as attributes, call()."""

    def __init__(self, hidden=6, **kwargs):
        super().__init__(**kwargs)
        self.hidden = hidden
        self.block = Scaled(hidden)
        self.out = Dense(2)

    def call(self, inputs, training=False):
        return self.out(ops.tanh(self.block(inputs)))


def test_subclassed_model_round_trip(tmp_path):
    register(Scaled, MLP)
    tn.set_seed(1)
    model = MLP(hidden=5)
    path = _fit_save(model, tmp_path)
    assert json.loads(safe_open(str(path), "np").metadata()["model_config"]) == {
        "class_name": "MLP", "config": {"name": "mlp", "trainable": True, "hidden": 5,
                                        "build_input_shape": [None, 5]}}
    assert "scaled/dense/kernel" in _tensor_names(path)
    loaded = tn.load_model(path)
    assert type(loaded) is MLP and loaded.hidden == 5
    assert _same(model, loaded) and _continues(model, loaded)


def test_unregistered_subclassed_model(tmp_path):
    tn.set_seed(1)
    model = MLP()
    path = _fit_save(model, tmp_path)
    with pytest.raises(ValueError, match=re.escape(
            "unknown model class 'MLP'; decorate the class with "
            "@tinynet.saving.register_keras_serializable(), or pass it to load_model in "
            "custom_objects={'MLP': MLP}")):
        tn.load_model(path)
    # its constructor makes its layers: their classes need no registration
    loaded = tn.load_model(path, custom_objects={"MLP": MLP})
    assert _same(model, loaded)


# -- losses ----------------------------------------------------------------------------------------
def test_function_loss(tmp_path):
    register(Scaled, mean_abs)
    model = _sequential()
    assert isinstance(tn.losses.get(mean_abs), tn.losses.LossFunctionWrapper)
    path = _fit_save(model, tmp_path, loss=mean_abs)
    loaded = tn.load_model(path)
    assert type(loaded.loss) is tn.losses.LossFunctionWrapper and loaded.loss.fn is mean_abs
    assert _continues(model, loaded)


def test_loss_subclass(tmp_path):
    register(Scaled, ScaledSquare)
    model = _functional()
    path = _fit_save(model, tmp_path, loss=ScaledSquare(factor=3.0))
    config = json.loads(safe_open(str(path), "np").metadata()["compile_config"])
    assert config["loss"] == {"class_name": "Test>ScaledSquare",
                              "config": {"name": "scaled_square",
                                         "reduction": "sum_over_batch_size", "factor": 3.0}}
    loaded = tn.load_model(path)
    assert type(loaded.loss) is ScaledSquare and loaded.loss.factor == 3.0
    assert _continues(model, loaded)


def test_unregistered_loss(tmp_path):
    register(Scaled)
    model = _sequential()
    path = _fit_save(model, tmp_path, loss=mean_abs)
    with pytest.raises(ValueError) as info:
        tn.load_model(path)
    assert str(info.value) == (
        f"load_model: {str(path)!r}: invalid compile_config: ValueError: LossFunctionWrapper: "
        f"fn: unknown object 'mean_abs'; register it with "
        f"@tinynet.saving.register_keras_serializable() or pass it in custom_objects "
        f"(load_model(..., compile=False) loads the model without its compile settings)")
    assert _same(model, tn.load_model(path, compile=False))
    loaded = tn.load_model(path, custom_objects={"mean_abs": mean_abs})
    assert _continues(model, loaded)

    path = _fit_save(_sequential(), tmp_path, loss=ScaledSquare(), name="s.safetensors")
    with pytest.raises(ValueError, match="Unknown loss 'ScaledSquare': not a built-in loss"):
        tn.load_model(path)
    with saving.custom_object_scope({"ScaledSquare": ScaledSquare}):
        assert type(tn.load_model(path).loss) is ScaledSquare


# -- metrics ---------------------------------------------------------------------------------------
def test_custom_metrics(tmp_path):
    register(Scaled, max_error, Zero)
    model = _sequential()
    path = _fit_save(model, tmp_path, metrics=["mae", max_error, Zero(level=0.5)])
    loaded = tn.load_model(path)
    assert loaded.metrics_names == model.metrics_names == ["loss", "mae", "max_error", "zero"]
    wrapper, zero = loaded.metrics[1:]
    assert type(wrapper) is tn.metrics.MeanMetricWrapper and wrapper.fn is max_error
    assert type(zero) is Zero and zero.level == 0.5
    x, y = _data()
    assert model.evaluate(x, y, verbose=0) == loaded.evaluate(x, y, verbose=0)


def test_function_metric_is_a_mean_over_samples():
    metric = tn.metrics.get(max_error)
    assert metric.name == "max_error"
    metric.update_state(np.zeros((2, 2)), np.array([[1, 3], [2, 0]], np.float32))
    metric.update_state(np.zeros((1, 2)), np.array([[0, 5]], np.float32))
    assert metric.result() == pytest.approx((3 + 2 + 5) / 3)


def test_unregistered_metric_is_dropped_with_a_warning(tmp_path):
    register(Scaled)
    path = _fit_save(_sequential(), tmp_path, metrics=[max_error])
    with pytest.warns(UserWarning, match="these metrics cannot be rebuilt.*max_error"):
        assert tn.load_model(path).metrics_names == ["loss"]
    loaded = tn.load_model(path, custom_objects={"max_error": max_error})
    assert loaded.metrics_names == ["loss", "max_error"]


# -- a file never runs code -----------------------------------------------------------------------
def _compile_edit(entry_key, value):
    def edit(meta):
        config = json.loads(meta["compile_config"])
        config[entry_key] = value
        return {**meta, "compile_config": json.dumps(config)}
    return edit


@pytest.mark.parametrize("key, value, message", [
    ("loss", {"class_name": "os>system", "config": {}}, "Unknown loss 'os>system'"),
    ("loss", {"class_name": "antigravity>fly", "config": {}}, "Unknown loss 'antigravity>fly'"),
    ("loss", {"class_name": "LossFunctionWrapper", "config": {"fn": "os>system"}},
     "unknown object 'os>system'"),
    ("loss", {"class_name": "LossFunctionWrapper", "config": {"fn": "builtins.eval"}},
     "unknown object 'builtins.eval'"),
    ("loss", {"class_name": "Test>Scaled", "config": {}}, "Unknown loss 'Test>Scaled'"),
])
def test_a_file_naming_code_runs_nothing(tmp_path, monkeypatch, key, value, message):
    import os

    register(Scaled)  # a registered layer is not a loss
    path = _fit_save(_sequential(), tmp_path)
    out = _edit(path, tmp_path / "bad.safetensors", _compile_edit(key, value))
    monkeypatch.setattr(os, "system", lambda *a: pytest.fail("os.system ran"))
    before = set(sys.modules)
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.load_model(out)
    assert set(sys.modules) - before <= {"tinynet.losses.custom"}
    assert "antigravity" not in sys.modules


@pytest.mark.parametrize("class_name", ["os>system", "Test>Scaled", "os.system"])
def test_a_layer_class_by_a_qualified_name_is_refused(tmp_path, class_name):
    register(Scaled)
    path = _fit_save(_sequential(), tmp_path)

    def edit(meta):
        config = json.loads(meta["model_config"])
        config["config"]["layers"][1]["class_name"] = class_name
        return {**meta, "model_config": json.dumps(config)}
    out = _edit(path, tmp_path / "bad.safetensors", edit)
    with pytest.raises(ValueError, match=re.escape(f"unknown layer class {class_name!r}")):
        tn.load_model(out)


def test_a_metric_naming_code_is_dropped(tmp_path):
    register(Scaled)
    path = _fit_save(_sequential(), tmp_path)
    out = _edit(path, tmp_path / "bad.safetensors", _compile_edit("metrics", [
        {"class_name": "os>system", "config": {}},
        {"class_name": "MeanMetricWrapper", "config": {"fn": "os>system", "name": "m"}}]))
    with pytest.warns(UserWarning, match="unknown metric 'os>system'.*unknown object 'os>system'"):
        assert tn.load_model(out).metrics_names == ["loss"]


def test_a_lying_sub_layer_config_cannot_exhaust_memory(tmp_path):
    register(Scaled)
    path = _fit_save(_sequential(), tmp_path)

    def edit(meta):
        config = json.loads(meta["model_config"])
        config["config"]["layers"][1]["config"]["units"] = 10**9
        return {**meta, "model_config": json.dumps(config)}
    out = _edit(path, tmp_path / "bad.safetensors", edit)
    with pytest.raises(ValueError, match="more than the .* the file allows"):
        tn.load_model(out)


def test_custom_objects_must_be_a_dict_of_names():
    with pytest.raises(TypeError, match=r"load_model: custom_objects must be a dict"):
        tn.load_model("x.safetensors", custom_objects=[Scaled])
    with pytest.raises(TypeError, match="custom_object_scope: custom_objects keys must be "
                                        "non-empty str names, got 3"):
        saving.custom_object_scope({3: Scaled})
