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

from tinynet.keywords import KeywordChecked
from tinynet.layers.layer import check_bool
from tinynet.losses.traced import REDUCTIONS, traced_compute, traced_unreduced
from tinynet.losses.weights import sample_weights
from tinynet.ops import autodiff
from tinynet.tensor import Tensor, as_array, match_labels

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


def _like_predictions(self: "Loss", y_true: Any, p: np.ndarray) -> None:
    """``Loss._targets`` of the losses whose labels have the predictions' shape (give or
    take a trailing axis of 1)."""
    match_labels(type(self).__name__, y_true, p)


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


def _defined(cls: type) -> set:
    """Names defined by ``cls`` or its bases below :class:`Loss`."""
    names: set = set()
    for klass in cls.__mro__:
        if klass.__name__ == "Loss" and klass.__module__ == __name__:
            break
        names.update(vars(klass))
    return names


class Loss(KeywordChecked):
    """Base class: ``loss(y_true, y_pred) -> float`` and ``value_and_grad``.

    Subclasses implement ``_compute(y_true, y_pred, need_grad) -> (value, grad or None)``.

    Args:
        name: The loss name (Keras's snake_case default).
    """

    _default_name = "loss"

    def __init__(self, name: str | None = None, reduction: str = "sum_over_batch_size",
                 dtype: Any = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"{type(self).__name__}: name must be a non-empty str, got {name!r}")
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of "
                             f"{', '.join(repr(r) for r in REDUCTIONS)}, got {reduction!r}")
        self.name = name if name is not None else self._default_name
        self.reduction = reduction
        self.dtype = dtype

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._has_call = "call" in _defined(cls) and "_compute" not in _defined(cls)
        if cls._has_call and cls._default_name == "loss":
            from tinynet.layers.layer import snake_case

            cls._default_name = snake_case(cls.__name__)

    _has_call = False

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Any:
        """The batch loss (Keras ``sum_over_batch_size``) as a Python float; with
        ``sample_weight``, the sum of the weighted per-sample losses over their count. A
        ``call()`` loss with ``reduction=None`` (or ``"none"``) returns, as Keras, the
        weighted losses unreduced (a float32 array)."""
        if self._has_call and self.reduction in (None, "none"):
            return traced_unreduced(self, y_true, y_pred, sample_weight)
        if isinstance(y_pred, Tensor) and y_pred._node is not None:
            return self._recorded(y_true, y_pred, sample_weight)
        return self.value_and_grad(y_true, y_pred, sample_weight, need_grad=False)[0]

    def _recorded(self, y_true: Any, y_pred: Tensor, sample_weight: Any) -> Tensor:
        """Inside a ``call()`` (``y_pred`` tracked): the loss as a recorded float32 scalar
        whose gradient reaches ``y_pred`` (``dL/dy_pred`` from :meth:`value_and_grad`), so
        ``self.add_loss(loss_fn(targets, logits))`` trains as in Keras. ``y_true`` and
        ``sample_weight`` are constants: no gradient flows to them."""
        def plain(v: Any) -> Any:
            return v.data if isinstance(v, Tensor) else v

        value, grad = self.value_and_grad(plain(y_true), y_pred.data, plain(sample_weight))
        return autodiff.record(np.asarray(value, dtype=np.float32), (y_pred,),
                               lambda g: (grad * np.float32(g),), self.name)

    def value_and_grad(self, y_true: Any, y_pred: Any, sample_weight: Any = None, *,
                       need_grad: bool = True) -> tuple[float, np.ndarray | None]:
        """The batch loss and ``dL/dy_pred`` (float32, ``y_pred``'s shape).

        ``sample_weight`` (as Keras): one weight per sample (``[batch]``), or per
        per-sample loss (e.g. ``[batch, h, w]`` for a per-pixel loss), broadcast over the
        per-sample losses; the loss is ``sum(weight * loss) / count(losses)``, and the
        gradient the unweighted one times each sample's weight.
        """
        if self._has_call:
            return traced_compute(self, y_true, y_pred, sample_weight, need_grad)
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

    def check_targets(self, y_true: Any, pred_shape: tuple) -> None:
        """Raises the error a call would raise for ``y_true`` against predictions of
        ``pred_shape`` (batch axis included), from the shapes and labels alone: ``fit``
        and ``evaluate`` call it before the first forward pass, so one-hot labels with a
        sparse loss fail at once, naming the loss that fits them."""
        self._targets(y_true, np.broadcast_to(np.float32(0.0), tuple(pred_shape)))

    def _targets(self, y_true: Any, p: np.ndarray) -> None:
        """Checks ``y_true`` against the predictions ``p`` (only ``p.shape`` is read): a
        loss with label rules overrides it; a custom loss is not checked ahead."""

    def _sample_losses(self, y_true: Any, y_pred: Any) -> np.ndarray:  # pragma: no cover
        """The per-sample losses (float64) whose mean is the unweighted loss."""
        raise NotImplementedError(f"{type(self).__name__}._sample_losses")

    def _compute(self, y_true, y_pred, need_grad):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}: define call(self, y_true, y_pred) "
                                  f"with tinynet.ops (the gradient is derived)")

    def call(self, y_true: Any, y_pred: Any) -> Any:
        """The per-sample losses, written with :mod:`tinynet.ops` (Keras style): a
        subclass that defines it gets the reduction and the gradient."""
        raise NotImplementedError(f"{type(self).__name__}: define call(self, y_true, y_pred) "
                                  f"with tinynet.ops (the gradient is derived)")

    def get_config(self) -> dict:
        """JSON-able constructor arguments; ``type(self).from_config(cfg)`` rebuilds it."""
        if self._has_call:
            return {"name": self.name, "reduction": self.reduction}
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


