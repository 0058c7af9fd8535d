"""Metrics with Keras 3 semantics.

A metric maps ``(y_true, y_pred)`` to per-entry values (1.0/0.0 for accuracies, a
per-sample error for MSE/MAE); ``metric(y_true, y_pred)`` is their batch mean. For
epoch averages, ``update_state`` / ``result`` / ``reset_state`` accumulate the sum and
count of those values in float64, as Keras's ``MeanMetricWrapper`` does.

``get("accuracy", loss=...)`` picks the accuracy from the loss: binary crossentropy ->
binary accuracy (threshold 0.5, also with ``from_logits=True``, as Keras), categorical
crossentropy -> categorical accuracy, sparse categorical crossentropy -> sparse
categorical accuracy. For any other loss it decides on the first batch from the shapes
with Keras 3's rule (``compile_utils.get_metric``): binary if ``y_pred``'s last axis is
1, sparse if ``y_true`` has lower rank (or a last axis of 1 against more than one class),
categorical otherwise. The metric keeps the user's string as its name ("accuracy").
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.metrics.base import Metric, _same_rank, _sparse_labels
from tinynet.metrics.confusion import AUC, Precision, Recall
from tinynet.metrics.keras_metrics import (CosineSimilarity, F1Score, FalseNegatives,
                                           FalsePositives, FBetaScore, Mean,
                                           MeanAbsolutePercentageError,
                                           MeanSquaredLogarithmicError, RootMeanSquaredError,
                                           Sum, TrueNegatives, TruePositives)
from tinynet.metrics.wrapper import MeanMetricWrapper
from tinynet.tensor import as_array

__all__ = ["Metric", "MeanMetricWrapper", "BinaryAccuracy", "CategoricalAccuracy",
           "SparseCategoricalAccuracy", "MeanSquaredError", "MeanAbsoluteError",
           "TopKCategoricalAccuracy", "SparseTopKCategoricalAccuracy", "Precision", "Recall",
           "AUC", "TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError", "RootMeanSquaredError",
           "CosineSimilarity", "FBetaScore", "F1Score", "Mean", "Sum", "get"]


class BinaryAccuracy(Metric):
    """Fraction of elements where ``(y_pred > threshold) == y_true``.

    Args:
        threshold: Decision threshold on ``y_pred`` (Keras default 0.5; applied as is to
            logits too).
        name: Defaults to ``"binary_accuracy"``.
    """

    _default_name = "binary_accuracy"

    def __init__(self, threshold: float = 0.5, *, name: str | None = None) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)):
            raise TypeError(f"BinaryAccuracy: threshold must be a float, got {threshold!r}")
        try:
            self.threshold = float(threshold)
        except OverflowError:  # an int beyond float range
            self.threshold = np.inf
        if not np.isfinite(self.threshold):
            raise ValueError(f"BinaryAccuracy: threshold must be a finite float, got {threshold!r}")
        super().__init__(name=name)

    def values(self, y_true, y_pred):
        t, p = _same_rank(type(self).__name__, y_true, y_pred)
        return (t == (p > np.float32(self.threshold)).astype(np.float32)).astype(np.float64)

    def get_config(self) -> dict:
        return {"name": self.name, "threshold": self.threshold}


class CategoricalAccuracy(Metric):
    """Fraction of rows where ``argmax(y_true) == argmax(y_pred)`` (one-hot labels)."""

    _default_name = "categorical_accuracy"

    def values(self, y_true, y_pred):
        t, p = as_array(y_true), as_array(y_pred)
        if t.shape != p.shape:
            raise ValueError(f"CategoricalAccuracy: y_true shape {t.shape} must equal y_pred "
                             f"shape {p.shape}")
        return (np.argmax(t, axis=-1) == np.argmax(p, axis=-1)).astype(np.float64)


class SparseCategoricalAccuracy(Metric):
    """Fraction of rows where the integer label equals ``argmax(y_pred)``."""

    _default_name = "sparse_categorical_accuracy"

    def values(self, y_true, y_pred):
        t, p = _sparse_labels(type(self).__name__, y_true, y_pred)
        return (t.astype(np.float64) == np.argmax(p, axis=-1)).astype(np.float64)


class MeanSquaredError(Metric):
    """Per-sample ``mean((y_true - y_pred)**2)`` over the last axis, averaged."""

    _default_name = "mean_squared_error"

    def values(self, y_true, y_pred):
        t, p = _same_rank(type(self).__name__, y_true, y_pred)
        d = p.astype(np.float64) - t
        return np.mean(d * d, axis=-1) if d.ndim else d * d


class MeanAbsoluteError(Metric):
    """Per-sample ``mean(|y_true - y_pred|)`` over the last axis, averaged."""

    _default_name = "mean_absolute_error"

    def values(self, y_true, y_pred):
        t, p = _same_rank(type(self).__name__, y_true, y_pred)
        d = np.abs(p.astype(np.float64) - t)
        return np.mean(d, axis=-1) if d.ndim else d


def _check_k(owner: str, k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{owner}: k must be a positive int, got {k!r}")
    if k < 1:
        raise ValueError(f"{owner}: k must be a positive int, got {k}")
    return int(k)


def _in_top_k(labels: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """1.0 where the label's score is at least the row's ``k``-th largest (ties count, as
    Keras's ``in_top_k``); a label outside ``[0, classes)`` is never in the top ``k``
    (0.0, as Keras counts a label past the last class; -1 does not wrap around)."""
    rows = scores.reshape(-1, scores.shape[-1])
    classes = rows.shape[-1]
    kth = -np.partition(-rows, min(k, classes) - 1, axis=-1)[:, min(k, classes) - 1]
    flat = labels.reshape(-1)
    valid = (flat >= 0) & (flat < classes)
    target = rows[np.arange(rows.shape[0]), np.where(valid, flat, 0)]
    return ((target >= kth) & valid).astype(np.float64).reshape(labels.shape)


class TopKCategoricalAccuracy(Metric):
    """Fraction of rows whose one-hot class is among the ``k`` highest scores (ties
    count), as ``keras.metrics.TopKCategoricalAccuracy``.

    Args:
        k: How many of the highest scores count. Defaults to 5.
        name: Defaults to ``"top_k_categorical_accuracy"``.
    """

    _default_name = "top_k_categorical_accuracy"

    def __init__(self, k: int = 5, *, name: str | None = None) -> None:
        self.k = _check_k(type(self).__name__, k)
        super().__init__(name=name)

    def values(self, y_true, y_pred):
        t, p = _same_rank(type(self).__name__, y_true, y_pred)
        return _in_top_k(np.argmax(t, axis=-1), p, self.k)

    def get_config(self) -> dict:
        return {**super().get_config(), "k": self.k}


class SparseTopKCategoricalAccuracy(Metric):
    """Fraction of integer labels among the ``k`` highest scores (ties count), as
    ``keras.metrics.SparseTopKCategoricalAccuracy``; with ``from_sorted_ids`` the
    predictions are class ids sorted from the highest score down.

    Args:
        k: How many of the highest scores count. Defaults to 5.
        from_sorted_ids: ``y_pred`` holds sorted class ids. Defaults to ``False``.
        name: Defaults to ``"sparse_top_k_categorical_accuracy"``.
    """

    _default_name = "sparse_top_k_categorical_accuracy"

    def __init__(self, k: int = 5, from_sorted_ids: bool = False, *,
                 name: str | None = None) -> None:
        owner = type(self).__name__
        self.k = _check_k(owner, k)
        if not isinstance(from_sorted_ids, bool):
            raise TypeError(f"{owner}: from_sorted_ids must be a bool, got {from_sorted_ids!r}")
        self.from_sorted_ids = from_sorted_ids
        super().__init__(name=name)

    def values(self, y_true, y_pred):
        t, p = _sparse_labels(type(self).__name__, y_true, y_pred)
        labels = t.astype(np.int64)
        if self.from_sorted_ids:
            top = p.reshape(-1, p.shape[-1])[:, :self.k]
            return (top == labels.reshape(-1, 1)).any(axis=-1).astype(np.float64).reshape(
                labels.shape)
        return _in_top_k(labels, p, self.k)

    def get_config(self) -> dict:
        return {**super().get_config(), "k": self.k, "from_sorted_ids": self.from_sorted_ids}


class _AutoAccuracy(Metric):
    """``"accuracy"`` resolved on the first batch from the shapes (Keras 3 rule)."""

    def __init__(self, *, name: str) -> None:
        self.resolved: Metric | None = None
        super().__init__(name=name)

    def _resolve(self, y_true: Any, y_pred: Any) -> Metric:
        if self.resolved is None:
            t_shape, p_shape = np.shape(y_true), np.shape(y_pred)
            t_last = t_shape[-1] if t_shape else None
            p_last = p_shape[-1] if p_shape else None
            if p_last == 1:
                self.resolved = BinaryAccuracy(name=self.name)
            elif len(t_shape) < len(p_shape) or (t_last == 1 and p_last is not None
                                                 and p_last > 1):
                self.resolved = SparseCategoricalAccuracy(name=self.name)
            else:
                self.resolved = CategoricalAccuracy(name=self.name)
        return self.resolved

    def values(self, y_true, y_pred):
        return self._resolve(y_true, y_pred).values(y_true, y_pred)


_EXPLICIT: dict[str, type[Metric]] = {
    "binary_accuracy": BinaryAccuracy,
    "categorical_accuracy": CategoricalAccuracy,
    "sparse_categorical_accuracy": SparseCategoricalAccuracy,
    "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
    "top_k_categorical_accuracy": TopKCategoricalAccuracy,
    "sparse_top_k_categorical_accuracy": SparseTopKCategoricalAccuracy,
    "precision": Precision, "recall": Recall, "auc": AUC,
    "mape": MeanAbsolutePercentageError,
    "mean_absolute_percentage_error": MeanAbsolutePercentageError,
    "msle": MeanSquaredLogarithmicError,
    "mean_squared_logarithmic_error": MeanSquaredLogarithmicError,
    "root_mean_squared_error": RootMeanSquaredError,
    "cosine_similarity": CosineSimilarity,
    "true_positives": TruePositives, "false_positives": FalsePositives,
    "true_negatives": TrueNegatives, "false_negatives": FalseNegatives,
    "f1_score": F1Score, "mean": Mean, "sum": Sum,
}
for _cls in (BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy, MeanSquaredError,
             MeanAbsoluteError, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
             Precision, Recall, AUC, TruePositives, FalsePositives, TrueNegatives,
             FalseNegatives, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
             RootMeanSquaredError, CosineSimilarity, FBetaScore, F1Score, Mean, Sum):
    _EXPLICIT[_cls.__name__] = _cls
_VALID = ", ".join(["accuracy", "acc", *_EXPLICIT])


def _accuracy_for_loss(loss: Any, name: str) -> Metric:
    from tinynet import losses

    if isinstance(loss, (str, dict)):
        loss = losses.get(loss)
    if isinstance(loss, losses.SparseCategoricalCrossentropy):
        return SparseCategoricalAccuracy(name=name)
    if isinstance(loss, losses.CategoricalCrossentropy):
        return CategoricalAccuracy(name=name)
    if isinstance(loss, losses.BinaryCrossentropy):
        return BinaryAccuracy(name=name)
    return _AutoAccuracy(name=name)


def get(identifier: Any, loss: Any = None) -> Metric:
    """Returns a metric for an instance (as is), a name, or a function.

    Args:
        identifier: A :class:`Metric`, ``"accuracy"``/``"acc"`` (resolved with ``loss``
            or from the shapes), ``"binary_accuracy"``, ``"categorical_accuracy"``,
            ``"sparse_categorical_accuracy"``, ``"mse"``, ``"mae"``, ``"mape"``,
            ``"msle"``, ``"root_mean_squared_error"``, ``"cosine_similarity"``,
            ``"true_positives"`` (and the other confusion counts), ``"f1_score"``,
            ``"precision"``, ``"recall"``, ``"auc"`` (and the long names and class names),
            or a function ``fn(y_true, y_pred)``.
        loss: The compiled loss (instance or name), used to resolve ``"accuracy"``.

    Returns:
        The metric; a string identifier becomes its ``name`` (Keras keeps the user's
        string, so ``"accuracy"`` logs as ``"accuracy"``).

    Raises:
        ValueError: An unknown name (the message lists the valid ones).
        TypeError: Any other type.
    """
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        if identifier.lower() in ("accuracy", "acc"):
            return _accuracy_for_loss(loss, identifier)
        cls = _EXPLICIT.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown metric {identifier!r}; valid names: {_VALID}")
        return cls(name=identifier)
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if callable(identifier) and not isinstance(identifier, type):
        return MeanMetricWrapper(identifier)  # saved by the function's registered name
    raise TypeError(f"metrics.get: expected a Metric instance, a name or a function, got "
                    f"{type(identifier).__name__}: {identifier!r}")
