"""``Identity``: returns its input (``keras.layers.Identity``)."""

from __future__ import annotations

from typing import Any

from tinynet import ops
from tinynet.layers.layer import Layer

__all__ = ["Identity"]


class Identity(Layer):
    """The identity: a placeholder layer that returns its input unchanged.

    Args:
        name: Optional layer name.

    Shape:
        Input: any shape; output: the same.
    """

    supports_masking = True  # a mask passes through (Keras)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def call(self, inputs: Any) -> Any:
        return ops.copy(inputs)

    def get_config(self) -> dict:
        return super().get_config()
