"""``AveragePooling1D``: the mean of each window of steps (Keras 3 semantics, channels-last)."""

from __future__ import annotations

from tinynet.layers.pooling.average_pooling2d import AveragePooling2D
from tinynet.layers.pooling.steps import Windows1D

__all__ = ["AveragePooling1D"]


class AveragePooling1D(Windows1D, AveragePooling2D):
    """Average pooling over windows of steps, as ``keras.layers.AveragePooling1D`` (``"same"``
    windows average their cells inside the input, as :class:`AveragePooling2D`).

    Runs :class:`AveragePooling2D` on ``[batch, steps, 1, channels]`` (the same kernels).

    Args:
        pool_size: Window size, an int or a tuple of 1 int. Default 2.
        strides: Window step, an int or a tuple of 1 int; ``None`` (default) means
            ``pool_size``.
        padding: ``"valid"`` (default) or ``"same"``.
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, steps, channels]``.
        Output: ``[batch, out_steps, channels]``, ``out_steps = (steps - pool) // stride + 1``
        ("valid") or ``ceil(steps / stride)`` ("same").
    """
