"""The preprocessing layers beyond the Keras value checks (test_preprocessing_keras.py):
the string layers' contract (config round trip with the learned vocabulary, output_shape
against the output, serialize / deserialize through JSON), saving inside models, the
input forms, no gradient, the keras-io pipeline (vectorize, then fit on ids) and the
hashes' own properties."""

from __future__ import annotations

import json

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet.layers.preprocessing.string_hash import fingerprint64, siphash24

TEXTS = ["The cat sat on the mat.", "The dog ate my homework!", "A cat, a dog, a bird",
         "", "Dogs and cats"]


def _adapted(**kwargs) -> L.TextVectorization:
    layer = L.TextVectorization(**kwargs)
    layer.adapt(TEXTS)
    return layer


def _roundtrip(layer):
    """The layer rebuilt from its config after a trip through JSON (as a file holds it)."""
    config = json.loads(json.dumps(tn.layers.serialize(layer)))
    return tn.layers.deserialize(config)


@pytest.mark.parametrize("kwargs", [
    {}, {"max_tokens": 6, "output_sequence_length": 4}, {"output_mode": "multi_hot"},
    {"output_mode": "count", "ngrams": 2}, {"output_mode": "tf_idf"},
    {"output_mode": "tf_idf", "max_tokens": 9, "pad_to_max_tokens": True},
    {"split": "character", "standardize": "lower"}, {"ragged": True}],
    ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "default")
def test_text_vectorization_contract(kwargs):
    layer = _adapted(**kwargs)
    queries = ["the cat and the zebra", "a dog"]
    out = layer(queries)
    again = _roundtrip(layer)
    assert again.get_vocabulary() == layer.get_vocabulary()
    assert again.get_config() == layer.get_config()
    if kwargs.get("ragged"):
        assert all(np.array_equal(a, b) for a, b in zip(out, again(queries)))
        return
    np.testing.assert_array_equal(np.asarray(again(queries)), np.asarray(out))
    shape = layer.output_shape((None,))
    assert len(shape) == np.ndim(out) and all(s in (None, d) for s, d in
                                               zip(shape, np.shape(out)))


def test_an_adapted_layer_can_adapt_again_after_loading_but_a_given_vocabulary_cannot():
    again = _roundtrip(_adapted())
    again.adapt(["zebra zebra zebra"])
    assert again.get_vocabulary() == ["", "[UNK]", "zebra"]
    given = _roundtrip(L.TextVectorization(vocabulary=["a", "b"]))
    with pytest.raises(ValueError, match="cannot adapt a layer given a vocabulary"):
        given.adapt(["a b c"])


@pytest.mark.parametrize("make", [
    lambda: L.StringLookup(vocabulary=["a", "b", "c"], num_oov_indices=2, mask_token=""),
    lambda: L.StringLookup(vocabulary=["a", "b"], invert=True),
    lambda: L.StringLookup(vocabulary=["a", "b"], output_mode="tf_idf", idf_weights=[1., 2.]),
    lambda: L.IntegerLookup(vocabulary=[7, 9], num_oov_indices=3, oov_method="farmhash",
                            salt=[1, 2]),
    lambda: L.CategoryEncoding(4, output_mode="one_hot"),
    lambda: L.Hashing(8, mask_value="", salt=3),
    lambda: L.Discretization([0.0, 1.0], output_mode="count")])
def test_config_roundtrip_keeps_outputs(make):
    layer = make()
    x = {"StringLookup": np.array([["a", "zz"], ["", "b"]]),
         "IntegerLookup": np.array([[7, 8], [9, 100]]),
         "CategoryEncoding": np.array([[1], [3]]),
         "Hashing": np.array([["a", ""], ["b", "c"]]),
         "Discretization": np.array([[-1.0, 0.5], [2.0, 0.0]], np.float32)}[type(layer).__name__]
    if getattr(layer, "invert", False):
        x = np.array([[0, 1], [2, 5]])
    again = _roundtrip(layer)
    assert again.get_config() == layer.get_config()
    np.testing.assert_array_equal(np.asarray(again(x)), np.asarray(layer(x)))
    assert tuple(layer.output_shape(x.shape)) == np.shape(np.asarray(layer(x)))


def test_adapted_discretization_keeps_num_bins_and_boundaries():
    layer = L.Discretization(num_bins=4)
    layer.adapt(np.arange(100, dtype=np.float32))
    again = _roundtrip(layer)
    assert again.bin_boundaries == layer.bin_boundaries and again.num_bins == 4


def test_numeric_preprocessing_layers_save_and_load_inside_a_model(tmp_path):
    tn.set_seed(0)
    lookup = L.IntegerLookup()
    lookup.adapt(np.array([[3, 5, 7, 9], [5, 5, 3, 11]]))
    model = tn.Sequential([tn.Input((4,)), lookup, L.Embedding(8, 3),
                           L.GlobalAveragePooling1D(), L.Dense(1)])
    model.compile("adam", "mse")
    x = np.array([[3, 5, 7, 9], [5, 5, 3, 11], [1, 2, 3, 4]])
    model.fit(x, np.array([[1.0], [0.0], [1.0]]), epochs=2, verbose=0)
    path = tmp_path / "lookup.safetensors"
    model.save(path)
    loaded = tn.load_model(path)
    assert loaded.layers[0].get_vocabulary() == lookup.get_vocabulary()
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))

    inputs = tn.Input((3,))
    binned = L.Discretization(num_bins=3)
    binned.adapt(np.random.default_rng(0).normal(size=(100, 3)))
    outputs = L.Dense(2)(L.CategoryEncoding(3, output_mode="multi_hot")(binned(inputs)))
    functional = tn.Model(inputs, outputs)
    path = tmp_path / "bins.safetensors"
    functional.save(path)
    z = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    np.testing.assert_array_equal(tn.load_model(path).predict(z, verbose=0),
                                  functional.predict(z, verbose=0))


def test_keras_io_pipeline_vectorize_then_fit_on_ids():
    """keras-io's text classification: adapt on the texts, vectorize each batch, feed the
    int64 ids to an Embedding model (models take numbers, not strings)."""
    tn.set_seed(0)
    vectorize = L.TextVectorization(max_tokens=20, output_sequence_length=6)
    vectorize.adapt(TEXTS)
    ids = np.asarray(vectorize(TEXTS))
    assert ids.dtype == np.int64 and ids.shape == (5, 6)
    model = tn.Sequential([tn.Input((6,)), L.Embedding(20, 4), L.GlobalAveragePooling1D(),
                           L.Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy")
    history = model.fit(ids, np.array([1, 0, 1, 0, 1], np.float32), epochs=3, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))


def test_input_forms_give_the_same_ids():
    layer = _adapted(output_sequence_length=5)
    want = np.asarray(layer(["The cat", "a dog"]))
    for x in (np.array(["The cat", "a dog"]), np.array([b"The cat", b"a dog"]),
              np.array(["The cat", "a dog"], dtype=object), [["The cat"], ["a dog"]],
              (b"The cat", "a dog")):
        np.testing.assert_array_equal(np.asarray(layer(x)), want)
    np.testing.assert_array_equal(np.asarray(layer("The cat")), want[0])


def test_ragged_output_and_callables():
    layer = _adapted(ragged=True)
    rows = layer(["the cat", "", "a dog ate"])
    index = {t: i for i, t in enumerate(layer.get_vocabulary())}
    assert [r.tolist() for r in rows] == [[index["the"], index["cat"]], [],
                                          [index["a"], index["dog"], index["ate"]]]
    upper = L.TextVectorization(standardize=lambda x: np.char.upper(x),
                                split=lambda x: [s.split("-") for s in x])
    upper.adapt(["a-b", "b-c-c"])
    assert upper.get_vocabulary() == ["", "[UNK]", "C", "B", "A"]
    with pytest.raises(ValueError, match="register the function"):
        upper.get_config()


def test_registered_callables_survive_the_config():
    @tn.saving.register_keras_serializable(package="h45text")
    def shout(x):
        return np.char.upper(x)

    layer = L.TextVectorization(standardize=shout)
    layer.adapt(["a b"])
    again = _roundtrip(layer)
    assert again.standardize is shout and again.get_vocabulary() == layer.get_vocabulary()


def test_no_gradient_and_no_weights():
    layer = L.StringLookup(vocabulary=["a"])
    x = np.array([["a", "b", "c"]])
    y = layer(x)
    assert layer.weights == [] and layer.count_params() == 0
    np.testing.assert_array_equal(np.asarray(layer.backward(np.ones(np.shape(y)))),
                                  np.zeros((1, 3), np.float32))


def test_vocabulary_from_a_file_and_special_tokens(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[UNK]\ncat\ndog\n", encoding="utf-8")
    layer = L.StringLookup(vocabulary=str(path))
    assert layer.get_vocabulary() == ["[UNK]", "cat", "dog"]
    assert layer.get_vocabulary(include_special_tokens=False) == ["cat", "dog"]
    np.testing.assert_array_equal(np.asarray(layer(["dog", "cow"])), [2, 0])


def test_inverted_string_lookup_returns_a_numpy_str_array():
    layer = L.StringLookup(vocabulary=["a", "b"], invert=True)
    out = layer([[2, 1, 0]])
    assert isinstance(out, np.ndarray) and out.tolist() == [["b", "a", "[UNK]"]]


def test_fingerprint64_and_siphash_reference_values():
    """Published values: FarmHash's Fingerprint64 of "" is k2 (0x9ae16a3b2f90404f), and
    SipHash-2-4's test vector (key 00..0f, message 00..0e) is 0xa129ca6149be45e5."""
    assert fingerprint64(b"") == 0x9AE16A3B2F90404F
    key = (int.from_bytes(bytes(range(8)), "little"), int.from_bytes(bytes(range(8, 16)),
                                                                     "little"))
    assert siphash24(key, bytes(range(15))) == 0xA129CA6149BE45E5


def test_ngrams_without_split_run_along_the_last_axis():
    bigrams = L.TextVectorization(split=None, ngrams=(2,), vocabulary=["a"])
    assert np.asarray(bigrams([["x"], ["y"]])).shape == (2, 0)
    both = L.TextVectorization(split=None, ngrams=2, vocabulary=["a"])
    np.testing.assert_array_equal(np.asarray(both([["a"], ["y"]])), [[2], [1]])
