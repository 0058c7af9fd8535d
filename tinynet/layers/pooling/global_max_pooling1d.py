"""``GlobalMaxPooling1D``: the maximum over every step (Keras 3 semantics, channels-last)."""

from __future__ import annotations

from tinynet.layers.pooling.global_max_pooling2d import GlobalMaxPooling2D
from tinynet.layers.pooling.steps import Global1D

__all__ = ["GlobalMaxPooling1D"]


class GlobalMaxPooling1D(Global1D, GlobalMaxPooling2D):
    """Global max pooling over the steps, as ``keras.layers.GlobalMaxPooling1D``.

    Runs :class:`GlobalMaxPooling2D` on ``[batch, steps, 1, channels]`` (the same kernels).

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
