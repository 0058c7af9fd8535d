"""A ``call()`` layer called on symbolic tensors with more than its first input, as Keras
records it: further positional and keyword arguments (plain values, symbolic tensors, and
tensors inside lists, tuples and dicts) are kept in the node and given to every run; the
tensors among them are inputs of the node (gradients reach them). Also: a built-in loss
object called inside ``call()`` on tracked tensors is differentiable (the "endpoint layer"
pattern), a subclassed model takes a dict of inputs, and a layer's first input may be given
by name. Values are checked against float64 NumPy and finite differences."""

import json
import os
import zipfile

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers, ops

X = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
RNG = np.random.default_rng(3)


@tn.saving.register_keras_serializable(package="test_call_arguments")
class ArgsScale(layers.Layer):
    """``x * scale + other + pair[0] * pair[1]`` (the last two when given)."""

    def call(self, x, scale=1.0, other=None, pair=None):
        y = x * scale
        if other is not None:
            y = y + other
        if pair is not None:
            y = y + pair[0] * pair[1]
        return y


class Endpoint(layers.Layer):
    """Keras's endpoint-layer pattern: the loss of ``targets`` is added in ``call``."""

    def __init__(self, name=None):
        super().__init__(name=name)
        self.loss_fn = tn.losses.BinaryCrossentropy(from_logits=True)

    def call(self, logits, targets=None, sample_weight=None):
        if targets is not None:
            self.add_loss(self.loss_fn(targets, logits, sample_weight))
        return ops.sigmoid(logits)


def scale_model() -> tn.Model:
    a, b = tn.Input((3,), name="a"), tn.Input((3,), name="b")
    h = layers.Dense(3, name="d")(a)
    return tn.Model([a, b], ArgsScale(name="sc")(h, scale=3.0, other=b, pair=(b, h)))


def scale_reference(model: tn.Model, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    w, bias = (v.astype(np.float64) for v in model.get_layer("d").get_weights())
    h = a.astype(np.float64) @ w + bias
    return h * 3.0 + b + b * h


def test_further_arguments_reach_every_run():
    tn.set_seed(0)
    model = scale_model()
    out = model.predict([X, X + 1], verbose=0)
    np.testing.assert_allclose(out, scale_reference(model, X, X + 1), rtol=1e-6)
    node = model.get_layer("sc").inbound_nodes[0]
    assert [t.name for t in node.inputs] == ["d", "b", "b", "d"]
    assert model.get_layer("sc").input.name == "d"  # the first input only, as Keras


def test_gradients_reach_the_tensors_in_the_arguments():
    tn.set_seed(1)
    a, b = tn.Input((3,)), tn.Input((2,))
    h = layers.Dense(3)(a)
    g = layers.Dense(3)(b)
    model = tn.Model([a, b], ArgsScale()(h, other=g, pair=[g, h]))
    model.compile(optimizer=tn.optimizers.SGD(learning_rate=0.1), loss="mse")
    xa, xb = RNG.normal(size=(4, 3)).astype(np.float32), RNG.normal(size=(4, 2)).astype(np.float32)
    y = RNG.normal(size=(4, 3)).astype(np.float32)
    w = [v.astype(np.float64) for v in model.get_weights()]

    def loss(ws):
        h = xa @ ws[0] + ws[1]
        g = xb @ ws[2] + ws[3]
        return np.mean((h + g + g * h - y) ** 2)

    model.train_on_batch([xa, xb], y)
    for k, (before, after) in enumerate(zip(w, model.get_weights())):
        numeric = np.zeros_like(before)
        for idx in np.ndindex(before.shape):
            plus = [v.copy() for v in w]
            minus = [v.copy() for v in w]
            plus[k][idx] += 1e-6
            minus[k][idx] -= 1e-6
            numeric[idx] = (loss(plus) - loss(minus)) / 2e-6
        np.testing.assert_allclose((before - after) / 0.1, numeric, rtol=1e-4, atol=1e-5)


def test_endpoint_layer_trains_on_x_alone():
    tn.set_seed(2)
    inputs = tn.Input((5,), name="inputs")
    targets = tn.Input((1,), name="targets")
    weights = tn.Input((1,), name="sample_weight")
    logits = layers.Dense(1)(inputs)
    model = tn.Model([inputs, targets, weights], Endpoint()(logits, targets, weights))
    model.compile(optimizer=tn.optimizers.SGD(learning_rate=0.5))
    data = {"inputs": RNG.normal(size=(16, 5)).astype(np.float32),
            "targets": (RNG.random((16, 1)) > 0.5).astype(np.float32),
            "sample_weight": RNG.random((16, 1)).astype(np.float32)}
    w, bias = (v.astype(np.float64) for v in model.get_weights())
    z = data["inputs"].astype(np.float64) @ w + bias
    t, sw = data["targets"].astype(np.float64), data["sample_weight"][:, 0].astype(np.float64)
    p = 1 / (1 + np.exp(-z))
    per = -(t * np.log(p) + (1 - t) * np.log(1 - p))[:, 0]
    ref = np.sum(per * sw) / per.size
    grad_z = ((p - t)[:, 0] * sw / per.size)[:, None]
    loss = model.train_on_batch(data)
    assert loss == pytest.approx(ref, rel=1e-5)
    np.testing.assert_allclose(model.get_weights()[0],
                               w - 0.5 * data["inputs"].astype(np.float64).T @ grad_z,
                               rtol=1e-5, atol=1e-6)
    history = model.fit(data, epochs=3, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_subclassed_model_takes_a_dict_and_a_first_input_by_name():
    class LogReg(tn.Model):
        def __init__(self):
            super().__init__()
            self.dense = layers.Dense(1)
            self.endpoint = Endpoint()

        def call(self, inputs):
            logits = self.dense(inputs["inputs"])
            return self.endpoint(logits=logits, targets=inputs["targets"],
                                 sample_weight=inputs["sample_weight"])

    tn.set_seed(4)
    model = LogReg()
    model.compile(optimizer=tn.optimizers.SGD(learning_rate=0.5))
    data = {"inputs": RNG.normal(size=(16, 5)).astype(np.float32),
            "targets": (RNG.random((16, 1)) > 0.5).astype(np.float32),
            "sample_weight": np.ones((16, 1), np.float32)}
    history = model.fit(data, epochs=3, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.predict(data, verbose=0).shape == (16, 1)
    with pytest.raises(ValueError, match="x must be a dict with the keys"):
        model.predict({"inputs": data["inputs"]}, verbose=0)


def test_loss_object_inside_call_matches_finite_differences():
    loss_fn = tn.losses.BinaryCrossentropy(from_logits=True)
    y = np.array([[1.0], [0.0], [1.0]], np.float32)
    z0 = np.array([[0.3], [-1.2], [2.0]], np.float32)
    graph = tn.ops.autodiff.Graph()
    with graph:
        z = graph.leaf(z0)
        value = loss_fn(y, z)
    assert isinstance(value, tn.Tensor) and value.shape == ()
    tn.ops.autodiff.backprop([value], [np.ones((), np.float32)], graph)

    def f(zz):
        p = 1 / (1 + np.exp(-zz.astype(np.float64)))
        return np.mean(-(y * np.log(p) + (1 - y) * np.log(1 - p)))
    numeric = np.array([[(f(z0 + e) - f(z0 - e)) / 2e-4]
                        for e in np.eye(3, dtype=np.float64)[:, :, None] * 1e-4])
    np.testing.assert_allclose(z._node.grad, numeric.reshape(3, 1), rtol=1e-3)
    assert float(value.data) == pytest.approx(f(z0), rel=1e-6)


def test_config_clone_and_keras_file_keep_the_arguments(tmp_path):
    tn.set_seed(5)
    model = scale_model()
    ref = model.predict([X, X + 1], verbose=0)
    config = json.loads(json.dumps(model.get_config()))
    node = config["layers"][-1]["inbound_nodes"][0]
    assert node["call"] == {"args": [], "kwargs": {
        "scale": 3.0, "other": {"__node_input__": 0},
        "pair": [{"__node_input__": 1}, {"__node_input__": 2}]}}
    rebuilt = tn.Model.from_config(config)
    rebuilt.set_weights(model.get_weights())
    np.testing.assert_array_equal(rebuilt.predict([X, X + 1], verbose=0), ref)
    clone = tn.models.clone_model(model)
    clone.set_weights(model.get_weights())
    np.testing.assert_array_equal(clone.predict([X, X + 1], verbose=0), ref)
    path = os.path.join(tmp_path, "m.keras")
    model.save(path)
    written = json.loads(zipfile.ZipFile(path).read("config.json"))
    sc = [e for e in written["config"]["layers"] if e["name"] == "sc"][0]

    def tensor(name):  # as Keras 3.15.1 writes a tensor in a node
        return {"class_name": "__keras_tensor__",
                "config": {"shape": [None, 3], "dtype": "float32",
                           "keras_history": [name, 0, 0]}}
    assert sc["inbound_nodes"] == [{"args": [tensor("d")], "kwargs": {
        "scale": 3.0, "other": tensor("b"), "pair": [tensor("b"), tensor("d")]}}]
    loaded = tn.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict([X, X + 1], verbose=0), ref)


def test_a_call_without_an_input_names_the_way_to_give_it():
    with pytest.raises(TypeError, match=r"ArgsScale .args_scale\w*.: called without an input; "
                                        r"pass it first \(layer\(x\)\) or by name \(x=x\)"):
        ArgsScale()(scale=2.0)
    np.testing.assert_allclose(ArgsScale()(x=X, scale=2.0).data, X * 2)
    np.testing.assert_allclose(layers.ReLU()(inputs=X - 1).data, np.maximum(X - 1, 0))
