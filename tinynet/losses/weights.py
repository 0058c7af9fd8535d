"""``sample_weight`` handling shared by the losses (a leaf of :mod:`tinynet.losses`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.scalars import float_array

__all__ = ["sample_weights"]


def sample_weights(owner: str, sample_weight: Any, shape: tuple) -> np.ndarray:
    """``sample_weight`` as float64 in the per-sample losses' ``shape``: trailing axes of 1
    are dropped (as Keras), and weights for a leading part of the shape (one per sample)
    broadcast over the rest (where Keras 3.15 raises)."""
    try:
        w = float_array(sample_weight.data if hasattr(sample_weight, "data")
                        and not isinstance(sample_weight, np.ndarray) else sample_weight,
                        np.float32).astype(np.float64)
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
