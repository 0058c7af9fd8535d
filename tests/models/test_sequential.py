"""``Sequential``: structure, shape inference, the training loop and Keras reference numbers."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.callbacks import Callback
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Dropout, Flatten, Input,
                            MaxPooling2D)
from tinynet.models import Sequential
from tinynet.optimizers import SGD


# -- Keras reference numbers --------------------------------------------------------------------
X5 = np.arange(5, dtype=np.float32).reshape(5, 1)
Y5 = 2 * X5


def line_model(compile_: bool = True) -> Sequential:
    """Dense(1) with kernel 0.5 and bias 0, SGD(0.1), MSE (the Keras reference setup)."""
    model = Sequential([Input((1,)), Dense(1)])
    model.layers[0].set_weights([np.array([[0.5]]), np.array([0.0])])
    if compile_:
        model.compile(optimizer=SGD(learning_rate=0.1), loss="mse")
    return model


def test_keras_reference_evaluate():
    assert line_model().evaluate(X5, Y5, verbose=0) == pytest.approx(13.5, abs=1e-6)


def test_keras_reference_train_on_batch_sequence():
    model = line_model()
    losses = [model.train_on_batch(X5[a:b], Y5[a:b]) for a, b in ((0, 2), (2, 4), (4, 5))]
    assert losses == pytest.approx([1.125, 10.856251, 4.473228], abs=1e-5)


def test_keras_reference_fit_then_evaluate():
    model = line_model()
    history = model.fit(X5, Y5, batch_size=2, epochs=1, shuffle=False, verbose=0)
    assert history.history["loss"] == pytest.approx([5.687146], abs=1e-5)
    assert round(model.evaluate(X5, Y5, verbose=0), 4) == 9.2420


def test_fit_reduces_loss():
    history = line_model().fit(X5, Y5, batch_size=5, epochs=5, shuffle=False, verbose=0)
    losses = history.history["loss"]
    assert losses[0] == pytest.approx(13.5, abs=1e-6)
    assert all(b < a for a, b in zip(losses, losses[1:]))


def test_fit_equals_train_on_batch_sequence_bitwise():
    a, b = line_model(), line_model()
    a.fit(X5, Y5, batch_size=2, epochs=1, shuffle=False, verbose=0)
    for lo, hi in ((0, 2), (2, 4), (4, 5)):
        b.train_on_batch(X5[lo:hi], Y5[lo:hi])
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert np.array_equal(wa, wb)


# -- structure and naming ---------------------------------------------------------------------------
def test_public_surface():
    assert tn.Sequential is Sequential


def test_auto_names_unique_within_model():
    model = Sequential([Input((4,)), Dense(3), Dropout(0.1), Dense(3), Dense(2, name="head"),
                        Dense(2)])
    assert [l.name for l in model.layers] == ["dense", "dropout", "dense_1", "head", "dense_2"]
    other = Sequential([Dense(2)])
    assert other.layers[0].name == "dense"
    assert model.layers[0].parameters()[0].path == "dense/kernel"


def test_explicit_duplicate_name_raises():
    model = Sequential([Dense(2, name="a")])
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.add: all layers must have unique names; 'a' is already the name of "
            "a layer in this model")):
        model.add(Dense(3, name="a"))
    assert len(model.layers) == 1


def test_auto_name_skips_explicit_names():
    model = Sequential([Dense(2, name="dense"), Dense(2)])
    assert [l.name for l in model.layers] == ["dense", "dense_1"]


def test_input_not_listed_and_shapes():
    model = Sequential([Input((8, 8, 1)), Conv2D(2, 3), Flatten(), Dense(10)])
    assert [type(l).__name__ for l in model.layers] == ["Conv2D", "Flatten", "Dense"]
    assert model.input_shape == (None, 8, 8, 1)
    assert model.output_shape == (None, 10)
    assert model.built and all(l.built for l in model.layers)


def test_input_must_come_first():
    model = Sequential([Dense(2)])
    with pytest.raises(ValueError, match="an Input must be the first element"):
        model.add(Input((3,)))


def test_add_rejects_non_layers():
    with pytest.raises(TypeError, match=re.escape("Sequential.add: expected a tinynet Layer, got int: 3")):
        Sequential().add(3)
    with pytest.raises(TypeError, match="layers must be a list"):
        Sequential(Dense(2))


def test_shape_from_first_layer_input_shape():
    model = Sequential([Dense(4, input_shape=(3,)), Dense(2)])
    assert model.input_shape == (None, 3)
    assert model.output_shape == (None, 2)
    assert model.count_params() == 3 * 4 + 4 + 4 * 2 + 2


def test_shape_from_build():
    model = Sequential([Dense(4), Dense(2)])
    with pytest.raises(AttributeError, match="has no defined input shape yet"):
        model.input_shape
    with pytest.raises(ValueError, match="is not built yet"):
        model.count_params()
    model.build((None, 3))
    assert model.input_shape == (None, 3) and model.output_shape == (None, 2)
    assert model.count_params() == 26


def test_shape_from_first_batch():
    tn.set_seed(1)
    model = Sequential([Dense(4), Dense(2)])
    out = model.predict(np.ones((5, 3), dtype=np.float32), verbose=0)
    assert out.shape == (5, 2) and out.dtype == np.float32
    assert model.input_shape == (None, 3)


def test_incompatible_layer_names_both_layers_and_shape():
    model = Sequential([Input((8, 8, 1)), Flatten()])
    with pytest.raises(ValueError, match=re.escape(
            "Layer 'conv2d' (Conv2D) cannot take the output of 'flatten' (Flatten) with "
            "shape (None, 64): ")):
        model.add(Conv2D(2, 3))
    assert [l.name for l in model.layers] == ["flatten"]
    assert model.output_shape == (None, 64)


def test_incompatible_first_layer_at_build():
    model = Sequential([Conv2D(2, 3)])
    with pytest.raises(ValueError, match=re.escape(
            "Layer 'conv2d' (Conv2D) cannot take the model input with shape (None, 5): ")):
        model.build((None, 5))
    with pytest.raises(AttributeError, match="is not built yet"):
        model.output_shape
    model.build((None, 6, 6, 1))
    assert model.output_shape == (None, 4, 4, 2)


def test_build_conflicting_shape():
    model = Sequential([Input((3,)), Dense(2)])
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.build: model 'sequential' expects input shape (None, 3), got (None, 4)")):
        model.build((None, 4))


def test_pop():
    model = Sequential([Input((6,)), Dense(4), Dense(3)])
    last = model.pop()
    assert last.name == "dense_1" and model.output_shape == (None, 4)
    model.add(Dense(5))
    assert model.output_shape == (None, 5) and model.layers[-1].name == "dense_1"
    model.pop()
    model.pop()
    assert model.output_shape == (None, 6)
    with pytest.raises(IndexError, match="has no layers"):
        model.pop()


# -- weights and config ---------------------------------------------------------------------------
def test_get_set_weights_roundtrip_and_atomic_mismatch():
    tn.set_seed(2)
    model = Sequential([Input((3,)), Dense(4), Dense(2)])
    weights = model.get_weights()
    assert [w.shape for w in weights] == [(3, 4), (4,), (4, 2), (2,)]
    new = [w + 1 for w in weights]
    model.set_weights(new)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), new))
    bad = [w * 0 for w in new]
    bad[-1] = np.zeros(3)
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.set_weights: dense_1/bias expects shape (2,), got (3,)")):
        model.set_weights(bad)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), new))
    with pytest.raises(ValueError, match="expected 4 arrays, got 1"):
        model.set_weights(new[:1])


def test_config_roundtrip():
    tn.set_seed(3)
    model = Sequential([Input((6, 6, 1)), Conv2D(2, 3, activation="relu"), MaxPooling2D(2),
                        Flatten(), Dropout(0.25), Dense(3, activation="softmax")], name="net")
    config = model.get_config()
    json.dumps(config)
    assert config["name"] == "net"
    assert [e["class_name"] for e in config["layers"]] == [
        "InputLayer", "Conv2D", "MaxPooling2D", "Flatten", "Dropout", "Dense"]
    assert config["build_input_shape"] == [None, 6, 6, 1]
    clone = Sequential.from_config(json.loads(json.dumps(config)))
    assert clone.name == "net"
    assert [l.name for l in clone.layers] == [l.name for l in model.layers]
    assert clone.output_shape == model.output_shape
    clone.set_weights(model.get_weights())
    x = np.random.default_rng(0).normal(size=(4, 6, 6, 1)).astype(np.float32)
    assert np.array_equal(clone.predict(x, verbose=0), model.predict(x, verbose=0))


def test_config_roundtrip_with_build_shape_only():
    model = Sequential([Dense(2)])
    model.build((None, 5))
    clone = Sequential.from_config(model.get_config())
    assert clone.input_shape == (None, 5) and clone.count_params() == 12


def test_from_config_unknown_class():
    with pytest.raises(ValueError, match="unknown layer class 'Nope'"):
        Sequential.from_config({"name": "m", "layers": [{"class_name": "Nope", "config": {}}]})


# -- compile / fit / evaluate / predict --------------------------------------------------------------
def test_fit_before_compile():
    model = Sequential([Dense(1)])
    with pytest.raises(RuntimeError, match=re.escape("call compile() first")):
        model.fit(X5, Y5, verbose=0)
    with pytest.raises(RuntimeError, match=re.escape("call compile() first")):
        model.evaluate(X5, Y5, verbose=0)
    with pytest.raises(RuntimeError, match=re.escape("call compile() first")):
        model.train_on_batch(X5, Y5)


def test_compile_without_loss():
    model = Sequential([Dense(1)])
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match=re.escape("no loss to compute; pass loss= to compile()")):
        model.fit(X5, Y5, verbose=0)


def test_data_errors_name_shapes():
    model = line_model()
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.fit: x and y must hold the same number of samples, got x with shape "
            "(5, 1) and y with shape (4, 1)")):
        model.fit(X5, Y5[:4], verbose=0)
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.fit: x must be a non-empty batch with at least one feature axis, got x "
            "with shape (0, 1)")):
        model.fit(X5[:0], Y5[:0], verbose=0)
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.fit: model 'sequential' expects input shape (None, 1) (None = any), got "
            "x with shape (5, 2)")):
        model.fit(np.ones((5, 2)), Y5, verbose=0)
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.predict: model 'sequential' expects input shape (None, 1) (None = any), "
            "got x with shape (5, 1, 1)")):
        model.predict(np.ones((5, 1, 1)), verbose=0)


def test_argument_errors():
    model = line_model()
    with pytest.raises(ValueError, match=re.escape("Sequential.fit: batch_size must be a positive int, got 0")):
        model.fit(X5, Y5, batch_size=0, verbose=0)
    with pytest.raises(TypeError, match=re.escape("Sequential.fit: epochs must be a non-negative int, got 1.5")):
        model.fit(X5, Y5, epochs=1.5, verbose=0)
    with pytest.raises(ValueError, match=re.escape("Sequential.fit: verbose must be 0, 1, 2 or 'auto', got 3")):
        model.fit(X5, Y5, verbose=3)
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.fit: validation_split must be a float in [0, 1), got 1.0")):
        model.fit(X5, Y5, validation_split=1.0, verbose=0)
    with pytest.raises(ValueError, match=re.escape(
            "Sequential.fit: 1 samples are not enough to split into a training and a validation "
            "set with validation_split=0.5")):
        model.fit(X5[:1], Y5[:1], validation_split=0.5, verbose=0)
    with pytest.raises(TypeError, match="callbacks must be a list of Callback objects"):
        model.fit(X5, Y5, callbacks=[object()], verbose=0)


def test_non_finite_loss_stops_before_update():
    model = line_model()
    y = Y5.copy()
    y[3] = np.inf
    reference = line_model()
    reference.train_on_batch(X5[:2], Y5[:2])
    with pytest.raises(FloatingPointError, match=re.escape("Sequential.fit: epoch 1, batch 2: the loss is inf")):
        model.fit(X5, y, batch_size=2, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), reference.get_weights()):
        assert np.array_equal(a, b)
    before = model.get_weights()
    with pytest.raises(FloatingPointError, match="Sequential.train_on_batch: the loss is inf"):
        model.train_on_batch(X5[2:4], y[2:4])
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_non_finite_loss_keeps_moving_statistics():
    x = np.random.default_rng(6).normal(size=(6, 3)).astype(np.float32)
    y = np.ones((6, 1), dtype=np.float32)
    y[4] = np.nan

    def build() -> Sequential:
        tn.set_seed(11)
        model = Sequential([Input((3,)), Dense(4), BatchNormalization(), Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model

    model, reference = build(), build()
    reference.train_on_batch(x[:3], y[:3])
    with pytest.raises(FloatingPointError, match=re.escape("epoch 1, batch 2: the loss is nan")):
        model.fit(x, y, batch_size=3, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), reference.get_weights()):
        assert np.array_equal(a, b)


def test_validation_split_takes_last_samples_before_shuffling():
    x = np.linspace(-1, 1, 10, dtype=np.float32).reshape(10, 1)
    y = 3 * x + 1
    tn.set_seed(4)
    model = line_model()
    history = model.fit(x, y, batch_size=3, epochs=1, validation_split=0.3, verbose=0)
    assert model.evaluate(x[7:], y[7:], verbose=0) == history.history["val_loss"][0]
    tn.set_seed(4)
    plain = line_model()
    again = plain.fit(x[:7], y[:7], batch_size=3, epochs=1, verbose=0)
    assert again.history["loss"] == history.history["loss"]


def test_validation_data_and_metrics_history_keys():
    tn.set_seed(5)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 3)).astype(np.float32)
    y = rng.integers(0, 3, size=12)
    model = Sequential([Input((3,)), Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=5, epochs=2, validation_data=(x[:4], y[:4]), verbose=0)
    assert list(history.history) == ["loss", "accuracy", "val_loss", "val_accuracy"]
    assert history.epoch == [0, 1]
    assert history.params == {"verbose": 0, "epochs": 2, "steps": 3}
    assert history.model is model and model.history is history
    assert model.metrics_names == ["loss", "accuracy"]


def test_epoch_metrics_are_sample_weighted_means():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(7, 3)).astype(np.float32)
    y = rng.integers(0, 2, size=(7, 1)).astype(np.float32)

    def build() -> Sequential:
        tn.set_seed(6)
        model = Sequential([Input((3,)), Dense(1, activation="sigmoid")])
        model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
        return model

    history = build().fit(x, y, batch_size=3, shuffle=False, verbose=0)
    manual = build()
    results = [(manual.train_on_batch(x[a:b], y[a:b]), b - a) for a, b in ((0, 3), (3, 6), (6, 7))]
    loss = sum(r[0] * k for r, k in results) / 7
    acc = sum(r[1] * k for r, k in results) / 7
    assert history.history["loss"] == [pytest.approx(loss, rel=1e-12)]
    assert history.history["accuracy"] == [pytest.approx(acc, rel=1e-12)]


def test_shuffle_uses_model_generator():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(7, 1)).astype(np.float32)
    y = 2 * x
    model = line_model()
    model.shuffle_rng = np.random.default_rng(123)
    model.fit(x, y, batch_size=3, epochs=1, verbose=0)
    manual = line_model()
    order = np.random.default_rng(123).permutation(7)
    for a in range(0, 7, 3):
        idx = order[a:a + 3]
        manual.train_on_batch(x[idx], y[idx])
    for wa, wb in zip(model.get_weights(), manual.get_weights()):
        assert np.array_equal(wa, wb)


def test_fit_is_reproducible_with_seed():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 6, 6, 1)).astype(np.float32)
    y = rng.integers(0, 3, size=20)

    def run():
        tn.set_seed(7)
        model = Sequential([Input((6, 6, 1)), Conv2D(3, 3, activation="relu"),
                            BatchNormalization(), MaxPooling2D(2), Flatten(), Dropout(0.3),
                            Dense(3, activation="softmax")])
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                      metrics=["accuracy"])
        history = model.fit(x, y, batch_size=8, epochs=3, validation_split=0.2, verbose=0)
        return model, history

    (m1, h1), (m2, h2) = run(), run()
    assert h1.history == h2.history
    for a, b in zip(m1.get_weights(), m2.get_weights()):
        assert np.array_equal(a, b)
    assert np.isfinite(h1.history["loss"]).all()
    assert np.isfinite(h1.history["val_loss"]).all()


def test_evaluate_return_forms():
    tn.set_seed(8)
    x = np.random.default_rng(4).normal(size=(9, 2)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = Sequential([Input((2,)), Dense(1, activation="sigmoid")])
    model.compile(optimizer="sgd", loss="binary_crossentropy")
    assert isinstance(model.evaluate(x, y, verbose=0), float)
    model.compile(optimizer="sgd", loss="binary_crossentropy", metrics=["accuracy"])
    loss, acc = model.evaluate(x, y, batch_size=4, verbose=0)
    assert model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True) == {
        "loss": loss, "accuracy": acc}
    # batch-size independence of the sample-weighted mean (up to rounding)
    assert model.evaluate(x, y, batch_size=9, verbose=0)[0] == pytest.approx(loss, rel=1e-6)
    assert model.train_on_batch(x, y)[0] == pytest.approx(loss, rel=1e-6)


def test_predict_batches_match_full_batch():
    tn.set_seed(9)
    x = np.random.default_rng(5).normal(size=(10, 4)).astype(np.float32)
    model = Sequential([Dense(3, activation="relu"), Dense(2)])
    full = model.predict(x, batch_size=10, verbose=0)
    parts = model.predict(x, batch_size=3, verbose=0)
    assert np.allclose(full, parts, rtol=1e-6, atol=1e-6)
    assert np.array_equal(np.asarray(model(x)), model.predict(x, batch_size=32, verbose=0))


def test_frozen_layer_is_not_updated():
    tn.set_seed(10)
    model = Sequential([Input((3,)), Dense(4), Dense(1)])
    model.layers[0].trainable = False
    model.compile(optimizer="sgd", loss="mse")
    before = model.get_weights()
    model.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)
    after = model.get_weights()
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert not np.array_equal(before[2], after[2])


class Recorder(Callback):
    def __init__(self, stop_at: tuple | None = None) -> None:
        super().__init__()
        self.events: list = []
        self.stop_at = stop_at

    def on_train_begin(self, logs=None):
        self.events.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.events.append(("epoch_begin", epoch))

    def on_train_batch_begin(self, batch, logs=None):
        self.events.append(("batch_begin", batch))

    def on_train_batch_end(self, batch, logs=None):
        self.events.append(("batch_end", batch, sorted(logs)))
        if self.stop_at == (len([e for e in self.events if e[0] == "epoch_begin"]) - 1, batch):
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        self.events.append(("epoch_end", epoch, sorted(logs)))

    def on_train_end(self, logs=None):
        self.events.append("train_end")


def test_callback_hooks_order():
    rec = Recorder()
    line_model().fit(X5, Y5, batch_size=3, epochs=2, shuffle=False, verbose=0, callbacks=[rec])
    batch = lambda b: [("batch_begin", b), ("batch_end", b, ["loss"])]
    assert rec.events == (["train_begin", ("epoch_begin", 0), *batch(0), *batch(1),
                           ("epoch_end", 0, ["loss"]), ("epoch_begin", 1), *batch(0), *batch(1),
                           ("epoch_end", 1, ["loss"]), "train_end"])
    assert rec.params == {"verbose": 0, "epochs": 2, "steps": 2}


def test_stop_training_after_batch():
    rec = Recorder(stop_at=(1, 0))
    history = line_model().fit(X5, Y5, batch_size=2, epochs=5, shuffle=False, verbose=0,
                               callbacks=[rec])
    assert history.epoch == [0, 1]
    assert [e for e in rec.events if e[0] == "batch_end" and True][-1][1] == 0


def test_progress_output(capsys):
    model = line_model()
    model.fit(X5, Y5, batch_size=2, epochs=2, verbose=0)
    assert capsys.readouterr().out == ""
    model.fit(X5, Y5, batch_size=2, epochs=2, verbose=1, validation_split=0.4)
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "loss: " in out and "val_loss: " in out
    model.fit(X5, Y5, batch_size=2, epochs=2, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith("Epoch 1/2 - 3/3 - ") and "loss: " in lines[0]
    model.evaluate(X5, Y5, verbose=2)
    assert capsys.readouterr().out.startswith("1/1 - ")


def test_compile_again_without_loss_or_metrics_keeps_them_as_keras():
    model = Sequential([tn.Input((4,)), Dense(2)])
    model.compile(optimizer="sgd", loss="mse", loss_weights=0.5, metrics=["mae"])
    model.compile(optimizer="adam")  # Keras 3: loss, loss_weights and metrics stay
    assert type(model.optimizer).__name__ == "Adam"
    assert type(model.loss).__name__ == "MeanSquaredError" and model.loss_weights == 0.5
    assert model.metrics_names == ["loss", "mae"]
    model.compile(optimizer="adam", metrics=["mse"])  # new metrics replace the old
    assert model.metrics_names == ["loss", "mse"]
    assert type(model.loss).__name__ == "MeanSquaredError"
    model.compile(optimizer="adam", loss="mae")  # a new loss replaces the old, weights too
    assert type(model.loss).__name__ == "MeanAbsoluteError" and model.loss_weights is None
