"""String inputs: ``tn.Input(dtype="string")`` feeding ``TextVectorization`` and
``StringLookup`` in functional and Sequential models, trained with ``fit`` on NumPy arrays
of Python strings, saved and loaded (tinynet's format and Keras's ``.keras``), as the
keras-io "text classification from scratch" example does. Keras 3.15.1's summaries, file
and predictions: tests/data/keras/generate_keras_text.py (run by hand with TensorFlow)."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L

DATA = os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras")
sys.path.insert(0, DATA)
from generate_keras_text import summary_models  # noqa: E402  (the golden models' builders)

TEXTS = ["good movie", "bad plot", "great acting good", "awful bad movie", "fine fine",
         "poor acting", "good good plot", "bad bad bad"]
LABELS = np.array([1, 0, 1, 0, 1, 0, 1, 0], dtype=np.float32)


def _vectorizer(length: int = 5) -> L.TextVectorization:
    layer = L.TextVectorization(max_tokens=20, output_mode="int",
                                output_sequence_length=length)
    layer.adapt(TEXTS)
    return layer


def _text_model(shape: tuple = (1,)) -> tn.Model:
    text = tn.Input(shape=shape, dtype="string", name="text")
    vectorize = _vectorizer()
    x = L.GlobalAveragePooling1D()(L.Embedding(20, 4)(vectorize(text)))
    model = tn.Model(text, L.Dense(1, activation="sigmoid")(x))
    model.compile(optimizer=tn.optimizers.Adam(0.05), loss="binary_crossentropy",
                  metrics=["accuracy"])
    return model


def _by_hand(model: tn.Model, texts: list[str]) -> np.ndarray:
    """The model's prediction computed from its weights in float64 NumPy: ids from the
    vectorizer, then the embedding rows averaged, then the dense sigmoid."""
    ids = np.asarray(model.layers[1](np.array(texts, dtype=object)).data)
    table = model.layers[2].get_weights()[0].astype(np.float64)
    kernel, bias = (w.astype(np.float64) for w in model.layers[4].get_weights())
    pooled = table[ids].mean(axis=1)
    return 1 / (1 + np.exp(-(pooled @ kernel + bias)))


@pytest.mark.parametrize("shape, make_x", [
    ((1,), lambda t: np.array(t, dtype=object)[:, None]),
    ((1,), lambda t: np.array(t)[:, None]),  # a NumPy str array
    ((), lambda t: np.array(t, dtype=object)),
    ((), lambda t: np.array(t)),
], ids=["column-object", "column-str", "flat-object", "flat-str"])
def test_fit_predict_evaluate_on_raw_strings(shape, make_x):
    tn.utils.set_random_seed(0)
    model = _text_model(shape)
    x = make_x(TEXTS)
    history = model.fit(x, LABELS, batch_size=4, epochs=30, shuffle=True, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0] / 2  # it learns the sentiment words
    predicted = model.predict(x, verbose=0)
    np.testing.assert_allclose(predicted.ravel(), _by_hand(model, TEXTS).ravel(), atol=1e-6)
    loss, accuracy = model.evaluate(x, LABELS, verbose=0)
    p = predicted.ravel().astype(np.float64)
    expected = -np.mean(LABELS * np.log(p) + (1 - LABELS) * np.log(1 - p))
    assert loss == pytest.approx(expected, abs=1e-5)
    assert accuracy == pytest.approx(np.mean((p > 0.5) == LABELS))


@pytest.mark.parametrize("dtype", [object, str])
def test_adapter_batches_and_shuffles_string_arrays(dtype):
    from tinynet.models.data_adapter import make_adapter

    model = _text_model()
    model.compile(optimizer="sgd", loss="mse")
    x = np.array(TEXTS, dtype=dtype)[:, None]
    y = np.arange(len(TEXTS), dtype=np.float32)  # each text's label is its row
    rng = np.random.default_rng(5)
    adapter = make_adapter(model, x, y, None, batch_size=3, steps=None, steps_arg="steps",
                           owner="test", rng=lambda: rng)
    expected_order = np.random.default_rng(5).permutation(len(TEXTS))
    seen = []
    for xs, ys, _ in adapter.epoch():
        assert xs[0].dtype == x.dtype and xs[0].shape[1:] == (1,)
        assert [TEXTS.index(t) for t in xs[0][:, 0]] == ys[0].astype(int).tolist()
        seen += ys[0].astype(int).tolist()
    assert seen == expected_order.tolist()


def test_no_gradient_reaches_the_text_layer():
    model = _text_model()
    assert model.layers[1].trainable_weights == []
    before = model.layers[1].get_vocabulary()
    model.fit(np.array(TEXTS)[:, None], LABELS, epochs=2, verbose=0)
    assert model.layers[1].get_vocabulary() == before
    assert [w.name for w in model.trainable_weights] == [
        w.name for w in model.layers[2].weights + model.layers[4].weights]


def test_sequential_with_string_lookup():
    lookup = L.StringLookup(vocabulary=["good", "bad", "movie"])
    model = tn.Sequential([tn.Input(shape=(None,), dtype="string"), lookup,
                           L.Embedding(4, 2), L.GlobalMaxPooling1D(), L.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.array([["good", "movie"], ["bad", "plot"]], dtype=object)
    model.fit(x, np.array([1.0, 0.0]), epochs=1, verbose=0)
    table = model.layers[1].get_weights()[0]
    kernel, bias = model.layers[3].get_weights()
    ids = np.array([[1, 3], [2, 0]])  # "plot" is out of vocabulary: index 0
    expected = table[ids].max(axis=1) @ kernel + bias
    np.testing.assert_allclose(model.predict(x, verbose=0), expected, atol=1e-6)


def test_sequential_on_a_flat_string_input():
    model = tn.Sequential([tn.Input(shape=(), dtype="string"), _vectorizer(4),
                           L.Embedding(20, 2), L.Flatten(), L.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.array(TEXTS), LABELS, epochs=1, verbose=0)
    ids = np.asarray(model.layers[0](np.array(["good movie"])))
    table = model.layers[1].get_weights()[0]
    kernel, bias = model.layers[3].get_weights()
    np.testing.assert_allclose(model.predict(np.array(["good movie"]), verbose=0),
                               table[ids].reshape(1, -1) @ kernel + bias, atol=1e-6)
    with pytest.raises(ValueError, match=r"expects input shape \(None,\) \(None = any\), "
                                         r"got x with shape \(1, 1\)"):
        model.predict(np.array([["good movie"]]), verbose=0)


@pytest.mark.parametrize("name", ["summary_text_strings", "summary_string_lookup"])
def test_summary_matches_keras(name, capsys):
    model = summary_models(L, tn, ["good", "bad", "movie"])[name]()
    capsys.readouterr()
    model.summary()
    with open(os.path.join(DATA, name + ".txt"), encoding="utf-8") as f:
        assert capsys.readouterr().out == f.read()


def test_input_config_round_trips_string_dtype():
    model = _text_model()
    config = model.get_config()
    assert config["layers"][0]["config"]["dtype"] == "string"
    clone = tn.Model.from_config(config)
    assert clone.inputs[0].dtype == "string"
    assert tn.Input((2,), dtype=str).dtype == "string"


def test_tinynet_format_round_trip_keeps_vocabulary(tmp_path):
    model = _text_model()
    x = np.array(TEXTS, dtype=object)[:, None]
    model.fit(x, LABELS, epochs=2, verbose=0)
    model.save(tmp_path / "text.safetensors")
    loaded = tn.models.load_model(tmp_path / "text.safetensors")
    assert loaded.layers[1].get_vocabulary() == model.layers[1].get_vocabulary()
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    loaded.fit(x, LABELS, epochs=1, verbose=0)


# -- Keras's .keras files, both ways (fixtures: generate_keras_text.py) ---------------------
def _refs() -> dict:
    with open(os.path.join(DATA, "keras_text_refs.json"), encoding="utf-8") as f:
        return json.load(f)


def test_keras_written_text_model_reads_and_predicts_on_raw_strings():
    pytest.importorskip("h5py")
    refs = _refs()
    model = tn.models.load_model(os.path.join(DATA, "keras_text.keras"))
    assert model.inputs[0].dtype == "string"
    assert model.layers[1].get_vocabulary() == refs["vocabulary"]
    for x in (np.array(refs["texts"], dtype=object)[:, None], np.array(refs["texts"])[:, None]):
        np.testing.assert_allclose(model.predict(x, verbose=0).ravel(),
                                   refs["keras_predictions"], atol=1e-5)
    history = model.fit(np.array(refs["texts"])[:, None], np.array(refs["labels"]),
                        batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_tinynet_written_text_model_is_what_keras_read(tmp_path):
    # tinynet_text.keras was written by tinynet (generate_keras_text.py) and read by Keras
    # 3.15.1 with TensorFlow: its predictions on the raw strings and one epoch's loss are in
    # the refs. tinynet still writes that file: same config and vocabulary, same predictions.
    pytest.importorskip("h5py")
    import zipfile

    refs = _refs()
    model = tn.models.load_model(os.path.join(DATA, "keras_text.keras"))
    x = np.array(refs["texts"], dtype=object)[:, None]
    model.fit(x, np.array(refs["labels"]), batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(tmp_path / "text.keras")
    with zipfile.ZipFile(tmp_path / "text.keras") as ours, \
            zipfile.ZipFile(os.path.join(DATA, "tinynet_text.keras")) as checked_in:
        assert sorted(ours.namelist()) == sorted(checked_in.namelist())
        for name in ours.namelist():
            if name.startswith("assets/") or name == "config.json":
                assert ours.read(name) == checked_in.read(name), name
        config = json.loads(ours.read("config.json"))["config"]["layers"][0]["config"]
    assert config["dtype"] == "string"
    loaded = tn.models.load_model(tmp_path / "text.keras")
    np.testing.assert_allclose(loaded.predict(x, verbose=0).ravel(), refs["back_predictions"],
                               atol=1e-5)
    assert np.isfinite(refs["back_loss"])
