"""A fit never returns a non-finite model silently (issue 49, findings 11 and 12).

After every update, the last one included, a weight that came out NaN or infinite undoes
the step (weights, optimizer slots, iterations and batch-norm statistics bitwise as
before it) and raises ``FloatingPointError`` naming the weight, or stops training under
``TerminateOnNaN``. A moving statistic that a training forward pass made non-finite stops
training before the update the same way. Huge but finite inputs (``x = 3e38``) train
only as long as everything stays finite.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tinynet as tn
from tinynet.callbacks import Callback, TerminateOnNaN
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Flatten, Input,
                            LayerNormalization, MaxPooling2D)
from tinynet.optimizers.step_undo import is_finite


def _slots(optimizer):
    return [a.copy() for _, slots in optimizer._slots.values() for a in slots.values()]


def _mlp(optimizer, seed=3):
    tn.set_seed(seed)
    model = tn.Sequential([Input((4,)), Dense(8, activation="relu"), Dense(1)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _data(n=16, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(n, 4)).astype(np.float32) * 10,
            rng.normal(size=(n, 1)).astype(np.float32))


def _all_finite(model):
    return all(np.isfinite(w).all() for w in model.get_weights())


class _Snapshots(Callback):
    """The weights, slots and iterations after each finished batch."""

    def __init__(self):
        super().__init__()
        self.weights, self.slots, self.iterations = None, None, None

    def on_train_begin(self, logs=None):
        self.on_train_batch_end(-1)

    def on_train_batch_end(self, batch, logs=None):
        self.weights = self.model.get_weights()
        self.slots = _slots(self.model.optimizer)
        self.iterations = self.model.optimizer.iterations


def _assert_bitwise(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a.tobytes() == b.tobytes()


def test_is_finite_is_exact():
    big = np.full(1000, 3e38, np.float32)  # its float32 sum overflows; the values are finite
    assert is_finite(big) and is_finite(-big) and is_finite(np.zeros((0, 3), np.float32))
    for bad in (np.inf, -np.inf, np.nan):
        arr = big.copy()
        arr[517] = bad
        assert not is_finite(arr)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_the_last_update_making_a_weight_non_finite_raises_and_is_undone(optimizer):
    """One batch, one epoch: the only update is the last one, checked as every other."""
    x, y = _data(8)
    model = _mlp(tn.optimizers.SGD(3e38) if optimizer == "sgd" else tn.optimizers.Adam(3e38))
    before = model.get_weights()
    with pytest.raises(FloatingPointError, match=re.escape(
            "Sequential.fit: epoch 1, batch 1: the weight dense") + r"(_1)?/kernel" + re.escape(
            " is not finite after this step's update; training stopped and the step undone "
            "(weights are those after the last finite step)")):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    _assert_bitwise(model.get_weights(), before)
    assert model.optimizer.iterations == 0 and _slots(model.optimizer) == []


def test_an_undone_first_step_leaves_no_trace():
    """After the undone step, training with a sane rate equals training a fresh model."""
    x, y = _data(8)
    a, b = _mlp(tn.optimizers.Adam(3e38)), _mlp(tn.optimizers.Adam(1e-3))
    with pytest.raises(FloatingPointError):
        a.train_on_batch(x, y)
    a.optimizer.learning_rate = 1e-3
    for _ in range(3):
        a.train_on_batch(x, y)
        b.train_on_batch(x, y)
    _assert_bitwise(a.get_weights(), b.get_weights())
    _assert_bitwise(_slots(a.optimizer), _slots(b.optimizer))
    assert a.optimizer.iterations == b.optimizer.iterations == 3


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop", "adagrad", "nadam"])
def test_a_weight_made_non_finite_after_finite_steps_restores_the_last_finite_ones(optimizer):
    x, y = _data(16)
    model = _mlp(optimizer)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    model.optimizer.learning_rate = 3e38
    snap = _Snapshots()
    with pytest.raises(FloatingPointError, match=r"Sequential\.fit: epoch 1, batch \d: the "):
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[snap])
    assert _all_finite(model)
    _assert_bitwise(model.get_weights(), snap.weights)
    _assert_bitwise(_slots(model.optimizer), snap.slots)
    assert model.optimizer.iterations == snap.iterations


@pytest.mark.parametrize("lr", [1e30, 1e36, 1e38, 3e38])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("epochs", [1, 3])
def test_fits_at_huge_rates_never_return_a_non_finite_model(optimizer, lr, epochs):
    for seed in range(4):
        x, y = _data(16, seed)
        model = _mlp(tn.optimizers.SGD(lr) if optimizer == "sgd" else tn.optimizers.Adam(lr),
                     seed)
        try:
            model.fit(x, y, batch_size=8, epochs=epochs, verbose=0)
        except FloatingPointError:
            pass
        assert _all_finite(model)


def test_terminate_on_nan_stops_gracefully_on_a_non_finite_weight(capsys):
    x, y = _data(8)
    model = _mlp(tn.optimizers.SGD(3e38))
    before = model.get_weights()
    history = model.fit(x, y, batch_size=4, epochs=3, verbose=0, callbacks=[TerminateOnNaN()])
    assert "Batch 0: Invalid loss, terminating training" in capsys.readouterr().out
    assert len(history.epoch) == 1 and np.isnan(history.history["loss"][0])
    _assert_bitwise(model.get_weights(), before)


def test_train_on_batch_undoes_a_step_making_a_weight_non_finite():
    x, y = _data(8)
    model = _mlp("sgd")
    model.train_on_batch(x, y)
    before = model.get_weights()
    model.optimizer.learning_rate = 3e38
    with pytest.raises(FloatingPointError, match=re.escape(
            "Sequential.train_on_batch: the weight dense") + r"(_1)?/kernel is not finite"):
        model.train_on_batch(x, y)
    _assert_bitwise(model.get_weights(), before)
    assert model.optimizer.iterations == 1


def test_a_non_finite_moving_statistic_stops_before_the_update():
    """The loss stays finite (the normalized values are), the moving variance does not."""
    tn.set_seed(0)
    model = tn.Sequential([Input((3,)), BatchNormalization(momentum=0.5), Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x = np.array([[-3e38, 0, 1], [3e38, 0, 2]], np.float32)
    before = model.get_weights()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FloatingPointError, match=re.escape(
                "Sequential.fit: epoch 1, batch 1: the statistic "
                "batch_normalization/moving_variance is not finite; training stopped before "
                "this step's update")):
            model.fit(x, np.zeros((2, 1), np.float32), epochs=1, verbose=0)
    _assert_bitwise(model.get_weights(), before)


def _huge_input_models():
    yield "dense-mse", [Input((4,)), Dense(3)], "mse", (4,), (3,)
    yield "dense-relu-softmax", [Input((4,)), Dense(8, activation="relu"),
                                 Dense(3, activation="softmax")], "categorical_crossentropy", (4,), (3,)
    yield "conv-bn", [Input((6, 6, 1)), Conv2D(2, 3), BatchNormalization(), Flatten(),
                      Dense(2)], "mse", (6, 6, 1), (2,)
    yield "conv-pool-logits", [Input((6, 6, 1)), Conv2D(2, 3, activation="relu"),
                               MaxPooling2D(), Flatten(), Dense(3)], "categorical_crossentropy", (6, 6, 1), (3,)
    yield "layer-norm", [Input((4,)), LayerNormalization(), Dense(2, activation="sigmoid")], \
        "binary_crossentropy", (4,), (2,)
    yield "tanh-mae", [Input((4,)), Dense(4, activation="tanh"), Dense(1)], "mae", (4,), (1,)


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
@pytest.mark.parametrize("name, layers, loss, x_shape, y_shape", list(_huge_input_models()),
                         ids=[m[0] for m in _huge_input_models()])
def test_huge_inputs_either_stop_fit_or_train_to_a_finite_model(name, layers, loss, x_shape,
                                                                 y_shape, optimizer):
    tn.set_seed(0)
    model = tn.Sequential(layers)
    model.compile(optimizer=optimizer, loss=loss)
    x = np.full((8, *x_shape), 3e38, np.float32)
    y = np.zeros((8, *y_shape), np.float32)
    y[:, 0] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.fit(x, y, epochs=2, batch_size=4, verbose=0)
        except FloatingPointError as exc:
            assert re.match(r"Sequential\.fit: epoch \d, batch \d: the (loss|statistic|weight) ",
                            str(exc))
        else:  # everything stayed finite: the training forward pass and the model
            assert np.isfinite(model.predict(x, verbose=0)).all()
        assert _all_finite(model)
