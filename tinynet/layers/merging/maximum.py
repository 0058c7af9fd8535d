"""``Maximum``: the element-wise maximum of a list of tensors (``keras.layers.Maximum``)."""

from __future__ import annotations

import numpy as np

from tinynet.layers.merging.extremum import Extremum

__all__ = ["Maximum"]


class Maximum(Extremum):
    """The element-wise maximum of its inputs (ties split the gradient in halves).

    Args:
        name: Optional layer name.

    Shape:
        Inputs: a list of at least two arrays of one rank (size-1 axes broadcast);
        output: their broadcast shape.
    """

    _op = staticmethod(np.maximum)
