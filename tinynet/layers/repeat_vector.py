"""``RepeatVector``: repeats a vector ``n`` times (``keras.layers.RepeatVector``)."""

from __future__ import annotations

from typing import Any

from tinynet import ops
from tinynet.layers.layer import Layer

__all__ = ["RepeatVector"]


class RepeatVector(Layer):
    """Repeats each sample's feature vector ``n`` times along a new axis 1.

    Args:
        n: The number of repetitions, a positive int.
        name: Optional layer name.

    Shape:
        Input: ``[batch, features]``; output: ``[batch, n, features]``.
    """

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        what = f"RepeatVector: n must be a positive int, got {n!r}"
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(what)
        if n < 1:
            raise ValueError(what)
        self.n = int(n)

    def _check(self, shape: tuple) -> None:
        if len(shape) != 2:
            raise ValueError(f"RepeatVector {self.name!r}: input must have rank 2 "
                             f"[batch, features], got shape {tuple(shape)}")

    def build(self, input_shape: tuple) -> None:
        self._check(tuple(input_shape))
        super().build(input_shape)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        self._check(tuple(input_shape))
        return (input_shape[0], self.n, input_shape[1])

    def call(self, inputs: Any) -> Any:
        self._check(tuple(ops.shape(inputs)))
        return ops.repeat(ops.expand_dims(inputs, 1), self.n, axis=1)

    def get_config(self) -> dict:
        return {**super().get_config(), "n": self.n}
