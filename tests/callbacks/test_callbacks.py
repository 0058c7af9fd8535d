"""Callbacks: History, EarlyStopping and LearningRateScheduler with Keras 3 semantics."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.callbacks import Callback, EarlyStopping, History, LearningRateScheduler
from tinynet.layers import Dense, Input
from tinynet.optimizers import SGD

X5 = np.arange(5, dtype=np.float32).reshape(5, 1)
Y5 = 2 * X5


def line_model(lr: float = 0.1) -> tn.Sequential:
    model = tn.Sequential([Input((1,)), Dense(1)])
    model.layers[0].set_weights([np.array([[0.5]]), np.array([0.0])])
    model.compile(optimizer=SGD(learning_rate=lr), loss="mse")
    return model


class FakeModel:
    """Enough of a model to drive EarlyStopping epoch by epoch."""

    def __init__(self, metrics_names=("loss",), metrics=()):
        self.stop_training = False
        self.weights = [np.zeros(1, dtype=np.float32)]
        self.metrics_names = list(metrics_names)
        self.metrics = list(metrics)

    def get_weights(self):
        return [w.copy() for w in self.weights]

    def set_weights(self, weights):
        self.weights = [w.copy() for w in weights]


def drive(callback: Callback, values: list, key: str = "val_loss", model=None) -> FakeModel:
    """Runs ``values`` as epoch logs through the callback; returns the model.

    The fake model's weight is set to the epoch index before each epoch ends, so restored
    weights tell which epoch they came from. Stops as ``fit`` would.
    """
    model = model or FakeModel()
    callback.set_model(model)
    callback.on_train_begin()
    for epoch, value in enumerate(values):
        model.weights = [np.full(1, epoch, dtype=np.float32)]
        callback.on_epoch_end(epoch, {key: value})
        if model.stop_training:
            break
    callback.on_train_end()
    return model


def test_callback_base_hooks_are_no_ops():
    cb = Callback()
    for hook in ("on_train_begin", "on_train_end"):
        getattr(cb, hook)(None)
    for hook in ("on_epoch_begin", "on_epoch_end", "on_train_batch_begin", "on_train_batch_end"):
        getattr(cb, hook)(0, None)
    cb.set_model("m")
    assert cb.model == "m"


def test_history_records_epochs():
    model = line_model()
    history = model.fit(X5, Y5, batch_size=5, epochs=3, shuffle=False, verbose=0)
    assert isinstance(history, History)
    assert history.epoch == [0, 1, 2]
    assert list(history.history) == ["loss"] and len(history.history["loss"]) == 3
    assert history.params == {"verbose": 0, "epochs": 3, "steps": 1}
    assert history.model is model and model.history is history


# -- EarlyStopping ------------------------------------------------------------------------------
def test_early_stopping_patience():
    cb = EarlyStopping(monitor="val_loss", patience=2)
    model = drive(cb, [5.0, 4.0, 4.5, 4.2, 3.0, 1.0])
    assert model.stop_training and cb.stopped_epoch == 3
    assert cb.best == 4.0 and cb.best_epoch == 1 and cb.wait == 2


def test_early_stopping_patience_zero_stops_at_first_non_improvement():
    cb = EarlyStopping(monitor="val_loss")
    drive(cb, [5.0, 4.0, 4.0, 1.0])
    assert cb.stopped_epoch == 2


def test_early_stopping_never_stops_at_epoch_zero():
    cb = EarlyStopping(monitor="val_loss", baseline=1.0)
    model = drive(cb, [5.0, 6.0])
    assert model.stop_training and cb.stopped_epoch == 1


def test_early_stopping_min_delta():
    cb = EarlyStopping(monitor="val_loss", min_delta=0.5, patience=1)
    drive(cb, [5.0, 4.7, 4.0])
    assert cb.stopped_epoch == 1 and cb.best == 5.0


def test_early_stopping_max_mode_and_auto_accuracy():
    cb = EarlyStopping(monitor="val_acc", mode="max", patience=1)
    drive(cb, [0.5, 0.6, 0.6, 0.9], key="val_acc")
    assert cb.stopped_epoch == 2 and cb.best == 0.6
    auto = EarlyStopping(monitor="val_accuracy", patience=1)
    model = FakeModel(["loss", "accuracy"], [tn.metrics.get("accuracy")])
    drive(auto, [0.5, 0.6, 0.6, 0.9], key="val_accuracy", model=model)
    assert auto.stopped_epoch == 2 and auto.best == 0.6


def test_early_stopping_auto_mode_unknown_metric():
    cb = EarlyStopping(monitor="val_widgets")
    with pytest.raises(ValueError, match=re.escape(
            "EarlyStopping: cannot tell whether monitor='val_widgets' should be minimized or "
            "maximized; pass mode='min' or mode='max'")):
        drive(cb, [1.0], key="val_widgets")


def test_early_stopping_restore_best_weights():
    cb = EarlyStopping(monitor="val_loss", patience=2, restore_best_weights=True)
    model = drive(cb, [3.0, 1.0, 2.0, 2.5, 0.1])
    assert cb.stopped_epoch == 3
    assert model.weights[0][0] == 1.0  # weights from epoch 1


def test_early_stopping_start_from_epoch():
    cb = EarlyStopping(monitor="val_loss", start_from_epoch=2)
    drive(cb, [1.0, 2.0, 3.0, 4.0])
    assert cb.stopped_epoch == 3 and cb.best == 3.0


def test_early_stopping_baseline_keeps_counting():
    # Keras: improvements that do not beat the baseline do not reset ``wait``
    cb = EarlyStopping(monitor="val_loss", patience=2, baseline=0.5)
    drive(cb, [3.0, 2.0, 1.0, 1.5])
    assert cb.stopped_epoch == 3 and cb.wait == 4
    plain = EarlyStopping(monitor="val_loss", patience=2)
    drive(plain, [3.0, 2.0, 1.0, 1.5])
    assert plain.stopped_epoch == 0


def test_early_stopping_missing_monitor_warns():
    cb = EarlyStopping(monitor="val_loss")
    with pytest.warns(UserWarning, match="which is not available. Available metrics are: loss"):
        drive(cb, [1.0], key="loss")


def test_early_stopping_reusable():
    cb = EarlyStopping(monitor="val_loss", patience=0)
    drive(cb, [1.0, 2.0])
    assert cb.stopped_epoch == 1
    drive(cb, [5.0, 4.0, 3.0])
    assert cb.stopped_epoch == 0 and cb.best == 3.0


def test_early_stopping_argument_errors():
    with pytest.raises(ValueError, match=re.escape(
            "EarlyStopping: mode must be one of 'auto', 'min', 'max', got 'up'")):
        EarlyStopping(mode="up")
    with pytest.raises(ValueError, match=re.escape(
            "EarlyStopping: patience must be a non-negative int, got -1")):
        EarlyStopping(patience=-1)
    with pytest.raises(TypeError, match=re.escape(
            "EarlyStopping: monitor must be a non-empty str, got 3")):
        EarlyStopping(monitor=3)


def test_early_stopping_in_fit_with_restore():
    x = np.linspace(0, 1, 8, dtype=np.float32).reshape(8, 1)
    model = line_model(lr=3.0)  # diverges: the loss grows every epoch
    start = model.get_weights()
    cb = EarlyStopping(monitor="loss", patience=1, restore_best_weights=True)
    history = model.fit(x, 2 * x, batch_size=8, epochs=10, shuffle=False, verbose=0,
                        callbacks=[cb])
    assert history.epoch == [0, 1] and model.stop_training
    # best epoch is 0: weights restored to the end of epoch 0, i.e. one step from the start
    replay = line_model(lr=3.0)
    replay.set_weights(start)
    replay.train_on_batch(x, 2 * x)
    for a, b in zip(model.get_weights(), replay.get_weights()):
        assert np.array_equal(a, b)


# -- LearningRateScheduler ------------------------------------------------------------------------
def test_scheduler_sets_rate_each_epoch_and_logs_it():
    seen = []

    def schedule(epoch, lr):
        seen.append((epoch, lr))
        return lr * 0.5

    model = line_model(lr=0.1)
    history = model.fit(X5, Y5, batch_size=5, epochs=3, verbose=0,
                        callbacks=[LearningRateScheduler(schedule)])
    assert seen == [(0, pytest.approx(0.1)), (1, pytest.approx(0.05)), (2, pytest.approx(0.025))]
    assert history.history["learning_rate"] == pytest.approx([0.05, 0.025, 0.0125])
    assert model.optimizer.learning_rate == pytest.approx(0.0125)


def test_scheduler_one_argument_schedule_and_effect():
    model = line_model()
    before = model.get_weights()
    model.fit(X5, Y5, epochs=2, verbose=0, callbacks=[LearningRateScheduler(lambda epoch: 0.0)])
    for a, b in zip(before, model.get_weights()):
        assert np.array_equal(a, b)


def test_scheduler_verbose(capsys):
    model = line_model()
    model.fit(X5, Y5, epochs=1, verbose=0,
              callbacks=[LearningRateScheduler(lambda e, lr: 0.25, verbose=1)])
    assert "Epoch 1: LearningRateScheduler setting learning rate to 0.25." in capsys.readouterr().out


def test_scheduler_errors():
    with pytest.raises(TypeError, match="LearningRateScheduler: schedule must be callable"):
        LearningRateScheduler(0.1)
    model = line_model()
    with pytest.raises(ValueError, match=re.escape(
            "LearningRateScheduler: schedule must return a finite float, got 'fast' at epoch 0")):
        model.fit(X5, Y5, verbose=0, callbacks=[LearningRateScheduler(lambda e, lr: "fast")])
