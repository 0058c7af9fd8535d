"""Metrics: hand values, "accuracy" resolution (from the loss, else Keras 3's shape rule),
names, running state and lookup errors."""

import os
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet import losses, metrics
from tinynet.metrics import (BinaryAccuracy, CategoricalAccuracy, MeanAbsoluteError,
                             MeanSquaredError, SparseCategoricalAccuracy)

PROBS = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8], [0.3, 0.6, 0.1], [0.5, 0.4, 0.1]],
                 np.float32)
LABELS = np.array([0, 2, 0, 1])          # rows 1 and 2 right, rows 3 and 4 wrong -> 0.5
ONEHOT = np.eye(3)[LABELS]


def test_hand_values():
    assert SparseCategoricalAccuracy()(LABELS, PROBS) == 0.5
    assert SparseCategoricalAccuracy()(LABELS.reshape(-1, 1).astype(np.float32), PROBS) == 0.5
    assert CategoricalAccuracy()(ONEHOT, PROBS) == 0.5
    # binary: (p > 0.5) == t per element: [1, 0, 1] vs [0.55, 0.2, 0.5] -> [T, T, F]
    assert BinaryAccuracy()([[1, 0, 1]], [[0.55, 0.2, 0.5]]) == pytest.approx(2 / 3)
    # threshold 0.6: predictions [0, 0, 0] -> only the middle element is right
    assert BinaryAccuracy(threshold=0.6)([[1, 0, 1]], [[0.55, 0.2, 0.5]]) == pytest.approx(1 / 3)
    # MSE per sample over the last axis: [(1+0)/2, (4+0)/2] -> mean 1.25; MAE (0.5 + 1)/2
    t, p = [[0.0, 1.0], [2.0, 3.0]], [[1.0, 1.0], [2.0, 5.0]]
    assert MeanSquaredError()(t, p) == 1.25
    assert MeanAbsoluteError()(t, p) == 0.75


@pytest.mark.parametrize("loss, expected", [
    ("sparse_categorical_crossentropy", SparseCategoricalAccuracy),
    (losses.SparseCategoricalCrossentropy(from_logits=True), SparseCategoricalAccuracy),
    ("categorical_crossentropy", CategoricalAccuracy),
    (losses.CategoricalCrossentropy(), CategoricalAccuracy),
    ("binary_crossentropy", BinaryAccuracy),
    (losses.BinaryCrossentropy(from_logits=True), BinaryAccuracy),
])
def test_accuracy_resolves_from_the_loss(loss, expected):
    for identifier in ("accuracy", "acc"):
        m = metrics.get(identifier, loss=loss)
        assert type(m) is expected and m.name == identifier


def test_binary_accuracy_thresholds_logits_at_one_half():
    # Keras's BinaryAccuracy ignores from_logits: logit 0.3 counts as class 0 (0.3 <= 0.5)
    m = metrics.get("accuracy", loss=losses.BinaryCrossentropy(from_logits=True))
    assert m.threshold == 0.5
    assert m([[1.0], [0.0], [1.0]], [[0.3], [-2.0], [0.6]]) == pytest.approx(2 / 3)


def test_multilabel_binary_crossentropy_uses_binary_accuracy():
    # decided by the loss (Keras 3's shape rule alone would pick categorical accuracy here)
    m = metrics.get("accuracy", loss="binary_crossentropy")
    assert m([[1, 0, 1], [0, 0, 1]], [[0.9, 0.1, 0.2], [0.2, 0.3, 0.7]]) == pytest.approx(5 / 6)


@pytest.mark.parametrize("y_true, y_pred, expected, value", [
    (np.array([[1.0], [0.0]]), np.array([[0.8], [0.6]]), BinaryAccuracy, 0.5),
    (np.array([1.0, 0.0]), np.array([[0.8], [0.6]]), BinaryAccuracy, 0.5),
    (LABELS, PROBS, SparseCategoricalAccuracy, 0.5),
    (LABELS.reshape(-1, 1), PROBS, SparseCategoricalAccuracy, 0.5),
    (ONEHOT, PROBS, CategoricalAccuracy, 0.5),
])
def test_accuracy_resolves_from_shapes_without_a_ce_loss(y_true, y_pred, expected, value):
    for loss in (None, "mse", losses.MeanAbsoluteError()):
        m = metrics.get("accuracy", loss=loss)
        assert m.name == "accuracy"
        assert m(y_true, y_pred) == value
        assert type(m.resolved) is expected and m.resolved.name == "accuracy"


def test_explicit_names_are_kept():
    for name, cls in [("binary_accuracy", BinaryAccuracy),
                      ("categorical_accuracy", CategoricalAccuracy),
                      ("sparse_categorical_accuracy", SparseCategoricalAccuracy),
                      ("mse", MeanSquaredError), ("mean_squared_error", MeanSquaredError),
                      ("mae", MeanAbsoluteError), ("mean_absolute_error", MeanAbsoluteError),
                      ("BinaryAccuracy", BinaryAccuracy)]:
        m = metrics.get(name)
        assert type(m) is cls and m.name == name
    assert BinaryAccuracy().name == "binary_accuracy"
    assert SparseCategoricalAccuracy().get_config() == {"name": "sparse_categorical_accuracy"}
    assert BinaryAccuracy(0.3).get_config() == {"name": "binary_accuracy", "threshold": 0.3}


def test_instances_and_functions():
    m = CategoricalAccuracy(name="top1")
    assert metrics.get(m, loss="mse") is m

    def neg_error(y_true, y_pred):
        return -np.abs(np.asarray(y_true) - np.asarray(y_pred))

    w = metrics.get(neg_error)
    assert w.name == "neg_error" and w([1.0, 2.0], [1.5, 2.0]) == -0.25


def test_running_state_weights_by_entries():
    m = SparseCategoricalAccuracy()
    m.update_state(LABELS, PROBS)               # 2 of 4
    m.update_state([1, 1], PROBS[2:])           # 1 of 2 (row [0.3, 0.6, 0.1] -> 1)
    assert m.result() == pytest.approx(3 / 6)
    m.reset_state()
    assert m.result() == 0.0


def test_errors():
    with pytest.raises(ValueError, match=re.escape(
            "Unknown metric 'f1'; valid names: accuracy, acc, binary_accuracy, "
            "categorical_accuracy, sparse_categorical_accuracy, mse, mean_squared_error, mae, "
            "mean_absolute_error, top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, "
            "precision, recall, auc, mape, mean_absolute_percentage_error, msle, "
            "mean_squared_logarithmic_error, root_mean_squared_error, cosine_similarity, "
            "true_positives, false_positives, true_negatives, false_negatives, f1_score, mean, "
            "sum, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, "
            "MeanSquaredError, MeanAbsoluteError, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy, "
            "Precision, Recall, AUC, TruePositives")):  # then issue 45's metrics
        metrics.get("f1")
    with pytest.raises(TypeError, match=re.escape(
            "metrics.get: expected a Metric instance, a name or a function, got int: 3")):
        metrics.get(3)
    with pytest.raises(ValueError, match=re.escape(
            "SparseCategoricalAccuracy: y_true shape (3,) does not match y_pred shape (4, 3)")):
        SparseCategoricalAccuracy()([0, 1, 2], PROBS)
    with pytest.raises(ValueError, match=re.escape(
            "CategoricalAccuracy: y_true shape (4,) must equal y_pred shape (4, 3)")):
        CategoricalAccuracy()(LABELS, PROBS)


# -- Precision, Recall, AUC against Keras 3.15.1 (tests/data/keras/generate.py) ----------
KERAS = np.load(os.path.join(os.path.dirname(__file__), "data", "keras", "keras_refs.npz"))
CONFUSION = {
    "precision": lambda: metrics.Precision(),
    "precision_0.3": lambda: metrics.Precision(thresholds=0.3),
    "precision_top2": lambda: metrics.Precision(top_k=2),
    "recall": lambda: metrics.Recall(),
    "recall_class1": lambda: metrics.Recall(class_id=1),
    "auc": lambda: metrics.AUC(),
    "auc_pr": lambda: metrics.AUC(curve="PR"),
    "auc_minoring": lambda: metrics.AUC(summation_method="minoring"),
    "auc_majoring_pr": lambda: metrics.AUC(curve="PR", summation_method="majoring"),
    "auc_50_logits": lambda: metrics.AUC(num_thresholds=50, from_logits=True),
    "auc_given": lambda: metrics.AUC(thresholds=[0.1, 0.35, 0.5, 0.9]),
}


@pytest.mark.parametrize("case", sorted(CONFUSION))
def test_confusion_metrics_match_keras(case):
    metric = CONFUSION[case]()
    t = [KERAS["confusion/t0"], KERAS["confusion/t1"]]
    p = [KERAS["confusion/p0"], KERAS["confusion/p1"]]
    if "logits" in case:
        p = [x * 6 - 3 for x in p]
    metric.update_state(t[0], p[0])
    first = metric.result()
    assert metric(t[0], p[0]) == first  # a call is one batch and leaves the state alone
    metric.update_state(t[1], p[1])
    np.testing.assert_allclose([first, metric.result()], KERAS[f"confusion/{case}"],
                               rtol=1e-6, atol=1e-7)
    again = type(metric).from_config(metric.get_config())
    assert again.get_config() == metric.get_config()
    metric.reset_state()
    assert metric.result() == 0.0


def test_precision_recall_and_auc_by_hand():
    t = np.array([0, 1, 1, 0, 1.0])
    s = np.array([0.2, 0.8, 0.4, 0.6, 0.9])
    assert metrics.Precision()(t, s) == 2 / 3  # 0.8 and 0.9 right, 0.6 wrong
    assert metrics.Recall()(t, s) == 2 / 3      # 0.4 missed
    assert metrics.AUC(num_thresholds=1000)(t, s) == pytest.approx(5 / 6, abs=1e-3)


def test_running_metrics_in_fit_are_epoch_values_not_batch_means():
    tn.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = tn.Sequential([tn.Input((4,)), tn.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=["precision", metrics.AUC(name="auc")])
    history = model.fit(x, y, batch_size=7, epochs=1, verbose=0, shuffle=False,
                        validation_data=(x, y))
    evaluated = model.evaluate(x, y, batch_size=7, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    assert evaluated["precision"] == metrics.Precision()(y, pred)
    assert evaluated["auc"] == metrics.AUC()(y, pred)
    assert history.history["val_precision"][0] == evaluated["precision"]


def test_train_on_batch_counts_its_own_batch_only():
    x = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    y = (x[:, :1] > 0).astype(np.float32)
    model = tn.Sequential([tn.Input((4,)), tn.layers.Dense(1, activation="sigmoid")])
    model.compile(tn.optimizers.SGD(0.0), "binary_crossentropy", metrics=["precision"])
    model.evaluate(x, y, verbose=0)
    model.train_on_batch(x[:8], y[:8])
    second = model.train_on_batch(x[8:], y[8:])[1]
    assert second == metrics.Precision()(y[8:], model.predict(x[8:], verbose=0))


def test_auc_clips_scores_to_the_unit_interval_as_keras():
    rng = np.random.default_rng(2)
    t = rng.integers(0, 2, 50).astype(np.float32)
    s = (rng.standard_normal(50) * 3).astype(np.float32)
    for curve in ("ROC", "PR"):
        assert metrics.AUC(curve=curve)(t, s) == metrics.AUC(curve=curve)(t, np.clip(s, 0, 1))
