"""Sample weights for ``fit``/``evaluate`` (Keras's ``sample_weight`` and
``class_weight``) and the epoch logs the training loop keeps."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.scalars import float_array, is_real, to_float
from tinynet.tensor import Tensor

__all__ = ["sample_weights", "class_weights", "masked_weights", "accumulate", "means"]

_EPSILON = np.float32(1e-7)  # Keras's backend.epsilon()


def sample_weights(sample_weight: Any, class_weight: Any, ys: list[np.ndarray],
                   owner: str) -> np.ndarray | None:
    """One float32 weight per sample (or per per-sample loss) for every output's loss,
    from ``sample_weight`` or from ``class_weight`` and the labels (Keras 3), or
    ``None``."""
    if not ys:  # no compiled loss or metric: nothing for a weight to weigh
        for arg, value in (("sample_weight", sample_weight), ("class_weight", class_weight)):
            if value is not None:
                raise ValueError(f"{owner}: {arg} weighs the compiled loss and weighted "
                                 f"metrics, and this model has none (its loss is what its "
                                 f"layers add); got {arg} of type {type(value).__name__}")
        return None
    n = ys[0].shape[0]
    if sample_weight is not None and class_weight is not None:
        raise ValueError(f"{owner}: give class_weight or sample_weight, not both (as "
                         f"Keras)")
    if class_weight is not None:
        return class_weights(class_weight, ys, owner)
    if sample_weight is None:
        return None
    try:
        sw = float_array(sample_weight.data if isinstance(sample_weight, Tensor)
                         else sample_weight, np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: sample_weight must be an array of numbers, got "
                        f"{sample_weight!r}") from None
    if sw.ndim == 0 or sw.shape[0] != n:
        raise ValueError(f"{owner}: sample_weight must hold one weight per sample ({n}), "
                         f"got shape {sw.shape}")
    if not np.all(np.isfinite(sw)):
        raise ValueError(f"{owner}: sample_weight must be finite")
    return np.ascontiguousarray(sw)


def masked_weights(mask: np.ndarray, sw: np.ndarray | None) -> np.ndarray:
    """The loss weights of an output carrying ``mask`` (``[batch, steps, ...]``), as Keras
    applies a mask to a mean loss: the valid entries weigh ``size / (valid + 1e-7)``, the
    masked ones 0, so the loss is the mean over the valid entries; times the sample
    weights ``sw`` (one per sample, or per entry), when given."""
    m = np.asarray(mask, dtype=np.float32)
    m = m * (np.float32(m.size) / (m.sum(dtype=np.float32) + _EPSILON))
    if sw is None:
        return m
    return m * sw.reshape(sw.shape + (1,) * (m.ndim - sw.ndim)) if sw.ndim < m.ndim else m * sw


def accumulate(sums: list[float], loss: float, values: list[float], k: int,
                running: frozenset) -> None:
    """Adds a batch of ``k`` samples to the sample-weighted sums of the loss and metric
    values (``values`` start at index 1); a running metric keeps its latest value."""
    sums[0] += loss * k
    for j, v in enumerate(values, 1):
        if j in running:
            sums[j] = v
        else:
            sums[j] += v * k


def means(keys: list[str], sums: list[float], seen: int, running: frozenset) -> dict:
    """The logs: each sum over the samples seen, a running metric's value as it is."""
    return {key: s if j in running else s / seen for j, (key, s) in enumerate(zip(keys, sums))}


def class_weights(class_weight: Any, ys: list[np.ndarray], owner: str) -> np.ndarray:
    """Keras's ``class_weight`` as one float32 weight per sample: the weight of the
    sample's class (the label, or the argmax of a one-hot row), 1.0 for classes not
    listed."""
    if not isinstance(class_weight, dict):
        raise TypeError(f"{owner}: class_weight must be a dict {{class index: weight}}, got "
                        f"{class_weight!r}")
    for key, value in class_weight.items():
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)) or key < 0:
            raise ValueError(f"{owner}: class_weight keys must be class indices (ints >= 0), "
                             f"got {key!r}")
        if not is_real(value) or not math.isfinite(to_float(value)):
            raise ValueError(f"{owner}: class_weight values must be finite numbers, got "
                             f"{value!r} for class {key}")
    if len(ys) != 1:
        raise ValueError(f"{owner}: class_weight needs a model with one output (as Keras), "
                         f"got {len(ys)}")
    y = ys[0]
    if y.ndim > 1:
        y = np.argmax(y, axis=-1) if y.shape[-1] != 1 else y.reshape(y.shape[:-1])
    if y.ndim != 1:
        raise ValueError(f"{owner}: class_weight needs one label per sample, got targets of "
                         f"shape {ys[0].shape}")
    labels = np.round(y).astype(np.int64)
    classes, index = np.unique(labels, return_inverse=True)  # one lookup per class
    table = np.array([class_weight.get(int(c), 1.0) for c in classes], dtype=np.float32)
    return table[index.reshape(-1)]
