"""Shared shapes, validation and config of the global 2D pooling layers."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.layers.pooling.base_pooling import PoolingLayer

__all__ = ["BaseGlobalPooling2D"]


class BaseGlobalPooling2D(PoolingLayer):
    """Base of ``GlobalAveragePooling2D`` and ``GlobalMaxPooling2D``.

    Args:
        keepdims: Keep the spatial axes as size 1 (``[batch, 1, 1, channels]``).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.
    """

    def __init__(self, keepdims: bool = False, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self.keepdims = check_bool(keepdims, "keepdims", type(self).__name__)

    def output_shape(self, input_shape: tuple) -> tuple:
        """``(batch, channels)``, or ``(batch, 1, 1, channels)`` with ``keepdims``."""
        input_shape = tuple(input_shape)
        if len(input_shape) != 4:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: input must have rank 4 "
                f"(batch, rows, cols, channels), got shape {input_shape}")
        if input_shape[1] == 0 or input_shape[2] == 0:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: input must have at least one position, "
                f"got shape {input_shape}")
        if self.keepdims:
            return (input_shape[0], 1, 1, input_shape[3])
        return (input_shape[0], input_shape[3])

    def _prepare_grad(self, grad_output: Any, input_shape: tuple) -> np.ndarray:
        """Validates ``grad_output`` against the last output shape; returns it as ``[N, C]``."""
        g = self._check_grad(grad_output, self.output_shape(input_shape))
        return g.reshape(input_shape[0], input_shape[3])

    def _finish(self, out: np.ndarray) -> np.ndarray:
        return out.reshape(out.shape[0], 1, 1, out.shape[1]) if self.keepdims else out

    def get_config(self) -> dict:
        config = super().get_config()
        config["keepdims"] = self.keepdims
        return config
