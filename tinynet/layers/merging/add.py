"""``Add``: the sum of a list of tensors (``keras.layers.Add``)."""

from __future__ import annotations

import numpy as np

from tinynet.layers.merging.base_merge import Merge

__all__ = ["Add"]


class Add(Merge):
    """Adds its inputs, left to right: ``((x0 + x1) + x2) ...``.

    Args:
        name: Optional layer name.

    Shape:
        Inputs: a list of at least two arrays of one rank (size-1 axes broadcast);
        output: their broadcast shape.
    """

    _op = staticmethod(np.add)

    def _input_grads(self, g, arrays, state):
        return [g] * len(arrays)
