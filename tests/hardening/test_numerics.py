"""Numerical edge cases: constant groups, extreme magnitudes, NaN, non-finite losses and
huge logits.

* A constant group normalizes to zero before the affine, so every normalization layer
  outputs exactly ``beta`` (for any constant, 0 to 3e38, and for batch norm in training).
* Magnitudes: inputs of size 1e-30 (spread 1e-30) and up to 1e18 give the float64
  reference's output; a mean that dwarfs the spread (1e4 or 1e6 + unit noise) still gives
  the right variance. Spreads of 1e19 and more overflow the float32 squares of the
  shifted-sum statistics; those groups fall back to float64 sums and still match.
* NaN in the input reaches the output (and the backward runs) in dense, conv, pooling,
  activation and normalization layers, confined to what the NaN feeds.
* A non-finite loss stops ``fit`` / ``train_on_batch`` with ``FloatingPointError`` before
  the update: weights, optimizer state and BN moving statistics are bitwise those after
  the last finite step.
* Softmax and the crossentropies are stable for logits of 1e4 (and up to 3e38).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tinynet as tn
from tinynet import losses, tuning
from tinynet.callbacks import Callback
from tinynet.layers import (ELU, Activation, AveragePooling2D, BatchNormalization, Conv2D,
                            Dense, Dropout, GlobalAveragePooling2D, GlobalMaxPooling2D,
                            GroupNormalization, InstanceNormalization, LayerNormalization,
                            LeakyReLU, MaxPooling2D, ReLU, Sigmoid, Softmax, Tanh)

NAN = np.float32("nan")
SHAPE = (2, 3, 3, 4)


@pytest.fixture(autouse=True)
def _clean_state():
    tuning.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NaN / overflow in NumPy references
        yield
    tuning.reset()


def _norm_layers():
    """(id, factory, axes of the statistics) for every normalization layer."""
    return [
        ("batch", lambda: BatchNormalization(), (0, 1, 2)),
        ("batch-axis1", lambda: BatchNormalization(axis=1), (0, 2, 3)),
        ("group2", lambda: GroupNormalization(2), None),
        ("group1", lambda: GroupNormalization(1), (1, 2, 3)),
        ("instance", lambda: InstanceNormalization(), (1, 2)),
        ("layer-last", lambda: LayerNormalization(), (3,)),
        ("layer-all", lambda: LayerNormalization(axis=(1, 2, 3)), (1, 2, 3)),
    ]


NORMS = _norm_layers()
NORM_IDS = [n[0] for n in NORMS]


def _with_affine(make, shape, seed=0):
    """A built layer with random gamma and beta (and BN moving statistics)."""
    layer = make()
    layer.build((None, *shape[1:]))
    rng = np.random.default_rng(seed)
    for p in layer.parameters():
        p.assign(rng.uniform(0.5, 2.0, p.shape) if p.name in ("gamma", "moving_variance")
                 else rng.standard_normal(p.shape))
    return layer


def _beta_broadcast(layer, shape):
    """beta as the layer adds it, broadcast to ``shape``."""
    beta = layer.beta.value
    if isinstance(layer, LayerNormalization):
        full = [1] * len(shape)
        for axis, size in zip(layer._axes, layer._dims):
            full[axis] = size
        return np.broadcast_to(beta.reshape(full), shape)
    full = [1] * len(shape)
    full[layer._axis] = shape[layer._axis]
    return np.broadcast_to(beta.reshape(full), shape)


def _reference(x, layer, axes):
    """float64 normalization (before the affine) over ``axes`` (groups for GN)."""
    x = x.astype(np.float64)
    if axes is None:  # group norm: groups of contiguous channels
        g = layer._num_groups
        v = x.reshape(*x.shape[:-1], g, x.shape[-1] // g)
        red = tuple(range(1, v.ndim - 2)) + (v.ndim - 1,)
        m, s = v.mean(axis=red, keepdims=True), v.var(axis=red, keepdims=True)
        return ((v - m) / np.sqrt(s + layer.epsilon)).reshape(x.shape)
    m, s = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(s + layer.epsilon)


# ============================================================================================
# constant inputs
# ============================================================================================
@pytest.mark.parametrize("value", [0.0, 1.0, -7.25, 1e-30, 1e30, -1e30, 3e38, 1e-45])
@pytest.mark.parametrize("_id, make, axes", NORMS, ids=NORM_IDS)
def test_constant_input_gives_beta(_id, make, axes, value):
    layer = _with_affine(make, SHAPE)
    x = np.full(SHAPE, value, dtype=np.float32)
    y = np.asarray(layer(x, training=True))
    assert np.isfinite(y).all()
    np.testing.assert_array_equal(y, _beta_broadcast(layer, SHAPE))
    dx = np.asarray(layer.backward(np.ones(SHAPE, np.float32)))
    assert np.isfinite(dx).all()


@pytest.mark.parametrize("_id, make, axes", [n for n in NORMS if n[0] != "batch-axis1"],
                         ids=[i for i in NORM_IDS if i != "batch-axis1"])
def test_piecewise_constant_groups_give_beta(_id, make, axes):
    """Every sample (and, for GN/IN, every group) a different constant, far apart."""
    layer = _with_affine(make, SHAPE)
    rng = np.random.default_rng(1)
    if isinstance(layer, BatchNormalization):  # one constant per channel
        x = np.broadcast_to(rng.uniform(-1e6, 1e6, SHAPE[-1]), SHAPE)
    elif isinstance(layer, LayerNormalization):  # one constant per normalized slice
        keep = [1 if a in layer._axes else s for a, s in enumerate(SHAPE)]
        x = np.broadcast_to(rng.uniform(-1e6, 1e6, keep), SHAPE)
    else:  # one constant per (sample, group)
        g = layer._num_groups
        per_group = rng.uniform(-1e6, 1e6, (SHAPE[0], 1, 1, g))
        x = np.repeat(np.broadcast_to(per_group, (*SHAPE[:3], g)), SHAPE[-1] // g, axis=-1)
    x = np.ascontiguousarray(x, dtype=np.float32)
    y = np.asarray(layer(x, training=True))
    np.testing.assert_array_equal(y, _beta_broadcast(layer, SHAPE))


def test_batch_norm_inference_on_constant_input_uses_moving_statistics():
    """Inference normalizes with the moving statistics, so a constant input is *not* beta:
    it is ``(c - moving_mean) / sqrt(moving_variance + eps) * gamma + beta``."""
    layer = _with_affine(lambda: BatchNormalization(), SHAPE)
    x = np.full(SHAPE, 2.0, dtype=np.float32)
    y = np.asarray(layer(x, training=False)).astype(np.float64)
    mm, mv = layer.moving_mean.value.astype(np.float64), layer.moving_variance.value
    want = ((2.0 - mm) / np.sqrt(mv.astype(np.float64) + layer.epsilon)
            * layer.gamma.value + layer.beta.value)
    np.testing.assert_allclose(y, np.broadcast_to(want, SHAPE), rtol=1e-5, atol=1e-5)


# ============================================================================================
# very large and very small magnitudes
# ============================================================================================
def _normalized(layer, x):
    """The layer's output with the affine undone: (y - beta) / gamma."""
    y = np.asarray(layer(x, training=True)).astype(np.float64)
    gamma = _beta_like(layer, layer.gamma.value, x.shape)
    return (y - _beta_broadcast(layer, x.shape)) / gamma


def _beta_like(layer, vec, shape):
    saved = layer.beta.value.copy()
    layer.beta.value[...] = vec
    try:
        return np.array(_beta_broadcast(layer, shape), dtype=np.float64)
    finally:
        layer.beta.value[...] = saved


@pytest.mark.parametrize("scale", [1e-30, 1e-20, 1e-3, 1.0, 1e3, 1e10, 1e15, 1e18])
@pytest.mark.parametrize("_id, make, axes", NORMS, ids=NORM_IDS)
def test_magnitudes_match_float64_reference(_id, make, axes, scale):
    """x = scale * N(0, 1): at 1e-30 the variance is far below epsilon (output ~ beta),
    from 1e-3 up the output is the normalized input; always finite and as float64 says."""
    layer = _with_affine(make, SHAPE)
    x = (np.random.default_rng(2).standard_normal(SHAPE) * scale).astype(np.float32)
    got = _normalized(layer, x)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, _reference(x, layer, axes), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("_id, make, axes", NORMS, ids=NORM_IDS)
def test_tiny_inputs_with_tiny_spread_are_finite(_id, make, axes):
    """Values of 1e-30 with spread 1e-30: the squares underflow, epsilon dominates."""
    layer = _with_affine(make, SHAPE)
    rng = np.random.default_rng(3)
    x = ((1.0 + rng.uniform(0, 1, SHAPE)) * 1e-30).astype(np.float32)
    y = np.asarray(layer(x, training=True)).astype(np.float64)
    assert np.isfinite(y).all()
    np.testing.assert_allclose(y, _beta_broadcast(layer, SHAPE), atol=1e-25)
    assert np.isfinite(np.asarray(layer.backward(np.ones(SHAPE, np.float32)))).all()


@pytest.mark.parametrize("offset", [1e4, 1e6])
@pytest.mark.parametrize("_id, make, axes", NORMS, ids=NORM_IDS)
def test_mean_that_dwarfs_the_spread(_id, make, axes, offset):
    """offset + N(0, 1): the shifted sums give the right variance (the normalized output
    has unit spread); each output is within ulp(offset) / (2 * std) of the float64
    reference: the rounding of the float32 mean."""
    layer = _with_affine(make, SHAPE)
    x = (np.random.default_rng(4).standard_normal(SHAPE) + offset).astype(np.float32)
    got = _normalized(layer, x)
    want = _reference(x, layer, axes)
    std = np.sqrt(np.var(x.astype(np.float64), axis=axes) if axes is not None else
                  np.var(x.astype(np.float64).reshape(SHAPE[0], -1, layer._num_groups,
                                                      SHAPE[-1] // layer._num_groups),
                         axis=(1, 3)))
    tol = 0.6 * float(np.spacing(np.float32(offset))) / float(np.min(std)) + 1e-4
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    assert abs(np.std(got) - np.std(want)) < 1e-3


@pytest.mark.parametrize("_id, make, axes", NORMS, ids=NORM_IDS)
def test_huge_spread_matches_float64_reference(_id, make, axes):
    layer = _with_affine(make, SHAPE)
    x = (np.random.default_rng(5).standard_normal(SHAPE) * 1e30).astype(np.float32)
    np.testing.assert_allclose(_normalized(layer, x), _reference(x, layer, axes),
                               rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("_id, make, axes", NORMS, ids=NORM_IDS)
def test_huge_spread_output_is_finite(_id, make, axes):
    """Even past that limit nothing is inf or NaN (the output is beta)."""
    layer = _with_affine(make, SHAPE)
    x = (np.random.default_rng(5).standard_normal(SHAPE) * 1e30).astype(np.float32)
    assert np.isfinite(np.asarray(layer(x, training=True))).all()
    assert np.isfinite(np.asarray(layer.backward(np.ones(SHAPE, np.float32)))).all()


# ============================================================================================
# NaN propagates
# ============================================================================================
def _nan_input(shape=SHAPE, where=None):
    x = np.random.default_rng(6).standard_normal(shape).astype(np.float32)
    x[where if where is not None else (0,) + (1,) * (len(shape) - 1)] = NAN
    return x


@pytest.mark.parametrize("_id, make, axes", NORMS, ids=NORM_IDS)
def test_nan_fills_its_normalization_group(_id, make, axes):
    layer = _with_affine(make, SHAPE)
    x = _nan_input()
    y = np.asarray(layer(x, training=True))
    # the NaN reaches exactly the outputs that share its statistics
    if axes is None:
        g = layer._num_groups
        tainted = np.isnan(x).reshape(*SHAPE[:-1], g, -1).any(axis=(1, 2, 4), keepdims=True)
        tainted = np.broadcast_to(tainted, (*SHAPE[:-1], g, SHAPE[-1] // g)).reshape(SHAPE)
    else:
        tainted = np.broadcast_to(np.isnan(x).any(axis=axes, keepdims=True), SHAPE)
    np.testing.assert_array_equal(np.isnan(y), tainted)
    layer.backward(np.ones(SHAPE, np.float32))  # runs


def test_nan_in_dense_taints_only_its_row():
    layer = Dense(3, seed=0)
    x = np.random.default_rng(7).standard_normal((4, 5)).astype(np.float32)
    clean = np.asarray(layer(x)).copy()
    x[2, 3] = NAN
    y = np.asarray(layer(x))
    assert np.isnan(y[2]).all()
    np.testing.assert_array_equal(np.delete(y, 2, axis=0), np.delete(clean, 2, axis=0))
    dx = np.asarray(layer.backward(np.ones((4, 3), np.float32)))
    assert np.isnan(layer.kernel.grad).any() and np.isfinite(dx).all()


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_nan_in_conv_taints_its_receptive_field(padding):
    layer = Conv2D(2, 3, padding=padding, seed=0)
    x = _nan_input((1, 5, 5, 2), (0, 2, 3, 1))
    y = np.asarray(layer(x))
    # the outputs whose window covers the NaN pixel: a conv of the NaN indicator
    probe = Conv2D(1, 3, padding=padding, use_bias=False)
    probe.build((None, 5, 5, 2))
    probe.kernel.assign(np.ones(probe.kernel.shape))
    covered = np.asarray(probe(np.isnan(x).astype(np.float32)))[..., 0] > 0
    np.testing.assert_array_equal(np.isnan(y).any(axis=-1), covered)
    assert np.isnan(y[covered]).all()
    layer.backward(np.ones(y.shape, np.float32))


@pytest.mark.parametrize("layer", [MaxPooling2D(), AveragePooling2D(),
                                   MaxPooling2D(3, 1, "same"), AveragePooling2D(3, 1, "same")],
                         ids=["max", "average", "max-same", "average-same"])
@pytest.mark.parametrize("where", [(0, 0, 0, 0), (0, 1, 1, 0), (0, 3, 2, 1)],
                         ids=["corner", "window-end", "inner"])
def test_nan_in_pooling_taints_its_windows(layer, where):
    x = np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2)
    x[where] = NAN
    y = np.asarray(layer(x))
    covered = np.asarray(AveragePooling2D.from_config(
        {**layer.get_config(), "name": "probe"})(np.isnan(x).astype(np.float32))) > 0
    np.testing.assert_array_equal(np.isnan(y), covered)
    layer.backward(np.ones(y.shape, np.float32))


@pytest.mark.parametrize("cls", [GlobalAveragePooling2D, GlobalMaxPooling2D])
def test_nan_in_global_pooling_taints_its_channel(cls):
    x = _nan_input()
    y = np.asarray(cls()(x))
    np.testing.assert_array_equal(np.isnan(y), np.isnan(x).any(axis=(1, 2)))


ACTIVATIONS = [("leaky_relu", lambda: LeakyReLU()), ("elu", lambda: ELU()),
               ("sigmoid", Sigmoid), ("tanh", Tanh), ("gelu", lambda: Activation("gelu")),
               ("silu", lambda: Activation("silu")), ("linear", lambda: Activation("linear")),
               ("activation-elu", lambda: Activation("elu")),
               ("activation-leaky", lambda: Activation("leaky_relu"))]
RELUS = [("relu", lambda: ReLU()), ("activation-relu", lambda: Activation("relu")),
         ("relu-capped", lambda: ReLU(max_value=1.0)),
         ("relu-threshold", lambda: ReLU(threshold=0.5)),
         ("dense-relu", lambda: Dense(4, "relu", seed=0))]


def _elementwise_nan_check(make):
    x = _nan_input((3, 4))
    layer = make()
    y = np.asarray(layer(x))
    if isinstance(layer, Dense):
        np.testing.assert_array_equal(np.isnan(y).any(axis=1), np.isnan(x).any(axis=1))
    else:
        np.testing.assert_array_equal(np.isnan(y), np.isnan(x))
    layer.backward(np.ones(y.shape, np.float32))


@pytest.mark.parametrize("_id, make", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_nan_through_activations(_id, make):
    _elementwise_nan_check(make)


@pytest.mark.parametrize("_id, make", RELUS, ids=[a[0] for a in RELUS])
def test_nan_through_relu(_id, make):
    _elementwise_nan_check(make)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_nan_through_softmax_fills_its_row(axis):
    x = _nan_input((3, 4))
    layer = Softmax(axis=axis)
    y = np.asarray(layer(x))
    np.testing.assert_array_equal(np.isnan(y),
                                  np.broadcast_to(np.isnan(x).any(axis=axis, keepdims=True),
                                                  x.shape))
    layer.backward(np.ones(x.shape, np.float32))


def test_nan_through_dropout_in_training():
    x = _nan_input((3, 4))
    y = np.asarray(Dropout(0.5, seed=0)(x, training=True))
    assert np.isnan(y[0, 1]) or y[0, 1] == 0.0  # dropped entries are 0, kept ones NaN


# ============================================================================================
# a non-finite loss stops fit before the update
# ============================================================================================
class _Snapshots(Callback):
    """Copies every weight and optimizer slot after each finished batch."""

    def __init__(self):
        super().__init__()
        self.weights, self.slots, self.iterations = None, None, None

    def on_train_batch_end(self, batch, logs=None):
        self.weights = self.model.get_weights()
        self.slots = _slot_copies(self.model.optimizer)
        self.iterations = self.model.optimizer.iterations


def _slot_copies(optimizer):
    return [a.copy() for _, slots in optimizer._slots.values() for a in slots.values()]


def _model(optimizer="adam"):
    tn.set_seed(11)
    model = tn.Sequential([tn.layers.Input((4, 4, 2)), Conv2D(3, 3, padding="same"),
                           BatchNormalization(), Activation("tanh"), GroupNormalization(3),
                           tn.layers.Flatten(), Dense(2)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


def _data(n=12, seed=8):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, 4, 4, 2)).astype(np.float32),
            rng.standard_normal((n, 2)).astype(np.float32))


@pytest.mark.parametrize("poison", ["x-nan", "y-nan", "y-inf", "x-huge"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_non_finite_loss_stops_fit_before_the_update(poison, optimizer):
    x, y = _data()
    bad = 9  # the third batch of 4 in the first epoch... and a later epoch below
    if poison == "x-nan":
        x[bad, 1, 2, 0] = NAN
    elif poison == "y-nan":
        y[bad, 1] = NAN
    elif poison == "y-inf":
        y[bad, 0] = np.inf
    else:
        x[bad] = 3e38  # the conv overflows to inf, the loss to inf or nan
    model = _model(optimizer)
    snap = _Snapshots()
    with pytest.raises(FloatingPointError,
                       match=re.escape("Sequential.fit: epoch 1, batch 3: the loss is")):
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[snap])
    assert snap.iterations == 2 == model.optimizer.iterations
    for got, want in zip(model.get_weights(), snap.weights):  # BN moving stats included
        assert got.tobytes() == want.tobytes()
    for got, want in zip(_slot_copies(model.optimizer), snap.slots):
        assert got.tobytes() == want.tobytes()


def test_non_finite_loss_in_a_later_epoch_names_it():
    x, y = _data()
    model = _model()
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    x[5, 0, 0, 0] = NAN
    snap = _Snapshots()
    with pytest.raises(FloatingPointError, match=re.escape("epoch 1, batch 2: the loss is nan")):
        model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[snap])
    for got, want in zip(model.get_weights(), snap.weights):
        assert got.tobytes() == want.tobytes()


def test_non_finite_loss_stops_train_on_batch_with_weights_untouched():
    x, y = _data(4)
    model = _model()
    model.train_on_batch(x, y)
    before, slots = model.get_weights(), _slot_copies(model.optimizer)
    y[0, 0] = NAN
    with pytest.raises(FloatingPointError, match="Sequential.train_on_batch: the loss is nan"):
        model.train_on_batch(x, y)
    assert model.optimizer.iterations == 1
    for got, want in zip(model.get_weights(), before):
        assert got.tobytes() == want.tobytes()
    for got, want in zip(_slot_copies(model.optimizer), slots):
        assert got.tobytes() == want.tobytes()


def test_training_goes_on_bitwise_after_a_rejected_batch():
    """A rejected step leaves no trace: training on afterwards equals never having tried."""
    x, y = _data(4)
    bad_y = y.copy()
    bad_y[1, 1] = NAN
    a, b = _model(), _model()
    a.train_on_batch(x, y)
    b.train_on_batch(x, y)
    with pytest.raises(FloatingPointError):
        a.train_on_batch(x, bad_y)
    a.train_on_batch(x, y)
    b.train_on_batch(x, y)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        assert wa.tobytes() == wb.tobytes()


# ============================================================================================
# softmax and crossentropy with huge logits
# ============================================================================================
@pytest.mark.parametrize("big", [1e4, 1e30, 3e38])
def test_softmax_layer_is_stable_for_huge_logits(big):
    z = np.array([[big, 0.0, -big], [0.0, big, big], [-big, -big, -big]], np.float32)
    layer = Softmax()
    y = np.asarray(layer(z))
    np.testing.assert_allclose(y, [[1, 0, 0], [0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]],
                               rtol=0, atol=1e-7)
    g = np.array([[1.0, 2.0, 3.0]] * 3, np.float32)
    dx = np.asarray(layer.backward(g))
    # softmax backward: y * (g - sum(g * y))
    want = y * (g - np.sum(g * y, axis=-1, keepdims=True))
    assert np.isfinite(dx).all()
    np.testing.assert_allclose(dx, want, atol=1e-6)


@pytest.mark.parametrize("big", [1e4, 1e30])
@pytest.mark.parametrize("sparse", [False, True])
def test_categorical_crossentropy_from_logits_is_stable(big, sparse):
    z = np.array([[big, 0.0, -big], [0.0, big, big], [big, 0.0, 0.0]], np.float32)
    labels = np.array([1, 0, 0])
    loss = (losses.SparseCategoricalCrossentropy(from_logits=True) if sparse
            else losses.CategoricalCrossentropy(from_logits=True))
    t = labels if sparse else np.eye(3, dtype=np.float32)[labels]
    value, grad = loss.value_and_grad(t, z)
    # rows: -log_softmax at the label = big, big + log 2, 0 (exp(-big) vanishes)
    big = float(np.float32(big))  # the logit as stored
    want = (big + (big + np.log(2.0)) + 0.0) / 3
    assert np.isfinite(value) and np.isfinite(grad).all()
    assert value == pytest.approx(want, rel=1e-12)
    softmax = np.array([[1, 0, 0], [0, 0.5, 0.5], [1, 0, 0]])
    np.testing.assert_allclose(grad, (softmax - np.eye(3)[labels]) / 3, atol=1e-7)


@pytest.mark.parametrize("big", [1e4, 1e30])
def test_binary_crossentropy_from_logits_is_stable(big):
    z = np.array([[big], [-big], [big], [-big]], np.float32)
    t = np.array([[0.0], [1.0], [1.0], [0.0]], np.float32)
    value, grad = losses.BinaryCrossentropy(from_logits=True).value_and_grad(t, z)
    assert value == pytest.approx(float(np.float32(big)) / 2, rel=1e-12)  # 2 rows cost big
    np.testing.assert_allclose(grad, [[0.25], [-0.25], [0.0], [0.0]], atol=1e-7)


@pytest.mark.parametrize("loss", [losses.CategoricalCrossentropy(),
                                  losses.SparseCategoricalCrossentropy()],
                         ids=["categorical", "sparse"])
def test_crossentropy_on_saturated_softmax_is_clipped_and_finite(loss):
    """Probabilities from a softmax of 1e4 logits are exactly 0 and 1: the clip to
    [1e-7, 1 - 1e-7] keeps the loss at -log(1e-7) and the gradient finite."""
    p = np.asarray(Softmax()(np.array([[1e4, 0.0], [0.0, 1e4]], np.float32)))
    labels = np.array([1, 1])
    t = labels if isinstance(loss, losses.SparseCategoricalCrossentropy) else np.eye(2)[labels]
    value, grad = loss.value_and_grad(t, p)
    assert value == pytest.approx(-np.log(1e-7) / 2, rel=1e-6)
    assert np.isfinite(grad).all()


def test_fit_with_huge_logits_stays_finite():
    """A model whose logits reach 1e4 trains with finite losses (from_logits=True)."""
    tn.set_seed(12)
    model = tn.Sequential([tn.layers.Input((3,)), Dense(4)])
    model.compile(optimizer="sgd", loss=losses.SparseCategoricalCrossentropy(from_logits=True))
    model.layers[0].kernel.assign(np.full((3, 4), 1e3, np.float32)
                                  * np.array([1, -1, 0.5, -0.5], np.float32))
    x = np.random.default_rng(9).uniform(1, 4, (8, 3)).astype(np.float32)
    y = np.arange(8) % 4
    history = model.fit(x, y, batch_size=4, epochs=2, verbose=0, shuffle=False)
    assert all(np.isfinite(v) and v > 100 for v in history.history["loss"])
