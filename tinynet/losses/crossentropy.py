"""The crossentropies: binary, categorical and sparse categorical."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.losses.base import (_ProbabilisticLoss, _clip, _log_softmax, _out, _pred, _rows,
                                 _total)
from tinynet.scalars import is_real, to_float
from tinynet.tensor import Tensor, as_array, match_labels

__all__ = ["BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "check_range", "check_smoothing"]

# the losses a label mismatch points to
_SPARSE = "SparseCategoricalCrossentropy (loss='sparse_categorical_crossentropy')"
_CATEGORICAL = "CategoricalCrossentropy (loss='categorical_crossentropy')"
_BINARY = "BinaryCrossentropy (loss='binary_crossentropy')"


def _one_per_sample(t_shape: tuple, p_shape: tuple) -> bool:
    """Whether labels of ``t_shape`` hold one value per sample (and position) where the
    predictions of ``p_shape`` have several units: integer class labels, likely."""
    lead = p_shape[:-1]
    return p_shape[-1] > 1 and t_shape in (lead, (*lead, 1))


def check_range(value: Any, arg: str, owner: str, low: float, high: float) -> float:
    """A finite float in ``[low, high]`` (``high`` may be ``inf``: no upper bound)."""
    expected = (f"a finite float >= {low:g}" if math.isinf(high)
                else f"a float in [{low:g}, {high:g}]")
    what = f"{owner}: {arg} must be {expected}, got {value!r}"
    if not is_real(value):
        raise TypeError(what)
    number = to_float(value)
    if not (low <= number <= high and math.isfinite(number)):  # NaN fails too
        raise ValueError(what)
    return number


def check_smoothing(value: Any, owner: str) -> float:
    """Keras's ``label_smoothing``: a float in ``[0, 1]``."""
    return check_range(value, "label_smoothing", owner, 0.0, 1.0)


class _Smoothed(_ProbabilisticLoss):
    """A crossentropy with Keras's ``label_smoothing``: the labels move towards uniform,
    ``t * (1 - s) + s / k`` (``k`` = 2 for the binary losses, the class count for the
    categorical ones), before anything else."""

    _smooth_over_classes = True

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, *,
                 name: str | None = None) -> None:
        super().__init__(from_logits, name=name)
        self.label_smoothing = check_smoothing(label_smoothing, type(self).__name__)

    def _smooth(self, t: np.ndarray) -> np.ndarray:
        s = self.label_smoothing
        if not s:
            return t
        k = t.shape[-1] if self._smooth_over_classes else 2
        return t * (1.0 - s) + s / k

    def get_config(self) -> dict:
        return {**super().get_config(), "label_smoothing": self.label_smoothing}


def _binary_true(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """``y_true`` as float64 in ``p``'s shape (a trailing axis of 1 squeezed or added); a
    shape that fits a categorical loss instead says which."""
    return _binary_labels(owner, y_true, p).astype(np.float64)


def _binary_labels(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """:func:`_binary_true`'s check, the labels as float32 (no float64 copy)."""
    t = as_array(y_true, f"{owner}: y_true")
    if t.shape != p.shape:
        if _one_per_sample(t.shape, p.shape):
            raise ValueError(
                f"{owner}: y_true shape {t.shape} holds one label per sample, but y_pred shape "
                f"{p.shape} has {p.shape[-1]} units (one 0/1 label each); for integer class "
                f"labels use {_SPARSE}; for binary labels give the model one sigmoid unit")
        if (p.shape[-1] == 1 and t.ndim == p.ndim and t.shape[:-1] == p.shape[:-1]
                and t.shape[-1] > 1):
            raise ValueError(
                f"{owner}: y_true shape {t.shape} has {t.shape[-1]} columns, as one-hot "
                f"labels do, but y_pred shape {p.shape} has one unit; for one-hot labels use "
                f"{_CATEGORICAL} with {t.shape[-1]} softmax units; for binary labels pass one "
                f"0/1 column")
    return match_labels(owner, t, p)


def _binary_targets(self: _ProbabilisticLoss, y_true: Any, p: np.ndarray) -> None:
    """``_targets`` of the binary losses: the shapes, then labels in [0, 1] (checked once
    per ``fit``, not per batch)."""
    owner = type(self).__name__
    t = _binary_labels(owner, y_true, p)
    low, high = float(np.min(t)), float(np.max(t))  # nan if any label is
    if low >= 0.0 and high <= 1.0:
        return
    value = high if high > 1.0 else low if low < 0.0 else math.nan
    hint = ("; for integer class labels use " + _SPARSE + " with one softmax unit per class"
            if value > 1.0 else "; for -1/1 labels use Hinge (loss='hinge')"
            if value < 0.0 else "")
    raise ValueError(f"{owner}: y_true must hold binary labels in [0, 1] (or "
                     f"probabilities), got {value:g}{hint}")


class BinaryCrossentropy(_Smoothed):
    """Binary crossentropy, averaged over every element (Keras ``binary_crossentropy``).

    Probabilities: ``-(t*log(q) + (1-t)*log(1-q))`` with ``q = clip(p, 1e-7, 1-1e-7)``.
    Logits: ``max(x, 0) - x*t + log(1 + exp(-|x|))``, gradient ``sigmoid(x) - t``.

    Args:
        from_logits: ``y_pred`` holds logits instead of probabilities.
        label_smoothing: ``t * (1 - s) + s / 2`` replaces the labels (default 0).
        name: Defaults to ``"binary_crossentropy"``.
    """

    _default_name = "binary_crossentropy"
    _smooth_over_classes = False
    _targets = _binary_targets

    def _terms(self, y_true, y_pred) -> tuple:
        owner = type(self).__name__
        p = _pred(owner, y_pred)
        t = self._smooth(_binary_true(owner, y_true, p))
        x = p.astype(np.float64)
        if self.from_logits:
            e = np.exp(-np.abs(x))
            return p, t, x, e, np.maximum(x, 0.0) - x * t + np.log1p(e)
        q, live = _clip(x)
        return p, t, q, live, -(t * np.log(q) + (1.0 - t) * np.log(1.0 - q))

    def _sample_losses(self, y_true, y_pred):
        return self._terms(y_true, y_pred)[-1].mean(axis=-1)

    def _compute(self, y_true, y_pred, need_grad):
        p, t, a, b, terms = self._terms(y_true, y_pred)
        n = p.size
        if self.from_logits:
            value = _total(terms) / n
            if not need_grad:
                return value, None
            x, e = a, b
            sig = np.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))
            return value, _out((sig - t) / n, p.shape)
        q, live = a, b
        value = _total(terms) / n
        if not need_grad:
            return value, None
        grad = np.where(live, (1.0 - t) / (1.0 - q) - t / q, 0.0) / n
        return value, _out(grad, p.shape)


def _one_hot_true(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """``y_true`` as float64, checked to have ``p``'s shape (one-hot labels)."""
    return _one_hot_labels(owner, y_true, p).astype(np.float64)


def _one_hot_labels(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """:func:`_one_hot_true`'s check, the labels as float32 (no float64 copy)."""
    t_arr = as_array(y_true, f"{owner}: y_true")
    if t_arr.shape != p.shape:
        if _one_per_sample(t_arr.shape, p.shape):
            fix = (f"use {_SPARSE}, or one-hot them" if owner == "CategoricalCrossentropy"
                   else "one-hot them")
            raise ValueError(
                f"{owner}: y_true shape {t_arr.shape} holds one label per sample, but this "
                f"loss expects one-hot labels of y_pred's shape {p.shape}; for integer class "
                f"labels {fix} with tinynet.utils.to_categorical(y, {p.shape[-1]})")
        detail = (f"{t_arr.shape[-1]} classes in y_true, {p.shape[-1]} units in y_pred"
                  if t_arr.ndim and t_arr.shape[:-1] == p.shape[:-1]
                  else "one row of classes per sample")
        raise ValueError(f"{owner}: y_true shape {t_arr.shape} must equal y_pred shape "
                         f"{p.shape} (one-hot labels: {detail})")
    return t_arr


def _categorical_targets(self: _ProbabilisticLoss, y_true: Any, p: np.ndarray) -> None:
    """``_targets`` of the one-hot losses: the shapes, and not a single unit (whose
    normalized probability is always 1, so the loss is 0 whatever the model does)."""
    owner = type(self).__name__
    _one_hot_labels(owner, y_true, p)
    if p.shape[-1] == 1:
        raise ValueError(f"{owner}: y_pred shape {p.shape} has one unit, so this loss is 0 "
                         f"whatever the model predicts; for binary labels use {_BINARY} "
                         f"with one sigmoid unit")


class CategoricalCrossentropy(_Smoothed):
    """Crossentropy with one-hot (or soft) labels over the last axis.

    Probabilities are first normalized to sum to 1 per row, then clipped (as Keras):
    ``-sum(t * log(clip(p / sum(p))))``; logits use ``-sum(t * log_softmax(x))``.
    The per-row loss is averaged over rows.

    Args:
        from_logits: ``y_pred`` holds logits instead of probabilities.
        label_smoothing: ``t * (1 - s) + s / classes`` replaces the labels (default 0).
        name: Defaults to ``"categorical_crossentropy"``.
    """

    _default_name = "categorical_crossentropy"
    _targets = _categorical_targets

    def _terms(self, y_true, y_pred) -> tuple:
        owner = type(self).__name__
        p = _pred(owner, y_pred)
        t = self._smooth(_one_hot_true(owner, y_true, p))
        x = p.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.from_logits:
                logp, soft = _log_softmax(x)
                return p, t, soft, None, None, -(t * logp)
            s = np.sum(x, axis=-1, keepdims=True)
            q, live = _clip(x / s)
            return p, t, q, live, s, -(t * np.log(q))

    def _sample_losses(self, y_true, y_pred):
        return self._terms(y_true, y_pred)[-1].sum(axis=-1)

    def _compute(self, y_true, y_pred, need_grad):
        p, t, q, live, s, terms = self._terms(y_true, y_pred)
        rows = _rows(p)
        value = _total(terms) / rows
        if not need_grad:
            return value, None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.from_logits:
                grad = (q * np.sum(t, axis=-1, keepdims=True) - t) / rows
                return value, _out(grad, p.shape)
            tl = np.where(live, t, 0.0)
            grad = (np.sum(tl, axis=-1, keepdims=True) - tl / q) / s / rows
        return value, _out(grad, p.shape)


class SparseCategoricalCrossentropy(_ProbabilisticLoss):
    """Crossentropy with integer class labels (Keras ``sparse_categorical_crossentropy``).

    ``y_true`` holds class indices (any integer dtype, or integral floats) shaped like
    ``y_pred`` without its last axis, optionally with a trailing axis of 1 (``[N]`` or
    ``[N, 1]`` for ``y_pred`` ``[N, C]``). Otherwise as :class:`CategoricalCrossentropy`
    with the one-hot of the labels.

    Args:
        from_logits: ``y_pred`` holds logits instead of probabilities.
        name: Defaults to ``"sparse_categorical_crossentropy"``.

    Raises:
        ValueError: Shapes do not match, a label is not an integer, or a label is
            outside ``[0, classes)``.
    """

    _default_name = "sparse_categorical_crossentropy"

    def _labels(self, y_true: Any, p: np.ndarray) -> np.ndarray:
        owner = type(self).__name__
        raw = y_true.data if isinstance(y_true, Tensor) else np.asarray(y_true)
        lead = p.shape[:-1]
        if raw.shape != lead and raw.shape != (*lead, 1):
            if raw.shape == p.shape:
                raise ValueError(
                    f"{owner}: y_true shape {raw.shape} matches y_pred shape {p.shape}, as "
                    f"one-hot labels do, but this loss expects integer class labels of shape "
                    f"{lead} or {(*lead, 1)}; for one-hot labels use {_CATEGORICAL}, or pass "
                    f"the class indices, y.argmax(axis=-1)")
            raise ValueError(f"{owner}: y_true shape {raw.shape} does not match y_pred shape "
                             f"{p.shape}: expected labels of shape {lead} or {(*lead, 1)}")
        flat = raw.reshape(-1)
        classes = p.shape[-1]
        if np.issubdtype(flat.dtype, np.integer):
            labels = flat.astype(np.int64)
        elif np.issubdtype(flat.dtype, np.floating) or flat.dtype == np.bool_:
            f = flat.astype(np.float64)
            bad = ~(np.isfinite(f) & (np.floor(f) == f))
            if bad.any():
                raise ValueError(f"{owner}: labels must be integer class indices, got "
                                 f"{flat[np.argmax(bad)].item()!r}")
            labels = f.astype(np.int64)
        else:
            raise TypeError(f"{owner}: labels must be integers, got dtype {flat.dtype}")
        bad = (labels < 0) | (labels >= classes)
        if bad.any():
            hint = (f"; y_pred has one unit: for binary labels use {_BINARY} with one sigmoid "
                    f"unit" if classes == 1 else "")
            raise ValueError(f"{owner}: label {int(labels[np.argmax(bad)])} is out of range for "
                             f"{classes} classes (expected 0 <= label < {classes}){hint}")
        return labels

    def _targets(self, y_true: Any, p: np.ndarray) -> None:
        self._labels(y_true, p)

    def _sample_losses(self, y_true, y_pred):
        p = _pred(type(self).__name__, y_pred)
        labels = self._labels(y_true, p)
        x = p.astype(np.float64).reshape(-1, p.shape[-1])
        idx = np.arange(x.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.from_logits:
                values = -_log_softmax(x)[0][idx, labels]
            else:
                values = -np.log(_clip(x[idx, labels] / np.sum(x, axis=-1))[0])
        return values.reshape(p.shape[:-1])

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        labels = self._labels(y_true, p)
        classes = p.shape[-1]
        x = p.astype(np.float64).reshape(-1, classes)
        rows = x.shape[0]
        idx = np.arange(rows)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.from_logits:
                logp, soft = _log_softmax(x)
                value = -_total(logp[idx, labels]) / rows
                if not need_grad:
                    return value, None
                grad = soft
                grad[idx, labels] -= 1.0
                return value, _out(grad / rows, p.shape)
            s = np.sum(x, axis=-1)
            q, live = _clip(x[idx, labels] / s)
            value = -_total(np.log(q)) / rows
            if not need_grad:
                return value, None
            u = live.astype(np.float64)
            grad = np.repeat((u / s)[:, None], classes, axis=1)
            grad[idx, labels] -= u / q / s
        return value, _out(grad / rows, p.shape)


