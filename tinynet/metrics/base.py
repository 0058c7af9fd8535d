"""The metric base class and the label helpers every metric shares."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.tensor import Tensor, as_array, match_labels

__all__ = ["Metric"]


def _same_rank(owner: str, y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """float32 arrays of equal shape (Keras squeezes/expands a trailing axis of 1)."""
    p = as_array(y_pred, f"{owner}: y_pred")
    return match_labels(owner, y_true, p), p


def _sparse_labels(owner: str, y_true: Any, y_pred: Any) -> tuple[np.ndarray, np.ndarray]:
    """Integer labels shaped like ``y_pred`` without its last axis (a trailing axis of 1
    dropped), and ``y_pred``."""
    p = as_array(y_pred)
    t = y_true.data if isinstance(y_true, Tensor) else np.asarray(y_true)
    if t.ndim == p.ndim and t.ndim > 0 and t.shape[-1] == 1:
        t = t.reshape(t.shape[:-1])
    if t.shape != p.shape[:-1]:
        raise ValueError(f"{owner}: y_true shape {np.shape(y_true)} does not match y_pred "
                         f"shape {p.shape}")
    return t, p


class Metric:
    """Base class: per-entry ``values``, batch mean ``__call__`` and running mean state.

    Args:
        name: The metric's name (its key in ``History.history``).
    """

    _default_name = "metric"
    #: Whether the logged value is ``result()`` over the batches so far (metrics of counts),
    #: rather than the mean of per-batch values.
    stateful = False

    def __init__(self, *, name: str | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"{type(self).__name__}: name must be a non-empty str, got {name!r}")
        self.name = name if name is not None else self._default_name
        self.reset_state()

    def values(self, y_true: Any, y_pred: Any) -> np.ndarray:  # pragma: no cover - abstract
        """Per-entry metric values (float64)."""
        raise NotImplementedError(f"{type(self).__name__}.values")

    def __call__(self, y_true: Any, y_pred: Any) -> float:
        """The batch mean of :meth:`values` (stateless)."""
        v = np.ascontiguousarray(self.values(y_true, y_pred), dtype=np.float64).reshape(-1)
        return float(np.sum(v) / v.size) if v.size else 0.0

    def update_state(self, y_true: Any, y_pred: Any) -> None:
        """Adds a batch to the running mean."""
        v = np.ascontiguousarray(self.values(y_true, y_pred), dtype=np.float64).reshape(-1)
        self._total += float(np.sum(v))
        self._count += v.size

    def result(self) -> float:
        """The running mean since the last :meth:`reset_state` (0.0 when empty)."""
        return self._total / self._count if self._count else 0.0

    def reset_state(self) -> None:
        self._total = 0.0
        self._count = 0

    def get_config(self) -> dict:
        return {"name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "Metric":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r}>"


