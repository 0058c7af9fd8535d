"""``Subtract``: the difference of two tensors (``keras.layers.Subtract``)."""

from __future__ import annotations

import numpy as np

from tinynet.layers.merging.base_merge import Merge

__all__ = ["Subtract"]


class Subtract(Merge):
    """``x0 - x1``, for exactly two inputs.

    Args:
        name: Optional layer name.

    Shape:
        Inputs: a list of two arrays of one rank (size-1 axes broadcast); output: their
        broadcast shape.
    """

    max_inputs = 2
    _op = staticmethod(np.subtract)

    def _input_grads(self, g, arrays, state):
        return [g, -g]
