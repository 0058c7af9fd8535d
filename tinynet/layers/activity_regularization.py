"""``ActivityRegularization``: the identity, adding an L1/L2 penalty on its input to the
training loss (``keras.layers.ActivityRegularization``)."""

from __future__ import annotations

from typing import Any

from tinynet import ops
from tinynet.layers.layer import Layer
from tinynet.regularizers import L1L2, _factor

__all__ = ["ActivityRegularization"]


class ActivityRegularization(Layer):
    """Returns its input and adds ``(l1 * sum|x| + l2 * sum x**2) / batch_size`` with
    ``add_loss`` (Keras 3 divides an activity penalty by the batch size).

    Args:
        l1: The L1 factor, a non-negative float.
        l2: The L2 factor, a non-negative float.
        name: Optional layer name.

    Shape:
        Input: any shape ``[batch, ...]``; output: the same.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.l1 = _factor(0.0 if l1 is None else l1, "l1", "ActivityRegularization")
        self.l2 = _factor(0.0 if l2 is None else l2, "l2", "ActivityRegularization")

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def call(self, inputs: Any) -> Any:
        if self.l1 or self.l2:
            batch = ops.shape(inputs)[0]
            penalty = L1L2(self.l1, self.l2)(inputs)
            self.add_loss(ops.divide(penalty, float(batch)) if batch else penalty)
        return ops.copy(inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "l1": self.l1, "l2": self.l2}
