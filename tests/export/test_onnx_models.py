"""Whole models export: the example models (digits CNN, residual CNN, normalization zoo)
with random weights, functional graphs with nested models, several inputs and outputs,
shared layers; the file's names, batch axis and opset; and the errors, with their text."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from tests.export.cases import normal, randomize
from tests.export.common import check_export, onnx, session

import tinynet as tn
from tinynet import layers as L
from tinynet.export import DEFAULT_OPSET, to_onnx

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(EXAMPLES)


def digits(n: int = 32) -> np.ndarray:
    return np.abs(normal((n, 8, 8, 1), seed=3)) * np.float32(8.0)  # pixel-like, 0..~20


# -- the example models ---------------------------------------------------------------------------
def test_digits_cnn_exports(examples_path, tmp_path):
    import train_digits_cnn

    tn.set_seed(0)
    model = train_digits_cnn.build_model()
    randomize(model)
    check_export(model, [digits()])
    path = tmp_path / "digits.onnx"
    model.export(path)  # the file too: loads, checks, runs
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    assert proto.opset_import[0].version == DEFAULT_OPSET == 17
    sess = session(proto)
    (inp,), (out,) = sess.get_inputs(), sess.get_outputs()
    assert (inp.name, inp.shape, out.name, out.shape) == (
        "input_layer", ["batch", 8, 8, 1], "dense_1", ["batch", 10])
    np.testing.assert_allclose(sess.run(None, {"input_layer": digits(5)})[0],
                               model.predict(digits(5), verbose=0), rtol=1e-5, atol=1e-6)


def test_residual_cnn_exports(examples_path):
    import residual_cnn

    tn.set_seed(0)
    model = residual_cnn.build_model()
    randomize(model)
    check_export(model, [digits()])
    sess = session(to_onnx(model))
    assert [i.name for i in sess.get_inputs()] == ["digits"]
    assert [o.name for o in sess.get_outputs()] == [model.output_names[0]]


def test_augmented_cnn_exports(examples_path):
    """The augmentation layers are the identity at inference (as predict)."""
    import augmented_cnn

    tn.set_seed(0)
    model = augmented_cnn.build_model()
    randomize(model)
    check_export(model, [digits()])


def test_sequence_conv1d_exports(examples_path):
    """Causal and dilated Conv1D with 1-D pooling on generated signals."""
    import sequence_conv1d

    tn.set_seed(0)
    model = sequence_conv1d.build_model()
    randomize(model)
    signals, _ = sequence_conv1d.make_signals(32, seed=1)
    check_export(model, [signals])


def test_sequence_lstm_exports(examples_path):
    """The digits read as rows through Bidirectional(LSTM): one bidirectional LSTM."""
    import sequence_lstm

    tn.set_seed(0)
    model = sequence_lstm.build_model()
    randomize(model)
    check_export(model, [sequence_lstm.as_rows(digits())])
    assert [n.op_type for n in to_onnx(model).graph.node].count("LSTM") == 1


def test_mnist_cnn_exports(examples_path):
    """The MNIST example's model (its data is never needed to build it). Its logits reach
    5.3 in size, and before opset 21 its two GroupNormalizations are primitive operators
    summing in ONNX Runtime's order: they differ by up to 1.7e-5 (3.2e-6 of the largest
    logit; 5.6e-6 with opset 21's GroupNormalization), so atol is 1e-5 of that scale."""
    import mnist_cnn

    tn.set_seed(0)
    model = mnist_cnn.build_model((28, 28, 1))
    randomize(model)
    for opset in (13, 17, 21):
        check_export(model, [np.abs(normal((32, 28, 28, 1), seed=4))], opset=opset,
                     atol=5.3e-5)


# IN needs atol=1e-5: tinynet's one-pass float32 shifted sums (docs/normalization.md) round
# the statistics of a sparse ReLU channel (a few positive cells among zeros, shifted by an
# outlier) to about 1e-5 relative (measured: 1.7e-4 from float64 on one IN output, ONNX
# Runtime 1.0e-6), and the next layers carry it to the logits (1.5e-5). LN's outputs differ
# by 6e-6 at most (1.3e-6 beyond rtol, at opset 13's primitive operators): float32 sums in
# another order, through two normalizations and the layers after them.
@pytest.mark.parametrize("label, atol", [("BN", 1e-6), ("BN(m=0.9)", 1e-6), ("GN(4)", 1e-6),
                                         ("IN", 1e-5), ("LN(1,2,3)", 1e-5)])
def test_normalization_zoo_exports(examples_path, label, atol):
    import normalization_zoo

    tn.set_seed(0)
    model = normalization_zoo.build_model(normalization_zoo.NORMS[label])
    randomize(model)
    for opset in (13, 17, 21):
        check_export(model, [digits()], opset=opset, atol=atol)


def test_trained_model_exports():
    """A few steps of training (BN's moving statistics and all weights moved by Adam)."""
    tn.set_seed(1)
    model = tn.Sequential([tn.Input((6, 6, 2)), L.Conv2D(8, 3, activation="relu"),
                           L.BatchNormalization(momentum=0.5), L.Dropout(0.3), L.Flatten(),
                           L.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    x = normal((32, 6, 6, 2))
    y = np.eye(3, dtype=np.float32)[np.arange(32) % 3]
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    check_export(model, [x])


# -- functional graphs ------------------------------------------------------------------------
def test_functional_with_nested_sequential():
    tn.set_seed(0)
    block = tn.Sequential([L.Conv2D(4, 3, padding="same"), L.BatchNormalization(),
                           L.ReLU()], name="block")
    inputs = tn.Input((6, 6, 3), name="image")
    x = block(inputs)
    x = L.Add()([x, L.Conv2D(4, 1)(inputs)])
    outputs = L.Dense(2, name="head")(L.GlobalAveragePooling2D()(x))
    model = tn.Model(inputs, outputs)
    randomize(model)
    check_export(model, [normal((32, 6, 6, 3))])
    names = [n.name for n in to_onnx(model).graph.node]
    assert any(name.startswith("block/conv2d/") for name in names), names


def test_sequential_with_nested_functional_and_sequential():
    tn.set_seed(0)
    inner_in = tn.Input((5,))
    inner = tn.Model(inner_in, L.Dense(4, activation="tanh")(inner_in), name="inner")
    deeper = tn.Sequential([L.Dense(3), tn.Sequential([L.LayerNormalization()], name="ln")],
                           name="deeper")
    model = tn.Sequential([tn.Input((5,), name="features"), inner, deeper,
                           L.Dense(2, name="out")])
    randomize(model)
    check_export(model, [normal((32, 5))])
    sess = session(to_onnx(model))
    assert [i.name for i in sess.get_inputs()] == ["features"]
    assert [o.name for o in sess.get_outputs()] == ["out"]


def test_several_inputs_and_outputs_and_a_shared_layer():
    tn.set_seed(0)
    a, b = tn.Input((4,), name="a"), tn.Input((4,), name="b")
    shared = L.Dense(3, activation="relu", name="shared")
    ha, hb = shared(a), shared(b)
    joined = L.Concatenate(name="joined")([ha, hb])
    diff = L.Subtract(name="diff")([ha, hb])
    model = tn.Model([a, b], [L.Dense(2, name="logits")(joined), diff])
    randomize(model)
    check_export(model, [normal((32, 4)), normal((32, 4), seed=1)])
    proto = to_onnx(model)
    assert [i.name for i in proto.graph.input] == ["a", "b"]
    assert [o.name for o in proto.graph.output] == ["logits", "diff"]
    kernels = [t for t in proto.graph.initializer if t.name.startswith("shared/kernel")]
    assert len(kernels) == 1  # a layer called twice stores its weights once


def test_output_names_repeated_and_an_output_that_is_an_input():
    tn.set_seed(0)
    x = tn.Input((3,), name="x")
    dense = L.Dense(3, name="dense")
    h = dense(x)
    model = tn.Model(x, [h, dense(h), x, h])
    randomize(model)
    proto = to_onnx(model)
    assert [o.name for o in proto.graph.output] == ["dense", "dense_1", "x_1", "dense_2"]
    sess = session(proto)
    data = normal((7, 3))
    got = sess.run(None, {"x": data})
    want = model.predict(data, verbose=0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    check_export(model, [normal((32, 3))])


def test_sequential_built_without_an_input_layer():
    tn.set_seed(0)
    model = tn.Sequential([L.Dense(4), L.Softmax()])
    model.build((None, 6))
    randomize(model)
    check_export(model, [normal((32, 6))])
    assert [i.name for i in to_onnx(model).graph.input] == ["input_layer"]


def test_export_replaces_a_file_atomically(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(b"old")
    model = tn.Sequential([tn.Input((3,)), L.Dense(2)])
    model.export(str(path), format="onnx", opset=18)
    assert onnx.load(str(path)).opset_import[0].version == 18
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]


# -- errors -----------------------------------------------------------------------------------
class Scale(L.Layer):
    """A user's layer: no converter."""

    def forward(self, x, training=False):
        return tn.Tensor(np.asarray(x) * 2)


class MyDense(L.Dense):
    """A subclass of a built-in layer: it may compute something else, so no export."""


def test_bad_format_is_a_value_error(tmp_path):
    model = tn.Sequential([tn.Input((3,)), L.Dense(2)])
    for fmt in ("tf_saved_model", "ONNX", None):
        with pytest.raises(ValueError) as info:
            model.export(tmp_path / "m", format=fmt)
        assert str(info.value) == (f"Sequential.export: format must be 'onnx' (the only export "
                                   f"format), got {fmt!r}")
    assert list(tmp_path.iterdir()) == []


def test_custom_layers_are_named(tmp_path):
    inputs = tn.Input((3,))
    inner = tn.Sequential([MyDense(3)], name="inner")
    model = tn.Model(inputs, L.Dense(1)(inner(Scale(name="scale")(inputs))))
    with pytest.raises(ValueError) as info:
        model.export(tmp_path / "m.onnx")
    assert str(info.value) == (
        "Model.export: layers 'scale' (Scale), 'inner/my_dense' (MyDense) have no ONNX "
        "export; only the built-in layers of tinynet.layers export (docs/export.md lists "
        "them)")
    one = tn.Sequential([tn.Input((3,)), Scale(name="scale")])
    with pytest.raises(ValueError, match=r"^Sequential\.export: layer 'scale' \(Scale\) has no "
                                         r"ONNX export; only the built-in layers"):
        one.export(tmp_path / "m.onnx")
    assert list(tmp_path.iterdir()) == []


def test_other_bad_arguments(tmp_path):
    model = tn.Sequential([tn.Input((3,)), L.Dense(2)])
    with pytest.raises(TypeError, match=r"^Sequential\.export: path must be a str or "
                                        r"os\.PathLike, got int$"):
        model.export(5)
    for opset in (12, "17", True, 17.0):
        exc = ValueError if opset == 12 else TypeError
        with pytest.raises(exc) as info:
            model.export(tmp_path / "m.onnx", opset=opset)
        assert str(info.value) == ("Sequential.export: opset must be None or an int >= 13, "
                                   f"got {opset!r}")
    newest = onnx.defs.onnx_opset_version()
    with pytest.raises(ValueError) as info:
        model.export(tmp_path / "m.onnx", opset=newest + 1)
    assert str(info.value) == (f"Sequential.export: opset {newest + 1} is newer than the "
                               f"installed onnx package knows (up to {newest}); upgrade onnx "
                               f"or pass a lower opset")
    unbuilt = tn.Sequential([L.Dense(2)])
    with pytest.raises(ValueError, match="is not built yet"):
        unbuilt.export(tmp_path / "m.onnx")
    assert list(tmp_path.iterdir()) == []


def test_without_onnx_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    model = tn.Sequential([tn.Input((3,)), L.Dense(2)])
    with pytest.raises(ImportError) as info:
        model.export(tmp_path / "m.onnx")
    assert str(info.value) == ("Sequential.export: exporting to ONNX needs the onnx package: "
                               "pip install tinynet[onnx]")
