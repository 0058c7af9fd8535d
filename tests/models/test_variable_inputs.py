"""Inputs of any length and of integer or bool dtype (``Input((None,), dtype="int32")``):
the layers that work along a sequence take any length, the data keeps its dtype up to the
first layer, and shapes, summaries and saved files carry the ``None``."""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L

RNG = np.random.default_rng(0)


class DtypeSpy(tn.layers.Layer):
    """Records the dtype of what it is called on; passes the data on as float32."""

    seen: list = []

    def call(self, x):
        DtypeSpy.seen.append(np.asarray(x).dtype)
        return tn.ops.cast(x, "float32")


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_integer_and_bool_data_reach_the_first_layer_in_the_input_dtype(dtype):
    model = tn.Sequential([tn.Input((3,), dtype=dtype), DtypeSpy(), L.Dense(2)])
    assert DtypeSpy.seen[-1] == np.dtype(dtype)  # the shape query (Keras: symbolic call)
    DtypeSpy.seen = []
    model.predict(np.array([[1.9, 0.0, -2.7]]), verbose=0)
    assert DtypeSpy.seen == [np.dtype(dtype)]
    inp = tn.Input((3,), dtype=dtype)
    functional = tn.Model(inp, L.Dense(2)(DtypeSpy()(inp)))
    assert DtypeSpy.seen[-1] == np.dtype(dtype)
    functional.predict(np.array([[1, 0, 2]], dtype=np.float32), verbose=0)
    assert DtypeSpy.seen[-1] == np.dtype(dtype)


def test_floats_for_an_integer_input_are_truncated_as_keras_casts():
    captured = []

    class Keep(tn.layers.Layer):
        def call(self, x):
            captured.append(np.asarray(x).copy())
            return tn.ops.cast(x, "float32")

    model = tn.Sequential([tn.Input((3,), dtype="int32"), Keep()])
    del captured[:]
    model.predict(np.array([[1.9, -0.5, -2.7]]), verbose=0)
    np.testing.assert_array_equal(captured[0], np.array([[1, 0, -2]], dtype=np.int32))


def test_int64_ids_beyond_float32_exactness_reach_embedding_unchanged():
    ids = np.array([[2**24 + 1, 2**24]], dtype=np.int64)  # equal once rounded to float32
    captured = []

    class Keep(tn.layers.Layer):
        def call(self, x):
            captured.append(np.asarray(x).copy())
            return tn.ops.cast(x, "float32")

    inp = tn.Input((None,), dtype="int64")
    model = tn.Model(inp, Keep()(inp))
    del captured[:]
    model.predict(ids, verbose=0)
    np.testing.assert_array_equal(captured[0], ids)
    assert np.float32(ids[0, 0]) == np.float32(ids[0, 1])


def _text_cnn(seed: int = 0) -> tn.Model:
    tn.utils.set_random_seed(seed)
    ids = tn.Input(shape=(None,), dtype="int32")
    x = L.Embedding(50, 8)(ids)
    x = L.Conv1D(6, 3, activation="relu")(x)
    x = L.GlobalMaxPooling1D()(x)
    return tn.Model(ids, L.Dense(1, activation="sigmoid")(x))


def test_a_text_cnn_takes_any_length_and_trains():
    model = _text_cnn()
    assert model.inputs[0].shape == (None, None) and model.inputs[0].dtype == "int32"
    for length in (5, 17, 40):
        out = model.predict(RNG.integers(0, 50, (3, length)), verbose=0)
        assert out.shape == (3, 1) and np.isfinite(out).all()
    model.compile("adam", "binary_crossentropy")
    x = RNG.integers(0, 50, (32, 12))
    y = (x[:, :1] > 25).astype(np.float32)
    history = model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()


# Each layer Keras runs along a sequence of any length: the same weights give the same
# bits whether the length is declared or left None.
SEQUENCE_LAYERS = {
    "conv1d-valid": lambda: L.Conv1D(4, 3),
    "conv1d-same-strided": lambda: L.Conv1D(4, 3, strides=2, padding="same"),
    "conv1d-causal-dilated": lambda: L.Conv1D(4, 2, padding="causal", dilation_rate=2),
    "max-pool-1d": lambda: L.MaxPooling1D(2),
    "average-pool-1d-same": lambda: L.AveragePooling1D(3, strides=2, padding="same"),
    "global-max-1d": lambda: L.GlobalMaxPooling1D(),
    "global-average-1d": lambda: L.GlobalAveragePooling1D(),
    "dense-last-axis": lambda: L.Dense(5, activation="tanh"),
    "layer-norm": lambda: L.LayerNormalization(),
    "batch-norm-last-axis": lambda: L.BatchNormalization(),
    "dropout": lambda: L.Dropout(0.5),
}


@pytest.mark.parametrize("name", sorted(SEQUENCE_LAYERS))
def test_a_sequence_layer_gives_the_same_bits_for_a_declared_and_an_unknown_length(name):
    x = RNG.standard_normal((4, 11, 3)).astype(np.float32)
    any_length = tn.Sequential([tn.Input((None, 3)), SEQUENCE_LAYERS[name]()])
    fixed = tn.Sequential([tn.Input((11, 3)), SEQUENCE_LAYERS[name]()])
    fixed.set_weights(any_length.get_weights())
    np.testing.assert_array_equal(any_length.predict(x, verbose=0), fixed.predict(x, verbose=0))
    for model in (any_length, fixed):
        model.compile("sgd", "mse")
    y = any_length.predict(x, verbose=0) * 0.5
    tn.utils.set_random_seed(1)
    any_length.fit(x, y, epochs=1, batch_size=2, shuffle=False, verbose=0)
    tn.utils.set_random_seed(1)
    fixed.fit(x, y, epochs=1, batch_size=2, shuffle=False, verbose=0)
    for a, b in zip(any_length.get_weights(), fixed.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_a_fixed_batch_size_shows_in_shapes_and_any_batch_still_runs():
    inp = tn.Input((None, 3), batch_size=32)
    assert inp.shape == (32, None, 3)
    model = tn.Sequential([inp, L.Conv1D(4, 2), L.GlobalMaxPooling1D(), L.Dense(2)])
    assert model.output_shape == (32, 2)
    assert model.predict(np.ones((5, 7, 3)), verbose=0).shape == (5, 2)


def test_keras_positional_order_with_a_batch_size():
    t = tn.Input((4,), 16, "int64", None, None, "ids")
    assert (t.shape, t.dtype, t.layer.name) == ((16, 4), "int64", "ids")
    t = tn.Input((4,), "int32", "tokens")  # tinynet's order: shape, dtype, name
    assert (t.shape, t.dtype, t.layer.name) == ((None, 4), "int32", "tokens")
    assert tn.Input((2,), dtype=np.int32).dtype == "int32"
    assert tn.Input((2,), dtype=None).dtype == "float32"


def test_dense_needs_a_known_last_axis():
    with pytest.raises(ValueError, match=r"Dense 'dense': the last input axis must be known"):
        tn.Sequential([tn.Input((None,)), L.Dense(3)])


def test_saved_and_cloned_models_keep_the_unknown_length_and_the_dtype(tmp_path):
    model = _text_cnn()
    path = tmp_path / "text.safetensors"
    model.save(path)
    again = tn.load_model(path)
    x = RNG.integers(0, 50, (2, 9))
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))
    for copy in (again, tn.models.model_from_json(model.to_json()),
                 tn.models.clone_model(model)):
        assert copy.inputs[0].shape == (None, None) and copy.inputs[0].dtype == "int32"
    fixed = tn.Sequential([tn.Input((None, 3), batch_size=8), L.Dense(2)])
    again = tn.models.model_from_json(fixed.to_json())
    assert again.input_shape == (8, None, 3)
