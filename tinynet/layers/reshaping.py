"""``Flatten`` and ``Reshape``: zero-copy views that keep the batch axis (Keras 3 semantics)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.tensor import Tensor, as_array

__all__ = ["Flatten", "Reshape"]


class Flatten(Layer):
    """Flattens every axis but the batch axis (C order), as ``keras.layers.Flatten``.

    Forward and backward are zero-copy reshapes. A rank-1 input ``[batch]`` becomes
    ``[batch, 1]``, as in Keras.

    Args:
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, *dims]``.
        Output: ``[batch, prod(dims)]`` (``None`` if any of ``dims`` is unknown).
    """

    def output_shape(self, input_shape: tuple) -> tuple:
        input_shape = tuple(input_shape)
        if len(input_shape) < 1:
            raise ValueError(
                f"Flatten {self.name!r}: input must have rank >= 1 (batch axis included), "
                f"got shape {input_shape}")
        dims = input_shape[1:]
        flat = None if any(d is None for d in dims) else math.prod(dims)
        return (input_shape[0], flat)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = as_array(x)
        self._check_rank(arr, 1)
        self._cache = arr.shape
        return Tensor(arr.reshape(arr.shape[0], math.prod(arr.shape[1:])))

    def backward(self, grad_output: Any) -> Tensor:
        input_shape = self._require_cache()
        g = self._check_grad(grad_output, (input_shape[0], math.prod(input_shape[1:])))
        return Tensor(g.reshape(input_shape))


class Reshape(Layer):
    """Reshapes each sample to ``target_shape``, as ``keras.layers.Reshape``.

    The batch axis is kept; one entry of ``target_shape`` may be ``-1`` (inferred from
    the sample size). Forward and backward are zero-copy reshapes (C order).

    Args:
        target_shape: The per-sample output shape (no batch axis): positive ints and at
            most one ``-1``.
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, *dims]``.
        Output: ``[batch, *target_shape]`` with ``-1`` resolved (``None`` while the input
        sample size is unknown).

    Raises:
        TypeError: ``target_shape`` is not a tuple/list of ints.
        ValueError: An entry below 1 other than ``-1``, more than one ``-1``, or (at build
            or call) a sample size that ``target_shape`` cannot hold.
    """

    def __init__(self, target_shape: tuple, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self.target_shape = self._validate_target(target_shape)

    @staticmethod
    def _validate_target(target_shape: Any) -> tuple[int, ...]:
        expected = "a tuple of positive ints with at most one -1"
        if isinstance(target_shape, (int, np.integer)) and not isinstance(target_shape, bool):
            target_shape = (target_shape,)
        if not isinstance(target_shape, (tuple, list)) or not all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in target_shape):
            raise TypeError(f"Reshape: target_shape must be {expected}, got {target_shape!r}")
        shape = tuple(int(d) for d in target_shape)
        if any(d < 1 and d != -1 for d in shape):
            raise ValueError(f"Reshape: target_shape must be {expected}, got {shape}")
        if shape.count(-1) > 1:
            raise ValueError(
                f"Reshape: target_shape may contain at most one -1 (unknown dimension), "
                f"got {shape}")
        return shape

    def _resolve(self, input_shape: tuple) -> tuple:
        """The per-sample output shape for ``input_shape`` (batch axis included)."""
        dims = tuple(input_shape[1:])
        if any(d is None for d in dims):
            return tuple(None if d == -1 else d for d in self.target_shape)
        size = math.prod(dims)
        known = math.prod(d for d in self.target_shape if d != -1)
        if -1 in self.target_shape:
            if size % known != 0:
                raise ValueError(
                    f"Reshape {self.name!r}: cannot reshape input shape {tuple(input_shape)} "
                    f"to target_shape {self.target_shape}: {size} elements per sample are "
                    f"not a multiple of {known}")
            return tuple(size // known if d == -1 else d for d in self.target_shape)
        if size != known:
            raise ValueError(
                f"Reshape {self.name!r}: cannot reshape input shape {tuple(input_shape)} "
                f"to target_shape {self.target_shape}: {size} elements per sample, "
                f"target holds {known}")
        return self.target_shape

    def output_shape(self, input_shape: tuple) -> tuple:
        input_shape = tuple(input_shape)
        if len(input_shape) < 1:
            raise ValueError(
                f"Reshape {self.name!r}: input must have rank >= 1 (batch axis included), "
                f"got shape {input_shape}")
        return (input_shape[0], *self._resolve(input_shape))

    def build(self, input_shape: tuple) -> None:
        self.output_shape(input_shape)
        super().build(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = as_array(x)
        self._check_rank(arr, 1)
        out_shape = self.output_shape(arr.shape)
        self._cache = (arr.shape, out_shape)
        return Tensor(arr.reshape(out_shape))

    def backward(self, grad_output: Any) -> Tensor:
        input_shape, out_shape = self._require_cache()
        g = self._check_grad(grad_output, out_shape)
        return Tensor(g.reshape(input_shape))

    def get_config(self) -> dict:
        config = super().get_config()
        config["target_shape"] = list(self.target_shape)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Reshape":
        config = dict(config)
        config["target_shape"] = tuple(config["target_shape"])
        return super().from_config(config)
