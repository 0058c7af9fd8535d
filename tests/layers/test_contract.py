"""The layer contract, run on every public layer class (``tinynet.layers.__all__``).

Each class needs an entry in ``EXAMPLES`` (how to make one and what to feed it) or a
reason in ``NOT_COMPUTING``: a new layer without one fails ``test_every_layer_has_an_example``.
For each example (a list of input shapes for a layer with several inputs, checked in a
functional model): the config round trip, ``output_shape`` against the real output,
``check_gradients`` (input and parameters), save and load (bitwise the same
predictions), and the layer's row in the model summary.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet import ops
from tinynet.testing import check_gradients


@tn.saving.register_keras_serializable(package="tests.contract")
def _scaled_tanh(x, scale=1.0):
    """A Lambda's function (registered, so the layer saves)."""
    return ops.tanh(x) * scale

EXAMPLES = {
    "Activation": (lambda: L.Activation("tanh"), (2, 3, 4)),
    "Add": (lambda: L.Add(), [(2, 3, 4), (2, 3, 4)]),
    "Average": (lambda: L.Average(), [(2, 3, 4), (2, 1, 4), (2, 3, 4)]),
    "Concatenate": (lambda: L.Concatenate(axis=1), [(2, 3, 4), (2, 2, 4)]),
    "Maximum": (lambda: L.Maximum(), [(2, 5), (2, 5)]),
    "Minimum": (lambda: L.Minimum(), [(2, 5), (2, 5)]),
    "Multiply": (lambda: L.Multiply(), [(2, 5), (2, 5), (2, 5)]),
    "Subtract": (lambda: L.Subtract(), [(2, 3, 4), (2, 3, 4)]),
    "AveragePooling2D": (lambda: L.AveragePooling2D(2), (2, 4, 4, 3)),
    "BatchNormalization": (lambda: L.BatchNormalization(), (4, 3, 3, 2)),
    "Conv2D": (lambda: L.Conv2D(4, 3, padding="same"), (2, 5, 5, 3)),
    "RandomFlip": (lambda: L.RandomFlip(seed=1), (2, 4, 5, 2)),
    "RandomCrop": (lambda: L.RandomCrop(3, 4, seed=1), (2, 5, 6, 2)),
    "RandomTranslation": (lambda: L.RandomTranslation(0.2, (-0.1, 0.3), seed=1),
                          (2, 5, 4, 2)),
    "RandomRotation": (lambda: L.RandomRotation(0.2, fill_mode="constant", seed=1),
                       (2, 5, 4, 2)),
    "RandomZoom": (lambda: L.RandomZoom(0.3, interpolation="nearest", seed=1), (2, 5, 4, 2)),
    "RandomContrast": (lambda: L.RandomContrast(0.5, value_range=(-3, 3), seed=1),
                       (2, 4, 3, 2)),
    "Normalization": (lambda: L.Normalization(mean=[0.5, -1.0], variance=[2.0, 0.25]),
                      (2, 3, 2)),
    "Conv1D": (lambda: L.Conv1D(4, 3, padding="causal", activation="tanh"), (2, 7, 3)),
    "Conv2DTranspose": (lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same"),
                        (2, 3, 4, 2)),
    "DepthwiseConv2D": (lambda: L.DepthwiseConv2D(3, depth_multiplier=2), (2, 5, 5, 3)),
    "SeparableConv2D": (lambda: L.SeparableConv2D(4, 3, padding="same"), (2, 5, 5, 3)),
    "Dense": (lambda: L.Dense(3), (2, 4)),
    "Lambda": (lambda: L.Lambda(_scaled_tanh, arguments={"scale": 2.0}), (2, 3, 4)),
    "Dropout": (lambda: L.Dropout(0.5), (2, 4)),
    "ELU": (lambda: L.ELU(), (2, 5)),
    "Flatten": (lambda: L.Flatten(), (2, 3, 2, 2)),
    "GlobalAveragePooling2D": (lambda: L.GlobalAveragePooling2D(), (2, 3, 3, 2)),
    "GlobalMaxPooling2D": (lambda: L.GlobalMaxPooling2D(), (2, 3, 3, 2)),
    "GroupNormalization": (lambda: L.GroupNormalization(2), (2, 3, 3, 4)),
    "InstanceNormalization": (lambda: L.InstanceNormalization(), (2, 3, 3, 2)),
    "LayerNormalization": (lambda: L.LayerNormalization(), (3, 5)),
    "LeakyReLU": (lambda: L.LeakyReLU(), (2, 5)),
    "MaxPooling2D": (lambda: L.MaxPooling2D(2), (2, 4, 4, 3)),
    "ReLU": (lambda: L.ReLU(), (2, 5)),
    "Reshape": (lambda: L.Reshape((6,)), (2, 3, 2)),
    "Rescaling": (lambda: L.Rescaling(0.5, offset=-1.0), (2, 3, 2)),
    "ZeroPadding2D": (lambda: L.ZeroPadding2D(((1, 0), (2, 1))), (2, 3, 3, 2)),
    "Cropping2D": (lambda: L.Cropping2D(((1, 0), (0, 1))), (2, 4, 4, 2)),
    "UpSampling2D": (lambda: L.UpSampling2D((2, 3), interpolation="bilinear"), (2, 3, 2, 2)),
    "MaxPooling1D": (lambda: L.MaxPooling1D(2), (2, 6, 3)),
    "AveragePooling1D": (lambda: L.AveragePooling1D(3, strides=2, padding="same"), (2, 7, 3)),
    "GlobalAveragePooling1D": (lambda: L.GlobalAveragePooling1D(keepdims=True), (2, 4, 3)),
    "GlobalMaxPooling1D": (lambda: L.GlobalMaxPooling1D(), (2, 4, 3)),
    "Sigmoid": (lambda: L.Sigmoid(), (2, 5)),
    "Softmax": (lambda: L.Softmax(), (2, 5)),
    "SpatialDropout2D": (lambda: L.SpatialDropout2D(0.5), (2, 3, 3, 2)),
    "Tanh": (lambda: L.Tanh(), (2, 5)),
    "Dot": (lambda: L.Dot(axes=(1, 2), normalize=True), [(2, 3, 4), (2, 5, 3)]),
    "MultiHeadAttention": (lambda: L.MultiHeadAttention(2, 3, value_dim=2, output_shape=4,
                                                       name="mha"),
                           [(2, 3, 5), (2, 4, 6), (2, 4, 3)]),
    "Attention": (lambda: L.Attention(use_scale=True, score_mode="concat"),
                  [(2, 3, 4), (2, 5, 2), (2, 5, 4)]),
    "AdditiveAttention": (lambda: L.AdditiveAttention(), [(2, 3, 4), (2, 5, 2), (2, 5, 4)]),
    "Permute": (lambda: L.Permute((2, 1)), (2, 3, 4)),
    "RepeatVector": (lambda: L.RepeatVector(3), (2, 4)),
    "Identity": (lambda: L.Identity(), (2, 3, 4)),
    "Masking": (lambda: L.Masking(), (2, 3, 4)),
    "UnitNormalization": (lambda: L.UnitNormalization(axis=(1, 2)), (2, 3, 4)),
    # l1 = l2 = 0: check_gradients probes the output only, not the added loss (tested in
    # tests/layers/test_keras_small_layers.py)
    "ActivityRegularization": (lambda: L.ActivityRegularization(), (2, 5)),
    "GaussianNoise": (lambda: L.GaussianNoise(0.2, seed=1), (2, 5)),
    "GaussianDropout": (lambda: L.GaussianDropout(0.2, seed=1), (2, 5)),
    "SimpleRNN": (lambda: L.SimpleRNN(3, return_sequences=True), (2, 4, 3)),
    "LSTM": (lambda: L.LSTM(3, go_backwards=True), (2, 4, 3)),
    "GRU": (lambda: L.GRU(3, reset_after=False, return_sequences=True), (2, 4, 3)),
    "Bidirectional": (lambda: L.Bidirectional(L.LSTM(3, return_sequences=True),
                                              backward_layer=L.GRU(2, go_backwards=True,
                                                                   return_sequences=True)),
                      (2, 4, 3)),
    "TimeDistributed": (lambda: L.TimeDistributed(L.Dense(3, activation="tanh")), (2, 4, 5)),
}
# Layers whose inputs are integer ids (no input gradient): ids below this bound.
ID_EXAMPLES = {
    "Embedding": (lambda: L.Embedding(7, 3), (2, 4), 7),
    # the numeric preprocessing layers (no weights, no gradient; tests/layers/test_preprocessing_*)
    "IntegerLookup": (lambda: L.IntegerLookup(vocabulary=[0, 2, 4, 6]), (2, 4), 7),
    "CategoryEncoding": (lambda: L.CategoryEncoding(7, output_mode="count"), (2, 4), 7),
    "Hashing": (lambda: L.Hashing(5), (2, 4), 7),
    "Discretization": (lambda: L.Discretization([1.5, 3.5], output_mode="one_hot"), (2, 4), 7),
}
# Layers that take strings: their contract (config round trip, output_shape against the
# output, save and load with their vocabulary) runs standalone in
# tests/layers/test_preprocessing_text.py, and in models on tn.Input(dtype="string") in
# tests/models/test_string_inputs.py.
STRING_INPUTS = {
    "TextVectorization": "strings in (tn.Input(dtype='string')); tests/models/test_string_inputs",
    "StringLookup": "strings in (tn.Input(dtype='string')); tests/models/test_string_inputs",
}
NOT_COMPUTING = {
    "Layer": "the base class",
    "Parameter": "a weight, not a layer",
    "Input": "a function (it returns a symbolic tensor), not a layer class",
    "InputLayer": "declares a model's input (no weights, the identity; tests/models)",
    "add": "a function (builds the merging layer and calls it), not a layer class",
    "subtract": "a function (builds the merging layer and calls it), not a layer class",
    "multiply": "a function (builds the merging layer and calls it), not a layer class",
    "average": "a function (builds the merging layer and calls it), not a layer class",
    "maximum": "a function (builds the merging layer and calls it), not a layer class",
    "minimum": "a function (builds the merging layer and calls it), not a layer class",
    "concatenate": "a function (builds the merging layer and calls it), not a layer class",
    "dot": "a function (builds the merging layer and calls it), not a layer class",
}


def _input(shape: tuple, seed: int = 0) -> np.ndarray:
    """Values at least 0.05 away from 0 (ReLU's kink) and from each other's ties."""
    x = np.random.default_rng(seed).standard_normal(shape)
    return (np.sign(x) * (0.05 + np.abs(x))).astype(np.float32)


def _table_gradients(layer: L.Layer, x: np.ndarray, delta: float = 1e-2) -> None:
    """Finite differences of ``sum(layer(x) * g)`` against each parameter's gradient, the
    input held fixed (integer ids have no gradient)."""
    g = _input(np.asarray(layer(x)).shape, seed=2)
    np.asarray(layer.forward(x, training=True))
    layer.backward(g)
    for p in layer.parameters():
        grad = p.grad.copy()
        flat = p.value.reshape(-1)
        for i in range(flat.size):
            keep = flat[i]
            flat[i] = keep + delta
            up = float(np.sum(np.asarray(layer(x), dtype=np.float64) * g))
            flat[i] = keep - delta
            down = float(np.sum(np.asarray(layer(x), dtype=np.float64) * g))
            flat[i] = keep
            assert abs((up - down) / (2 * delta) - grad.reshape(-1)[i]) < 1e-3, (p.name, i)


def check_contract(layer: L.Layer, input_shape: tuple, tmp_path, ids: int = 0) -> None:
    """Raises ``AssertionError`` (or the check's own error) where ``layer`` breaks it.
    ``ids``: the layer takes integer ids below this bound (no input gradient)."""
    cls = type(layer)
    multi = isinstance(input_shape, list)  # a layer with several inputs
    if ids:
        x = np.random.default_rng(0).integers(0, ids, input_shape)
    elif multi:
        x = [_input(s, seed=i) for i, s in enumerate(input_shape)]
    else:
        x = _input(input_shape)
    y = np.asarray(layer(x))
    assert tuple(layer.output_shape(input_shape)) == y.shape, (
        f"{cls.__name__}.output_shape{input_shape} = {layer.output_shape(input_shape)}, "
        f"but forward returns {y.shape}")
    config = layer.get_config()
    assert cls.from_config(config).get_config() == config
    if ids:
        _table_gradients(layer, x)
    else:
        check_gradients(layer, x=x, seed=1)
    if multi:
        inputs = [L.Input(s[1:]) for s in input_shape]
        model = tn.Model(inputs, layer(inputs))
    else:
        model = tn.Sequential([L.Input(input_shape[1:]), layer])
    before = model.predict(x, verbose=0)
    path = tmp_path / f"{cls.__name__}.safetensors"
    model.save_weights(path) if not model.parameters() else model.save(path)
    if model.parameters():
        again = tn.load_model(path).predict(x, verbose=0)
        assert np.array_equal(again, before)
    rows: list[str] = []
    model.summary(print_fn=rows.append)
    row = [line for line in rows[0].splitlines() if layer.name in line]  # Keras wraps long
    kind = f"({cls.__name__})"                                             # names in two lines
    assert row and (kind in rows[0] or kind[:18] + "…" in rows[0]), rows[0]  # (cut as Keras)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_layer_contract(name, tmp_path):
    make, shape = EXAMPLES[name]
    check_contract(make(), shape, tmp_path)


@pytest.mark.parametrize("name", sorted(ID_EXAMPLES))
def test_id_layer_contract(name, tmp_path):
    make, shape, ids = ID_EXAMPLES[name]
    check_contract(make(), shape, tmp_path, ids=ids)


def test_every_layer_has_an_example():
    covered = set(EXAMPLES) | set(ID_EXAMPLES) | set(NOT_COMPUTING) | set(STRING_INPUTS)
    missing = set(L.__all__) - covered
    assert missing == set(), f"layers without a contract example: {sorted(missing)}"
    assert covered <= set(L.__all__)


class _WrongShape(L.Layer):
    """Doubles the last axis but claims to keep the shape."""

    def forward(self, x, training=False):
        x = np.asarray(x)
        return tn.Tensor(np.concatenate([x, x], axis=-1))

    def backward(self, grad_output):
        g = np.asarray(grad_output)
        half = g.shape[-1] // 2
        return tn.Tensor(g[..., :half] + g[..., half:])


def test_the_contract_catches_a_wrong_output_shape(tmp_path):
    with pytest.raises(AssertionError, match=r"_WrongShape.output_shape\(2, 3\) = \(2, 3\), "
                                             r"but forward returns \(2, 6\)"):
        check_contract(_WrongShape(), (2, 3), tmp_path)
