"""Custom metrics as ``Metric`` subclasses (issue 44), with Keras 3's protocol:
``add_variable`` / ``add_weight``, ``update_state(y_true, y_pred, sample_weight=None)``,
``result()``, ``reset_state()``; variables with ``assign``, ``assign_add`` and
``assign_sub``; in ``fit`` the logged value is the running ``result()``, reset at each
epoch and each ``evaluate``.

The two metrics are the keras-io examples (the ``keras.metrics.Metric`` docstring's
``BinaryTruePositives``, with ``y_pred > 0.5``, and the training guide's
``CategoricalTruePositives``). Fit values are checked by hand (a learning rate of 0
keeps the predictions fixed) and against Keras 3.15.1 (JAX) on the same data and weights.
"""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet import ops
from tinynet.metrics import Metric


class BinaryTruePositives(Metric):
    def __init__(self, name="binary_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), initializer="zeros",
                                                name="true_positives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "bool")
        y_pred = ops.greater(y_pred, 0.5)
        values = ops.logical_and(ops.equal(y_true, True), ops.equal(y_pred, True))
        values = ops.cast(values, self.dtype)
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, self.dtype)
            sample_weight = ops.broadcast_to(sample_weight, ops.shape(values))
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign(self.true_positives + ops.sum(values))

    def result(self):
        return self.true_positives


class CategoricalTruePositives(Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        self.true_positives.assign(0.0)


Y_TRUE = np.array([1, 0, 1, 1, 0, 1], np.float32)
Y_PRED = np.array([0.7, 0.9, 0.2, 0.6, 0.1, 0.51], np.float32)


# -- the metric on its own ---------------------------------------------------------------------
def test_binary_true_positives_by_hand():
    m = BinaryTruePositives()
    assert m.name == "binary_true_positives" and m.stateful
    assert float(m.result()) == 0.0
    assert float(m(Y_TRUE, Y_PRED)) == 3.0  # __call__ updates, then gives result() (Keras)
    m.update_state(Y_TRUE[:2], Y_PRED[:2])
    assert float(m.result()) == 4.0
    m.update_state(Y_TRUE, Y_PRED, sample_weight=np.array([2, 1, 1, 0.5, 1, 0], np.float32))
    assert float(m.result()) == 4.0 + 2.0 + 0.5
    m.reset_state()  # the default: every variable back to zeros
    assert float(m.result()) == 0.0
    assert [v.name for v in m.variables] == ["true_positives"]
    assert m.get_config() == {"name": "binary_true_positives", "dtype": "float32"}
    again = BinaryTruePositives.from_config(m.get_config())
    assert again.name == m.name and float(again.result()) == 0.0


def test_categorical_true_positives_by_hand():
    m = CategoricalTruePositives()
    y_true = np.array([[0], [1], [2], [1]])
    y_pred = np.array([[.9, .1, 0], [.2, .7, .1], [.5, .4, .1], [.1, .8, .1]], np.float32)
    m.update_state(y_true, y_pred)
    assert float(m.result()) == 3.0
    m.update_state(y_true[:2], y_pred[:2])
    assert float(m.result()) == 5.0
    m.reset_state()
    assert float(m.result()) == 0.0


def test_variables_assign_add_sub_and_ops():
    class Counts(Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.total = self.add_weight(shape=(3,), initializer="ones", name="total")
            self.count = self.add_variable((), initializer=2, dtype="int32")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.total.assign_add(ops.sum(ops.convert_to_tensor(y_pred), axis=0))
            self.count.assign_sub(-len(y_pred))

        def result(self):
            return ops.sum(self.total) / ops.cast(self.count, "float32")

    m = Counts(name="counts")
    assert m.name == "counts" and m.dtype == "float32"
    assert m.total.dtype == np.float32 and m.count.dtype == np.int32
    assert m.count.name == "variable_1" and int(m.count) == 2
    m.update_state(None, np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(m.total), [5.0, 5.0, 5.0])
    assert int(m.count) == 6
    assert float(m.result()) == pytest.approx(15.0 / 6.0)
    assert float(ops.sum(m.total * 2 + 1)) == 33.0
    m.total.assign([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(m.total.numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"assign: the value must have the variable's shape "
                                         r"\(3,\), got \(2,\)"):
        m.total.assign([1.0, 2.0])
    m.reset_state()  # zeros, as Keras (not the initializers)
    assert float(ops.sum(m.total)) == 0.0 and int(m.count) == 0
    assert Counts().name == "counts"  # the snake case of the class name, as Keras


def test_a_metric_held_by_a_metric_is_tracked():
    class Outer(Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = BinaryTruePositives()
            self.seen = self.add_variable((), name="seen")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.inner.update_state(y_true, y_pred)
            self.seen.assign_add(len(y_true))

        def result(self):
            return self.inner.result() / self.seen

    m = Outer()
    m.update_state(Y_TRUE, Y_PRED)
    assert float(m.result()) == pytest.approx(3 / 6)
    assert [v.name for v in m.variables] == ["seen", "true_positives"]
    m.reset_state()
    assert float(m.inner.result()) == 0.0 and float(m.seen) == 0.0


def test_protocol_errors():
    class Early(Metric):
        def __init__(self):
            self.v = self.add_variable(())
            super().__init__()

        def update_state(self, y_true, y_pred, sample_weight=None):
            pass

    with pytest.raises(RuntimeError, match=r"Early: call super\(\).__init__\(\) in __init__ "
                                           r"before add_variable"):
        Early()

    class NoResult(Metric):
        def update_state(self, y_true, y_pred, sample_weight=None):
            pass

    with pytest.raises(NotImplementedError, match="NoResult must define result"):
        NoResult().result()


# -- in fit / evaluate -------------------------------------------------------------------------
def data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((40, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.int64) + (x[:, 1:2] > 0)
    w = (rng.standard_normal((4, 3)) * 0.5).astype(np.float32)
    wb = (rng.standard_normal((4, 1)) * 0.5).astype(np.float32)
    return x, y, w, wb


def categorical_model(w, lr):
    dense = L.Dense(3, activation="softmax")
    model = tn.Sequential([tn.Input((4,)), dense])
    dense.set_weights([w, np.zeros(3, np.float32)])
    model.compile(optimizer=tn.optimizers.SGD(lr), loss="sparse_categorical_crossentropy",
                  metrics=[CategoricalTruePositives()])
    return model


def test_fit_resets_the_metric_each_epoch_by_hand():
    """With a learning rate of 0 the predictions stay: each epoch counts the same hits
    (without the reset the second epoch would log twice as many)."""
    x, y, w, _ = data()
    model = categorical_model(w, 0.0)
    hits = float(np.sum(np.argmax(x @ w, axis=1) == y[:, 0]))
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert history.history["categorical_true_positives"] == [hits, hits]
    assert model.evaluate(x, y, verbose=0)[1] == hits  # evaluate resets too
    assert model.evaluate(x[:10], y[:10], verbose=0)[1] == float(
        np.sum(np.argmax(x[:10] @ w, axis=1) == y[:10, 0]))
    assert model.train_on_batch(x[:5], y[:5])[1] == float(
        np.sum(np.argmax(x[:5] @ w, axis=1) == y[:5, 0]))


def test_fit_and_evaluate_as_keras():
    """The values Keras 3.15.1 (JAX) logs for the same data, weights and SGD(0.5)."""
    x, y, w, wb = data()
    model = categorical_model(w, 0.5)
    history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    assert history.history["categorical_true_positives"] == [14.0, 22.0]
    np.testing.assert_allclose(history.history["loss"], [1.3625593185424805, 1.0462048053741455],
                               rtol=1e-6)
    loss, hits = model.evaluate(x, y, batch_size=16, verbose=0)
    assert hits == 25.0 and loss == pytest.approx(0.8628097772598267, rel=1e-6)

    yb = (x[:, 2:3] > 0).astype(np.float32)
    dense = L.Dense(1, activation="sigmoid")
    binary = tn.Sequential([tn.Input((4,)), dense])
    dense.set_weights([wb, np.zeros(1, np.float32)])
    binary.compile(optimizer=tn.optimizers.SGD(0.5), loss="binary_crossentropy",
                   metrics=[BinaryTruePositives()])
    history = binary.fit(x, yb, batch_size=16, epochs=2, shuffle=False, verbose=0,
                         validation_data=(x[:10], yb[:10]))
    assert history.history["binary_true_positives"] == [14.0, 19.0]
    assert history.history["val_binary_true_positives"] == [5.0, 5.0]
    np.testing.assert_allclose(history.history["val_loss"],
                               [0.4382559359073639, 0.35295581817626953], rtol=1e-6)
    assert binary.evaluate(x, yb, batch_size=16, verbose=0)[1] == 18.0


def test_a_metric_returning_a_float_or_a_tensor_logs_it():
    class MeanAbsError(Metric):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.total = self.add_weight(name="total")
            self.count = self.add_weight(name="count")

        def update_state(self, y_true, y_pred, sample_weight=None):
            self.total.assign_add(ops.sum(ops.abs(ops.convert_to_tensor(y_true) - y_pred)))
            self.count.assign_add(float(np.size(y_pred)))

        def result(self):
            return float(self.total) / max(float(self.count), 1.0)

    x, y, w, _ = data()
    model = tn.Sequential([tn.Input((4,)), L.Dense(1)])
    model.layers[0].set_weights([w[:, :1], np.zeros(1, np.float32)])
    model.compile(optimizer=tn.optimizers.SGD(0.0), loss="mse", metrics=[MeanAbsError()])
    target = y.astype(np.float32)
    history = model.fit(x, target, batch_size=16, epochs=1, shuffle=False, verbose=0)
    expected = np.mean(np.abs(target - x @ w[:, :1]))
    assert history.history["mean_abs_error"][0] == pytest.approx(expected, rel=1e-6)
