"""Regularizers (issue 44): ``tn.regularizers`` with Keras 3 names, values and configs;
``kernel_regularizer`` / ``bias_regularizer`` / ``activity_regularizer`` on Dense and the
convolutions; ``add_loss`` from ``call()``; all added to the loss of ``fit`` and
``evaluate`` and to the gradients, as Keras 3's ``compute_loss`` does.

Values are derived by hand in float64 NumPy, and the main cases are also pinned to Keras
3.15.1 (JAX backend) numbers, produced outside the project by the same model with the
same weights (``Model.evaluate`` then one ``train_on_batch`` with ``SGD(0.1)``).
"""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet import ops
from tinynet import regularizers as R

X = np.array([[1., 2., -0.5], [3., -1., 0.25], [0.5, 0.5, -2.0], [-1.5, 0.75, 1.0]],
             np.float32)
Y = np.array([[1., -1.], [0., 0.5], [2., 1.], [-1., 0.]], np.float32)
W = np.array([[0.3, -0.2], [0.1, 0.4], [-0.5, 0.25]], np.float32)
B = np.array([0.0, 0.1], np.float32)


def sign0(a):
    """d|a|/da as JAX (and Keras on JAX) take it: +1 at 0."""
    return np.where(a >= 0, 1.0, -1.0)


def one_dense(layer, loss="mse", lr=0.1):
    inp = tn.Input((3,))
    model = tn.Model(inp, layer(inp))
    layer.set_weights([W, B])
    model.compile(optimizer=tn.optimizers.SGD(lr), loss=loss)
    return model


# -- the regularizer objects -------------------------------------------------------------------
def test_keras_names_defaults_and_configs():
    assert R.L1().get_config() == {"l1": 0.009999999776482582}  # float32, as Keras 3.15
    assert R.L1(0.1).get_config() == {"l1": 0.10000000149011612}
    assert R.L2().get_config() == {"l2": 0.01}
    assert R.L1L2().get_config() == {"l1": 0.0, "l2": 0.0}
    assert R.l1 is R.L1 and R.l2 is R.L2 and R.l1_l2 is R.L1L2
    assert isinstance(R.get("l1"), R.L1) and isinstance(R.get("L2"), R.L2)
    zero = R.get("l1l2")  # Keras: the class's defaults, so no penalty
    assert isinstance(zero, R.L1L2) and zero.get_config() == {"l1": 0.0, "l2": 0.0}
    assert R.get(None) is None
    assert R.serialize(R.L2(0.01)) == {"module": "keras.regularizers", "class_name": "L2",
                                       "config": {"l2": 0.01}, "registered_name": None}
    back = R.get(R.serialize(R.L1L2(0.1, 0.2)))
    assert isinstance(back, R.L1L2) and (back.l1, back.l2) == (0.1, 0.2)
    assert isinstance(R.get({"class_name": "L1", "config": {"l1": 0.5}}), R.L1)


def test_penalties_and_gradients_by_hand():
    w = np.array([[0.5, -1.0], [0.0, 2.0]], np.float32)
    for reg, value, grad in [
            (R.L1(0.1), 0.1 * 3.5, 0.1 * sign0(w)),
            (R.L2(0.01), 0.01 * 5.25, 0.02 * w),
            (R.L1L2(0.1, 0.01), 0.1 * 3.5 + 0.01 * 5.25, 0.1 * sign0(w) + 0.02 * w)]:
        assert float(reg(w)) == pytest.approx(value, rel=1e-6)
        assert R.penalty(reg, w) == pytest.approx(value, rel=1e-6)
        np.testing.assert_allclose(R.penalty_grad(reg, w), grad, rtol=1e-6)
        # the closed form is what automatic differentiation of __call__ gives
        np.testing.assert_allclose(R._autodiff_grad(reg, w, np.float32(1.0)), grad, rtol=1e-6)


def test_l1_gradient_at_zero_is_plus_l1_as_jax():
    np.testing.assert_array_equal(R.penalty_grad(R.L1(0.5), np.zeros(3, np.float32)),
                                  np.full(3, np.float32(0.5)))


# -- Dense ---------------------------------------------------------------------------------
def test_dense_l2_one_sgd_step_by_hand_and_as_keras():
    layer = L.Dense(2, kernel_regularizer=R.L2(0.01))
    model = one_dense(layer)
    x, y, w, b = (a.astype(np.float64) for a in (X, Y, W, B))
    pred = x @ w + b
    loss = np.mean((pred - y) ** 2) + 0.01 * np.sum(w ** 2)
    dpred = 2 * (pred - y) / pred.size
    w_new = w - 0.1 * (x.T @ dpred + 0.02 * w)
    b_new = b - 0.1 * dpred.sum(0)
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(loss, rel=1e-6)  # Keras: yes
    assert model.train_on_batch(X, Y) == pytest.approx(loss, rel=1e-6)
    np.testing.assert_allclose(layer.kernel.value, w_new, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(layer.bias.value, b_new, rtol=1e-6, atol=1e-7)
    # Keras 3.15.1 (JAX), same model and weights
    assert loss == pytest.approx(1.0105977058410645, rel=1e-6)
    np.testing.assert_allclose(layer.kernel.value, [[0.26971250772476196, -0.08678749948740005],
                                                    [0.13683125376701355, 0.2854500114917755],
                                                    [-0.5494687557220459, 0.18879687786102295]],
                               rtol=1e-6)
    np.testing.assert_allclose(layer.bias.value, [0.0062499986961483955, 0.1028124988079071],
                               rtol=1e-6)


def test_dense_kernel_bias_and_activity_regularizers_by_hand_and_as_keras():
    layer = L.Dense(2, activation="tanh", kernel_regularizer=R.L1(0.1),
                    bias_regularizer=R.L1L2(0.01, 0.02), activity_regularizer=R.L2(0.05))
    model = one_dense(layer)
    x, y, w, b = (a.astype(np.float64) for a in (X, Y, W, B))
    l1 = float(np.float32(0.1))  # L1 keeps its factor in float32, as Keras
    out = np.tanh(x @ w + b)
    n = x.shape[0]
    loss = (np.mean((out - y) ** 2) + 0.05 * np.sum(out ** 2) / n + l1 * np.sum(np.abs(w))
            + 0.01 * np.sum(np.abs(b)) + 0.02 * np.sum(b ** 2))
    dout = 2 * (out - y) / out.size + 0.05 * 2 * out / n  # the activity penalty / batch
    dz = dout * (1 - out ** 2)
    w_new = w - 0.1 * (x.T @ dz + l1 * sign0(w))
    b_new = b - 0.1 * (dz.sum(0) + 0.01 * sign0(b) + 0.04 * b)  # b[0] == 0: +l1, as JAX
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(loss, rel=1e-6)
    assert model.train_on_batch(X, Y) == pytest.approx(loss, rel=1e-6)
    np.testing.assert_allclose(layer.kernel.value, w_new, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(layer.bias.value, b_new, rtol=1e-6, atol=1e-7)
    assert loss == pytest.approx(1.199123501777649, rel=1e-6)  # Keras 3.15.1
    np.testing.assert_allclose(layer.kernel.value, [[0.2711564898490906, -0.1398300677537918],
                                                    [0.11156173795461655, 0.3241622745990753],
                                                    [-0.5142552256584167, 0.18887920677661896]],
                               rtol=1e-6)
    np.testing.assert_allclose(layer.bias.value, [-0.0016732501098886132, 0.10755374282598495],
                               rtol=1e-5)


def test_activity_penalty_is_divided_by_the_batch_not_the_rows():
    """Keras 3.15 divides ``regularizer(output)`` by ``output.shape[0]``."""
    layer = L.Dense(2, use_bias=False, activity_regularizer=R.L1(0.5))
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2) / 10
    layer.build((None, 3, 2))
    layer.set_weights([np.eye(2, dtype=np.float32)])
    layer(x)
    (value,) = layer.losses
    assert float(value) == pytest.approx(float(np.float32(0.5)) * np.abs(x).sum() / 2, rel=1e-6)


def test_a_frozen_weight_is_not_regularized():
    """Keras adds the penalties of ``trainable_weights`` only."""
    layer = L.Dense(2, kernel_regularizer=R.L2(1.0), trainable=False)
    model = one_dense(layer)
    x, y, w, b = (a.astype(np.float64) for a in (X, Y, W, B))
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(np.mean((x @ w + b - y) ** 2),
                                                              rel=1e-6)
    assert model.losses == []


def test_fit_logs_the_loss_with_the_penalty():
    layer = L.Dense(2, kernel_regularizer=R.L2(0.5))
    model = one_dense(layer, lr=0.0)  # weights stay: every batch sees the same penalty
    history = model.fit(X, Y, batch_size=2, epochs=1, shuffle=False, verbose=0)
    x, y, w, b = (a.astype(np.float64) for a in (X, Y, W, B))
    expected = np.mean((x @ w + b - y) ** 2) + 0.5 * np.sum(w ** 2)
    assert history.history["loss"][0] == pytest.approx(expected, rel=1e-6)


# -- convolutions ------------------------------------------------------------------------------
def test_conv2d_regularizers_by_hand_and_as_keras():
    rng = np.random.default_rng(0)  # the arrays the Keras reference used
    x = rng.standard_normal((2, 4, 4, 2)).astype(np.float32)
    y = rng.standard_normal((2, 3, 3, 3)).astype(np.float32)
    k = (rng.standard_normal((2, 2, 2, 3)) * 0.3).astype(np.float32)
    b = np.array([0.0, 0.1, -0.1], np.float32)
    conv = L.Conv2D(3, 2, activation="relu", kernel_regularizer=R.L2(0.02),
                    bias_regularizer="l1", activity_regularizer=R.L1(0.01))
    inp = tn.Input((4, 4, 2))
    model = tn.Model(inp, conv(inp))
    conv.set_weights([k, b])
    model.compile(optimizer=tn.optimizers.SGD(0.1), loss="mse")
    loss = model.train_on_batch(x, y)

    x64, y64, k64, b64 = (a.astype(np.float64) for a in (x, y, k, b))
    l1 = float(np.float32(0.01))
    patches = np.stack([np.stack([x64[:, i:i + 3, j:j + 3, :] for j in range(2)], 3)
                        for i in range(2)], 3)  # [n, oi, oj, a, b, c]
    z = np.einsum("nijabc,abcf->nijf", patches, k64) + b64
    out = np.maximum(z, 0)
    expected = (np.mean((out - y64) ** 2) + 0.02 * np.sum(k64 ** 2) + l1 * np.sum(np.abs(b64))
                + l1 * np.sum(np.abs(out)) / 2)
    dz = (2 * (out - y64) / out.size + l1 * sign0(out) / 2) * (z > 0)
    k_new = k64 - 0.1 * (np.einsum("nijabc,nijf->abcf", patches, dz) + 0.04 * k64)
    b_new = b64 - 0.1 * (dz.sum((0, 1, 2)) + l1 * sign0(b64))
    assert loss == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(conv.kernel.value, k_new, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(conv.bias.value, b_new, rtol=1e-5, atol=1e-7)
    assert loss == pytest.approx(1.4279736280441284, rel=1e-6)  # Keras 3.15.1
    np.testing.assert_allclose(conv.bias.value, [-0.029944797977805138, 0.09476061910390854,
                                                 -0.14707031846046448], rtol=1e-5)
    np.testing.assert_allclose(conv.kernel.value.reshape(-1)[:6], [
        0.2575940489768982, 0.3409879207611084, 0.2413942664861679, 0.24560235440731049,
        0.010447266511619091, -0.42622044682502747], rtol=1e-5)


CONVS = {
    "Conv1D": (lambda **kw: L.Conv1D(3, 2, activation="tanh", **kw), (2, 5, 2),
               ["kernel", "bias"]),
    "Conv2D": (lambda **kw: L.Conv2D(3, 2, activation="tanh", **kw), (2, 4, 4, 2),
               ["kernel", "bias"]),
    "Conv2DTranspose": (lambda **kw: L.Conv2DTranspose(3, 2, strides=2, activation="tanh",
                                                       **kw), (2, 3, 3, 2), ["kernel", "bias"]),
    "DepthwiseConv2D": (lambda **kw: L.DepthwiseConv2D(2, depth_multiplier=2,
                                                       activation="tanh", **kw),
                        (2, 4, 4, 2), ["depthwise", "bias"]),
    "SeparableConv2D": (lambda **kw: L.SeparableConv2D(3, 2, activation="tanh", **kw),
                        (2, 4, 4, 2), ["depthwise_kernel", "pointwise_kernel", "bias"]),
}
ARGS = {"kernel": "kernel_regularizer", "bias": "bias_regularizer",
        "depthwise": "depthwise_regularizer", "depthwise_kernel": "depthwise_regularizer",
        "pointwise_kernel": "pointwise_regularizer"}


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_weight_regularizers_add_their_gradient(name):
    """Each regularized weight moves by ``-lr * grad(penalty)`` more than without it, and
    the loss grows by the penalty; the config names the argument as Keras does."""
    make, shape, weights = CONVS[name]
    regs = {ARGS[w]: R.L2(0.1 * (i + 1)) for i, w in enumerate(weights)}
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    models = []
    for kwargs in ({}, regs):
        tn.set_seed(3)
        layer = make(**kwargs)
        model = tn.Sequential([tn.Input(shape[1:]), layer])
        y = np.zeros(model.output_shape[1:], np.float32)[None].repeat(shape[0], 0)
        model.compile(optimizer=tn.optimizers.SGD(0.5), loss="mse")
        before = [p.value.copy() for p in layer.parameters()]
        models.append((layer, model.train_on_batch(x, y), before))
    (plain, loss0, start), (reg, loss1, start1) = models
    for a, b in zip(start, start1):
        np.testing.assert_array_equal(a, b)
    penalty = sum(0.1 * (i + 1) * np.sum(start[i].astype(np.float64) ** 2)
                  for i in range(len(weights)))
    assert loss1 - loss0 == pytest.approx(penalty, rel=1e-5)
    for i, (p0, p1) in enumerate(zip(plain.parameters(), reg.parameters())):
        np.testing.assert_allclose(p1.value - p0.value, -0.5 * 0.2 * (i + 1) * start[i],
                                   rtol=1e-4, atol=1e-6)
    config = reg.get_config()
    for arg, r in regs.items():
        assert config[arg] == R.serialize(r)
    assert config["activity_regularizer"] is None
    again = type(reg).from_config(config)
    assert again.get_config() == config


@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_activity_regularizer_gradient_by_finite_differences(name):
    """With a zero output gradient, backward gives the activity penalty's gradient alone:
    it matches central differences of ``layer.losses`` (the penalty / batch)."""
    make, shape, _ = CONVS[name]
    tn.set_seed(5)
    layer = make(activity_regularizer=R.L2(0.3))
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    out = np.asarray(layer(x))
    (value,) = layer.losses
    assert float(value) == pytest.approx(0.3 * np.sum(out.astype(np.float64) ** 2) / shape[0],
                                         rel=1e-5)
    dx = np.asarray(layer.backward(np.zeros_like(out)))

    def penalty(xx):
        layer(xx.astype(np.float32))
        return float(layer.losses[0])

    flat = x.reshape(-1)
    for i in range(0, flat.size, max(1, flat.size // 7)):
        keep = flat[i]
        flat[i] = keep + 1e-2
        up = penalty(x)
        flat[i] = keep - 1e-2
        down = penalty(x)
        flat[i] = keep
        assert (up - down) / 2e-2 == pytest.approx(dx.reshape(-1)[i], rel=2e-2, abs=2e-4)


# -- add_loss ----------------------------------------------------------------------------------
class ActivityRegularizationLayer(L.Layer):  # the keras-io guide's example
    def __init__(self, rate=1e-2):
        super().__init__()
        self.rate = rate

    def call(self, inputs):
        self.add_loss(self.rate * ops.mean(inputs))
        return inputs


class OuterLayer(L.Layer):
    def __init__(self):
        super().__init__()
        self.activity_reg = ActivityRegularizationLayer(1e-2)

    def call(self, inputs):
        return self.activity_reg(inputs)


class OuterLayerWithKernelRegularizer(L.Layer):
    def __init__(self):
        super().__init__()
        self.dense = L.Dense(32, kernel_regularizer=R.l2(1e-3))

    def call(self, inputs):
        return self.dense(inputs)


def test_the_guides_layer_losses():
    layer = OuterLayer()
    assert len(layer.losses) == 0  # never called
    layer(ops.zeros((1, 1)))
    assert len(layer.losses) == 1
    layer(ops.zeros((1, 1)))
    assert len(layer.losses) == 1  # reset at each call
    layer.activity_reg(ops.ones((1, 1)))  # called on its own, then inside its caller:
    layer(ops.zeros((1, 1)))              # each call's loss listed once
    assert len(layer.losses) == 1 and layer.activity_reg.losses[0] is layer.losses[0]
    outer = OuterLayerWithKernelRegularizer()
    outer(ops.zeros((1, 1)))
    (value,) = outer.losses
    kernel = outer.dense.kernel.value.astype(np.float64)
    assert float(value) == pytest.approx(1e-3 * np.sum(kernel ** 2), rel=1e-6)


def test_the_guides_add_loss_model_trains_with_and_without_a_compiled_loss():
    inputs = tn.Input(shape=(3,))
    model = tn.Model(inputs, ActivityRegularizationLayer()(inputs))
    rng = np.random.default_rng(0)
    model.compile(optimizer="adam", loss="mse")
    model.fit(rng.random((2, 3)), rng.random((2, 3)), verbose=0)
    model.compile(optimizer="adam")  # the model has a loss to minimize: its add_loss
    history = model.fit(rng.random((2, 3)), rng.random((2, 3)), verbose=0)
    assert np.isfinite(history.history["loss"][0])


def add_loss_model(loss):
    dense = L.Dense(2)
    inp = tn.Input((3,))
    model = tn.Model(inp, ActivityRegularizationLayer(0.5)(dense(inp)))
    dense.set_weights([W, B])
    model.compile(optimizer=tn.optimizers.SGD(0.1), loss=loss)
    return model, dense


def test_add_loss_is_added_unscaled_and_backpropagated_as_keras():
    model, dense = add_loss_model("mse")
    x, y, w, b = (a.astype(np.float64) for a in (X, Y, W, B))
    out = x @ w + b
    loss = np.mean((out - y) ** 2) + 0.5 * np.mean(out)
    dout = 2 * (out - y) / out.size + 0.5 / out.size
    assert model.evaluate(X, Y, verbose=0) == pytest.approx(loss, rel=1e-6)
    assert model.train_on_batch(X, Y) == pytest.approx(loss, rel=1e-6)
    np.testing.assert_allclose(dense.kernel.value, w - 0.1 * x.T @ dout, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dense.bias.value, b - 0.1 * dout.sum(0), rtol=1e-6, atol=1e-7)
    assert loss == pytest.approx(1.1380665302276611, rel=1e-6)  # Keras 3.15.1
    np.testing.assert_allclose(dense.bias.value, [-0.01875000260770321, 0.07781250029802322],
                               rtol=1e-6)


def test_add_loss_alone_as_keras():
    model, dense = add_loss_model(None)
    loss = model.train_on_batch(X, Y)
    assert loss == pytest.approx(0.13359376788139343, rel=1e-6)  # Keras 3.15.1
    np.testing.assert_allclose(dense.kernel.value, [[0.28125, -0.21875], [0.0859375, 0.3859375],
                                                    [-0.4921875, 0.2578125]], rtol=1e-6)
    np.testing.assert_allclose(dense.bias.value, [-0.025, 0.075], rtol=1e-6)


class TwoLosses(L.Layer):
    """Adds a scalar and a vector (Keras sums a non-scalar added loss)."""

    def call(self, inputs):
        self.add_loss(ops.sum(ops.square(inputs)) * 0.1)
        self.add_loss(ops.mean(inputs, axis=0))
        return ops.tanh(inputs)


def test_several_added_losses_are_summed():
    model = tn.Sequential([tn.Input((3,)), TwoLosses()])
    model.compile(optimizer=tn.optimizers.SGD(0.0), loss="mse")
    x, y = X.astype(np.float64), np.zeros((4, 3))
    expected = (np.mean(np.tanh(x) ** 2) + 0.1 * np.sum(x ** 2) + np.sum(np.mean(x, axis=0)))
    assert model.train_on_batch(X, y) == pytest.approx(expected, rel=1e-6)


class SelfRegularized(tn.Model):
    """A subclassed model adding a loss in its own call() (the guide's VAE pattern)."""

    def __init__(self):
        super().__init__()
        self.dense = L.Dense(2)

    def call(self, inputs):
        out = self.dense(inputs)
        self.add_loss(0.5 * ops.mean(ops.square(out)))
        return out


def test_a_subclassed_model_trains_on_its_added_loss_alone():
    model = SelfRegularized()
    model.compile(optimizer=tn.optimizers.SGD(0.1))
    model(X)
    model.dense.set_weights([W, B])
    x, w, b = (a.astype(np.float64) for a in (X, W, B))
    out = x @ w + b
    assert model.train_on_batch(X, Y) == pytest.approx(0.5 * np.mean(out ** 2), rel=1e-6)
    np.testing.assert_allclose(model.dense.kernel.value, w - 0.1 * x.T @ (out / out.size),
                               rtol=1e-6, atol=1e-7)
    assert len(model.losses) == 1


def test_no_loss_anywhere_is_refused():
    model = tn.Sequential([tn.Input((3,)), L.Dense(2)])
    model.compile(optimizer="sgd")
    with pytest.raises(ValueError, match="no loss to compute; pass loss= to compile"):
        model.fit(X, Y, verbose=0)
    plain = tn.Sequential([tn.Input((3,)), L.Lambda(lambda t: ops.tanh(t))])
    plain.compile(optimizer="sgd")  # a call() layer may add a loss: refused at the step
    with pytest.raises(ValueError, match="no loss to compute: compile\\(\\) got no loss and "
                                         "no layer added one"):
        plain.train_on_batch(X, Y)


def test_every_added_loss_reaches_the_weights_by_finite_differences():
    """A shared Dense with an activity regularizer (its penalty counted per call, as
    Keras), an L2 kernel, an add_loss layer: SGD(1.0) moves each weight by its gradient,
    which matches central differences of ``evaluate``'s loss."""
    tn.set_seed(1)
    shared = L.Dense(3, activation="tanh", activity_regularizer=R.L2(0.2))
    head = L.Dense(2, kernel_regularizer=R.L2(0.3))
    inp = tn.Input((3,))
    a = shared(inp)
    b = shared(L.Dense(3, activation="tanh")(inp))
    out = head(ActivityRegularizationLayer(0.7)(L.Add()([a, b])))
    model = tn.Model(inp, out)
    model.compile(optimizer=tn.optimizers.SGD(1.0), loss="mse")
    params = model.parameters()
    start = [p.value.copy() for p in params]

    def loss():
        return model.evaluate(X, Y, verbose=0, batch_size=4)

    fd = []
    for p in params:
        flat = p.value.reshape(-1)
        g = np.zeros(flat.size)
        for i in range(flat.size):
            keep = flat[i]
            flat[i] = keep + 1e-2
            up = loss()
            flat[i] = keep - 1e-2
            down = loss()
            flat[i] = keep
            g[i] = (up - down) / 2e-2
        fd.append(g.reshape(p.shape))
    model.train_on_batch(X, Y)
    for p, s, g in zip(params, start, fd):
        np.testing.assert_allclose(s - p.value, g, rtol=2e-2, atol=2e-4, err_msg=p.path)


# -- custom regularizers, saving ---------------------------------------------------------------
@tn.saving.register_keras_serializable(package="tests.regularizers")
class SumOfCubes(R.Regularizer):
    def __init__(self, rate=0.1):
        self.rate = rate

    def __call__(self, x):
        return self.rate * ops.sum(x * x * x)

    def get_config(self):
        return {"rate": self.rate}


@tn.saving.register_keras_serializable(package="tests.regularizers")
def sum_of_squares(x):
    return 0.05 * ops.sum(ops.square(x))


def test_custom_regularizers_get_their_gradient_from_ops():
    w = np.array([[0.5, -1.0], [0.25, 2.0]], np.float32)
    np.testing.assert_allclose(R.penalty_grad(SumOfCubes(0.1), w), 0.3 * w ** 2, rtol=1e-6)
    np.testing.assert_allclose(R.penalty_grad(sum_of_squares, w), 0.1 * w, rtol=1e-6)
    layer = L.Dense(2, kernel_regularizer=SumOfCubes(0.1), bias_regularizer=sum_of_squares)
    model = one_dense(layer)
    x, y, wk, b = (a.astype(np.float64) for a in (X, Y, W, B))
    pred = x @ wk + b
    dpred = 2 * (pred - y) / pred.size
    model.train_on_batch(X, Y)
    np.testing.assert_allclose(layer.kernel.value, wk - 0.1 * (x.T @ dpred + 0.3 * wk ** 2),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(layer.bias.value, b - 0.1 * (dpred.sum(0) + 0.1 * b),
                               rtol=1e-6, atol=1e-7)


def test_a_model_with_regularizers_saves_and_loads(tmp_path):
    model = tn.Sequential([
        tn.Input((3,)),
        L.Dense(4, activation="tanh", kernel_regularizer="l2", bias_regularizer=R.L1(0.2),
                activity_regularizer=SumOfCubes(0.01)),
        L.Dense(2, kernel_regularizer=sum_of_squares)])
    model.compile(optimizer=tn.optimizers.SGD(0.1), loss="mse")
    model.fit(X, Y, epochs=2, verbose=0)
    model.save(tmp_path / "m.safetensors")
    again = tn.load_model(tmp_path / "m.safetensors")
    first = again.layers[0]
    assert isinstance(first.kernel_regularizer, R.L2)
    assert first.bias_regularizer.get_config() == {"l1": 0.20000000298023224}
    assert isinstance(first.activity_regularizer, SumOfCubes)
    assert again.layers[1].kernel_regularizer is sum_of_squares
    assert again.evaluate(X, Y, verbose=0) == model.evaluate(X, Y, verbose=0)
    assert again.train_on_batch(X, Y) == model.train_on_batch(X, Y)
    np.testing.assert_array_equal(again.get_weights()[0], model.get_weights()[0])


def test_an_unregistered_regularizer_cannot_be_saved(tmp_path):
    model = tn.Sequential([tn.Input((3,)), L.Dense(2, kernel_regularizer=lambda w: ops.sum(w))])
    with pytest.raises(ValueError, match="Dense: kernel_regularizer: cannot serialize the "
                                         "function '<lambda>': register it with "
                                         "@tinynet.saving.register_keras_serializable"):
        model.save(tmp_path / "m.safetensors")
