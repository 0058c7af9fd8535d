"""``test_on_batch``, ``predict_on_batch`` and ``train_on_batch(return_dict=True)`` as
Keras 3 has them: one batch, the metrics counted on that batch alone.

The reference numbers are Keras 3.15.1's (JAX backend) for the same data and weights:
``Dense(1, activation="sigmoid", kernel_initializer="ones")``, binary cross-entropy and
accuracy, SGD (learning rate 0.01), ``x``/``y`` drawn from ``default_rng(0)`` as below.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn

# Keras 3.15.1: test_on_batch on x[:3], on x[3:], on x; train_on_batch on x[:3], on x[3:]
KERAS_TEST = [(1.153016448020935, 1 / 3), (0.11795079708099365, 1.0),
              (0.6354836225509644, 2 / 3)]
KERAS_TRAIN = [(1.153016448020935, 1 / 3), (0.11779356002807617, 1.0)]
KERAS_TRAIN_DICT = {"loss": 0.6321309208869934, "accuracy": 2 / 3}
# after the three train_on_batch calls: test_on_batch(x, y, sample_weight=arange(6))
KERAS_TEST_WEIGHTED = (0.9249019622802734, 2 / 3)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 3)).astype("float32")
    y = rng.integers(0, 2, (6, 1)).astype("float32")
    return x, y


def _model():
    model = tn.Sequential([tn.Input((3,)),
                           tn.layers.Dense(1, activation="sigmoid", kernel_initializer="ones")])
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    return model


def test_test_on_batch_counts_each_batch_alone_as_keras():
    x, y = _data()
    model = _model()
    got = [model.test_on_batch(x[:3], y[:3]), model.test_on_batch(x[3:], y[3:]),
           model.test_on_batch(x, y)]
    np.testing.assert_allclose(got, KERAS_TEST, rtol=1e-6)
    assert model.test_on_batch(x, y) == model.evaluate(x, y, batch_size=6, verbose=0)


def test_test_on_batch_return_dict_and_loss_alone():
    x, y = _data()
    model = _model()
    logs = model.test_on_batch(x, y, return_dict=True)
    assert list(logs) == ["loss", "accuracy"]
    np.testing.assert_allclose([logs["loss"], logs["accuracy"]], KERAS_TEST[2], rtol=1e-6)
    plain = tn.Sequential([tn.Input((3,)), tn.layers.Dense(1, kernel_initializer="ones")])
    plain.compile("sgd", "mse")
    loss = plain.test_on_batch(x, y)
    assert isinstance(loss, float)
    assert loss == pytest.approx(float(np.mean((x.sum(axis=1, keepdims=True) - y) ** 2)),
                                 rel=1e-6)


def test_train_on_batch_return_dict_matches_keras():
    x, y = _data()
    model = _model()
    got = [model.train_on_batch(x[:3], y[:3]), model.train_on_batch(x[3:], y[3:])]
    np.testing.assert_allclose(got, KERAS_TRAIN, rtol=1e-6)
    logs = model.train_on_batch(x, y, return_dict=True)
    assert list(logs) == ["loss", "accuracy"]
    np.testing.assert_allclose([logs["loss"], logs["accuracy"]],
                               [KERAS_TRAIN_DICT["loss"], KERAS_TRAIN_DICT["accuracy"]],
                               rtol=1e-6)
    # after those three steps, weighted by sample
    np.testing.assert_allclose(model.test_on_batch(x, y, sample_weight=np.arange(6.0)),
                               KERAS_TEST_WEIGHTED, rtol=1e-6)


def test_predict_on_batch_is_predict_of_one_batch():
    x, _ = _data()
    model = _model()
    out = model.predict_on_batch(x)
    assert out.dtype == np.float32 and out.shape == (6, 1)
    np.testing.assert_array_equal(out, model.predict(x, verbose=0))
    np.testing.assert_allclose(out, 1.0 / (1.0 + np.exp(-x.sum(axis=1, keepdims=True))),
                               rtol=1e-6)


def test_functional_model_with_two_inputs():
    a, b = tn.Input((2,), name="a"), tn.Input((3,), name="b")
    out = tn.layers.Dense(1, kernel_initializer="ones")(tn.layers.Concatenate()([a, b]))
    model = tn.Model([a, b], out)
    model.compile("sgd", "mse")
    xa, xb = np.ones((4, 2), "float32"), np.full((4, 3), 2.0, "float32")
    np.testing.assert_array_equal(model.predict_on_batch({"a": xa, "b": xb}),
                                  np.full((4, 1), 8.0, "float32"))
    assert model.test_on_batch([xa, xb], np.full((4, 1), 6.0, "float32")) == 4.0
