"""Regression losses: MeanSquaredError, MeanAbsoluteError, Huber, LogCosh.

Each is a function of ``d = y_pred - y_true`` element by element, averaged over the last
axis per sample (:class:`Elementwise`).
"""

from __future__ import annotations

import math

import numpy as np

from tinynet.scalars import is_real, to_float
from tinynet.losses.base import Loss, _like_predictions, _match_true, _out, _pred, _total

__all__ = ["Elementwise", "MeanSquaredError", "MeanAbsoluteError", "Huber", "LogCosh"]


class Elementwise(Loss):
    """A loss of ``d = y_pred - y_true`` per element: :meth:`_terms` and its derivative
    over the element count, :meth:`_slope`; the mean over every element."""

    _targets = _like_predictions

    def _terms(self, d: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _slope(self, d: np.ndarray, size: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _diff(self, y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
        p = _pred(type(self).__name__, y_pred)
        return p, p.astype(np.float64) - _match_true(type(self).__name__, y_true, p)

    def _compute(self, y_true, y_pred, need_grad):
        p, d = self._diff(y_true, y_pred)
        value = _total(self._terms(d)) / p.size
        return value, (_out(self._slope(d, p.size), p.shape) if need_grad else None)

    def _sample_losses(self, y_true, y_pred):
        return self._terms(self._diff(y_true, y_pred)[1]).mean(axis=-1)


class MeanSquaredError(Elementwise):
    """``mean((y_true - y_pred)**2)`` over every element (Keras ``mean_squared_error``).

    Gradient: ``2 * (y_pred - y_true) / size``.
    """

    _default_name = "mean_squared_error"

    def _terms(self, d):
        return d * d

    def _slope(self, d, size):
        return d * (2.0 / size)


class MeanAbsoluteError(Elementwise):
    """``mean(|y_true - y_pred|)`` over every element (Keras ``mean_absolute_error``).

    Gradient: ``sign(y_pred - y_true) / size`` (0 where they are equal, as PyTorch).
    """

    _default_name = "mean_absolute_error"

    def _terms(self, d):
        return np.abs(d)

    def _slope(self, d, size):
        return np.sign(d) / size


class Huber(Elementwise):
    """Keras ``huber``: per element ``0.5 * d**2`` where ``|d| <= delta``, else
    ``delta * |d| - 0.5 * delta**2`` (``d = y_pred - y_true``), the mean over every element.

    Gradient: ``d`` or ``delta * sign(d)``, over the size.

    Args:
        delta: The switch from squared to linear, a finite float > 0. Defaults to 1.0.
        name: Defaults to ``"huber_loss"``.

    Raises:
        TypeError: ``delta`` is not a number.
        ValueError: ``delta`` is not finite and positive.
    """

    _default_name = "huber_loss"

    def __init__(self, delta: float = 1.0, *, name: str | None = None) -> None:
        super().__init__(name=name)
        what = f"Huber: delta must be a finite float > 0, got {delta!r}"
        if not is_real(delta):
            raise TypeError(what)
        if not (math.isfinite(to_float(delta)) and delta > 0):
            raise ValueError(what)
        self.delta = to_float(delta)

    def _terms(self, d):
        a = np.abs(d)
        return np.where(a <= self.delta, 0.5 * d * d, self.delta * a - 0.5 * self.delta ** 2)

    def _slope(self, d, size):
        return np.where(np.abs(d) <= self.delta, d, self.delta * np.sign(d)) / size

    def get_config(self) -> dict:
        return {**super().get_config(), "delta": self.delta}


class LogCosh(Elementwise):
    """Keras ``log_cosh``: ``log(cosh(d))`` per element (``d = y_pred - y_true``, computed
    as ``d + softplus(-2 d) - log 2``, which does not overflow), the mean over every element.

    Gradient: ``tanh(d)`` over the size.
    """

    _default_name = "log_cosh"

    def _terms(self, d):
        return d + np.logaddexp(0.0, -2.0 * d) - math.log(2.0)

    def _slope(self, d, size):
        return np.tanh(d) / size
