"""CSVLogger, LambdaCallback and TerminateOnNaN (Keras 3 semantics)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.callbacks import CSVLogger, LambdaCallback, TerminateOnNaN
from tinynet.layers import Dense, Input

REFS = np.load(os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                            "keras_refs.npz"))


def _model() -> tn.Sequential:
    tn.set_seed(0)
    model = tn.Sequential([Input((3,)), Dense(2)])
    model.compile("adam", tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def _data(n: int = 16) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).standard_normal((n, 3)).astype(np.float32)
    return x, (x[:, 0] > 0).astype(np.int64)


def _lines(path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read().split("\r\n")


def test_csv_logger_writes_keras_layout(tmp_path):
    path = tmp_path / "log.csv"
    history = _model().fit(*_data(), epochs=2, verbose=0, callbacks=[CSVLogger(path)])
    keras_lines = str(REFS["csv_logger/text"]).split("\r\n")
    ours = _lines(path)
    assert ours[0] == keras_lines[0] == "epoch,accuracy,loss,val_accuracy,val_loss"
    assert len(ours) == len(keras_lines) == 4 and ours[-1] == keras_lines[-1] == ""
    for epoch in range(2):
        row = ours[1 + epoch].split(",")
        assert row[0] == str(epoch) and row[3:] == ["NA", "NA"]
        assert row[1:3] == [str(history.history["accuracy"][epoch]),
                            str(history.history["loss"][epoch])]


def test_csv_logger_appends_without_a_second_header(tmp_path):
    path = tmp_path / "log.csv"
    model, data = _model(), _data()
    model.fit(*data, epochs=1, verbose=0, callbacks=[CSVLogger(path, separator=";")])
    model.fit(*data, epochs=1, verbose=0, validation_data=data,
              callbacks=[CSVLogger(path, separator=";", append=True)])
    lines = _lines(path)
    assert lines[0] == "epoch;accuracy;loss;val_accuracy;val_loss"
    assert len(lines) == 4 and lines[1].endswith(";NA;NA") and not lines[2].endswith("NA")
    model.fit(*data, epochs=1, verbose=0, callbacks=[CSVLogger(path)])  # overwrite
    assert len(_lines(path)) == 3


def test_lambda_callback_calls_the_given_functions():
    calls = []
    cb = LambdaCallback(on_train_begin=lambda logs: calls.append("begin"),
                        on_epoch_end=lambda epoch, logs: calls.append((epoch, sorted(logs))),
                        on_train_batch_end=lambda batch, logs: calls.append(batch),
                        note="kept")
    _model().fit(*_data(8), batch_size=4, epochs=2, verbose=0, callbacks=[cb])
    assert calls == ["begin", 0, 1, (0, ["accuracy", "loss"]), 0, 1, (1, ["accuracy", "loss"])]
    assert cb.note == "kept"


def test_terminate_on_nan_stops_before_the_bad_update(capsys):
    x, y = _data(12)
    x[5] = np.nan  # the second batch of 4
    first = _model()
    first.fit(x[:4], y[:4], batch_size=4, epochs=1, shuffle=False, verbose=0)
    model = _model()
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0,
                        callbacks=[TerminateOnNaN()])
    assert capsys.readouterr().out == "Batch 1: Invalid loss, terminating training\n"
    assert len(history.history["loss"]) == 1 and np.isnan(history.history["loss"][0])
    for a, b in zip(model.get_weights(), first.get_weights()):  # only the first step applied
        assert np.array_equal(a, b)


def test_terminate_on_nan_can_raise_and_fit_raises_without_it():
    x, y = _data(8)
    x[0] = np.inf
    with pytest.raises(RuntimeError, match=r"^NaN or Inf loss encountered at batch 0\. Loss "
                                           r"value: nan\. Terminating training immediately\.$"):
        _model().fit(x, y, batch_size=4, shuffle=False, verbose=0,
                     callbacks=[TerminateOnNaN(raise_error=True)])
    with pytest.raises(FloatingPointError, match=re.escape("epoch 1, batch 1: the loss is")):
        _model().fit(x, y, batch_size=4, shuffle=False, verbose=0)


@pytest.mark.parametrize("case, kwargs", [
    ("fit_initial_epoch", {"initial_epoch": 2, "validation_freq": 2}),
    ("fit_validation_list", {"validation_freq": [1, 4]}),
])
def test_initial_epoch_and_validation_freq_as_keras(case, kwargs):
    x, y = _data()
    seen = []
    cb = LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append((epoch, "val_loss" in logs)))
    history = _model().fit(x, y, epochs=6, verbose=0, validation_data=(x, y), callbacks=[cb],
                           **kwargs)
    assert [e for e, _ in seen] == list(REFS[f"{case}/epochs"])
    assert [v for _, v in seen] == list(REFS[f"{case}/validated"])
    assert history.epoch == list(REFS[f"{case}/history_epoch"])
    assert len(history.history["val_loss"]) == int(REFS[f"{case}/val_len"])
    assert len(history.history["loss"]) == int(REFS[f"{case}/loss_len"])


def test_resuming_with_initial_epoch_continues_the_epoch_count():
    x, y = _data()
    model = _model()
    model.fit(x, y, epochs=2, verbose=0, shuffle=False)
    history = model.fit(x, y, epochs=2, initial_epoch=2, verbose=0)
    assert history.epoch == [] and history.history == {}  # nothing left to run
    assert _model().fit(x, y, epochs=3, initial_epoch=1, verbose=0).epoch == [1, 2]


@pytest.mark.parametrize("case", ["plateau_max", "plateau_min"])
def test_reduce_lr_on_plateau_follows_keras(case):
    kwargs, monitor, values = json.loads(str(REFS[f"{case}/case"]))  # fed to Keras too
    model = tn.Sequential([Input((3,)), Dense(2)])
    model.compile(tn.optimizers.Adam(0.01), "mse")
    cb = tn.callbacks.ReduceLROnPlateau(monitor=monitor, **kwargs)
    cb.set_model(model)
    cb.on_train_begin()
    logged, after = [], []
    for epoch, value in enumerate(values):
        logs = {monitor: value}
        cb.on_epoch_end(epoch, logs)
        logged.append(logs["learning_rate"])
        after.append(model.optimizer.learning_rate)
    # Keras keeps the rate in a float32 variable; tinynet in a Python float
    np.testing.assert_allclose(logged, REFS[f"{case}/logged"], rtol=1e-6)
    np.testing.assert_allclose(after, REFS[f"{case}/after"], rtol=1e-6)


def test_reduce_lr_on_plateau_in_a_fit(capsys):
    x, y = _data()
    model = _model()
    cb = tn.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1,
                                        min_delta=10.0, verbose=1)  # nothing improves enough
    history = model.fit(x, y, epochs=3, verbose=0, callbacks=[cb])
    # the first epoch sets the best value; each later one fails to improve by 10
    assert history.history["learning_rate"] == [0.001, 0.001, 0.0005]
    assert model.optimizer.learning_rate == 0.00025
    assert capsys.readouterr().out == ("\nEpoch 2: ReduceLROnPlateau reducing learning rate to "
                                       "0.0005.\n\nEpoch 3: ReduceLROnPlateau reducing learning "
                                       "rate to 0.00025.\n")


def test_reduce_lr_on_plateau_refuses_to_replace_a_schedule():
    """Keras's optimizer raises when a callback sets the rate of a schedule; so does
    tinynet, instead of silently swapping the schedule for a float."""
    import numpy as np

    import tinynet as tn

    schedule = tn.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    model = tn.Sequential([tn.Input((2,)), tn.layers.Dense(1)])
    model.compile(tn.optimizers.SGD(schedule), "mse")
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    with pytest.raises(TypeError, match=re.escape(
            "SGD: learning_rate was given as a schedule, so it cannot be set to a number (as "
            "in Keras); give the optimizer a float learning_rate to set it, got 0.")):
        model.fit(x, y, epochs=4, verbose=0, callbacks=[
            tn.callbacks.ReduceLROnPlateau(monitor="loss", patience=1, min_delta=10.0)])
    assert model.optimizer._learning_rate is schedule


def test_learning_rate_scheduler_refuses_to_replace_a_schedule():
    """Keras's LearningRateScheduler sets the optimizer's rate, which raises over a
    schedule; tinynet's too (before the first epoch runs)."""
    import numpy as np

    import tinynet as tn

    schedule = tn.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    model = tn.Sequential([tn.Input((2,)), tn.layers.Dense(1)])
    model.compile(tn.optimizers.Adam(schedule), "mse")
    before = [w.copy() for w in model.get_weights()]
    x, y = np.ones((4, 2), np.float32), np.ones((4, 1), np.float32)
    with pytest.raises(TypeError, match=re.escape(
            "Adam: learning_rate was given as a schedule, so it cannot be set to a number")):
        model.fit(x, y, epochs=2, verbose=0, callbacks=[
            tn.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)])
    assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_a_schedule_may_replace_a_float_or_a_schedule():
    """As in Keras: a schedule can be set over a float or another schedule; a float over
    a float."""
    import tinynet as tn

    opt = tn.optimizers.SGD(0.1)
    first = tn.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    opt.learning_rate = first
    assert opt._learning_rate is first
    second = tn.optimizers.schedules.InverseTimeDecay(0.2, 10, 0.5)
    opt.learning_rate = second
    assert opt._learning_rate is second and opt.learning_rate == 0.2
    other = tn.optimizers.SGD(0.1)
    other.learning_rate = 0.05
    assert other.learning_rate == 0.05
