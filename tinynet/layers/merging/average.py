"""``Average``: the mean of a list of tensors (``keras.layers.Average``)."""

from __future__ import annotations

import numpy as np

from tinynet.layers.merging.base_merge import Merge

__all__ = ["Average"]


class Average(Merge):
    """The sum of its inputs, left to right, divided by their number (as Keras).

    Args:
        name: Optional layer name.

    Shape:
        Inputs: a list of at least two arrays of one rank (size-1 axes broadcast);
        output: their broadcast shape.
    """

    _op = staticmethod(np.add)

    def _merge(self, arrays: list[np.ndarray]) -> tuple[np.ndarray, None]:
        total, _ = super()._merge(arrays)
        return total / np.float32(len(arrays)), None

    def _input_grads(self, g, arrays, state):
        share = g / np.float32(len(arrays))
        return [share] * len(arrays)
