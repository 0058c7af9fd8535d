"""A compiled weighted metric (``compile(weighted_metrics=...)``): the metric fed each
batch's sample weights, as Keras 3 does."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.metrics.base import Metric

__all__ = ["WeightedMetric"]


def _per_sample(values: np.ndarray, n: int) -> np.ndarray:
    """A metric's values as one per sample (each sample's mean), float64."""
    return values.reshape(n, -1).mean(axis=1) if values.size else np.zeros(n)


class WeightedMetric:
    """Feeds ``metric`` each batch with its sample weights and keeps its running value
    (``stateful``: the training loop logs :meth:`result`).

    A mean metric of per-sample values (accuracy, MSE, a function) becomes
    ``sum(w * value) / sum(w)`` over the samples seen, each sample's value the mean of its
    entries (Keras's ``Mean`` with ``sample_weight``); a metric with its own state
    (confusion counts, AUC, ``Mean``, a Keras-style subclass) gets
    ``update_state(y_true, y_pred, sample_weight=w)``. Without weights (``w`` ``None``)
    each sample weighs 1, as in Keras.

    Args:
        metric: The compiled metric.
    """

    stateful = True

    def __init__(self, metric: Metric) -> None:
        self.metric = metric
        self.name = metric.name
        self._own_mean = not getattr(metric, "stateful", False)
        self.reset_state()

    def reset_state(self) -> None:
        self._total, self._count = 0.0, 0.0
        if not self._own_mean:
            self.metric.reset_state()

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: np.ndarray | None) -> None:
        """Adds one batch (``sample_weight``: one weight per sample, or ``None``)."""
        if not self._own_mean:
            self.metric.update_state(y_true, y_pred, sample_weight=sample_weight)
            return
        n = np.shape(y_pred)[0]
        values = _per_sample(np.asarray(self.metric.values(y_true, y_pred), np.float64), n)
        if sample_weight is None:
            self._total += float(np.sum(values))
            self._count += n
            return
        w = _per_sample(np.asarray(sample_weight, dtype=np.float64), n)
        self._total += float(np.sum(values * w))
        self._count += float(np.sum(w))

    def result(self) -> Any:
        """The weighted mean so far (0.0 before any weight), or the metric's result."""
        if not self._own_mean:
            return self.metric.result()
        return self._total / self._count if self._count else 0.0
