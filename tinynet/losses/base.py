"""The loss base class and the helpers every loss shares.

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

from typing import Any

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.tensor import as_array, match_labels

__all__ = ["Loss", "EPSILON", "sample_weights"]

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
    return match_labels(owner, y_true, p).astype(np.float64)


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


def sample_weights(owner: str, sample_weight: Any, shape: tuple) -> np.ndarray:
    """``sample_weight`` as float64 in the per-sample losses' ``shape``: trailing axes of 1
    are dropped (as Keras), and weights for a leading part of the shape (one per sample)
    broadcast over the rest (where Keras 3.15 raises)."""
    try:
        w = np.asarray(sample_weight.data if hasattr(sample_weight, "data")
                       and not isinstance(sample_weight, np.ndarray) else sample_weight,
                       dtype=np.float32).astype(np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: sample_weight must be an array of numbers, got "
                        f"{sample_weight!r}") from None
    while w.ndim and w.shape[-1] == 1 and (w.ndim > len(shape)
                                           or w.shape != tuple(shape[:w.ndim])):
        w = w.reshape(w.shape[:-1])  # Keras drops a trailing axis of 1
    if w.ndim > len(shape) or w.shape != tuple(shape[:w.ndim]):
        raise ValueError(f"{owner}: sample_weight shape {w.shape} does not match the "
                         f"per-sample losses' shape {tuple(shape)} (expected {tuple(shape)} "
                         f"or a leading part of it, such as ({shape[0] if shape else ''},))")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{owner}: sample_weight must be finite, got {sample_weight!r}")
    return np.broadcast_to(w.reshape(w.shape + (1,) * (len(shape) - w.ndim)), shape)


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

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> float:
        """The batch loss (Keras ``sum_over_batch_size``) as a Python float; with
        ``sample_weight``, the sum of the weighted per-sample losses over their count."""
        return self.value_and_grad(y_true, y_pred, sample_weight, need_grad=False)[0]

    def value_and_grad(self, y_true: Any, y_pred: Any, sample_weight: Any = None, *,
                       need_grad: bool = True) -> tuple[float, np.ndarray | None]:
        """The batch loss and ``dL/dy_pred`` (float32, ``y_pred``'s shape).

        ``sample_weight`` (as Keras): one weight per sample (``[batch]``), or per
        per-sample loss (e.g. ``[batch, h, w]`` for a per-pixel loss), broadcast over the
        per-sample losses; the loss is ``sum(weight * loss) / count(losses)``, and the
        gradient the unweighted one times each sample's weight.
        """
        if sample_weight is None:
            return self._compute(y_true, y_pred, need_grad)
        values = self._sample_losses(y_true, y_pred)
        weights = sample_weights(type(self).__name__, sample_weight, values.shape)
        value = _total(values * weights) / values.size
        if not need_grad:
            return value, None
        grad = self._compute(y_true, y_pred, True)[1]
        per = weights.reshape(weights.shape + (1,) * (grad.ndim - weights.ndim))
        return value, _out(grad * per, grad.shape)

    def _sample_losses(self, y_true: Any, y_pred: Any) -> np.ndarray:  # pragma: no cover
        """The per-sample losses (float64) whose mean is the unweighted loss."""
        raise NotImplementedError(f"{type(self).__name__}._sample_losses")

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


