"""Losses written with ops: a plain function and a ``Loss`` subclass with ``call``.

Pinned: both give the built-in MeanSquaredError's value and gradient (to float32
rounding) and train a model to the same losses; ``sample_weight`` weighs as Keras's
``sum_over_batch_size``; a loss computed in NumPy is refused when a gradient is needed.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tinynet as tn
from tinynet import ops


def my_mse(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class MyMSE(tn.losses.Loss):
    def call(self, y_true, y_pred):
        return ops.mean(ops.square(y_true - y_pred), axis=-1)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((6, 3)).astype(np.float32),
            rng.standard_normal((6, 3)).astype(np.float32))


@pytest.mark.parametrize("loss", [tn.losses.get(my_mse), MyMSE()], ids=["function", "subclass"])
def test_custom_loss_equals_the_builtin(loss):
    y, p = _data()
    ref_value, ref_grad = tn.losses.MeanSquaredError().value_and_grad(y, p)
    value, grad = loss.value_and_grad(y, p)
    assert value == pytest.approx(ref_value, rel=1e-6)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-7)
    w = np.array([1, 0, 2, 1, 0.5, 3], np.float32)
    assert loss(y, p, sample_weight=w) == pytest.approx(
        tn.losses.MeanSquaredError()(y, p, sample_weight=w), rel=1e-6)


def test_default_names_follow_keras():
    assert tn.losses.get(my_mse).name == "my_mse"
    assert MyMSE().name == "my_mse"


def test_custom_losses_train_like_the_builtin():
    x, y = _data(1)
    histories = []
    for loss in ("mse", my_mse, MyMSE()):
        tn.set_seed(3)
        model = tn.Sequential([tn.layers.Input((3,)), tn.layers.Dense(3)])
        model.compile(tn.optimizers.SGD(0.1), loss)
        histories.append(model.fit(x, y, batch_size=3, epochs=3, verbose=0,
                                   shuffle=False).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-6)
    np.testing.assert_allclose(histories[2], histories[0], rtol=1e-6)


def test_a_numpy_loss_is_refused_when_differentiated():
    def numpy_loss(y_true, y_pred):
        return np.mean((np.asarray(y_true) - np.asarray(y_pred)) ** 2, axis=-1)

    y, p = _data()
    loss = tn.losses.get(numpy_loss)
    assert loss(y, p) == pytest.approx(float(np.mean((y - p) ** 2)), rel=1e-6)
    with pytest.raises(RuntimeError, match=re.escape(
            "numpy_loss: cannot differentiate the loss: its value does not come from y_pred "
            "through tinynet ops (write it with tinynet.ops, not NumPy)")):
        loss.value_and_grad(y, p)
