"""``MaxPooling1D``: the maximum of each window of steps (Keras 3 semantics, channels-last)."""

from __future__ import annotations

from tinynet.layers.pooling.max_pooling2d import MaxPooling2D
from tinynet.layers.pooling.steps import Windows1D

__all__ = ["MaxPooling1D"]


class MaxPooling1D(Windows1D, MaxPooling2D):
    """Max pooling over windows of steps, as ``keras.layers.MaxPooling1D`` (the first maximum
    on ties gets the gradient, as :class:`MaxPooling2D`).

    Runs :class:`MaxPooling2D` on ``[batch, steps, 1, channels]`` (the same kernels).

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
