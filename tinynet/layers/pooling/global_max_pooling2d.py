"""``GlobalMaxPooling2D``: the maximum over every position, per sample and channel."""

from __future__ import annotations

from typing import Any

from tinynet.ops.arrays.pooling import global_max_pool2d_backward, global_max_pool2d_forward
from tinynet.layers.pooling.base_global_pooling import BaseGlobalPooling2D
from tinynet.tensor import Tensor

__all__ = ["GlobalMaxPooling2D"]


class GlobalMaxPooling2D(BaseGlobalPooling2D):
    """Global max pooling, as ``keras.layers.GlobalMaxPooling2D``.

    The forward pass records the position of each maximum (the first in row-major order
    on ties); the backward pass puts each gradient there.

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
        out, argmax = global_max_pool2d_forward(arr)
        self._cache = (arr.shape, argmax)
        return Tensor(self._finish(out))

    def backward(self, grad_output: Any) -> Tensor:
        input_shape, argmax = self._require_cache()
        g = self._prepare_grad(grad_output, input_shape)
        return Tensor(global_max_pool2d_backward(g, argmax, input_shape))
