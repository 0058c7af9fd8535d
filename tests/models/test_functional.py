"""Functional models (``tn.Model``), models inside models, and the merging layers.

Each scenario of the models issue (a residual block, two inputs, two outputs with loss
weights, a shared layer, a Sequential inside a Sequential and inside a Model, a frozen
nested model) is checked for: ``output_shape`` against the real output, finite-difference
gradients through the whole model, save -> load -> identical predictions, and a whole
``fit`` giving the same bits at one and two threads (in subprocesses configured through
the environment, as a user would).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tinynet as tn
from tinynet import tuning
from tinynet.layers import (Activation, Add, Average, BatchNormalization, Concatenate, Conv2D,
                            Dense, Flatten, GlobalAveragePooling2D, GroupNormalization, Input,
                            InputLayer, Maximum, Minimum, Multiply, Subtract)
from tinynet.testing import check_gradients

RNG = np.random.default_rng(0)


# -- the scenarios ------------------------------------------------------------------------------
def residual_block() -> tn.Model:
    """Conv-BN-Add with the input, then a Dense head (tanh keeps the gradient check smooth)."""
    i = Input((6, 6, 4))
    h = Conv2D(4, 3, padding="same")(i)
    h = BatchNormalization()(h)
    h = Activation("tanh")(Add()([h, i]))
    h = GroupNormalization(2)(h)
    return tn.Model(i, Dense(3)(Flatten()(h)), name="residual")


def two_inputs() -> tn.Model:
    image, meta = Input((6, 6, 1), name="image"), Input((4,), name="meta")
    x = GlobalAveragePooling2D()(Conv2D(4, 3, padding="same", activation="tanh")(image))
    y = Dense(4, activation="tanh")(meta)
    return tn.Model([image, meta], Dense(3)(Concatenate()([x, y])), name="two_inputs")


def two_outputs() -> tn.Model:
    i = Input((5,))
    h = Dense(8, activation="tanh")(i)
    return tn.Model(i, [Dense(3, name="cls")(h), Dense(1, name="reg")(h)], name="two_outputs")


def shared_layer() -> tn.Model:
    a, b = Input((5,), name="a"), Input((5,), name="b")
    shared = Dense(4, activation="tanh", name="shared")
    return tn.Model([a, b], Dense(2)(Subtract()([shared(a), shared(b)])), name="siamese")


def nested_in_sequential() -> tn.Sequential:
    block = tn.Sequential([Input((5,)), Dense(6, activation="tanh"), Dense(4)], name="block")
    return tn.Sequential([block, Activation("tanh"), Dense(2)], name="outer")


def nested_in_model() -> tn.Model:
    block = tn.Sequential([Input((5,)), Dense(6, activation="tanh"), Dense(4)], name="block")
    i = Input((5,))
    return tn.Model(i, Dense(2)(Add()([block(i), Dense(4)(i)])), name="outer")


def frozen_nested() -> tn.Model:
    model = nested_in_model()
    model.get_layer("block").trainable = False
    return model


SCENARIOS = {"residual": residual_block, "two_inputs": two_inputs, "two_outputs": two_outputs,
             "shared": shared_layer, "nested_seq": nested_in_sequential,
             "nested_model": nested_in_model, "frozen_nested": frozen_nested}


def _inputs(model, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    shapes = model.input_shape if model.multiple_inputs else [model.input_shape]
    arrays = [rng.standard_normal((n, *s[1:])).astype(np.float32) for s in shapes]
    return arrays if model.multiple_inputs else arrays[0]


def _targets(model, n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    if model.name == "two_outputs":
        return [rng.integers(0, 3, n), rng.standard_normal((n, 1)).astype(np.float32)]
    return rng.standard_normal((n, *model.output_shape[1:])).astype(np.float32)


def _compile(model) -> None:
    if model.name == "two_outputs":
        model.compile("adam", loss=[tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                                    "mse"], loss_weights=[1.0, 0.5],
                      metrics=[["accuracy"], []])
    else:
        model.compile("adam", "mse")


def _outputs(model, x, training: bool = False) -> list[np.ndarray]:
    out = model(x, training=training)
    return [np.asarray(o) for o in out] if isinstance(out, list) else [np.asarray(out)]


# -- every scenario -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_output_shape_matches_the_forward(name):
    model = SCENARIOS[name]()
    outs = _outputs(model, _inputs(model, 3))
    shapes = model.output_shape if len(outs) > 1 else [model.output_shape]
    assert [(None, *o.shape[1:]) for o in outs] == [tuple(s) for s in shapes]
    assert all(o.shape[0] == 3 for o in outs)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_gradients_through_the_whole_model(name):
    model = SCENARIOS[name]()
    tn.set_seed(0)
    assert check_gradients(model, x=_inputs(model, 3)) <= 1.0


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_save_load_gives_identical_predictions(name, tmp_path):
    tn.set_seed(0)
    model = SCENARIOS[name]()
    _compile(model)
    x = _inputs(model, 16)
    model.fit(x, _targets(model, 16), batch_size=8, epochs=1, verbose=0)
    path = tmp_path / "m.safetensors"
    model.save(path)
    loaded = tn.load_model(path)
    assert type(loaded) is type(model)
    assert [l.name for l in loaded.layers] == [l.name for l in model.layers]
    for a, b in zip(_outputs(model, x), _outputs(loaded, x)):
        assert np.array_equal(a, b)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        assert np.array_equal(a, b)
    # training continues bitwise from the saved state
    y = _targets(model, 16, seed=5)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        assert np.array_equal(a, b)


FIT_SCRIPT = r"""
import hashlib, sys
import numpy as np
import tinynet as tn
sys.path.insert(0, {tests!r})
from models import test_functional as t
out = []
for name in sorted(t.SCENARIOS):
    tn.set_seed(3)
    model = t.SCENARIOS[name]()
    t._compile(model)
    x, y = t._inputs(model, 64), t._targets(model, 64)
    model.fit(x, y, batch_size=16, epochs=2, verbose=0)
    digest = hashlib.sha256()
    for w in model.get_weights():
        digest.update(np.ascontiguousarray(w).tobytes())
    out.append(name + " " + digest.hexdigest())
print("\n".join(out))
"""


def test_fit_is_bitwise_identical_at_one_and_two_threads():
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = FIT_SCRIPT.format(tests=tests)
    results = {}
    for threads in sorted({1, min(2, tuning.max_threads())}):
        env = dict(os.environ, TINYNET_NUM_THREADS=str(threads))
        for gate in tuning.defaults():  # every parallel variant taken where one exists
            env[f"TINYNET_{gate.upper()}"] = "0"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=900)
        assert out.returncode == 0, out.stderr
        results[threads] = out.stdout.strip()
    assert len(results[1].splitlines()) == len(SCENARIOS)
    assert len(set(results.values())) == 1, results


# -- structure ------------------------------------------------------------------------------------
def test_layers_inputs_outputs_and_get_layer():
    model = two_inputs()
    assert [type(l).__name__ for l in model.layers] == [
        "InputLayer", "Conv2D", "InputLayer", "GlobalAveragePooling2D", "Dense", "Concatenate",
        "Dense"]
    assert [t.name for t in model.inputs] == ["image", "meta"]
    assert model.input_shape == [(None, 6, 6, 1), (None, 4)]
    assert model.output_shape == (None, 3)
    assert model.get_layer("meta") is model.layers[2]
    assert model.get_layer(index=-1) is model.layers[-1]
    assert model.count_params() == sum(w.size for w in model.get_weights())
    with pytest.raises(ValueError, match=re.escape(
            "Model.get_layer: no layer named 'nope' in model 'two_inputs'")):
        model.get_layer("nope")


def test_input_is_a_symbolic_tensor_and_works_in_sequential():
    t = tn.Input((8, 8, 1), name="image")
    assert t.shape == (None, 8, 8, 1) and t.dtype == "float32" and t.name == "image"
    assert isinstance(t.layer, InputLayer) and tn.layers.Input is tn.Input
    model = tn.Sequential([t, Flatten(), Dense(2)])
    assert model.input_shape == (None, 8, 8, 1)
    assert model.get_config()["layers"][0]["class_name"] == "InputLayer"
    with pytest.raises(TypeError, match="symbolic tensor 'image'"):
        np.asarray(t)


def test_shared_layer_gets_the_sum_of_both_calls_gradients():
    model = shared_layer()
    shared = model.get_layer("shared")
    assert len(model.trainable_parameters()) == 4  # shared kernel/bias + head kernel/bias
    a, b = _inputs(model, 3)
    model.forward([a, b])
    g = np.ones((3, 2), np.float32)
    model.backward(g)
    both = [p.grad.copy() for p in shared.parameters()]
    # the two calls by hand: d/dW of head(shared(a) - shared(b))
    head = model.layers[-1]
    gh = g @ head.kernel.value.T
    shared.forward(a)
    shared.backward(gh)
    ga = [p.grad.copy() for p in shared.parameters()]
    shared.forward(b)
    shared.backward(-gh)
    gb = [p.grad.copy() for p in shared.parameters()]
    for total, x1, x2 in zip(both, ga, gb):
        np.testing.assert_array_equal(total, x1 + x2)


def test_two_outputs_history_keys_and_loss_weights():
    tn.set_seed(0)
    model = two_outputs()
    _compile(model)
    x, y = _inputs(model, 16), _targets(model, 16)
    history = model.fit(x, y, batch_size=16, epochs=1, verbose=0)
    assert list(history.history) == ["loss", "cls_loss", "reg_loss", "cls_accuracy"]
    logs = model.evaluate(x, {"cls": y[0], "reg": y[1]}, verbose=0, return_dict=True)
    # the total is weighted (1.0, 0.5); each <output>_loss is not (Keras 3.15.1)
    assert logs["loss"] == pytest.approx(logs["cls_loss"] + 0.5 * logs["reg_loss"], rel=1e-12)
    cls = tn.losses.SparseCategoricalCrossentropy(from_logits=True)(y[0], model.predict(x, verbose=0)[0])
    assert logs["cls_loss"] == pytest.approx(float(cls), rel=1e-6)
    mse = np.mean((model.predict(x, verbose=0)[1].astype(np.float64) - y[1]) ** 2)
    assert logs["reg_loss"] == pytest.approx(mse, rel=1e-5)


def test_dict_outputs_predict_as_a_dict():
    i = Input((3,), name="x")
    model = tn.Model({"x": i}, {"p": Dense(2)(i), "q": Dense(1)(i)})
    out = model.predict({"x": np.ones((4, 3))}, verbose=0)
    assert sorted(out) == ["p", "q"] and out["p"].shape == (4, 2) and out["q"].shape == (4, 1)


def test_freezing_a_nested_model_freezes_all_its_weights():
    tn.set_seed(0)
    model = frozen_nested()
    block = model.get_layer("block")
    assert all(not p.trainable for p in block.parameters())
    _compile(model)
    before = block.get_weights()
    model.fit(_inputs(model, 16), _targets(model, 16), batch_size=8, epochs=2, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, block.get_weights()))
    block.trainable = True
    assert all(p.trainable for p in block.parameters())


def test_nested_model_is_one_summary_row_and_counts_its_weights():
    model = nested_in_sequential()
    block = model.layers[0]
    assert block.count_params() == 5 * 6 + 6 + 6 * 4 + 4
    lines = []
    model.summary(line_length=80, print_fn=lines.append)
    assert "block (Sequential)" in lines[0] and "dense (Dense)" in lines[0]
    assert lines[0].count("(Dense)") == 1  # the nested model's own layers are not rows


def test_config_round_trip_rebuilds_the_graph():
    model = shared_layer()
    config = json.loads(json.dumps(model.get_config()))
    rebuilt = tn.Model.from_config(config)
    assert [l.name for l in rebuilt.layers] == [l.name for l in model.layers]
    rebuilt.set_weights(model.get_weights())
    x = _inputs(model, 3)
    np.testing.assert_array_equal(model.predict(x, verbose=0), rebuilt.predict(x, verbose=0))
    assert len(rebuilt.get_layer("shared").inbound_nodes) == 2


# -- merging layers ---------------------------------------------------------------------------------
A = np.array([[1.0, -2.0, 3.0]], np.float32)
B = np.array([[4.0, -2.0, -1.0]], np.float32)
C = np.array([[0.5, 1.0, 2.0]], np.float32)


@pytest.mark.parametrize("cls, expected", [
    (Add, A + B + C), (Multiply, A * B * C), (Average, (A + B + C) / 3),
    (Maximum, np.maximum(np.maximum(A, B), C)), (Minimum, np.minimum(np.minimum(A, B), C)),
])
def test_merge_forward_values(cls, expected):
    np.testing.assert_array_equal(np.asarray(cls()([A, B, C])), expected)


def test_subtract_and_concatenate_values_and_gradients():
    np.testing.assert_array_equal(np.asarray(Subtract()([A, B])), A - B)
    cat = Concatenate()
    np.testing.assert_array_equal(np.asarray(cat([A, B])), np.concatenate([A, B], axis=-1))
    ga, gb = cat.backward(np.arange(6, dtype=np.float32)[None])
    np.testing.assert_array_equal(np.asarray(ga), [[0, 1, 2]])
    np.testing.assert_array_equal(np.asarray(gb), [[3, 4, 5]])


def test_maximum_splits_a_tie_in_halves():
    layer = Maximum()
    layer([A, B])  # A and B tie at index 1 (-2)
    ga, gb = layer.backward(np.ones((1, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(ga), [[0.0, 0.5, 1.0]])
    np.testing.assert_array_equal(np.asarray(gb), [[1.0, 0.5, 0.0]])


@pytest.mark.parametrize("cls", [Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate])
def test_merge_gradients(cls):
    rng = np.random.default_rng(4)
    xs = [rng.standard_normal((3, 4, 5)) for _ in range(2)]
    assert check_gradients(cls(), x=xs) <= 1.0


def test_merge_broadcasts_size_one_axes_and_sums_their_gradient():
    layer = Add()
    x, y = np.ones((2, 3, 4), np.float32), np.ones((2, 1, 4), np.float32)
    assert np.asarray(layer([x, y])).shape == (2, 3, 4)
    gx, gy = layer.backward(np.ones((2, 3, 4), np.float32))
    assert np.asarray(gx).shape == (2, 3, 4)
    np.testing.assert_array_equal(np.asarray(gy), np.full((2, 1, 4), 3.0))
    assert check_gradients(Multiply(), x=[np.random.default_rng(1).standard_normal((2, 3, 4)),
                                          np.random.default_rng(2).standard_normal((2, 1, 4))]) <= 1


# -- bad graphs -----------------------------------------------------------------------------------
def test_disconnected_output_is_named():
    a, b = Input((3,), name="a"), Input((3,), name="b")
    out = Dense(2)(Add()([a, b]))
    with pytest.raises(ValueError, match=re.escape(
            "Model: the graph is disconnected: tensor 'b' (shape (None, 3)) comes from an "
            "input that is not among the model's inputs ['a']")):
        tn.Model(a, out)


def test_unused_input_is_named():
    a, b = Input((3,), name="a"), Input((3,), name="b")
    with pytest.raises(ValueError, match=re.escape(
            "Model: the inputs ['b'] are not used by any output")):
        tn.Model([a, b], Dense(2)(a))


def test_two_layers_with_one_name():
    a = Input((3,), name="a")
    out = Dense(2, name="same")(Dense(3, name="same")(a))
    with pytest.raises(ValueError, match=re.escape(
            "Model: the name 'same' is used 2 times in the model; every layer needs its own "
            "name")):
        tn.Model(a, out)


def test_plain_array_where_a_symbolic_tensor_is_expected():
    a = Input((3,), name="a")
    with pytest.raises(TypeError, match=re.escape(
            "Add 'add': expected symbolic tensors (from tn.Input or a layer called on one), "
            "got ndarray at position 1")):
        Add()([a, np.ones((1, 3))])
    with pytest.raises(TypeError, match=re.escape(
            "Model: outputs: expected symbolic tensors (from tn.Input or a layer called on "
            "one), got ndarray at position 0")):
        tn.Model(a, np.ones((1, 3)))


def test_merging_incompatible_shapes():
    a, b = Input((3,), name="a"), Input((4,), name="b")
    with pytest.raises(ValueError, match=re.escape(
            "Add 'add' cannot take 'a' (None, 3), 'b' (None, 4): Add 'add': inputs have "
            "incompatible shapes [(None, 3), (None, 4)] (axis 1: 3 and 4)")):
        Add()([a, b])
    c = Input((2, 3), name="c")
    with pytest.raises(ValueError, match=re.escape(
            "Concatenate 'concatenate': inputs must match except along axis -1, got shapes "
            "[(None, 2, 3), (None, 3, 3)]")):
        Concatenate()([c, Input((3, 3), name="d")])
    with pytest.raises(ValueError, match=re.escape(
            "Subtract 'subtract': expects exactly 2 inputs, got 3")):
        Subtract()([a, a, a])


def test_model_called_on_wrong_inputs():
    model = two_inputs()
    with pytest.raises(ValueError, match=re.escape(
            "Model.predict: model 'two_inputs' takes 2 inputs ['image', 'meta'], got a list "
            "of 3")):
        model.predict([np.ones((1, 6, 6, 1))] * 3, verbose=0)
    with pytest.raises(ValueError, match=re.escape(
            "Model.predict: input 'meta' of model 'two_inputs' expects a non-empty batch of "
            "shape (None, 4) (None = any), got shape (2, 5)")):
        model.predict([np.ones((2, 6, 6, 1)), np.ones((2, 5))], verbose=0)
    with pytest.raises(ValueError, match=re.escape(
            "Model.predict: model 'two_inputs' takes inputs ['image', 'meta']; the dict "
            "lacks ['meta'] and has unknown keys ['other']")):
        model.predict({"image": np.ones((2, 6, 6, 1)), "other": np.ones((2, 4))}, verbose=0)


def test_digest_of_weights_is_stable_within_a_process():
    """Two identical seeded fits in one process give the same weights (no hidden state)."""
    digests = []
    for _ in range(2):
        tn.set_seed(11)
        model = residual_block()
        _compile(model)
        model.fit(_inputs(model, 16), _targets(model, 16), batch_size=8, epochs=1, verbose=0)
        digests.append(hashlib.sha256(b"".join(w.tobytes() for w in model.get_weights()))
                       .hexdigest())
    assert digests[0] == digests[1]


def test_automatic_names_are_unique_in_creation_order_through_shared_layers():
    a, b = Input((3,)), Input((3,))  # both "input_layer" until a model names them
    shared = Dense(2)
    model = tn.Model([a, b], Add()([shared(b), shared(a)]))
    assert sorted(l.name for l in model.layers) == ["add", "dense", "input_layer",
                                                    "input_layer_1"]
    assert a.layer.name == "input_layer" and b.layer.name == "input_layer_1"


def test_a_layer_in_two_nested_models_is_refused():
    """Its weights would be counted and its gradients taken twice (Keras allows it; tinynet
    asks for one graph calling the layer twice instead)."""
    d = Dense(2, name="d")
    s1 = tn.Sequential([Input((2,)), d], name="s1")
    s2 = tn.Sequential([Input((2,)), d], name="s2")
    a, b = Input((2,)), Input((2,))
    message = re.escape("layer 'd' belongs to the model at 2 places ['s1/d', 's2/d']")
    with pytest.raises(ValueError, match="Model: " + message):
        tn.Model([a, b], Concatenate()([s1(a), s2(b)]))
    with pytest.raises(ValueError, match="Sequential.add: " + message):
        tn.Sequential([s1, s2])
    i = Input((2,))
    inner = tn.Model(i, d(i), name="inner")
    x = Input((2,))
    with pytest.raises(ValueError, match=re.escape("belongs to the model at 2 places ['d', "
                                                   "'inner/d']")):
        h = d(x)
        tn.Model(x, Concatenate()([h, inner(h)]))


def test_a_list_of_one_input_and_one_output_as_keras():
    a = Input((4,), name="a")
    model = tn.Model([a], [Dense(2)(a)])
    x = np.ones((3, 4), np.float32)
    out = model.predict([x], verbose=0)
    assert isinstance(out, np.ndarray) and out.shape == (3, 2)  # Keras 3: an array
    model.compile("sgd", "mse")
    assert list(model.fit([x], [np.zeros((3, 2))], verbose=0).history) == ["loss"]
