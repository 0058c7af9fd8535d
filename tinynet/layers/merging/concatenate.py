"""``Concatenate``: tensors joined along one axis (``keras.layers.Concatenate``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.tensor import Tensor, as_array

__all__ = ["Concatenate"]


class Concatenate(Layer):
    """Joins a list of tensors along ``axis``; the other axes must match.

    Args:
        axis: The axis to join along (negative counts from the end; not the batch axis).
        name: Optional layer name.

    Shape:
        Inputs: a list of at least two arrays of one rank, equal except along ``axis``;
        output: the same, with ``axis`` the sum of the inputs' sizes.
    """

    multiple_inputs = True

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"Concatenate: axis must be an int, got {axis!r}")
        self.axis = int(axis)

    def _owner(self) -> str:
        return f"Concatenate {self.name!r}"

    def _axis(self, rank: int) -> int:
        axis = self.axis + rank if self.axis < 0 else self.axis
        if not 1 <= axis < rank:
            raise ValueError(f"{self._owner()}: axis {self.axis} is not a non-batch axis of "
                             f"inputs of rank {rank}")
        return axis

    def output_shape(self, input_shape: Any) -> tuple:
        owner = self._owner()
        if (not isinstance(input_shape, list) or len(input_shape) < 2
                or not all(isinstance(s, tuple) for s in input_shape)):
            raise ValueError(f"{owner}: expects a list of at least 2 input shapes, got "
                             f"{input_shape!r}")
        ranks = {len(s) for s in input_shape}
        if len(ranks) != 1:
            raise ValueError(f"{owner}: inputs must have one rank, got shapes {input_shape}")
        axis = self._axis(ranks.pop())
        out = list(input_shape[0])
        for shape in input_shape[1:]:
            for i, (a, b) in enumerate(zip(out, shape)):
                if i in (0, axis):
                    continue
                if a is not None and b is not None and a != b:
                    raise ValueError(f"{owner}: inputs must match except along axis "
                                     f"{self.axis}, got shapes {input_shape}")
                out[i] = a if a is not None else b
        sizes = [s[axis] for s in input_shape]
        batches = {s[0] for s in input_shape}
        out[0] = batches.pop() if len(batches) == 1 else None
        out[axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def build(self, input_shape: Any) -> None:
        self.output_shape(input_shape)
        super().build(input_shape)

    def forward(self, inputs: Any, training: bool = False) -> Tensor:
        owner = self._owner()
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{owner}: expects a list of inputs, got {type(inputs).__name__}")
        arrays = [as_array(x, f"{owner}: input {i}") for i, x in enumerate(inputs)]
        self.output_shape([(None, *a.shape[1:]) for a in arrays])
        if len({a.shape[0] for a in arrays}) > 1:
            raise ValueError(f"{owner}: inputs must hold one batch size, got shapes "
                             f"{[a.shape for a in arrays]}")
        axis = self._axis(arrays[0].ndim)
        self._cache = (axis, [a.shape[axis] for a in arrays])
        return Tensor(np.concatenate(arrays, axis=axis))

    def backward(self, grad_output: Any) -> list[Tensor]:
        axis, sizes = self._require_cache()
        g = as_array(grad_output, f"{self._owner()}: grad_output")
        bounds = np.cumsum(sizes)[:-1]
        return [Tensor(np.ascontiguousarray(part)) for part in np.split(g, bounds, axis=axis)]

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
