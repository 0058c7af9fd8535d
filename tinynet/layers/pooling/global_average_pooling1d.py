"""``GlobalAveragePooling1D``: the mean over every step (Keras 3 semantics, channels-last)."""

from __future__ import annotations

from tinynet.layers.pooling.global_average_pooling2d import GlobalAveragePooling2D
from tinynet.layers.pooling.steps import Global1D

__all__ = ["GlobalAveragePooling1D"]


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
