"""The focal crossentropies (Keras 3): crossentropies scaled down where the model is
already right, ``(1 - p_t) ** gamma``, so training attends to the hard examples."""

from __future__ import annotations

import math

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.losses.base import _clip, _out, _pred, _rows, _total
from tinynet.losses.crossentropy import (_binary_targets, _binary_true, _categorical_targets,
                                         _one_hot_true, _Smoothed, check_range)

__all__ = ["BinaryFocalCrossentropy", "CategoricalFocalCrossentropy"]


def _focal_factor(base: np.ndarray, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """``base ** gamma`` and its derivative ``gamma * base ** (gamma - 1)`` (0 at a zero
    base for ``gamma >= 1``, as the limit)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.power(base, gamma)
        slope = np.where(base > 0.0, gamma * np.power(base, gamma - 1.0),
                         gamma if gamma == 1.0 else 0.0)
    return factor, slope


class BinaryFocalCrossentropy(_Smoothed):
    """Keras ``binary_focal_crossentropy``: per element
    ``w * (1 - p_t) ** gamma * bce`` with ``p_t = t * p + (1 - t) * (1 - p)`` (the
    unclipped probability; ``sigmoid`` of logits), ``bce`` the clipped binary
    crossentropy and ``w = t * alpha + (1 - t) * (1 - alpha)`` with class balancing (else
    1); the mean over every element. The gradient is the exact derivative of that.

    Args:
        apply_class_balancing: Weigh positives by ``alpha``, negatives by ``1 - alpha``.
        alpha: The balancing weight, in ``[0, 1]`` (default 0.25).
        gamma: The focusing exponent, ``>= 0`` (default 2.0; 0 gives the crossentropy).
        from_logits: ``y_pred`` holds logits instead of probabilities.
        label_smoothing: ``t * (1 - s) + s / 2`` replaces the labels (default 0).
        name: Defaults to ``"binary_focal_crossentropy"``.
    """

    _default_name = "binary_focal_crossentropy"
    _smooth_over_classes = False
    _targets = _binary_targets

    def __init__(self, apply_class_balancing: bool = False, alpha: float = 0.25,
                 gamma: float = 2.0, from_logits: bool = False, label_smoothing: float = 0.0,
                 *, name: str | None = None) -> None:
        super().__init__(from_logits, label_smoothing, name=name)
        owner = type(self).__name__
        self.apply_class_balancing = check_bool(apply_class_balancing,
                                                "apply_class_balancing", owner)
        self.alpha = check_range(alpha, "alpha", owner, 0.0, 1.0)
        self.gamma = check_range(gamma, "gamma", owner, 0.0, math.inf)

    def _terms(self, y_true, y_pred) -> tuple:
        owner = type(self).__name__
        p = _pred(owner, y_pred)
        t = self._smooth(_binary_true(owner, y_true, p))
        x = p.astype(np.float64)
        q = 1.0 / (1.0 + np.exp(-x)) if self.from_logits else x
        c, live = _clip(q)
        bce = -(t * np.log(c) + (1.0 - t) * np.log(1.0 - c))
        pt = t * q + (1.0 - t) * (1.0 - q)
        factor, slope = _focal_factor(1.0 - pt, self.gamma)
        w = t * self.alpha + (1.0 - t) * (1.0 - self.alpha) if self.apply_class_balancing \
            else 1.0
        return p, t, q, c, live, bce, factor, slope, w, w * factor * bce

    def _sample_losses(self, y_true, y_pred):
        return self._terms(y_true, y_pred)[-1].mean(axis=-1)

    def _compute(self, y_true, y_pred, need_grad):
        p, t, q, c, live, bce, factor, slope, w, terms = self._terms(y_true, y_pred)
        n = p.size
        value = _total(terms) / n
        if not need_grad:
            return value, None
        dbce = np.where(live, (1.0 - t) / (1.0 - c) - t / c, 0.0)
        dq = w * (slope * (1.0 - 2.0 * t) * bce + factor * dbce)  # d(1 - p_t)/dq = 1 - 2t
        if self.from_logits:
            dq = dq * q * (1.0 - q)
        return value, _out(dq / n, p.shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "apply_class_balancing": self.apply_class_balancing,
                "alpha": self.alpha, "gamma": self.gamma}


class CategoricalFocalCrossentropy(_Smoothed):
    """Keras ``categorical_focal_crossentropy``: per row
    ``sum(alpha * (1 - o) ** gamma * (-t * log(o)))`` with ``o`` the probabilities
    (``softmax`` of logits) normalized to sum 1 and clipped to ``[1e-7, 1 - 1e-7]``; the
    mean over the rows. The gradient is the exact derivative of that (zero through the
    clip where it is active).

    Args:
        alpha: The weight of every class's term, in ``[0, 1]`` (default 0.25).
        gamma: The focusing exponent, ``>= 0`` (default 2.0).
        from_logits: ``y_pred`` holds logits instead of probabilities.
        label_smoothing: ``t * (1 - s) + s / classes`` replaces the labels (default 0).
        name: Defaults to ``"categorical_focal_crossentropy"``.
    """

    _default_name = "categorical_focal_crossentropy"
    _targets = _categorical_targets

    def __init__(self, alpha: float = 0.25, gamma: float = 2.0, from_logits: bool = False,
                 label_smoothing: float = 0.0, *, name: str | None = None) -> None:
        super().__init__(from_logits, label_smoothing, name=name)
        owner = type(self).__name__
        self.alpha = check_range(alpha, "alpha", owner, 0.0, 1.0)
        self.gamma = check_range(gamma, "gamma", owner, 0.0, math.inf)

    def _terms(self, y_true, y_pred) -> tuple:
        owner = type(self).__name__
        p = _pred(owner, y_pred)
        t = self._smooth(_one_hot_true(owner, y_true, p))
        x = p.astype(np.float64)
        if self.from_logits:
            e = np.exp(x - np.max(x, axis=-1, keepdims=True))
            q = e / np.sum(e, axis=-1, keepdims=True)
        else:
            q = x
        with np.errstate(divide="ignore", invalid="ignore"):
            s = np.sum(q, axis=-1, keepdims=True)
            c, live = _clip(q / s)
            ce = -t * np.log(c)
        factor, slope = _focal_factor(1.0 - c, self.gamma)
        return p, t, q, s, c, live, ce, factor, slope, self.alpha * factor * ce

    def _sample_losses(self, y_true, y_pred):
        return self._terms(y_true, y_pred)[-1].sum(axis=-1)

    def _compute(self, y_true, y_pred, need_grad):
        p, t, q, s, c, live, ce, factor, slope, terms = self._terms(y_true, y_pred)
        rows = _rows(p)
        value = _total(terms) / rows
        if not need_grad:
            return value, None
        with np.errstate(divide="ignore", invalid="ignore"):
            dc = self.alpha * (-slope * ce - factor * t / c)   # d term_j / d c_j
            do = np.where(live, dc, 0.0)                        # through the clip
            o = q / s
            dq = (do - np.sum(do * o, axis=-1, keepdims=True)) / s  # o = q / sum(q)
        if self.from_logits:
            dq = q * (dq - np.sum(dq * q, axis=-1, keepdims=True))  # q = softmax(x)
        return value, _out(dq / rows, p.shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha, "gamma": self.gamma}
