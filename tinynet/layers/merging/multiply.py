"""``Multiply``: the element-wise product of a list of tensors (``keras.layers.Multiply``)."""

from __future__ import annotations

import numpy as np

from tinynet.layers.merging.base_merge import Merge

__all__ = ["Multiply"]


class Multiply(Merge):
    """Multiplies its inputs, left to right: ``((x0 * x1) * x2) ...``.

    The gradient of input ``i`` is the upstream gradient times the product of the other
    inputs, taken left to right.

    Args:
        name: Optional layer name.

    Shape:
        Inputs: a list of at least two arrays of one rank (size-1 axes broadcast);
        output: their broadcast shape.
    """

    _op = staticmethod(np.multiply)

    def _input_grads(self, g, arrays, state):
        grads = []
        for i in range(len(arrays)):
            others = [a for j, a in enumerate(arrays) if j != i]
            prod = others[0]
            for a in others[1:]:
                prod = prod * a
            grads.append(g * prod)
        return grads
