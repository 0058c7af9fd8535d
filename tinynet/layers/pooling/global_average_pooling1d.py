"""``GlobalAveragePooling1D``: the mean over every step (Keras 3 semantics, channels-last)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from tinynet.layers.mask_flow import as_mask
from tinynet.layers.pooling.global_average_pooling2d import GlobalAveragePooling2D
from tinynet.layers.pooling.steps import Global1D, _steps_as_rows
from tinynet.tensor import Tensor

__all__ = ["GlobalAveragePooling1D"]


class _Masked(NamedTuple):
    """A masked forward pass's cache: the step weights, their count per sample, the
    input shape."""
    weights: np.ndarray
    count: np.ndarray
    shape: tuple


class GlobalAveragePooling1D(Global1D, GlobalAveragePooling2D):
    """Global average pooling over the steps, as ``keras.layers.GlobalAveragePooling1D``.

    Runs :class:`GlobalAveragePooling2D` on ``[batch, steps, 1, channels]`` (the same kernels).

    Args:
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        keepdims: Keep the steps axis as size 1. Default ``False``.
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, steps, channels]``.
        Output: ``[batch, channels]``, or ``[batch, 1, channels]`` with ``keepdims``.
    """

    supports_masking = True

    def forward(self, x: Any, training: bool = False, mask: Any = None) -> Tensor:
        """The mean over the steps; with ``mask`` (``[batch, steps]``), over the valid
        steps only (Keras: ``sum(x * mask) / sum(mask)``, NaN for a sample without one)."""
        if mask is None:
            return super().forward(x, training)
        arr = _steps_as_rows(self, x)[:, :, 0, :]
        keep = as_mask(mask, arr.shape[:2], f"{type(self).__name__} {self.name!r}")
        weights = keep.astype(np.float32)[:, :, None]
        count = weights.sum(axis=1, dtype=np.float32)  # [batch, 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = (arr * weights).sum(axis=1, dtype=np.float32) / count
        self._cache = _Masked(weights, count, arr.shape)
        return Tensor(out[:, None, :] if self.keepdims else out)

    def backward(self, grad_output: Any) -> Tensor:
        if not isinstance(self._cache, _Masked):
            return super().backward(grad_output)
        weights, count, (b, steps, c) = self._cache
        g = self._check_grad(grad_output, self.output_shape((b, steps, c))).reshape(b, 1, c)
        with np.errstate(invalid="ignore", divide="ignore"):
            return Tensor(np.ascontiguousarray(g * (weights / count[:, :, None]),
                                               dtype=np.float32))

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> None:
        return None  # the steps are gone
