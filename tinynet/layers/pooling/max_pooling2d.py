"""``MaxPooling2D``: the maximum of each window (Keras 3 semantics, channels-last)."""

from __future__ import annotations

from typing import Any

from tinynet.ops.arrays.pooling import max_pool2d_backward, max_pool2d_forward
from tinynet.layers.pooling.base_pooling import BasePooling2D
from tinynet.tensor import Tensor

__all__ = ["MaxPooling2D"]


class MaxPooling2D(BasePooling2D):
    """Max pooling over 2D windows, as ``keras.layers.MaxPooling2D``.

    The forward pass records where each maximum came from (the first one, in row-major
    window order, on ties); the backward pass routes each output gradient there.
    Padded cells never win ("same" padding behaves like ``-inf`` padding).

    Args:
        pool_size: Window size, an int or ``(rows, cols)``. Default 2.
        strides: Window step, an int or ``(rows, cols)``; ``None`` (default) means
            ``pool_size``.
        padding: ``"valid"`` (default) or ``"same"`` (TF/Keras rule, odd pad cell at the end).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, rows, cols, channels]``.
        Output: ``[batch, out_rows, out_cols, channels]`` with, per spatial axis,
        ``out = (size - pool) // stride + 1`` ("valid") or ``ceil(size / stride)`` ("same").

    Example:
        >>> layer = MaxPooling2D(pool_size=2, strides=2, padding="same")
        >>> layer(np.arange(1, 10, dtype="float32").reshape(1, 3, 3, 1)).shape
        (1, 2, 2, 1)
    """

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = self._prepare_input(x)
        out, argmax = max_pool2d_forward(arr, self.pool_size, self.strides, self.padding)
        self._cache = (arr.shape, argmax)
        return Tensor(out)

    def backward(self, grad_output: Any) -> Tensor:
        input_shape, argmax = self._require_cache()
        g = self._check_grad(grad_output, argmax.shape)
        return Tensor(max_pool2d_backward(g, argmax, input_shape, self.pool_size,
                                          self.strides, self.padding))
