"""``Masking``: marks the steps whose features all equal ``mask_value`` as padding
(``keras.layers.Masking``)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from tinynet import ops
from tinynet.layers.layer import Layer
from tinynet.scalars import to_float
from tinynet.tensor import Tensor

__all__ = ["Masking"]


class Masking(Layer):
    """Masks the steps of a sequence whose features all equal ``mask_value``: their
    outputs are zeros, and the mask (``True`` for a kept step) reaches the layers after
    it that support masking (see :mod:`tinynet.layers.mask_flow`), as in Keras.

    Args:
        mask_value: The padding value (a real number). Default ``0.0``.
        name: Optional layer name.

    Shape:
        Input: ``[batch, steps, ..., features]``; output: the same. Mask:
        ``[batch, steps, ...]`` (the input's shape without its last axis).
    """

    supports_masking = True

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(mask_value, bool) or not isinstance(mask_value, numbers.Real):
            raise TypeError(f"Masking: mask_value must be a real number, got "
                            f"{mask_value!r}")
        self.mask_value = to_float(mask_value)  # an int past the float range: +-inf

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        if len(input_shape) < 2:
            raise ValueError(f"Masking {self.name!r}: input must have a batch and a feature "
                             f"axis, got shape {tuple(input_shape)}")
        return tuple(input_shape)

    def call(self, inputs: Any) -> Any:
        kept = ops.any(ops.not_equal(inputs, self.mask_value), axis=-1, keepdims=True)
        return ops.multiply(inputs, ops.cast(kept, inputs.dtype))

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> np.ndarray:
        data = inputs.data if isinstance(inputs, Tensor) else np.asarray(inputs)
        return np.any(data != np.float32(self.mask_value), axis=-1)

    def get_config(self) -> dict:
        return {**super().get_config(), "mask_value": self.mask_value}
