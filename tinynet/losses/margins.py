"""Margin and divergence losses: Hinge, SquaredHinge, CategoricalHinge, KLDivergence."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.losses.base import (EPSILON, Loss, _like_predictions, _match_true, _out, _pred,
                                 _rows, _total)

__all__ = ["KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge"]


class KLDivergence(Loss):
    """Keras ``kl_divergence``: ``sum(t * log(t / p))`` over the last axis with ``t`` and
    ``p`` clipped to ``[EPSILON, 1]``, the mean over the rest.

    Gradient: ``-t / p`` where ``p`` is inside the clip (0 elsewhere), over the rows.
    """

    _default_name = "kl_divergence"
    _targets = _like_predictions

    def _terms(self, y_true, y_pred) -> tuple:
        p = _pred(type(self).__name__, y_pred)
        t = np.clip(_match_true(type(self).__name__, y_true, p), EPSILON, 1.0)
        x = p.astype(np.float64)
        q = np.clip(x, EPSILON, 1.0)
        return p, t, x, q, t * np.log(t / q)

    def _sample_losses(self, y_true, y_pred):
        return self._terms(y_true, y_pred)[-1].sum(axis=-1)

    def _compute(self, y_true, y_pred, need_grad):
        p, t, x, q, terms = self._terms(y_true, y_pred)
        rows = _rows(p)
        value = _total(terms) / rows
        if not need_grad:
            return value, None
        live = (x >= EPSILON) & (x <= 1.0)
        return value, _out(np.where(live, -t / q, 0.0) / rows, p.shape)



def _hinge_labels(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """Keras's hinge labels: 0/1 labels become -1/1 (labels already -1/1 stay)."""
    t = _match_true(owner, y_true, p)
    if np.all((t == 0.0) | (t == 1.0)):
        t = 2.0 * t - 1.0
    return t


class Hinge(Loss):
    """Keras ``hinge``: ``max(1 - t * p, 0)`` per element (``t`` in {-1, 1}; 0/1 labels are
    mapped to -1/1), the mean over every element.

    Gradient: ``-t`` where ``1 - t * p > 0``, over the size.
    """

    _default_name = "hinge"
    _targets = _like_predictions
    _power = 1

    def _margins(self, y_true, y_pred) -> tuple:
        p = _pred(type(self).__name__, y_pred)
        t = _hinge_labels(type(self).__name__, y_true, p)
        return p, t, np.maximum(1.0 - t * p.astype(np.float64), 0.0)

    def _sample_losses(self, y_true, y_pred):
        return (self._margins(y_true, y_pred)[2] ** self._power).mean(axis=-1)

    def _compute(self, y_true, y_pred, need_grad):
        p, t, m = self._margins(y_true, y_pred)
        value = _total(m ** self._power) / p.size
        if not need_grad:
            return value, None
        slope = np.where(m > 0.0, -t, 0.0) if self._power == 1 else -2.0 * t * m
        return value, _out(slope / p.size, p.shape)


class SquaredHinge(Hinge):
    """Keras ``squared_hinge``: ``max(1 - t * p, 0)**2`` per element, the mean over every
    element (labels as :class:`Hinge`).

    Gradient: ``-2 t max(1 - t * p, 0)``, over the size.
    """

    _default_name = "squared_hinge"
    _power = 2


class CategoricalHinge(Loss):
    """Keras ``categorical_hinge``: per row ``max(max((1 - t) * p) - sum(t * p) + 1, 0)``
    (``t`` one-hot), the mean over the rows.

    Gradient where a row's loss is positive: ``1 - t`` at the first largest ``(1 - t) * p``,
    minus ``t``; over the rows.
    """

    _default_name = "categorical_hinge"
    _targets = _like_predictions

    def _rows(self, y_true, y_pred) -> tuple:
        p = _pred(type(self).__name__, y_pred)
        t = _match_true(type(self).__name__, y_true, p)
        classes = p.shape[-1]
        tt, xx = t.reshape(-1, classes), p.astype(np.float64).reshape(-1, classes)
        rest = (1.0 - tt) * xx
        m = np.maximum(np.max(rest, axis=-1) - np.sum(tt * xx, axis=-1) + 1.0, 0.0)
        return p, tt, rest, m

    def _sample_losses(self, y_true, y_pred):
        p, _, _, m = self._rows(y_true, y_pred)
        return m.reshape(p.shape[:-1])

    def _compute(self, y_true, y_pred, need_grad):
        p, tt, rest, m = self._rows(y_true, y_pred)
        rows = tt.shape[0]
        value = _total(m) / rows
        if not need_grad:
            return value, None
        grad = -tt.copy()
        top = np.argmax(rest, axis=-1)
        grad[np.arange(rows), top] += 1.0 - tt[np.arange(rows), top]
        grad[m <= 0.0] = 0.0
        return value, _out(grad / rows, p.shape)


