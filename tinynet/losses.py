"""Losses with Keras 3 semantics and hand-written gradients.

Every loss maps ``(y_true, y_pred)`` to a scalar with Keras's ``sum_over_batch_size``
reduction: a per-sample loss (mean over the last axis for MSE/MAE/binary crossentropy,
sum over classes for the categorical crossentropies) averaged over every sample (and
spatial position). ``loss.value_and_grad(y_true, y_pred)`` also returns ``dL/dy_pred``,
the exact derivative of the value as computed, as float32 in ``y_pred``'s shape.

Numerics: ``y_true`` and ``y_pred`` are taken as float32 (as Keras casts them), the
arithmetic is float64 NumPy, and sums run in a fixed order set by the shape, so results
are deterministic. Probabilities are clipped to ``[1e-7, 1 - 1e-7]`` (Keras epsilon) and
the gradient is zero where clipping is active. ``from_logits=True`` fuses the
sigmoid/softmax into the loss with a stable log-sum-exp.
"""

from __future__ import annotations

import math

from typing import Any

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.tensor import Tensor, as_array

__all__ = ["Loss", "MeanSquaredError", "MeanAbsoluteError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "Huber", "LogCosh",
           "KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge", "get", "serialize",
           "EPSILON"]

EPSILON = 1e-7
_LO, _HI = EPSILON, 1.0 - EPSILON


# -- shared helpers -------------------------------------------------------------------------
def _pred(owner: str, y_pred: Any) -> np.ndarray:
    p = as_array(y_pred, f"{owner}: y_pred")
    if p.ndim == 0 or p.size == 0:
        raise ValueError(f"{owner}: y_pred must be a non-empty array with a batch axis, "
                         f"got shape {p.shape}")
    return p


def _match_true(owner: str, y_true: Any, p: np.ndarray) -> np.ndarray:
    """``y_true`` as float64 in ``p``'s shape (Keras squeezes/expands a trailing 1)."""
    t = as_array(y_true, f"{owner}: y_true")
    if t.shape != p.shape:
        if t.ndim == p.ndim + 1 and t.shape[-1] == 1 and t.shape[:-1] == p.shape:
            t = t.reshape(p.shape)
        elif p.ndim == t.ndim + 1 and p.shape[-1] == 1 and p.shape[:-1] == t.shape:
            t = t.reshape(p.shape)
        else:
            raise ValueError(f"{owner}: y_true shape {t.shape} is incompatible with y_pred "
                             f"shape {p.shape}")
    return t.astype(np.float64)


def _total(x: np.ndarray) -> float:
    """Fixed-order float64 sum (NumPy's pairwise sum over a contiguous 1-D array)."""
    return float(np.sum(np.ascontiguousarray(x, dtype=np.float64).reshape(-1)))


def _rows(p: np.ndarray) -> int:
    return int(p.size // p.shape[-1])


def _clip(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Clipped probabilities and the mask where the clip is inactive (gradient flows)."""
    return np.clip(p, _LO, _HI), (p >= _LO) & (p <= _HI)


def _log_softmax(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Stable ``log_softmax`` and ``softmax`` over the last axis (float64)."""
    shifted = z - np.max(z, axis=-1, keepdims=True)
    e = np.exp(shifted)
    s = np.sum(e, axis=-1, keepdims=True)
    return shifted - np.log(s), e / s


def _out(grad: np.ndarray, shape: tuple) -> np.ndarray:
    return np.ascontiguousarray(grad.reshape(shape), dtype=np.float32)


class Loss:
    """Base class: ``loss(y_true, y_pred) -> float`` and ``value_and_grad``.

    Subclasses implement ``_compute(y_true, y_pred, need_grad) -> (value, grad or None)``.

    Args:
        name: The loss name (Keras's snake_case default).
    """

    _default_name = "loss"

    def __init__(self, *, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"{type(self).__name__}: name must be a non-empty str, got {name!r}")
        self.name = name if name is not None else self._default_name

    def __call__(self, y_true: Any, y_pred: Any) -> float:
        """The batch loss (Keras ``sum_over_batch_size``) as a Python float."""
        return self._compute(y_true, y_pred, False)[0]

    def value_and_grad(self, y_true: Any, y_pred: Any) -> tuple[float, np.ndarray]:
        """The batch loss and ``dL/dy_pred`` (float32, ``y_pred``'s shape)."""
        return self._compute(y_true, y_pred, True)

    def _compute(self, y_true, y_pred, need_grad):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}._compute")

    def get_config(self) -> dict:
        """JSON-able constructor arguments; ``type(self).from_config(cfg)`` rebuilds it."""
        return {"name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "Loss":
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class _ProbabilisticLoss(Loss):
    def __init__(self, from_logits: bool = False, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.from_logits = check_bool(from_logits, "from_logits", type(self).__name__)

    def get_config(self) -> dict:
        return {"name": self.name, "from_logits": self.from_logits}


# -- regression ------------------------------------------------------------------------------
class MeanSquaredError(Loss):
    """``mean((y_true - y_pred)**2)`` over every element (Keras ``mean_squared_error``).

    Gradient: ``2 * (y_pred - y_true) / size``.
    """

    _default_name = "mean_squared_error"

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        d = p.astype(np.float64) - _match_true(type(self).__name__, y_true, p)
        value = _total(d * d) / p.size
        return value, (_out(d * (2.0 / p.size), p.shape) if need_grad else None)


class MeanAbsoluteError(Loss):
    """``mean(|y_true - y_pred|)`` over every element (Keras ``mean_absolute_error``).

    Gradient: ``sign(y_pred - y_true) / size`` (0 where they are equal, as PyTorch).
    """

    _default_name = "mean_absolute_error"

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        d = p.astype(np.float64) - _match_true(type(self).__name__, y_true, p)
        value = _total(np.abs(d)) / p.size
        return value, (_out(np.sign(d) / p.size, p.shape) if need_grad else None)


class Huber(Loss):
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
        if isinstance(delta, bool) or not isinstance(delta, (int, float, np.floating,
                                                             np.integer)):
            raise TypeError(what)
        if not (math.isfinite(delta) and delta > 0):
            raise ValueError(what)
        self.delta = float(delta)

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        d = p.astype(np.float64) - _match_true(type(self).__name__, y_true, p)
        a = np.abs(d)
        small = a <= self.delta
        value = _total(np.where(small, 0.5 * d * d, self.delta * a - 0.5 * self.delta ** 2))
        grad = np.where(small, d, self.delta * np.sign(d)) / p.size if need_grad else None
        return value / p.size, (_out(grad, p.shape) if need_grad else None)

    def get_config(self) -> dict:
        return {**super().get_config(), "delta": self.delta}


class LogCosh(Loss):
    """Keras ``log_cosh``: ``log(cosh(d))`` per element (``d = y_pred - y_true``, computed
    as ``d + softplus(-2 d) - log 2``, which does not overflow), the mean over every element.

    Gradient: ``tanh(d)`` over the size.
    """

    _default_name = "log_cosh"

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        d = p.astype(np.float64) - _match_true(type(self).__name__, y_true, p)
        value = _total(d + np.logaddexp(0.0, -2.0 * d) - math.log(2.0)) / p.size
        return value, (_out(np.tanh(d) / p.size, p.shape) if need_grad else None)


class KLDivergence(Loss):
    """Keras ``kl_divergence``: ``sum(t * log(t / p))`` over the last axis with ``t`` and
    ``p`` clipped to ``[EPSILON, 1]``, the mean over the rest.

    Gradient: ``-t / p`` where ``p`` is inside the clip (0 elsewhere), over the rows.
    """

    _default_name = "kl_divergence"

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        t = np.clip(_match_true(type(self).__name__, y_true, p), EPSILON, 1.0)
        x = p.astype(np.float64)
        q = np.clip(x, EPSILON, 1.0)
        rows = _rows(p)
        value = _total(t * np.log(t / q)) / rows
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
    _power = 1

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        t = _hinge_labels(type(self).__name__, y_true, p)
        m = np.maximum(1.0 - t * p.astype(np.float64), 0.0)
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

    def _compute(self, y_true, y_pred, need_grad):
        p = _pred(type(self).__name__, y_pred)
        t = _match_true(type(self).__name__, y_true, p)
        x = p.astype(np.float64)
        classes = p.shape[-1]
        tt, xx = t.reshape(-1, classes), x.reshape(-1, classes)
        rest = (1.0 - tt) * xx
        m = np.maximum(np.max(rest, axis=-1) - np.sum(tt * xx, axis=-1) + 1.0, 0.0)
        rows = tt.shape[0]
        value = _total(m) / rows
        if not need_grad:
            return value, None
        grad = -tt.copy()
        top = np.argmax(rest, axis=-1)
        grad[np.arange(rows), top] += 1.0 - tt[np.arange(rows), top]
        grad[m <= 0.0] = 0.0
        return value, _out(grad / rows, p.shape)


# -- crossentropies -----------------------------------------------------------------------
class BinaryCrossentropy(_ProbabilisticLoss):
    """Binary crossentropy, averaged over every element (Keras ``binary_crossentropy``).

    Probabilities: ``-(t*log(q) + (1-t)*log(1-q))`` with ``q = clip(p, 1e-7, 1-1e-7)``.
    Logits: ``max(x, 0) - x*t + log(1 + exp(-|x|))``, gradient ``sigmoid(x) - t``.

    Args:
        from_logits: ``y_pred`` holds logits instead of probabilities.
        name: Defaults to ``"binary_crossentropy"``.
    """

    _default_name = "binary_crossentropy"

    def _compute(self, y_true, y_pred, need_grad):
        owner = type(self).__name__
        p = _pred(owner, y_pred)
        t = _match_true(owner, y_true, p)
        x = p.astype(np.float64)
        n = p.size
        if self.from_logits:
            e = np.exp(-np.abs(x))
            value = _total(np.maximum(x, 0.0) - x * t + np.log1p(e)) / n
            if not need_grad:
                return value, None
            sig = np.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))
            return value, _out((sig - t) / n, p.shape)
        q, live = _clip(x)
        value = -_total(t * np.log(q) + (1.0 - t) * np.log(1.0 - q)) / n
        if not need_grad:
            return value, None
        grad = np.where(live, (1.0 - t) / (1.0 - q) - t / q, 0.0) / n
        return value, _out(grad, p.shape)


class CategoricalCrossentropy(_ProbabilisticLoss):
    """Crossentropy with one-hot (or soft) labels over the last axis.

    Probabilities are first normalized to sum to 1 per row, then clipped (as Keras):
    ``-sum(t * log(clip(p / sum(p))))``; logits use ``-sum(t * log_softmax(x))``.
    The per-row loss is averaged over rows.

    Args:
        from_logits: ``y_pred`` holds logits instead of probabilities.
        name: Defaults to ``"categorical_crossentropy"``.
    """

    _default_name = "categorical_crossentropy"

    def _compute(self, y_true, y_pred, need_grad):
        owner = type(self).__name__
        p = _pred(owner, y_pred)
        t_arr = as_array(y_true, f"{owner}: y_true")
        if t_arr.shape != p.shape:
            raise ValueError(f"{owner}: y_true shape {t_arr.shape} must equal y_pred shape "
                             f"{p.shape} (one-hot labels; use SparseCategoricalCrossentropy "
                             f"for integer labels)")
        t = t_arr.astype(np.float64)
        x = p.astype(np.float64)
        rows = _rows(p)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.from_logits:
                logp, soft = _log_softmax(x)
                value = -_total(t * logp) / rows
                if not need_grad:
                    return value, None
                grad = (soft * np.sum(t, axis=-1, keepdims=True) - t) / rows
                return value, _out(grad, p.shape)
            s = np.sum(x, axis=-1, keepdims=True)
            q, live = _clip(x / s)
            value = -_total(t * np.log(q)) / rows
            if not need_grad:
                return value, None
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
            raise ValueError(f"{owner}: label {int(labels[np.argmax(bad)])} is out of range for "
                             f"{classes} classes (expected 0 <= label < {classes})")
        return labels

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


# -- lookup ----------------------------------------------------------------------------------
_CLASSES: dict[str, type[Loss]] = {
    "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
    "binary_crossentropy": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "huber": Huber, "log_cosh": LogCosh, "logcosh": LogCosh,
    "kl_divergence": KLDivergence, "kld": KLDivergence, "hinge": Hinge,
    "squared_hinge": SquaredHinge, "categorical_hinge": CategoricalHinge,
}
for _cls in (MeanSquaredError, MeanAbsoluteError, BinaryCrossentropy, CategoricalCrossentropy,
             SparseCategoricalCrossentropy, Huber, LogCosh, KLDivergence, Hinge, SquaredHinge,
             CategoricalHinge):
    _CLASSES[_cls.__name__] = _cls
_VALID = ", ".join(_CLASSES)


def serialize(loss: Loss) -> dict:
    """Returns ``{"class_name": ..., "config": loss.get_config()}`` (JSON-able)."""
    if not isinstance(loss, Loss):
        raise TypeError(f"serialize: expected a Loss, got {type(loss).__name__}")
    return {"class_name": type(loss).__name__, "config": loss.get_config()}


def get(identifier: Any) -> Loss:
    """Returns a :class:`Loss` for an instance (as is), a name or a serialized dict.

    Raises:
        ValueError: An unknown name (the message lists the valid ones).
        TypeError: Any other type.
    """
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        cls = _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown loss {identifier!r}; valid names: {_VALID}")
        return cls()
    if isinstance(identifier, dict) and "class_name" in identifier:
        cls = _CLASSES.get(str(identifier["class_name"]))
        if cls is None:
            raise ValueError(f"Unknown loss {identifier['class_name']!r}; valid names: {_VALID}")
        return cls.from_config(identifier.get("config", {}))
    raise TypeError(f"losses.get: expected a Loss instance, a name or a config dict, got "
                    f"{type(identifier).__name__}: {identifier!r}")
