"""``AveragePooling2D``: the mean of each window's in-bounds cells (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

from tinynet.ops.arrays.pooling import avg_pool2d_backward, avg_pool2d_forward
from tinynet.layers.pooling.base_pooling import BasePooling2D
from tinynet.tensor import Tensor

__all__ = ["AveragePooling2D"]


class AveragePooling2D(BasePooling2D):
    """Average pooling over 2D windows, as ``keras.layers.AveragePooling2D``.

    With ``padding="same"`` each output averages only the cells inside the input (the
    TF/Keras rule; PyTorch's ``avg_pool2d(..., count_include_pad=False)``).

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
        >>> layer = AveragePooling2D(pool_size=2, strides=2, padding="same")
        >>> layer(np.arange(1, 10, dtype="float32").reshape(1, 3, 3, 1)).numpy()[0, :, :, 0]
        array([[3. , 4.5],
               [7.5, 9. ]], dtype=float32)
    """

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = self._prepare_input(x)
        out = avg_pool2d_forward(arr, self.pool_size, self.strides, self.padding)
        self._cache = (arr.shape, out.shape)
        return Tensor(out)

    def backward(self, grad_output: Any) -> Tensor:
        input_shape, output_shape = self._require_cache()
        g = self._check_grad(grad_output, output_shape)
        return Tensor(avg_pool2d_backward(g, input_shape, self.pool_size, self.strides,
                                          self.padding))
