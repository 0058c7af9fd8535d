"""ZeroPadding2D, Cropping2D, UpSampling2D, Rescaling, the 1-D pooling layers and
``tn.utils.to_categorical`` against Keras 3.15.1
(PyTorch backend): outputs and input gradients on fixed inputs, stored by
``tests/data/keras/generate.py``; hand-derived shapes and values besides."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import (AveragePooling1D, Cropping2D, GlobalAveragePooling1D,
                            GlobalMaxPooling1D, MaxPooling1D, Rescaling, UpSampling2D,
                            ZeroPadding2D)

REFS = np.load(os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                            "keras_refs.npz"))
LAYERS = {
    "zero_padding_asym": lambda: ZeroPadding2D(((1, 2), (0, 3))),
    "zero_padding_int": lambda: ZeroPadding2D(1),
    "cropping_asym": lambda: Cropping2D(((1, 0), (2, 1))),
    "cropping_pair": lambda: Cropping2D((1, 2)),
    "up_sampling_nearest": lambda: UpSampling2D((2, 3)),
    "up_sampling_bilinear": lambda: UpSampling2D((2, 3), interpolation="bilinear"),
    "up_sampling_bilinear_4": lambda: UpSampling2D(4, interpolation="BILINEAR"),
    "max_pooling1d": lambda: MaxPooling1D(3, strides=2),
    "average_pooling1d_same": lambda: AveragePooling1D(2, padding="same"),
    "global_average_pooling1d": lambda: GlobalAveragePooling1D(),
    "global_max_pooling1d_keepdims": lambda: GlobalMaxPooling1D(keepdims=True),
    "rescaling_255": lambda: Rescaling(1.0 / 127.5, offset=-1.0),
    "rescaling_channels": lambda: Rescaling(np.array([0.5, 2.0, -1.5]),
                                            offset=np.array([0.1, 0.0, -0.2])),
}


def test_the_references_come_from_keras_3_15_1():
    assert str(REFS["keras_version"]) == "3.15.1"


@pytest.mark.parametrize("case", sorted(LAYERS))
def test_forward_and_input_gradient_match_keras(case):
    layer = LAYERS[case]()
    y = np.asarray(layer.forward(REFS[f"{case}/x"], training=True))
    dx = np.asarray(layer.backward(REFS[f"{case}/g"]))
    assert y.dtype == dx.dtype == np.float32
    if case.startswith(("up_sampling", "average", "global_average")):  # sums in another order
        np.testing.assert_allclose(y, REFS[f"{case}/y"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(dx, REFS[f"{case}/dx"], rtol=1e-4, atol=1e-6)
    else:  # the same float32 operations
        np.testing.assert_array_equal(y, REFS[f"{case}/y"])
        np.testing.assert_array_equal(dx, REFS[f"{case}/dx"])
    assert layer.output_shape(REFS[f"{case}/x"].shape) == y.shape


@pytest.mark.parametrize("case, labels, classes", [
    ("labels_inferred", [3, 0, 2, 1, 1], None),
    ("labels_trailing_one", [[1], [0], [3]], 5),
    ("labels_2d", [[0, 2], [1, 1]], 3),
])
def test_to_categorical_matches_keras(case, labels, classes):
    out = tn.utils.to_categorical(labels, classes)
    assert out.dtype == REFS[f"{case}/y"].dtype == np.float64
    np.testing.assert_array_equal(out, REFS[f"{case}/y"])


def test_zero_padding_by_hand():
    x = np.ones((1, 1, 2, 1), np.float32)
    y = np.asarray(ZeroPadding2D(((1, 0), (0, 2)))(x))[0, :, :, 0]
    np.testing.assert_array_equal(y, [[0, 0, 0, 0], [1, 1, 0, 0]])
    assert ZeroPadding2D().padding == ((1, 1), (1, 1))
    assert ZeroPadding2D((2, 3)).output_shape((None, None, 5, 4)) == (None, None, 11, 4)


def test_cropping_by_hand():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    y = np.asarray(Cropping2D(((1, 2), (0, 1)))(x))[0, :, :, 0]
    np.testing.assert_array_equal(y, [[4, 5, 6]])
    layer = Cropping2D(1)
    layer.forward(x)
    dx = np.asarray(layer.backward(np.ones((1, 2, 2, 1), np.float32)))[0, :, :, 0]
    np.testing.assert_array_equal(dx, [[0, 0, 0, 0], [0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0]])
    assert Cropping2D().cropping == ((0, 0), (0, 0))


def test_rescaling_casts_integers_and_scales_the_gradient():
    layer = Rescaling(1.0 / 255)
    y = np.asarray(layer.forward(np.array([[0, 255]], np.uint8)))
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [[0.0, np.float32(255) * np.float32(1.0 / 255)]])
    np.testing.assert_array_equal(np.asarray(layer.backward(np.ones((1, 2), np.float32))),
                                  np.full((1, 2), np.float32(1.0 / 255)))


def test_configs_round_trip_in_keras_form():
    assert ZeroPadding2D(2).get_config()["padding"] == [[2, 2], [2, 2]]
    assert Cropping2D((1, 2)).get_config()["cropping"] == [[1, 1], [2, 2]]
    assert Rescaling([1.0, 2.0], 0.5).get_config()["scale"] == [1.0, 2.0]
    for layer in (ZeroPadding2D(((1, 2), (3, 4))), Cropping2D(3), Rescaling(0.25, -1.0),
                  Rescaling(np.array([1.0, 2.0]))):
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config


def test_a_cropping_that_leaves_nothing_is_refused():
    with pytest.raises(ValueError, match=r"^Cropping2D 'cropping2d': cropping \(\(2, 2\), "
                                         r"\(0, 0\)\) leaves nothing of input shape "
                                         r"\(1, 4, 4, 1\) \(expected top \+ bottom < height "
                                         r"and left \+ right < width\)$"):
        Cropping2D(((2, 2), (0, 0))).forward(np.zeros((1, 4, 4, 1), np.float32))


def test_up_sampling_by_hand():
    x = np.array([1.0, 3.0], np.float32).reshape(1, 1, 2, 1)
    near = np.asarray(UpSampling2D((1, 2))(x))[0, 0, :, 0]
    np.testing.assert_array_equal(near, [1, 1, 3, 3])
    # half-pixel centres: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25 (upper clamped)
    bil = np.asarray(UpSampling2D((1, 2), interpolation="bilinear")(x))[0, 0, :, 0]
    np.testing.assert_array_equal(bil, [1.0, 1.5, 2.5, 3.0])
    layer = UpSampling2D((1, 2), interpolation="bilinear")
    layer.forward(x)
    dx = np.asarray(layer.backward(np.ones((1, 1, 4, 1), np.float32)))[0, 0, :, 0]
    np.testing.assert_array_equal(dx, [2.0, 2.0])  # each output's weights sum to 1
    assert UpSampling2D(3).output_shape((None, 2, None, 5)) == (None, 6, None, 5)


LOSSES = {
    "huber": lambda: tn.losses.Huber(),
    "huber_delta": lambda: tn.losses.Huber(delta=0.3),
    "log_cosh": lambda: tn.losses.LogCosh(),
    "kl_divergence": lambda: tn.losses.KLDivergence(),
    "hinge": lambda: tn.losses.Hinge(),
    "hinge_signed": lambda: tn.losses.Hinge(),
    "squared_hinge": lambda: tn.losses.SquaredHinge(),
    "categorical_hinge": lambda: tn.losses.CategoricalHinge(),
    "mse_3d": lambda: tn.losses.MeanSquaredError(),
    "mae": lambda: tn.losses.MeanAbsoluteError(),
    "bce": lambda: tn.losses.BinaryCrossentropy(),
    "bce_logits_smoothed": lambda: tn.losses.BinaryCrossentropy(from_logits=True,
                                                                label_smoothing=0.1),
    "bce_smoothed": lambda: tn.losses.BinaryCrossentropy(label_smoothing=0.2),
    "cce": lambda: tn.losses.CategoricalCrossentropy(),
    "cce_logits_smoothed": lambda: tn.losses.CategoricalCrossentropy(from_logits=True,
                                                                     label_smoothing=0.15),
    "cce_smoothed": lambda: tn.losses.CategoricalCrossentropy(label_smoothing=0.3),
    "scce_logits": lambda: tn.losses.SparseCategoricalCrossentropy(from_logits=True),
    "binary_focal": lambda: tn.losses.BinaryFocalCrossentropy(),
    "binary_focal_balanced": lambda: tn.losses.BinaryFocalCrossentropy(
        apply_class_balancing=True, alpha=0.4, gamma=1.5, label_smoothing=0.1),
    "binary_focal_logits": lambda: tn.losses.BinaryFocalCrossentropy(from_logits=True,
                                                                     gamma=3.0),
    "categorical_focal": lambda: tn.losses.CategoricalFocalCrossentropy(),
    "categorical_focal_logits_smoothed": lambda: tn.losses.CategoricalFocalCrossentropy(
        alpha=0.5, gamma=1.0, from_logits=True, label_smoothing=0.2),
}


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("case", sorted(LOSSES))
def test_losses_match_keras(case, weighted):
    loss = LOSSES[case]()
    sw = REFS[f"{case}/sample_weight"] if weighted else None
    suffix = "_weighted" if weighted else ""
    value, grad = loss.value_and_grad(REFS[f"{case}/y_true"], REFS[f"{case}/y_pred"], sw)
    assert grad.dtype == np.float32
    # tinynet sums in float64, Keras in float32
    np.testing.assert_allclose(value, float(REFS[f"{case}/value{suffix}"]), rtol=1e-5)
    np.testing.assert_allclose(grad, REFS[f"{case}/grad{suffix}"], rtol=1e-4, atol=1e-7)
    assert loss(REFS[f"{case}/y_true"], REFS[f"{case}/y_pred"], sw) == value


def test_a_weight_per_sample_broadcasts_over_its_losses():
    """Keras 3.15 refuses a ``[batch]`` weight on ``[batch, h, w]`` losses; tinynet gives
    each sample's losses its weight."""
    rng = np.random.default_rng(0)
    t, p = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 4, 5))
    loss = tn.losses.MeanSquaredError()
    full = np.repeat(np.repeat(np.array([0.5, 2.0])[:, None, None], 3, 1), 4, 2)
    assert loss(t, p, [0.5, 2.0]) == loss(t, p, full)
    np.testing.assert_array_equal(loss.value_and_grad(t, p, [[0.5], [2.0]])[1],
                                  loss.value_and_grad(t, p, full)[1])
    assert loss(t, p, np.ones(2)) == pytest.approx(loss(t, p), rel=1e-15)
    with pytest.raises(ValueError, match=r"sample_weight shape \(3,\) does not match the "
                                         r"per-sample losses' shape \(2, 3, 4\)"):
        loss(t, p, np.ones(3))


def test_losses_by_name_and_config():
    for name, cls in [("huber", tn.losses.Huber), ("log_cosh", tn.losses.LogCosh),
                      ("kl_divergence", tn.losses.KLDivergence), ("hinge", tn.losses.Hinge),
                      ("squared_hinge", tn.losses.SquaredHinge),
                      ("categorical_hinge", tn.losses.CategoricalHinge)]:
        assert type(tn.losses.get(name)) is cls
    huber = tn.losses.Huber(delta=0.5)
    assert huber.get_config() == {"name": "huber_loss", "delta": 0.5}
    again = tn.losses.get(tn.losses.serialize(huber))
    assert again.get_config() == huber.get_config()


def test_huber_by_hand():
    # d = (0.5, -2): 0.5 * 0.25 = 0.125 and 1 * 2 - 0.5 = 1.5; mean 0.8125
    value, grad = tn.losses.Huber().value_and_grad(np.zeros((1, 2)),
                                                   np.array([[0.5, -2.0]], np.float32))
    assert value == 0.8125
    np.testing.assert_array_equal(grad, [[0.25, -0.5]])


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_accuracies_match_keras_with_ties(k):
    scores, labels = REFS["top_k/scores"], REFS["top_k/labels"]
    sparse, dense, by_ids = REFS[f"top_k/k{k}"]
    ids = np.argsort(-scores, axis=-1, kind="stable").astype(np.float32)
    assert tn.metrics.SparseTopKCategoricalAccuracy(k)(labels, scores) == pytest.approx(sparse)
    onehot = np.eye(scores.shape[-1], dtype=np.float32)[labels]
    assert tn.metrics.TopKCategoricalAccuracy(k)(onehot, scores) == pytest.approx(dense)
    assert tn.metrics.SparseTopKCategoricalAccuracy(k, from_sorted_ids=True)(labels, ids) \
        == pytest.approx(by_ids)


def test_top_k_metrics_by_name_and_in_a_fit():
    assert type(tn.metrics.get("sparse_top_k_categorical_accuracy")) \
        is tn.metrics.SparseTopKCategoricalAccuracy
    metric = tn.metrics.TopKCategoricalAccuracy(k=2)
    assert metric.get_config() == {"name": "top_k_categorical_accuracy", "k": 2}
    # a tie at the k-th score counts (Keras's in_top_k)
    assert tn.metrics.SparseTopKCategoricalAccuracy(1)([0], [[1.0, 1.0]]) == 1.0
    tn.set_seed(0)
    model = tn.Sequential([tn.layers.Input((3,)), tn.layers.Dense(4)])
    model.compile("adam", tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=[tn.metrics.SparseTopKCategoricalAccuracy(k=2)])
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    history = model.fit(x, np.arange(8) % 4, epochs=1, verbose=0)
    assert 0.0 <= history.history["sparse_top_k_categorical_accuracy"][0] <= 1.0
