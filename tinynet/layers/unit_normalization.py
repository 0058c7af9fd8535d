"""``UnitNormalization``: each sample scaled to unit L2 norm (``keras.layers.UnitNormalization``)."""

from __future__ import annotations

from typing import Any

from tinynet import ops
from tinynet.layers.layer import Layer

__all__ = ["UnitNormalization"]


class UnitNormalization(Layer):
    """Divides the input by its L2 norm along ``axis``: ``x * min(1/||x||, 1e12)``, as Keras.

    Args:
        axis: The axis or axes (an int or a tuple of ints) the norm is taken across;
            negative counts from the end. Default: the last axis.
        name: Optional layer name.

    Shape:
        Input: any shape ``[batch, ...]``; output: the same.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, axis: int | tuple[int, ...] = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        what = f"UnitNormalization: axis must be an int or a tuple of ints, got {axis!r}"
        axes = axis if isinstance(axis, (list, tuple)) else [axis]
        if (isinstance(axis, (list, tuple)) and not axis) or any(
                isinstance(a, bool) or not isinstance(a, int) for a in axes):
            raise TypeError(what)
        self.axis = int(axis) if isinstance(axis, int) else tuple(int(a) for a in axis)

    def _check(self, shape: tuple) -> None:
        rank = len(shape)
        for a in (self.axis if isinstance(self.axis, tuple) else (self.axis,)):
            if not 1 <= (a + rank if a < 0 else a) < rank:
                raise ValueError(f"UnitNormalization {self.name!r}: axis {a} is not a "
                                 f"non-batch axis of an input of shape {tuple(shape)}")

    def build(self, input_shape: tuple) -> None:
        self._check(tuple(input_shape))
        super().build(input_shape)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        self._check(tuple(input_shape))
        return tuple(input_shape)

    def call(self, inputs: Any) -> Any:
        return ops.normalize(inputs, axis=self.axis, order=2, epsilon=1e-12)

    def get_config(self) -> dict:
        axis = list(self.axis) if isinstance(self.axis, tuple) else self.axis
        return {**super().get_config(), "axis": axis}

    @classmethod
    def from_config(cls, config: dict) -> "UnitNormalization":
        config = dict(config)
        if isinstance(config.get("axis"), list):
            config["axis"] = tuple(config["axis"])
        return super().from_config(config)
