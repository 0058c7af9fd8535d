"""``GlobalAveragePooling2D``: the mean over every position, per sample and channel."""

from __future__ import annotations

from typing import Any

from tinynet.ops.arrays.pooling import global_avg_pool2d_backward, global_avg_pool2d_forward
from tinynet.layers.pooling.base_global_pooling import BaseGlobalPooling2D
from tinynet.tensor import Tensor

__all__ = ["GlobalAveragePooling2D"]


class GlobalAveragePooling2D(BaseGlobalPooling2D):
    """Global average pooling, as ``keras.layers.GlobalAveragePooling2D``.

    Each (sample, channel) mean sums its positions in order in float64, in fixed blocks
    merged in block order, so the result does not depend on gates or threads.

    Args:
        keepdims: Keep the spatial axes as size 1. Default ``False``.
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, rows, cols, channels]``.
        Output: ``[batch, channels]``, or ``[batch, 1, 1, channels]`` with ``keepdims``.
    """

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = self._prepare_input(x)
        self._cache = arr.shape
        return Tensor(self._finish(global_avg_pool2d_forward(arr)))

    def backward(self, grad_output: Any) -> Tensor:
        input_shape = self._require_cache()
        g = self._prepare_grad(grad_output, input_shape)
        return Tensor(global_avg_pool2d_backward(g, input_shape))
