"""Callbacks as Keras 3.15.1 calls them: the hook order of fit (with validation), evaluate
and predict compared exactly with the sequence Keras produced (tests/data/keras/
keras_fit_refs.json, written by generate_fit.py), the on_batch_* aliases, logs always a
dict, model.stop_training, the ProgbarLogger's output by verbose, TensorBoard's refusal
and ModelCheckpoint's suffix check."""

from __future__ import annotations

import json
import math
import os
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.callbacks import (Callback, CallbackList, History, LambdaCallback,
                               ModelCheckpoint, ProgbarLogger, TensorBoard, TerminateOnNaN)
from tinynet.layers import Dense, Input

REFS = os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                    "keras_fit_refs.json")
HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
         "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
         "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
         "on_predict_batch_begin", "on_predict_batch_end")


def _keras() -> dict:
    with open(REFS, encoding="utf-8") as fh:
        return json.load(fh)["hooks"]


class Recorder(Callback):
    """Records every hook as generate_fit.py's recorder does."""

    def __init__(self) -> None:
        super().__init__()
        self.seq: list = []

    def set_model(self, model) -> None:
        super().set_model(model)
        self.seq.append(["set_model"])

    def set_params(self, params) -> None:
        super().set_params(params)
        self.seq.append(["set_params", {k: params[k] for k in sorted(params)}])


def _recording(hook):
    def record(self, *args, **kwargs):
        # Keras passes logs by keyword to the batch hooks, positionally to the others
        args, logs = (args, kwargs["logs"]) if "logs" in kwargs else (args[:-1], args[-1])
        assert isinstance(logs, dict), f"{hook} got logs={logs!r}"
        self.seq.append([hook, *args, sorted(logs)])
    return record


for _hook in HOOKS:
    setattr(Recorder, _hook, _recording(_hook))


class AliasRecorder(Callback):
    def __init__(self) -> None:
        super().__init__()
        self.seq: list = []

    def on_batch_begin(self, batch, logs=None):
        self.seq.append(["on_batch_begin", batch, sorted(logs)])

    def on_batch_end(self, batch, logs=None):
        self.seq.append(["on_batch_end", batch, sorted(logs)])


def _model() -> tuple[tn.Sequential, np.ndarray, np.ndarray]:
    tn.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.random((10, 3)).astype("float32")
    y = (rng.random((10, 1)) > 0.5).astype("float32")
    model = tn.Sequential([Input((3,)), Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    return model, x, y


def test_fit_evaluate_predict_call_the_hooks_in_keras_order():
    keras = _keras()
    model, x, y = _model()
    rec, alias = Recorder(), AliasRecorder()
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(x[:6], y[:6]), verbose=0,
              callbacks=[rec, alias])
    assert rec.seq == keras["fit"]
    assert alias.seq == keras["fit_alias"]
    rec, alias = Recorder(), AliasRecorder()
    model.evaluate(x, y, batch_size=4, verbose=0, callbacks=[rec, alias])
    assert rec.seq == keras["evaluate"]
    assert alias.seq == keras["evaluate_alias"] == []
    rec = Recorder()
    model.predict(x, batch_size=4, verbose=0, callbacks=[rec])
    assert rec.seq == keras["predict"]


def test_batch_logs_hold_running_means_and_predict_outputs():
    model, x, y = _model()
    seen = {}

    class Logs(Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.setdefault("train", []).append(dict(logs))

        def on_test_end(self, logs=None):
            seen["test_end"] = dict(logs)

        def on_predict_batch_end(self, batch, logs=None):
            seen.setdefault("outputs", []).append(logs["outputs"])

    history = model.fit(x, y, batch_size=5, epochs=1, shuffle=False, verbose=0,
                        validation_data=(x, y), callbacks=[Logs()])
    assert seen["train"][-1]["loss"] == history.history["loss"][0]
    assert seen["test_end"] == {"loss": history.history["val_loss"][0],
                                "accuracy": history.history["val_accuracy"][0]}
    model.predict(x, batch_size=4, verbose=0, callbacks=[Logs()])
    joined = np.concatenate(seen["outputs"])
    assert [o.shape[0] for o in seen["outputs"]] == [4, 4, 2]
    assert np.array_equal(joined, model.predict(x, verbose=0))


def test_an_overridden_train_batch_hook_wins_over_the_alias():
    model, x, y = _model()
    calls = []

    class Both(Callback):
        def on_batch_end(self, batch, logs=None):
            calls.append("alias")

        def on_train_batch_end(self, batch, logs=None):
            calls.append("train")

    model.fit(x, y, batch_size=5, epochs=1, verbose=0, callbacks=[Both()])
    assert calls == ["train", "train"]


def test_stop_training_ends_fit_after_the_batch():
    model, x, y = _model()

    class Stop(Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    history = model.fit(x, y, batch_size=2, epochs=5, verbose=0, callbacks=[Stop()])
    assert history.epoch == [0] and model.stop_training


def test_lambda_callback_functions_get_keras_arguments():
    model, x, y = _model()
    got = []
    cb = LambdaCallback(on_epoch_end=lambda epoch, logs: got.append((epoch, sorted(logs))),
                        on_train_begin=lambda logs: got.append(logs))
    model.fit(x, y, batch_size=5, epochs=1, verbose=0, callbacks=[cb])
    assert got == [{}, (0, ["accuracy", "loss"])]


def test_callback_list_adds_history_and_progbar_once():
    history, progbar = History(), ProgbarLogger()
    cbs = CallbackList([history, progbar], None, add_history=True, add_progbar=True,
                       verbose=1, epochs=1, steps=2)
    assert cbs.callbacks == [history, progbar] and cbs.history is history
    cbs = CallbackList([], None, add_history=True, add_progbar=True, verbose=1, epochs=3,
                       steps=2)
    assert [type(cb) for cb in cbs.callbacks] == [History, ProgbarLogger]
    assert cbs.callbacks[1].params == {"verbose": 1, "epochs": 3, "steps": 2}


def test_terminate_on_nan_stops_through_stop_training():
    model, x, y = _model()
    bad = x.copy()
    bad[6] = np.nan  # the second batch of 4
    before = model.get_weights()
    history = model.fit(bad, y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[TerminateOnNaN()])
    assert history.epoch == [0] and model.stop_training
    assert math.isnan(history.history["loss"][0])
    assert all(np.all(np.isfinite(w)) for w in model.get_weights())
    assert not all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
    with pytest.raises(FloatingPointError, match=re.escape(
            "Sequential.fit: epoch 1, batch 2: the loss is nan")):
        model.fit(bad, y, batch_size=4, epochs=1, shuffle=False, verbose=0)


# -- ProgbarLogger ----------------------------------------------------------------------------
def test_verbose_0_prints_nothing(capsys):
    model, x, y = _model()
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, validation_data=(x, y))
    model.evaluate(x, y, verbose=0)
    model.predict(x, verbose=0)
    assert capsys.readouterr().out == ""


def test_verbose_2_prints_one_line_per_epoch_evaluate_and_predict(capsys):
    model, x, y = _model()
    model.fit(x, y, batch_size=4, epochs=2, verbose=2, validation_data=(x, y))
    model.evaluate(x, y, batch_size=4, verbose=2)
    model.predict(x, batch_size=4, verbose=2)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert re.fullmatch(r"Epoch 1/2 - 3/3 - \d+s - \d+ms/step - loss: \S+ - accuracy: \S+ - "
                        r"val_loss: \S+ - val_accuracy: \S+", lines[0])
    assert lines[1].startswith("Epoch 2/2 - 3/3 - ")
    assert re.fullmatch(r"3/3 - \d+s - \d+ms/step - loss: \S+ - accuracy: \S+", lines[2])
    assert re.fullmatch(r"3/3 - \d+s - \d+ms/step", lines[3])


def test_verbose_1_draws_a_tqdm_bar_per_epoch(capsys):
    model, x, y = _model()
    model.fit(x, y, batch_size=4, epochs=2, verbose=1, validation_data=(x, y))
    out = capsys.readouterr().out
    assert "Epoch 1/2" in out and "Epoch 2/2" in out and "3/3" in out and "val_loss" in out
    model.evaluate(x, y, verbose=1)
    model.predict(x, verbose=1)
    out = capsys.readouterr().out
    assert "Evaluate" in out and "Predict" in out


def test_a_given_progbar_logger_is_the_only_one(capsys):
    model, x, y = _model()
    model.fit(x, y, batch_size=4, epochs=1, verbose=2, callbacks=[ProgbarLogger()])
    assert len(capsys.readouterr().out.splitlines()) == 1


# -- TensorBoard and ModelCheckpoint ----------------------------------------------------------
def test_tensorboard_names_what_to_use_instead():
    with pytest.raises(NotImplementedError, match=re.escape(
            "TensorBoard: tinynet cannot write TensorBoard event files (got log_dir='logs'); "
            "log each epoch with tinynet.callbacks.CSVLogger('training.csv')")):
        TensorBoard()


def test_model_checkpoint_takes_the_suffixes_of_save_and_save_weights(tmp_path, monkeypatch):
    from tinynet.saving import files

    ModelCheckpoint(str(tmp_path / "m.safetensors"))
    ModelCheckpoint(str(tmp_path / "best_model.keras"))
    ModelCheckpoint(str(tmp_path / "m.weights.safetensors"), save_weights_only=True)
    ModelCheckpoint(str(tmp_path / "m.weights.h5"), save_weights_only=True)
    with pytest.raises(ValueError, match=r"must end in \.safetensors or \.weights\.h5"):
        ModelCheckpoint(str(tmp_path / "best_model.keras"), save_weights_only=True)
    with pytest.raises(ValueError, match=r"must end in \.safetensors or \.keras"):
        ModelCheckpoint(str(tmp_path / "m.h5"))
    # the one list in tinynet.saving decides: a suffix removed there is refused here
    monkeypatch.setattr(files, "SUFFIXES", (".safetensors",))
    with pytest.raises(ValueError, match=r"must end in \.safetensors"):
        ModelCheckpoint(str(tmp_path / "best_model.keras"))


def test_model_checkpoint_weights_only_writes_loadable_weights(tmp_path):
    model, x, y = _model()
    path = tmp_path / "ckpt.weights.safetensors"
    model.fit(x, y, batch_size=5, epochs=1, verbose=0,
              callbacks=[ModelCheckpoint(str(path), save_weights_only=True)])
    other, _, _ = _model()
    other.load_weights(str(path))
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), other.get_weights()))
