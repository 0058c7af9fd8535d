"""Zero margins around the height and width of ``[batch, h, w, c]`` arrays, and their
removal: ``ZeroPadding2D``'s forward is ``Cropping2D``'s backward and the other way round."""

from __future__ import annotations

import numpy as np

__all__ = ["pad2d", "crop2d"]


def pad2d(x: np.ndarray, margins: tuple) -> np.ndarray:
    """``x`` inside zeros: ``margins = ((top, bottom), (left, right))``.

    Shape:
        x: ``[batch, h, w, c]``; output: ``[batch, top + h + bottom, left + w + right, c]``.
    """
    (top, bottom), (left, right) = margins
    b, h, w, c = x.shape
    out = np.zeros((b, top + h + bottom, left + w + right, c), dtype=x.dtype)
    out[:, top:top + h, left:left + w] = x
    return out


def crop2d(x: np.ndarray, margins: tuple) -> np.ndarray:
    """``x`` without ``margins = ((top, bottom), (left, right))`` (a contiguous copy).

    Shape:
        x: ``[batch, h, w, c]``; output: ``[batch, h - top - bottom, w - left - right, c]``.
    """
    (top, bottom), (left, right) = margins
    _, h, w, _ = x.shape
    return np.ascontiguousarray(x[:, top:h - bottom, left:w - right])
