"""Losses: hand values, float64 references, torch parity, finite differences, clipping,
logit stability, sparse label checks, lookup and configs."""

import json
import math
import re

import numpy as np
import pytest

from tinynet import losses
from tinynet.losses import (BinaryCrossentropy, CategoricalCrossentropy, MeanAbsoluteError,
                            MeanSquaredError, SparseCategoricalCrossentropy)
from tinynet.tensor import Tensor

EPS = 1e-7


# -- float64 NumPy references (per-sample then mean, Keras sum_over_batch_size) -----------
def ref_mse(t, p):
    return np.mean(np.mean((t.astype(np.float64) - p) ** 2, axis=-1))


def ref_mae(t, p):
    return np.mean(np.mean(np.abs(t.astype(np.float64) - p), axis=-1))


def ref_bce(t, p, from_logits=False):
    p = p.astype(np.float64)
    if from_logits:
        p = 1.0 / (1.0 + np.exp(-p))
    q = np.clip(p, EPS, 1 - EPS)
    return np.mean(np.mean(-(t * np.log(q) + (1 - t) * np.log(1 - q)), axis=-1))


def ref_cce(t, p, from_logits=False):
    p = p.astype(np.float64)
    if from_logits:
        e = np.exp(p - p.max(-1, keepdims=True))
        p = e / e.sum(-1, keepdims=True)
    else:
        p = p / p.sum(-1, keepdims=True)
    return np.mean(-np.sum(t * np.log(np.clip(p, EPS, 1 - EPS)), axis=-1))


def ref_scce(labels, p, from_logits=False):
    return ref_cce(np.eye(p.shape[-1])[labels], p, from_logits)


def _data(seed=0, shape=(5, 4)):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(shape).astype(np.float32)
    probs = (np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)).astype(np.float32)
    sig = (1 / (1 + np.exp(-logits))).astype(np.float32)
    labels = rng.integers(0, shape[-1], size=shape[:-1])
    binary = (rng.random(shape) > 0.5).astype(np.float32)
    target = rng.standard_normal(shape).astype(np.float32)
    return logits, probs, sig, labels, binary, target


# -- hand-computed values ----------------------------------------------------------------
def test_mse_and_mae_by_hand():
    t = np.array([[0.0, 1.0], [2.0, 3.0]])
    p = np.array([[1.0, 1.0], [2.0, 5.0]])
    # differences p - t = [1, 0, 0, 2]: MSE = (1 + 0 + 0 + 4)/4, gradient 2*d/4
    value, grad = MeanSquaredError().value_and_grad(t, p)
    assert value == 1.25
    np.testing.assert_array_equal(grad, [[0.5, 0.0], [0.0, 1.0]])
    # MAE = (1 + 0 + 0 + 2)/4, gradient sign(d)/4 (0 where equal)
    value, grad = MeanAbsoluteError().value_and_grad(t, p)
    assert value == 0.75
    np.testing.assert_array_equal(grad, [[0.25, 0.0], [0.0, 0.25]])
    assert grad.dtype == np.float32 and grad.shape == p.shape


def test_binary_crossentropy_by_hand():
    # Keras docs example: y_true [[0, 1], [0, 0]], y_pred [[0.6, 0.4], [0.4, 0.6]]
    # = -(log 0.4 + log 0.4 + log 0.6 + log 0.4)/4 = 0.8149245
    value = BinaryCrossentropy()([[0, 1], [0, 0]], [[0.6, 0.4], [0.4, 0.6]])
    assert value == pytest.approx(-(3 * math.log(0.4) + math.log(0.6)) / 4, rel=1e-6)
    assert value == pytest.approx(0.815, abs=5e-4)
    # logits: x = 0 gives log 2 whatever the label; gradient sigmoid(0) - t = 0.5 - t over n=2
    value, grad = BinaryCrossentropy(from_logits=True).value_and_grad([[1.0, 0.0]], [[0.0, 0.0]])
    assert value == pytest.approx(math.log(2), rel=1e-12)
    np.testing.assert_allclose(grad, [[-0.25, 0.25]], rtol=1e-7)


def test_categorical_crossentropy_by_hand():
    # Keras docs example: [[0, 1, 0], [0, 0, 1]] vs [[0.05, 0.95, 0], [0.1, 0.8, 0.1]]
    # = (-log 0.95 - log 0.1)/2 = 1.1769392 (the 0 is clipped but carries no label)
    t = [[0, 1, 0], [0, 0, 1]]
    p = [[0.05, 0.95, 0], [0.1, 0.8, 0.1]]
    expected = (-math.log(0.95) - math.log(0.1)) / 2
    assert CategoricalCrossentropy()(t, p) == pytest.approx(expected, rel=1e-6)
    assert expected == pytest.approx(1.1769392, rel=1e-6)
    assert SparseCategoricalCrossentropy()([1, 2], p) == pytest.approx(expected, rel=1e-6)


def test_categorical_crossentropy_normalizes_probabilities():
    # Keras divides by the row sum first: [0.4, 1.4, 0.2] / 2 = [0.2, 0.7, 0.1] -> -log 0.7
    assert CategoricalCrossentropy()([[0, 1, 0]], [[0.4, 1.4, 0.2]]) == pytest.approx(
        -math.log(0.7), rel=1e-6)
    assert SparseCategoricalCrossentropy()([1], [[0.4, 1.4, 0.2]]) == pytest.approx(
        -math.log(0.7), rel=1e-6)


# -- float64 references on random data ------------------------------------------------------
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 3, 4)])
def test_against_float64_references(shape):
    logits, probs, sig, labels, binary, target = _data(1, shape)
    onehot = np.eye(shape[-1])[labels]
    cases = [
        (MeanSquaredError(), target, logits, ref_mse(target, logits)),
        (MeanAbsoluteError(), target, logits, ref_mae(target, logits)),
        (BinaryCrossentropy(), binary, sig, ref_bce(binary, sig)),
        (BinaryCrossentropy(from_logits=True), binary, logits, ref_bce(binary, logits, True)),
        (CategoricalCrossentropy(), onehot, probs, ref_cce(onehot, probs)),
        (CategoricalCrossentropy(from_logits=True), onehot, logits, ref_cce(onehot, logits, True)),
        (SparseCategoricalCrossentropy(), labels, probs, ref_scce(labels, probs)),
        (SparseCategoricalCrossentropy(from_logits=True), labels, logits,
         ref_scce(labels, logits, True)),
    ]
    for loss, t, p, expected in cases:
        assert loss(t, p) == pytest.approx(expected, rel=1e-7), loss
        value, grad = loss.value_and_grad(t, p)
        assert value == loss(t, p)
        assert grad.shape == p.shape and grad.dtype == np.float32 and grad.flags.c_contiguous


# -- torch parity ---------------------------------------------------------------------------
def _torch_value_grad(fn, pred, *args):
    torch = pytest.importorskip("torch")
    x = torch.tensor(pred, dtype=torch.float64, requires_grad=True)
    out = fn(x, *args)
    out.backward()
    return float(out.detach()), x.grad.numpy()


def test_torch_parity():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    logits, probs, sig, labels, binary, target = _data(2)
    tt = torch.tensor(target, dtype=torch.float64)
    tb = torch.tensor(binary, dtype=torch.float64)
    tl = torch.tensor(labels)
    onehot = np.eye(4)[labels]
    cases = [
        (MeanSquaredError(), target, logits, lambda x: F.mse_loss(x, tt)),
        (MeanAbsoluteError(), target, logits, lambda x: F.l1_loss(x, tt)),
        (BinaryCrossentropy(), binary, sig, lambda x: F.binary_cross_entropy(x, tb)),
        (BinaryCrossentropy(from_logits=True), binary, logits,
         lambda x: F.binary_cross_entropy_with_logits(x, tb)),
        (SparseCategoricalCrossentropy(from_logits=True), labels, logits,
         lambda x: F.cross_entropy(x, tl)),
        (CategoricalCrossentropy(from_logits=True), onehot, logits,
         lambda x: F.cross_entropy(x, torch.tensor(onehot))),
        # probabilities: CE of normalized probs == NLL of their log
        (SparseCategoricalCrossentropy(), labels, probs,
         lambda x: F.nll_loss(torch.log(x / x.sum(-1, keepdim=True)), tl)),
    ]
    for loss, t, p, fn in cases:
        ref_value, ref_grad = _torch_value_grad(fn, p)
        value, grad = loss.value_and_grad(t, p)
        assert value == pytest.approx(ref_value, rel=1e-7), loss
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-7, err_msg=repr(loss))


# -- finite differences -----------------------------------------------------------------------
def _fd_check(loss, t, p, probe=None, rtol=1e-3, atol=1e-6):
    p = np.array(p, dtype=np.float32)
    _, grad = loss.value_and_grad(t, p)
    flat = p.reshape(-1)
    for i in (range(flat.size) if probe is None else probe):
        old = flat[i]
        h = 1e-3 * abs(float(old)) if old != 0 else 1e-4
        up, down = np.float32(old + h), np.float32(old - h)
        flat[i] = up
        f_up = loss(t, p)
        flat[i] = down
        f_down = loss(t, p)
        flat[i] = old
        numeric = (f_up - f_down) / (float(up) - float(down))
        assert abs(grad.reshape(-1)[i] - numeric) <= atol + rtol * abs(numeric), (loss, i)


def test_finite_differences():
    logits, probs, sig, labels, binary, target = _data(3)
    onehot = np.eye(4)[labels]
    _fd_check(MeanSquaredError(), target, logits)
    _fd_check(MeanAbsoluteError(), target, logits)
    _fd_check(BinaryCrossentropy(), binary, np.clip(sig, 0.05, 0.95))
    _fd_check(BinaryCrossentropy(from_logits=True), binary, logits)
    _fd_check(CategoricalCrossentropy(), onehot, probs)
    _fd_check(CategoricalCrossentropy(), np.full((5, 4), 0.25), probs * 2.0)  # soft, unnormalized
    _fd_check(CategoricalCrossentropy(from_logits=True), onehot, logits)
    _fd_check(CategoricalCrossentropy(from_logits=True), np.full((5, 4), 0.3), logits)
    _fd_check(SparseCategoricalCrossentropy(), labels, probs)
    _fd_check(SparseCategoricalCrossentropy(), labels, probs * 3.0)
    _fd_check(SparseCategoricalCrossentropy(from_logits=True), labels, logits)


def test_gradient_is_zero_where_clipped():
    # p = 0 and p = 1 are clipped (flat loss there), 1e-9 too; 0.5 is not.
    loss = BinaryCrossentropy()
    t = np.array([[1.0, 0.0, 1.0, 1.0]])
    p = np.array([[0.0, 1.0, 1e-9, 0.5]], np.float32)
    value, grad = loss.value_and_grad(t, p)
    assert value == pytest.approx((3 * -math.log(EPS) + math.log(2)) / 4, rel=1e-9)
    np.testing.assert_array_equal(grad[0, :3], [0.0, 0.0, 0.0])
    assert grad[0, 3] == np.float32(-1 / 0.5 / 4)
    _fd_check(loss, t, p, probe=[2, 3])
    # categorical: the labelled class has probability 0 -> clipped -> no gradient at all
    v, g = CategoricalCrossentropy().value_and_grad([[1.0, 0.0, 0.0]], [[0.0, 0.5, 0.5]])
    assert v == pytest.approx(-math.log(EPS), rel=1e-9)
    np.testing.assert_array_equal(g, np.zeros((1, 3)))
    v, g = SparseCategoricalCrossentropy().value_and_grad([0], [[0.0, 0.5, 0.5]])
    np.testing.assert_array_equal(g, np.zeros((1, 3)))
    # a certain, correct prediction (p = 1 > 1 - 1e-7) is clipped too
    v, g = SparseCategoricalCrossentropy().value_and_grad([0], [[1.0, 0.0]])
    assert v == pytest.approx(-math.log(1 - EPS), rel=1e-9)
    np.testing.assert_array_equal(g, np.zeros((1, 2)))


def test_logits_of_1e4_are_stable():
    x = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 0.0]], np.float32)
    v, g = BinaryCrossentropy(from_logits=True).value_and_grad(
        [[0.0, 1.0, 1.0], [0.0, 1.0, 0.0]], x)
    # per element: 1e4, 1e4, log2 | 0, 0, log2  -> mean over 6
    assert v == pytest.approx((2e4 + 2 * math.log(2)) / 6, rel=1e-12)
    np.testing.assert_allclose(g, np.array([[1, -1, -0.5], [0, 0, 0.5]]) / 6, rtol=1e-6)
    for loss, t in [(CategoricalCrossentropy(from_logits=True), [[0, 1, 0], [0, 1, 0]]),
                    (SparseCategoricalCrossentropy(from_logits=True), [1, 1])]:
        v, g = loss.value_and_grad(t, x)
        assert math.isfinite(v) and np.all(np.isfinite(g))
        assert v == pytest.approx(1e4, rel=1e-12)  # row 1 costs 2e4, row 2 costs 0
        np.testing.assert_allclose(g, np.array([[0.5, -0.5, 0], [0, 0, 0]]), atol=1e-7)


# -- shapes and labels ---------------------------------------------------------------------------
def test_trailing_axis_of_one_is_squeezed_or_expanded():
    p = np.array([[0.2], [0.7]], np.float32)
    a = BinaryCrossentropy().value_and_grad([1.0, 0.0], p)
    b = BinaryCrossentropy().value_and_grad([[1.0], [0.0]], p)
    assert a[0] == b[0] and np.array_equal(a[1], b[1]) and a[1].shape == (2, 1)
    v, g = MeanSquaredError().value_and_grad([[1.0], [2.0]], np.array([0.0, 0.0], np.float32))
    assert v == 2.5 and g.shape == (2,)


def test_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=re.escape(
            "MeanSquaredError: y_true shape (4, 3) is incompatible with y_pred shape (4, 2)")):
        MeanSquaredError()(np.zeros((4, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match=re.escape(
            "CategoricalCrossentropy: y_true shape (4,) holds one label per sample, but this "
            "loss expects one-hot labels of y_pred's shape (4, 3); for integer class labels use "
            "SparseCategoricalCrossentropy")):
        CategoricalCrossentropy()(np.zeros(4), np.ones((4, 3)))
    with pytest.raises(ValueError, match=re.escape(
            "CategoricalCrossentropy: y_true shape (4, 2) must equal y_pred shape (4, 3) "
            "(one-hot labels: 2 classes in y_true, 3 units in y_pred)")):
        CategoricalCrossentropy()(np.zeros((4, 2)), np.ones((4, 3)))
    with pytest.raises(ValueError, match=re.escape(
            "SparseCategoricalCrossentropy: y_true shape (5,) does not match y_pred shape (4, 3): "
            "expected labels of shape (4,) or (4, 1)")):
        SparseCategoricalCrossentropy()(np.zeros(5, int), np.ones((4, 3)))


@pytest.mark.parametrize("labels", [
    np.array([0, 2, 1], np.int8), np.array([0, 2, 1], np.uint8), np.array([0, 2, 1], np.int32),
    np.array([[0], [2], [1]], np.int64), np.array([0.0, 2.0, 1.0]), [0, 2, 1],
    Tensor([[0.0], [2.0], [1.0]])])
def test_sparse_label_types(labels):
    p = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.6, 0.1]], np.float32)
    expected = -(math.log(0.7) + math.log(0.8) + math.log(0.6)) / 3
    assert SparseCategoricalCrossentropy()(labels, p) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("labels, msg", [
    ([0, 3, 1], "SparseCategoricalCrossentropy: label 3 is out of range for 3 classes "
                "(expected 0 <= label < 3)"),
    ([0, -1, 1], "SparseCategoricalCrossentropy: label -1 is out of range for 3 classes "
                 "(expected 0 <= label < 3)"),
    ([0.0, 1.5, 1.0], "SparseCategoricalCrossentropy: labels must be integer class indices, "
                      "got 1.5"),
])
def test_bad_sparse_labels(labels, msg):
    with pytest.raises(ValueError, match=re.escape(msg)):
        SparseCategoricalCrossentropy(from_logits=True)(labels, np.zeros((3, 3)))


# -- names, lookup, config -----------------------------------------------------------------------
@pytest.mark.parametrize("identifier, cls", [
    ("mse", MeanSquaredError), ("mean_squared_error", MeanSquaredError),
    ("MeanSquaredError", MeanSquaredError), ("mae", MeanAbsoluteError),
    ("mean_absolute_error", MeanAbsoluteError), ("MeanAbsoluteError", MeanAbsoluteError),
    ("binary_crossentropy", BinaryCrossentropy), ("BinaryCrossentropy", BinaryCrossentropy),
    ("categorical_crossentropy", CategoricalCrossentropy),
    ("CategoricalCrossentropy", CategoricalCrossentropy),
    ("sparse_categorical_crossentropy", SparseCategoricalCrossentropy),
    ("SparseCategoricalCrossentropy", SparseCategoricalCrossentropy)])
def test_get_by_name(identifier, cls):
    loss = losses.get(identifier)
    assert type(loss) is cls


def test_names_and_configs():
    expected = {MeanSquaredError: "mean_squared_error", MeanAbsoluteError: "mean_absolute_error",
                BinaryCrossentropy: "binary_crossentropy",
                CategoricalCrossentropy: "categorical_crossentropy",
                SparseCategoricalCrossentropy: "sparse_categorical_crossentropy"}
    for cls, name in expected.items():
        assert cls().name == name
    cfg = BinaryCrossentropy(from_logits=True, name="bce").get_config()
    assert cfg == {"name": "bce", "from_logits": True, "label_smoothing": 0.0}
    again = losses.get(json.loads(json.dumps(losses.serialize(BinaryCrossentropy(True)))))
    assert type(again) is BinaryCrossentropy and again.from_logits
    mse = MeanSquaredError.from_config(MeanSquaredError().get_config())
    assert mse.name == "mean_squared_error"


def test_get_passthrough_and_errors():
    loss = CategoricalCrossentropy(from_logits=True)
    assert losses.get(loss) is loss
    with pytest.raises(ValueError, match=re.escape(
            "Unknown loss 'l2'; valid names: mse, mean_squared_error, mae, mean_absolute_error, "
            "binary_crossentropy, categorical_crossentropy, sparse_categorical_crossentropy, "
            "huber, log_cosh, logcosh, kl_divergence, kld, hinge, squared_hinge, "
            "categorical_hinge, binary_focal_crossentropy, categorical_focal_crossentropy, "
            "MeanSquaredError, MeanAbsoluteError, BinaryCrossentropy, "
            "CategoricalCrossentropy, SparseCategoricalCrossentropy, Huber, LogCosh, "
            "KLDivergence, Hinge, SquaredHinge, CategoricalHinge, BinaryFocalCrossentropy, "
            "CategoricalFocalCrossentropy")):
        losses.get("l2")
    with pytest.raises(TypeError, match=re.escape(
            "losses.get: expected a Loss instance, a name or a config dict, got float: 1.5")):
        losses.get(1.5)
    with pytest.raises(TypeError, match=re.escape(
            "BinaryCrossentropy: from_logits must be a bool, got 'yes'")):
        BinaryCrossentropy(from_logits="yes")


def test_empty_prediction_is_an_error():
    with pytest.raises(ValueError, match=re.escape(
            "MeanSquaredError: y_pred must be a non-empty array with a batch axis, "
            "got shape (0, 3)")):
        MeanSquaredError()(np.zeros((0, 3)), np.zeros((0, 3)))
