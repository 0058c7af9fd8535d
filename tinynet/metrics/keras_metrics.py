"""More Keras 3 metrics: confusion counts (``TruePositives`` ... ``FalseNegatives``), the
mean regression metrics (``MeanAbsolutePercentageError``, ``MeanSquaredLogarithmicError``,
``RootMeanSquaredError``, ``CosineSimilarity``), ``FBetaScore`` / ``F1Score`` and the
reductions ``Mean`` / ``Sum``.

Each keeps its state (float64) over every ``update_state(y_true, y_pred,
sample_weight=None)`` since the last ``reset_state`` and computes ``result()`` from it as
Keras 3.15 does; they are ``stateful``: in ``fit`` / ``evaluate`` every batch goes to
``update_state`` and the logged value is ``result()`` so far (reset each epoch). As the
other tinynet built-ins (``Precision``, ``AUC``), ``metric(y_true, y_pred,
sample_weight=None)`` is the value of that one batch and leaves the state alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.metrics.base import Metric, _same_rank
from tinynet.tensor import Tensor, as_array

__all__ = ["TruePositives", "FalsePositives", "TrueNegatives", "FalseNegatives",
           "MeanAbsolutePercentageError", "MeanSquaredLogarithmicError",
           "RootMeanSquaredError", "CosineSimilarity", "FBetaScore", "F1Score", "Mean", "Sum"]

_EPSILON = 1e-7  # Keras's backend.epsilon()


def _number_array(value: Any, owner: str, what: str) -> np.ndarray:
    arr = np.asarray(value.data if isinstance(value, Tensor) else getattr(value, "_value",
                                                                          value))
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{owner}: {what} must be numeric, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _float_arg(value: Any, owner: str, arg: str, expect: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: {arg} must be {expect}, got {value!r}")
    try:
        out = float(value)
    except OverflowError:  # an int beyond float range
        out = np.inf
    if not np.isfinite(out):
        raise ValueError(f"{owner}: {arg} must be {expect}, got {value!r}")
    return out


class _Stateful(Metric):
    """Shared protocol: ``_batch(y_true, y_pred, sample_weight)`` returns a tuple of
    arrays added to the state; ``_value(state)`` the result."""

    stateful = True

    def _zeros(self) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def _batch(self, y_true: Any, y_pred: Any, sample_weight: Any) -> tuple:  # pragma: no cover
        raise NotImplementedError

    def _value(self, state: tuple) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        batch = self._batch(y_true, y_pred, sample_weight)
        if self._state is None:
            self._state = tuple(np.array(b, dtype=np.float64) for b in batch)
        else:
            self._state = tuple(s + b for s, b in zip(self._state, batch))

    def result(self) -> Any:
        if self._state is None:
            self._state = self._zeros()
        return self._value(self._state)

    def reset_state(self) -> None:
        self._state = self._zeros() if getattr(self, "_ready", False) else None

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        return self._value(tuple(np.array(b, dtype=np.float64)
                                 for b in self._batch(y_true, y_pred, sample_weight)))

    def values(self, y_true: Any, y_pred: Any) -> np.ndarray:
        return np.asarray(self(y_true, y_pred), dtype=np.float64).reshape(-1)

    def get_config(self) -> dict:
        return {"name": self.name, "dtype": self.dtype}


# -- confusion counts -----------------------------------------------------------------------
def _check_thresholds(value: Any, owner: str) -> list[float]:
    what = (f"{owner}: thresholds must be None, a float in [0, 1] or a list of floats in "
            f"[0, 1], got {value!r}")
    items = value if isinstance(value, (list, tuple)) else [0.5 if value is None else value]
    if not items:
        raise ValueError(what)
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(what)
        if not 0.0 <= v <= 1.0:
            raise ValueError(what)
        out.append(float(v))
    return out


def _confusion_weights(t: np.ndarray, p: np.ndarray, sample_weight: Any,
                       owner: str) -> np.ndarray:
    if sample_weight is None:
        return np.ones(p.shape)
    w = _number_array(sample_weight, owner, "sample_weight")[..., None]
    if w.ndim == t.ndim + 1 and w.shape[-1] == 1:
        w = w.reshape(w.shape[:-1])
    try:
        return np.broadcast_to(w, p.shape)
    except ValueError:
        raise ValueError(f"{owner}: sample_weight shape {np.shape(sample_weight)} does not "
                         f"broadcast to y_pred shape {p.shape}") from None


class _ConfusionCount(_Stateful):
    """The (weighted) count of one confusion-matrix cell at each threshold."""

    _cell = ""  # "tp", "fp", "tn" or "fn"

    def __init__(self, thresholds: Any = None, name: str | None = None,
                 dtype: Any = None) -> None:
        owner = type(self).__name__
        self._given = list(thresholds) if isinstance(thresholds, tuple) else thresholds
        self.thresholds = _check_thresholds(thresholds, owner)
        n = len(self.thresholds)
        even = np.arange(n, dtype=np.float32) / max(n - 1, 1)
        self._evenly = bool(n >= 3 and np.allclose(np.asarray(self.thresholds, np.float32),
                                                   even, atol=_EPSILON))
        self._ready = True
        super().__init__(name=name, dtype=dtype)

    def _zeros(self) -> tuple:
        return (np.zeros(len(self.thresholds)),)

    def _batch(self, y_true, y_pred, sample_weight):
        owner = type(self).__name__
        t, p = _same_rank(owner, y_true, y_pred)
        w = _confusion_weights(t, p, sample_weight, owner).reshape(-1)
        t, p = t.reshape(-1) != 0, p.reshape(-1)
        if self._evenly:  # Keras's bucketed count clips the scores to [0, 1]
            p = np.clip(p, np.float32(0.0), np.float32(1.0))
        label = t if self._cell in ("tp", "fn") else ~t
        out = np.empty(len(self.thresholds))
        for i, thr in enumerate(np.asarray(self.thresholds, dtype=np.float32)):
            pred = p > thr
            if self._cell in ("fn", "tn"):
                pred = ~pred
            out[i] = np.sum(w[label & pred])
        return (out,)

    def _value(self, state):
        counts = state[0]
        return float(counts[0]) if counts.size == 1 else counts.copy()

    def get_config(self) -> dict:
        return {**super().get_config(), "thresholds": self._given}


class TruePositives(_ConfusionCount):
    """The (sample-weighted) number of true positives: label non-zero and score strictly
    above the threshold, as ``keras.metrics.TruePositives``.

    Args:
        thresholds: A float in ``[0, 1]`` or a list of them (default 0.5). With one
            threshold ``result()`` is a float, with a list an array of one count each.
        name: Defaults to ``"true_positives"``.
        dtype: Accepted for Keras compatibility.
    """

    _cell = "tp"


class FalsePositives(_ConfusionCount):
    """The number of false positives (label 0, score above the threshold), as
    ``keras.metrics.FalsePositives`` (arguments as :class:`TruePositives`)."""

    _cell = "fp"


class TrueNegatives(_ConfusionCount):
    """The number of true negatives (label 0, score at most the threshold), as
    ``keras.metrics.TrueNegatives`` (arguments as :class:`TruePositives`)."""

    _cell = "tn"


class FalseNegatives(_ConfusionCount):
    """The number of false negatives (label non-zero, score at most the threshold), as
    ``keras.metrics.FalseNegatives`` (arguments as :class:`TruePositives`)."""

    _cell = "fn"


# -- Mean, Sum and the mean metrics -----------------------------------------------------------
def _samplewise(values: np.ndarray, sample_weight: Any, reduce: Any,
                owner: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Keras's ``reduce_to_samplewise_values``: weigh, then reduce to one value per
    sample."""
    if sample_weight is not None:
        w = _number_array(sample_weight, owner, "sample_weight")
        if values.ndim == w.ndim + 1 and values.shape[-1] == 1:
            values = values.reshape(values.shape[:-1])
        elif w.ndim == values.ndim + 1 and w.shape[-1] == 1:
            w = w.reshape(w.shape[:-1])
        if values.ndim > w.ndim:
            values = reduce(values, axis=tuple(range(w.ndim, values.ndim)))
        try:
            w = np.broadcast_to(w, values.shape)
        except ValueError:
            raise ValueError(f"{owner}: sample_weight shape {np.shape(sample_weight)} does "
                             f"not broadcast to the values' shape {values.shape}") from None
        values = values * w
        if w.ndim > 1:
            w = reduce(w, axis=tuple(range(1, w.ndim)))
    else:
        w = None
    if values.ndim > 1:
        values = reduce(values, axis=tuple(range(1, values.ndim)))
    return values, w


class Mean(_Stateful):
    """The (weighted) mean of the values given to ``update_state(values,
    sample_weight=None)``, as ``keras.metrics.Mean``: values of rank > 1 are first averaged
    per sample (over every axis but the first), each sample counts its weight (1 without).

    Args:
        name: Defaults to ``"mean"``.
        dtype: Accepted for Keras compatibility.
    """

    _default_name = "mean"
    _reduce = staticmethod(np.mean)

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        self._ready = True
        super().__init__(name=name, dtype=dtype)

    def _zeros(self) -> tuple:
        return (np.zeros(()), np.zeros(()))

    def _reduced(self, values: Any, sample_weight: Any) -> tuple:
        owner = type(self).__name__
        v = _number_array(values, owner, "values")
        v, w = _samplewise(v, sample_weight, self._reduce, owner)
        if w is not None:
            count = np.sum(w)
        else:
            count = v.shape[0] if v.ndim >= 1 else 1
        return (np.sum(v), np.float64(count))

    def _batch(self, values, sample_weight, _unused=None):
        return self._reduced(values, sample_weight)

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        super().update_state(values, sample_weight)

    def __call__(self, values: Any, sample_weight: Any = None) -> float:
        return super().__call__(values, sample_weight)

    def _value(self, state):
        total, count = state
        return float(total / count) if count else 0.0


class Sum(Mean):
    """The (weighted) sum of the values given to ``update_state(values,
    sample_weight=None)``, as ``keras.metrics.Sum``.

    Args:
        name: Defaults to ``"sum"``.
        dtype: Accepted for Keras compatibility.
    """

    _default_name = "sum"
    _reduce = staticmethod(np.sum)

    def _value(self, state):
        return float(state[0])


class _MeanOf(Mean):
    """The weighted mean of per-sample values ``_fn(y_true, y_pred)`` (Keras's
    ``MeanMetricWrapper`` around a metric function)."""

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)

    def _fn(self, t: np.ndarray, p: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _batch(self, y_true, y_pred, sample_weight):
        t, p = _same_rank(type(self).__name__, y_true, y_pred)
        return self._reduced(self._fn(t.astype(np.float64), p.astype(np.float64)),
                             sample_weight)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        _Stateful.update_state(self, y_true, y_pred, sample_weight)

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> float:
        return _Stateful.__call__(self, y_true, y_pred, sample_weight)


def _last_axis_mean(x: np.ndarray) -> np.ndarray:
    return np.mean(x, axis=-1) if x.ndim else x


class MeanAbsolutePercentageError(_MeanOf):
    """``100 * mean(|y_true - y_pred| / max(|y_true|, 1e-7))`` over the last axis,
    averaged over the samples (weighted), as ``keras.metrics.MeanAbsolutePercentageError``.

    Args:
        name: Defaults to ``"mean_absolute_percentage_error"``.
        dtype: Accepted for Keras compatibility.
    """

    _default_name = "mean_absolute_percentage_error"

    def _fn(self, t, p):
        return 100.0 * _last_axis_mean(np.abs((t - p) / np.maximum(np.abs(t), _EPSILON)))


class MeanSquaredLogarithmicError(_MeanOf):
    """``mean((log(max(y_pred, 1e-7) + 1) - log(max(y_true, 1e-7) + 1))**2)`` over the last
    axis, averaged over the samples (weighted), as
    ``keras.metrics.MeanSquaredLogarithmicError``.

    Args:
        name: Defaults to ``"mean_squared_logarithmic_error"``.
        dtype: Accepted for Keras compatibility.
    """

    _default_name = "mean_squared_logarithmic_error"

    def _fn(self, t, p):
        d = np.log(np.maximum(p, _EPSILON) + 1.0) - np.log(np.maximum(t, _EPSILON) + 1.0)
        return _last_axis_mean(d * d)


class RootMeanSquaredError(_MeanOf):
    """``sqrt`` of the (weighted) mean of the squared errors, as
    ``keras.metrics.RootMeanSquaredError`` (the square root of the running mean, not a mean
    of batch roots).

    Args:
        name: Defaults to ``"root_mean_squared_error"``.
        dtype: Accepted for Keras compatibility.
    """

    _default_name = "root_mean_squared_error"

    def _fn(self, t, p):
        return (p - t) ** 2

    def _value(self, state):
        return float(np.sqrt(super()._value(state)))


class CosineSimilarity(_MeanOf):
    """The cosine similarity of ``y_true`` and ``y_pred`` along ``axis``, averaged over the
    samples (weighted), as ``keras.metrics.CosineSimilarity`` (each side scaled by
    ``min(1 / ||x||, 1e7)``).

    Args:
        name: Defaults to ``"cosine_similarity"``.
        dtype: Accepted for Keras compatibility.
        axis: The axis (an int) of the vectors. Defaults to -1.
    """

    _default_name = "cosine_similarity"

    def __init__(self, name: str | None = None, dtype: Any = None, axis: int = -1) -> None:
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"CosineSimilarity: axis must be an int, got {axis!r}")
        self.axis = int(axis)
        super().__init__(name=name, dtype=dtype)

    def _fn(self, t, p):
        if not -max(p.ndim, 1) <= self.axis < max(p.ndim, 1):
            raise ValueError(f"CosineSimilarity: axis {self.axis} is out of range for "
                             f"y_pred of rank {p.ndim}")

        def normalize(x):
            x = x.reshape(1) if x.ndim == 0 else x
            with np.errstate(divide="ignore"):
                inv = 1.0 / np.sqrt(np.sum(x * x, axis=self.axis, keepdims=True))
            return x * np.minimum(inv, 1.0 / _EPSILON)

        return np.sum(normalize(t) * normalize(p), axis=self.axis)

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}


# -- F-scores ------------------------------------------------------------------------------
_AVERAGES = (None, "micro", "macro", "weighted")


class FBetaScore(_Stateful):
    """The F-beta score per class from true/false positive and false negative counts
    since the last reset, as ``keras.metrics.FBetaScore``: labels and scores of shape
    ``(batch, classes)``; without a ``threshold`` each row's highest score(s) are the
    positive predictions, with one a score strictly above it.

    Args:
        average: ``None`` (one score per class, an array), ``"micro"`` (from the counts
            summed over the classes), ``"macro"`` (the mean of the class scores) or
            ``"weighted"`` (weighted by each class's share of true labels).
        beta: The weight of recall (a float > 0). Defaults to 1.0.
        threshold: ``None`` or a float in ``(0, 1]``.
        name: Defaults to ``"fbeta_score"``.
        dtype: Accepted for Keras compatibility.
    """

    _default_name = "fbeta_score"

    def __init__(self, average: str | None = None, beta: float = 1.0,
                 threshold: float | None = None, name: str | None = None,
                 dtype: Any = None) -> None:
        owner = type(self).__name__
        if not (average is None or isinstance(average, str)) or average not in _AVERAGES:
            raise ValueError(f"{owner}: average must be one of None, 'micro', 'macro', "
                             f"'weighted', got {average!r}")
        self.average = average
        self.beta = _float_arg(beta, owner, "beta", "a float > 0")
        if self.beta <= 0.0:
            raise ValueError(f"{owner}: beta must be a float > 0, got {beta!r}")
        self.threshold = None
        if threshold is not None:
            self.threshold = _float_arg(threshold, owner, "threshold",
                                        "None or a float in (0, 1]")
            if not 0.0 < self.threshold <= 1.0:
                raise ValueError(f"{owner}: threshold must be None or a float in (0, 1], "
                                 f"got {threshold!r}")
        self._classes: int | None = None
        self._ready = True
        super().__init__(name=name, dtype=dtype)

    def _zeros(self) -> tuple:
        shape = () if self.average == "micro" or self._classes is None else (self._classes,)
        return tuple(np.zeros(shape) for _ in range(4))

    def reset_state(self) -> None:
        super().reset_state()
        if self._classes is None:
            self._state = None  # sized on the first batch

    def _batch(self, y_true, y_pred, sample_weight):
        owner = type(self).__name__
        p = as_array(y_pred, f"{owner}: y_pred").astype(np.float64)
        t = _number_array(y_true, owner, "y_true")
        if t.ndim != 2 or p.ndim != 2:
            raise ValueError(f"{owner}: y_true and y_pred must be 2-D (batch, classes), got "
                             f"shapes {t.shape} and {p.shape}")
        if t.shape != p.shape:
            raise ValueError(f"{owner}: y_true shape {t.shape} must equal y_pred shape "
                             f"{p.shape}")
        if self._classes is None:
            self._classes = p.shape[-1]
        elif p.shape[-1] != self._classes:
            raise ValueError(f"{owner}: y_pred has {p.shape[-1]} classes, the metric was "
                             f"built for {self._classes}")
        if self.threshold is None:
            pred = (p == np.max(p, axis=-1, keepdims=True)).astype(np.float64)
        else:
            pred = (p.astype(np.float32) > np.float32(self.threshold)).astype(np.float64)
        axis = None if self.average == "micro" else 0
        if sample_weight is not None:
            w = _number_array(sample_weight, owner, "sample_weight")
            w = w.reshape(-1, 1) if w.ndim == 1 else w
        else:
            w = None

        def total(v):
            return np.sum(v if w is None else v * w, axis=axis)

        return (total(pred * t), total(pred * (1 - t)), total((1 - pred) * t), total(t))

    def _value(self, state):
        tp, fp, fn, support = state
        precision = tp / (tp + fp + _EPSILON)
        recall = tp / (tp + fn + _EPSILON)
        b2 = self.beta ** 2
        score = precision * recall / (b2 * precision + recall + _EPSILON) * (1 + b2)
        if self.average == "weighted":
            return float(np.sum(score * support / (np.sum(support) + _EPSILON)))
        if self.average is not None:
            return float(np.mean(score))
        return np.array(score, dtype=np.float64)

    def get_config(self) -> dict:
        return {**super().get_config(), "average": self.average, "beta": self.beta,
                "threshold": self.threshold}


class F1Score(FBetaScore):
    """:class:`FBetaScore` with ``beta=1.0``, as ``keras.metrics.F1Score``.

    Args:
        average: ``None``, ``"micro"``, ``"macro"`` or ``"weighted"``.
        threshold: ``None`` or a float in ``(0, 1]``.
        name: Defaults to ``"f1_score"``.
        dtype: Accepted for Keras compatibility.
    """

    _default_name = "f1_score"

    def __init__(self, average: str | None = None, threshold: float | None = None,
                 name: str | None = None, dtype: Any = None) -> None:
        super().__init__(average=average, beta=1.0, threshold=threshold, name=name,
                         dtype=dtype)

    def get_config(self) -> dict:
        config = super().get_config()
        del config["beta"]
        return config
