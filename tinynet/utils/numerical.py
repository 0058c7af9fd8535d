"""Array helpers of ``keras.utils``: :func:`to_categorical`."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["to_categorical"]


def to_categorical(x: Any, num_classes: int | None = None) -> np.ndarray:
    """One-hot rows of integer class labels, as ``keras.utils.to_categorical``.

    A trailing axis of 1 is dropped first (``[N, 1]`` labels give ``[N, classes]``). As
    Keras does for NumPy input, the result is float64.

    Args:
        x: Integer class labels (any shape), each in ``[0, num_classes)``.
        num_classes: The number of classes; ``None`` (or 0) takes ``max(x) + 1``.

    Returns:
        ``x.shape + (num_classes,)`` (after the trailing 1 is dropped) of zeros and ones.

    Shape:
        x: ``[...]`` or ``[..., 1]``; output: ``[..., num_classes]``.

    Raises:
        TypeError: ``x`` holds non-integers, or ``num_classes`` is not an int.
        ValueError: ``num_classes`` is negative, or a label is outside
            ``[0, num_classes)``.
    """
    if num_classes is not None and (isinstance(num_classes, bool)
                                    or not isinstance(num_classes, (int, np.integer))):
        raise TypeError(f"to_categorical: num_classes must be an int or None, got "
                        f"{num_classes!r}")
    if num_classes is not None and num_classes < 0:
        raise ValueError(f"to_categorical: num_classes must be >= 0, got {num_classes}")
    raw = np.asarray(x)
    if raw.dtype == np.bool_ or not (np.issubdtype(raw.dtype, np.integer)
                                     or (np.issubdtype(raw.dtype, np.floating)
                                         and np.all(np.floor(raw) == raw))):
        raise TypeError(f"to_categorical: x must hold integer class labels, got dtype "
                        f"{raw.dtype}")
    labels = raw.astype(np.int64)
    shape = labels.shape
    if shape and shape[-1] == 1 and len(shape) > 1:
        shape = shape[:-1]
    flat = labels.reshape(-1)
    classes = int(num_classes) if num_classes else (int(flat.max()) + 1 if flat.size else 0)
    bad = (flat < 0) | (flat >= classes)
    if bad.any():
        raise ValueError(f"to_categorical: label {int(flat[np.argmax(bad)])} is out of range "
                         f"for {classes} classes (expected 0 <= label < {classes})")
    out = np.zeros((flat.size, classes))
    out[np.arange(flat.size), flat] = 1
    return out.reshape(shape + (classes,))
