"""Precision, Recall and AUC: metrics of confusion counts, as Keras 3 computes them.

Unlike the mean metrics these are not averages of per-sample values: each keeps true and
false positive and negative counts (float64) over every batch since its last
``reset_state`` and computes its value from them (``stateful``: the training loop feeds
every batch to ``update_state`` and logs ``result()``). A prediction counts as positive
when it is strictly above the threshold (float32 comparison); labels are positive when
non-zero.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.metrics.base import Metric, _same_rank

__all__ = ["Precision", "Recall", "AUC"]


_NEG_INF = -1e10  # Keras's threshold below every score (``top_k`` without thresholds)


def _check_threshold(value: Any, owner: str, default: float) -> float:
    what = f"{owner}: thresholds must be None or a float in [0, 1], got {value!r}"
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(what)
    if not 0.0 <= value <= 1.0:  # compared as given: a huge int has no float
        raise ValueError(what)
    return float(value)


def _check_optional_int(value: Any, arg: str, owner: str, low: int) -> int | None:
    if value is None:
        return None
    what = f"{owner}: {arg} must be None or an int >= {low}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(what)
    if value < low:
        raise ValueError(what)
    return int(value)


def _counts(t: np.ndarray, p: np.ndarray, thresholds: np.ndarray,
            w: np.ndarray | None = None) -> tuple:
    """(tp, fp, tn, fn) per threshold, float64, for labels ``t`` and scores ``p``
    (flat), each entry counting ``w`` (its sample weight; 1 without): the positives and
    negatives scored strictly above each threshold (a NaN score never is), counted by a
    binary search in their sorted scores."""
    positive = t != 0
    if w is None:
        w = np.ones(p.shape, dtype=np.float64)

    def above(scores: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, float]:
        order = np.argsort(scores, kind="stable")  # NaNs sort last, never above
        scores, weights = scores[order], weights[order]
        real = scores.size - np.count_nonzero(np.isnan(scores))
        tail = np.concatenate([np.cumsum(weights[:real][::-1])[::-1], [0.0]])
        return tail[np.searchsorted(scores[:real], thresholds, side="right")], float(
            np.sum(weights))

    (tp, pos), (fp, neg) = above(p[positive], w[positive]), above(p[~positive], w[~positive])
    return tp, fp, neg - fp, pos - tp


def _entry_weights(sample_weight: Any, shape: tuple, owner: str) -> np.ndarray | None:
    """``sample_weight`` (one per sample, or shaped like the predictions' leading axes)
    broadcast to the predictions' ``shape`` as float64, as Keras broadcasts it."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, dtype=np.float64)
    w = w.reshape(w.shape + (1,) * (len(shape) - w.ndim)) if w.ndim <= len(shape) else w
    try:
        return np.broadcast_to(w, shape)
    except ValueError:
        raise ValueError(f"{owner}: sample_weight shape {np.shape(sample_weight)} does not "
                         f"match the predictions' shape {shape}") from None


class _Confusion(Metric):
    """Counts over the batches since the last reset; :meth:`__call__` is one batch."""

    stateful = True

    def _scores(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> tuple:
        """Flat labels, scores and entry weights (``None`` without ``sample_weight``)."""
        t, p = _same_rank(type(self).__name__, y_true, y_pred)
        w = _entry_weights(sample_weight, p.shape, type(self).__name__)
        return t.reshape(-1), p.reshape(-1), None if w is None else w.reshape(-1)

    def _thresholds(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Adds a batch's counts, each entry counting its ``sample_weight`` (Keras)."""
        t, p, w = self._scores(y_true, y_pred, sample_weight)
        for total, batch in zip(self._state, _counts(t, p, self._thresholds(), w)):
            total += batch

    def reset_state(self) -> None:
        self._state = None
        if hasattr(self, "_ready"):
            n = self._thresholds().size
            self._state = tuple(np.zeros(n) for _ in range(4))

    def __call__(self, y_true: Any, y_pred: Any) -> float:
        saved = self._state
        self.reset_state()
        try:
            self.update_state(y_true, y_pred)
            return self.result()
        finally:
            self._state = saved

    def values(self, y_true: Any, y_pred: Any) -> np.ndarray:
        return np.array([self(y_true, y_pred)])


class _ThresholdMetric(_Confusion):
    """Precision and Recall: one threshold, optionally one class or the top ``k``."""

    def __init__(self, thresholds: float | None = None, top_k: int | None = None,
                 class_id: int | None = None, *, name: str | None = None) -> None:
        owner = type(self).__name__
        self.top_k = _check_optional_int(top_k, "top_k", owner, 1)
        self.thresholds = _check_threshold(thresholds, owner,
                                           0.5 if self.top_k is None else _NEG_INF)
        self._given = thresholds
        self.class_id = _check_optional_int(class_id, "class_id", owner, 0)
        self._ready = True
        super().__init__(name=name)

    def _thresholds(self) -> np.ndarray:
        return np.array([self.thresholds], dtype=np.float32)

    def _scores(self, y_true, y_pred, sample_weight=None):
        t, p = _same_rank(type(self).__name__, y_true, y_pred)
        w = _entry_weights(sample_weight, p.shape, type(self).__name__)
        if self.top_k is not None:  # only each row's top k scores may count as positive
            order = np.argsort(-p, axis=-1, kind="stable")[..., :self.top_k]
            kept = np.full(p.shape, -np.inf, dtype=np.float32)
            np.put_along_axis(kept, order, np.take_along_axis(p, order, axis=-1), axis=-1)
            p = kept
        if self.class_id is not None:
            if not 0 <= self.class_id < p.shape[-1]:
                raise ValueError(f"{type(self).__name__}: class_id {self.class_id} is out of "
                                 f"range for {p.shape[-1]} classes")
            t, p = t[..., self.class_id], p[..., self.class_id]
            w = None if w is None else w[..., self.class_id]
        return t.reshape(-1), p.reshape(-1), None if w is None else w.reshape(-1)

    def get_config(self) -> dict:
        return {"name": self.name, "thresholds": self._given, "top_k": self.top_k,
                "class_id": self.class_id}


class Precision(_ThresholdMetric):
    """``tp / (tp + fp)`` over every batch since the last reset (0 when nothing was
    predicted positive), as ``keras.metrics.Precision``.

    Args:
        thresholds: The decision threshold (default 0.5, or every score with ``top_k``): a
            score strictly above it is a positive prediction.
        top_k: Only each row's ``top_k`` highest scores can be positive.
        class_id: Only this class (last-axis index) counts.
        name: Defaults to ``"precision"``.
    """

    _default_name = "precision"

    def result(self) -> float:
        tp, fp = self._state[0][0], self._state[1][0]
        return float(tp / (tp + fp)) if tp + fp else 0.0


class Recall(_ThresholdMetric):
    """``tp / (tp + fn)`` over every batch since the last reset (0 without positives), as
    ``keras.metrics.Recall`` (arguments as :class:`Precision`; name ``"recall"``)."""

    _default_name = "recall"

    def result(self) -> float:
        tp, fn = self._state[0][0], self._state[3][0]
        return float(tp / (tp + fn)) if tp + fn else 0.0


_CURVES = ("ROC", "PR")
_SUMMATIONS = ("interpolation", "minoring", "majoring")


def _divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a / b``, 0 where ``b`` is 0 (Keras's ``divide_no_nan``)."""
    out = np.zeros_like(a, dtype=np.float64)
    np.divide(a, b, out=out, where=b != 0)
    return out


def _label_mean(areas: np.ndarray) -> float:
    """The area (or, with one per label, their mean); 0.0 for a non-finite one."""
    value = float(np.mean(areas))
    return value if math.isfinite(value) else 0.0


class AUC(_Confusion):
    """Area under the ROC or precision-recall curve from confusion counts at fixed
    thresholds, as ``keras.metrics.AUC`` (single label): thresholds ``-1e-7``,
    ``(i + 1) / (num_thresholds - 1)`` and ``1 + 1e-7`` (or the given ones between the two
    ends), a Riemann sum of the curve's points with the ``summation_method``'s heights;
    for "PR" with "interpolation" Keras's closed form (Davis & Goadrich). With evenly
    spaced thresholds the scores are clipped to ``[0, 1]`` first, as Keras's bucketed
    count does.

    Args:
        num_thresholds: Thresholds (an int > 1; default 200).
        curve: ``"ROC"`` or ``"PR"``.
        summation_method: ``"interpolation"`` (trapezoids), ``"minoring"`` or
            ``"majoring"``.
        name: Defaults to ``"auc"``.
        thresholds: Optional thresholds in ``[0, 1]`` instead of evenly spaced ones.
        multi_label: ``False``: one curve over every entry; ``True``: one curve per
            label (the last axis of 2-D predictions), the result their mean, as Keras.
        from_logits: Apply a sigmoid to the scores first.
    """

    _default_name = "auc"

    def __init__(self, num_thresholds: int = 200, curve: str = "ROC",
                 summation_method: str = "interpolation", name: str | None = None,
                 thresholds: list | None = None, multi_label: bool = False,
                 from_logits: bool = False) -> None:
        owner = "AUC"
        if isinstance(curve, str) and curve.upper() in _CURVES:
            self.curve = curve.upper()
        else:
            raise ValueError(f"{owner}: curve must be 'ROC' or 'PR', got {curve!r}")
        if isinstance(summation_method, str) and summation_method.lower() in _SUMMATIONS:
            self.summation_method = summation_method.lower()
        else:
            raise ValueError(f"{owner}: summation_method must be 'interpolation', 'minoring' "
                             f"or 'majoring', got {summation_method!r}")
        self.multi_label = check_bool(multi_label, "multi_label", owner)
        self.from_logits = check_bool(from_logits, "from_logits", owner)
        if thresholds is not None:
            try:
                inner = sorted(float(v) for v in thresholds)
            except (TypeError, ValueError, OverflowError):
                raise TypeError(f"{owner}: thresholds must be None or a list of floats in "
                                f"[0, 1], got {thresholds!r}") from None
            if not all(0.0 <= v <= 1.0 for v in inner):
                raise ValueError(f"{owner}: thresholds must be None or a list of floats in "
                                 f"[0, 1], got {thresholds!r}")
            self.num_thresholds = len(inner) + 2
            self._given = inner
        else:
            what = (f"{owner}: num_thresholds must be an int > 1 (and < 2**31), got "
                    f"{num_thresholds!r}")
            if isinstance(num_thresholds, bool) or not isinstance(num_thresholds,
                                                                  (int, np.integer)):
                raise TypeError(what)
            if not 1 < num_thresholds < 2**31:
                raise ValueError(what)
            self.num_thresholds = int(num_thresholds)
            inner = [(i + 1) * 1.0 / (self.num_thresholds - 1)
                     for i in range(self.num_thresholds - 2)]
            self._given = None
        self._points = np.array([0.0 - 1e-7] + inner + [1.0 + 1e-7]).astype(np.float32)
        # Keras counts evenly spaced thresholds by buckets, on scores clipped to [0, 1]
        ends = np.array([0.0] + inner + [1.0], dtype=np.float32)
        even = np.arange(ends.size, dtype=np.float32) / (ends.size - 1)
        self._evenly = bool(ends.size >= 3 and np.allclose(ends, even, atol=1e-7))
        self._ready = True
        super().__init__(name=name)

    def _thresholds(self) -> np.ndarray:
        return self._points

    def _scores(self, y_true, y_pred, sample_weight=None):
        t, p, w = super()._scores(y_true, y_pred, sample_weight)
        if self.from_logits:
            p = (1.0 / (1.0 + np.exp(-p.astype(np.float64)))).astype(np.float32)
        if self._evenly:  # Keras's bucketed count clips the scores to [0, 1]
            p = np.clip(p, np.float32(0.0), np.float32(1.0))
        return t, p, w

    def _labels(self, y_pred: Any) -> int:
        """The number of labels of ``multi_label=True``: the last axis of 2-D predictions."""
        shape = np.shape(y_pred.data if hasattr(y_pred, "data") else y_pred)
        if len(shape) != 2:
            raise ValueError(f"AUC: multi_label=True needs predictions of shape (samples, "
                             f"labels), got shape {shape}")
        return shape[1]

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Adds a batch's counts: over every entry, or per label with ``multi_label``."""
        if not self.multi_label:
            super().update_state(y_true, y_pred, sample_weight)
            return
        labels = self._labels(y_pred)
        t, p, w = self._scores(y_true, y_pred, sample_weight)
        t, p = t.reshape(-1, labels), p.reshape(-1, labels)
        w = None if w is None else w.reshape(-1, labels)
        per_label = [_counts(t[:, j], p[:, j], self._points, None if w is None else w[:, j])
                     for j in range(labels)]
        batch = [np.stack(c, axis=1) for c in zip(*per_label)]  # (thresholds, labels)
        if self._state[0].ndim == 1 and not self._state[0].any():  # first batch: the labels
            self._state = tuple(np.zeros_like(b) for b in batch)
        if self._state[0].shape != batch[0].shape:
            raise ValueError(f"AUC: multi_label=True was fed {self._state[0].shape[1]} labels "
                             f"before and now {labels}")
        for total, b in zip(self._state, batch):
            total += b

    def _pr_interpolated(self) -> float:
        tp, fp, _, fn = self._state
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = _divide(dtp, np.maximum(dp, 0.0))
        intercept = tp[1:] - slope * p[1:]
        both = (p[:-1] > 0) & (p[1:] > 0)
        ratio = np.where(both, _divide(p[:-1], np.maximum(p[1:], 0.0)), 1.0)
        with np.errstate(divide="ignore"):
            terms = _divide(slope * (dtp + intercept * np.log(ratio)),
                            np.maximum(tp[1:] + fn[1:], 0.0))
        return _label_mean(np.sum(terms, axis=0))

    def result(self) -> float:
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._pr_interpolated()
        tp, fp, tn, fn = self._state
        recall = _divide(tp, tp + fn)
        if self.curve == "ROC":
            x, y = _divide(fp, fp + tn), recall
        else:
            x, y = recall, _divide(tp, tp + fp)
        if self.summation_method == "interpolation":
            heights = (y[:-1] + y[1:]) / 2.0
        elif self.summation_method == "minoring":
            heights = np.minimum(y[:-1], y[1:])
        else:
            heights = np.maximum(y[:-1], y[1:])
        return _label_mean(np.sum((x[:-1] - x[1:]) * heights, axis=0))

    def get_config(self) -> dict:
        return {"name": self.name, "num_thresholds": self.num_thresholds, "curve": self.curve,
                "summation_method": self.summation_method, "thresholds": self._given,
                "multi_label": self.multi_label, "from_logits": self.from_logits}
