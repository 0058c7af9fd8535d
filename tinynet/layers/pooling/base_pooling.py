"""Shared argument handling, shapes and config for the windowed 2D pooling layers."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.ops.arrays.windows import window_axis
from tinynet.layers.layer import Layer
from tinynet.layers.validation import check_padding, check_pair
from tinynet.tensor import as_array

__all__ = ["PoolingLayer", "BasePooling2D"]

class PoolingLayer(Layer):
    """Shared by the window and global pooling bases: rank-4 inputs, validated by
    ``output_shape`` both at build and on every call."""

    def build(self, input_shape: tuple) -> None:
        self.output_shape(input_shape)
        super().build(input_shape)

    def _prepare_input(self, x: Any) -> np.ndarray:
        """Converts ``x`` and validates its rank and shape (through ``output_shape``)."""
        arr = as_array(x)
        self._check_rank(arr, 4, 4)
        self.output_shape(arr.shape)
        return arr


class BasePooling2D(PoolingLayer):
    """Base of ``MaxPooling2D`` and ``AveragePooling2D``: arguments, shapes, config.

    Args:
        pool_size: Window size, an int or ``(rows, cols)``.
        strides: Window step, an int or ``(rows, cols)``; ``None`` means ``pool_size``.
        padding: ``"valid"`` (windows inside the input) or ``"same"`` (output
            ``ceil(size / stride)``, padding split with the odd cell at the end).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (pooling has no weights).
        input_shape: Optional input shape without the batch axis.
    """

    def __init__(self, pool_size: int | tuple[int, int] = 2,
                 strides: int | tuple[int, int] | None = None, padding: str = "valid", *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        self.pool_size = check_pair(pool_size, "pool_size", owner)
        self.strides = self.pool_size if strides is None else check_pair(strides, "strides", owner)
        self.padding = check_padding(padding, owner)

    def output_shape(self, input_shape: tuple) -> tuple:
        """``(batch, out_rows, out_cols, channels)``; unknown (``None``) sizes stay unknown."""
        input_shape = tuple(input_shape)
        if len(input_shape) != 4:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: input must have rank 4 "
                f"(batch, rows, cols, channels), got shape {input_shape}")
        spatial = []
        for axis in (0, 1):
            size = input_shape[1 + axis]
            if size is None:
                spatial.append(None)
                continue
            out, _ = window_axis(size, self.pool_size[axis], self.strides[axis], self.padding)
            if out < 1:
                raise ValueError(
                    f"{type(self).__name__} {self.name!r}: pool_size {self.pool_size} does not "
                    f"fit input shape {input_shape} with padding {self.padding!r} "
                    f"(the output would be empty)")
            spatial.append(out)
        return (input_shape[0], spatial[0], spatial[1], input_shape[3])

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(pool_size=list(self.pool_size), strides=list(self.strides),
                      padding=self.padding)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "BasePooling2D":
        config = dict(config)
        for key in ("pool_size", "strides"):
            if isinstance(config.get(key), list):
                config[key] = tuple(config[key])
        return super().from_config(config)
