"""``Permute``: reorders the non-batch axes (``keras.layers.Permute``)."""

from __future__ import annotations

from typing import Any

from tinynet import ops
from tinynet.layers.layer import Layer

__all__ = ["Permute"]


class Permute(Layer):
    """Permutes the axes of each sample: output axis ``i`` is input axis ``dims[i-1]``.

    Args:
        dims: A permutation of ``1, ..., rank - 1`` (1-based: the batch axis stays first),
            e.g. ``(2, 1)`` swaps the two axes of a ``[batch, steps, features]`` input.
        name: Optional layer name.

    Shape:
        Input: ``[batch, d1, ..., dn]`` with ``n = len(dims)``; output: the axes permuted.
    """

    def __init__(self, dims: tuple[int, ...], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        what = (f"Permute: dims must be a tuple holding each of 1, ..., n once (the batch "
                f"axis 0 is not permuted), got {dims!r}")
        if not isinstance(dims, (list, tuple)) or any(
                isinstance(d, bool) or not isinstance(d, int) for d in dims):
            raise TypeError(what)
        if not dims or sorted(dims) != list(range(1, len(dims) + 1)):
            raise ValueError(what)
        self.dims = tuple(int(d) for d in dims)

    def _check(self, shape: tuple) -> None:
        if len(shape) != len(self.dims) + 1:
            raise ValueError(f"Permute {self.name!r}: input must have rank "
                             f"{len(self.dims) + 1} (batch axis included) for dims "
                             f"{self.dims}, got shape {tuple(shape)}")

    def build(self, input_shape: tuple) -> None:
        self._check(tuple(input_shape))
        super().build(input_shape)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        input_shape = tuple(input_shape)
        self._check(input_shape)
        return (input_shape[0], *(input_shape[d] for d in self.dims))

    def call(self, inputs: Any) -> Any:
        self._check(tuple(ops.shape(inputs)))
        return ops.transpose(inputs, axes=(0, *self.dims))

    def get_config(self) -> dict:
        return {**super().get_config(), "dims": list(self.dims)}

    @classmethod
    def from_config(cls, config: dict) -> "Permute":
        return super().from_config({**config, "dims": tuple(config["dims"])})
