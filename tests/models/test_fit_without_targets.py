"""A model whose only loss is what its layers add (``add_loss``) trains on ``x`` alone, as
in Keras 3: ``fit``, ``evaluate``, ``train_on_batch`` and ``test_on_batch`` without ``y``,
with arrays or a dataset of ``x`` batches. Values are checked against float64 NumPy."""

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers, ops

X = np.random.default_rng(7).normal(size=(32, 4)).astype(np.float32)
LR = 0.1


class SquareMean(layers.Layer):
    """Adds ``mean(x^2)`` as a loss and passes ``x`` through."""

    def call(self, x):
        self.add_loss(ops.mean(ops.square(x)))
        return x


def model() -> tn.Model:
    tn.set_seed(0)
    inp = tn.Input((4,))
    out = SquareMean()(layers.Dense(3)(inp))
    m = tn.Model(inp, out)
    m.compile(optimizer=tn.optimizers.SGD(learning_rate=LR))
    return m


def reference_step(w: np.ndarray, b: np.ndarray, x: np.ndarray):
    """The loss ``mean((xW + b)^2)`` before one SGD step, and the weights after it."""
    x, w, b = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    y = x @ w + b
    loss = np.mean(y * y)
    g = 2.0 * y / y.size
    return loss, w - LR * (x.T @ g), b - LR * g.sum(axis=0)


def test_train_on_batch_without_y_matches_float64_reference():
    m = model()
    w, b = (np.array(v) for v in m.layers[1].get_weights())
    loss = m.train_on_batch(X)
    ref_loss, ref_w, ref_b = reference_step(w, b, X)
    assert loss == pytest.approx(ref_loss, rel=1e-6)
    new_w, new_b = m.layers[1].get_weights()
    np.testing.assert_allclose(new_w, ref_w, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(new_b, ref_b, rtol=1e-5, atol=1e-7)


def test_fit_without_y_takes_the_same_steps_as_train_on_batch():
    a, b = model(), model()
    history = a.fit(X, batch_size=8, epochs=2, shuffle=False, verbose=0)
    losses = [b.train_on_batch(X[i:i + 8]) for _ in range(2) for i in range(0, 32, 8)]
    assert history.history["loss"] == pytest.approx([np.mean(losses[:4]), np.mean(losses[4:])],
                                                    rel=1e-6)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)


def test_fit_on_a_dataset_of_x_batches_equals_fit_on_arrays():
    a, b = model(), model()
    a.fit(X, batch_size=8, epochs=1, shuffle=False, verbose=0)
    b.fit((X[i:i + 8] for i in range(0, 32, 8)), epochs=1, verbose=0)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)


def test_evaluate_and_test_on_batch_without_y():
    m = model()
    w, b = m.layers[1].get_weights()
    ref = np.mean((X.astype(np.float64) @ w + b) ** 2)
    assert m.evaluate(X, batch_size=32, verbose=0) == pytest.approx(ref, rel=1e-6)
    assert m.test_on_batch(X) == pytest.approx(ref, rel=1e-6)


def test_validation_without_y():
    m = model()
    history = m.fit(X, epochs=1, validation_split=0.25, verbose=0)
    assert sorted(history.history) == ["loss", "val_loss"]
    history = m.fit(X, epochs=1, validation_data=(X, None), verbose=0)
    assert np.isfinite(history.history["val_loss"][0])


def test_weights_without_a_compiled_loss_are_refused():
    m = model()
    with pytest.raises(ValueError, match="Model.fit: sample_weight weighs the compiled loss"):
        m.fit(X, sample_weight=np.ones(32), verbose=0)


def test_a_compiled_loss_still_needs_y():
    m = model()
    m.compile(optimizer="sgd", loss="mse")
    with pytest.raises(TypeError, match="Model.fit: y is None; targets are needed"):
        m.fit(X, verbose=0)
