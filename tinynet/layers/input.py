"""``Input``: declares a model's input shape (it has no weights and no summary row)."""

from __future__ import annotations

from typing import Any

from tinynet.layers.layer import Layer, normalize_shape
from tinynet.tensor import Tensor, as_array

__all__ = ["Input"]


class Input(Layer):
    """Declares the input shape of a ``Sequential`` model, as ``keras.Input``.

    Args:
        shape: The per-sample shape, without the batch axis, e.g. ``(8, 8, 1)``.
        name: Optional name.

    Shape:
        Input and output: ``[batch, *shape]`` (identity).
    """

    def __init__(self, shape: tuple, *, name: str | None = None) -> None:
        super().__init__(name=name)
        self.shape = normalize_shape(shape, "Input: shape")
        if any(d is None for d in self.shape):
            raise ValueError(f"Input: shape must hold known sizes (no None), got {self.shape}")
        self.input_shape_arg = (None, *self.shape)

    def output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        return Tensor(as_array(x))

    def backward(self, grad_output: Any) -> Tensor:
        return Tensor(as_array(grad_output))

    def get_config(self) -> dict:
        return {"shape": list(self.shape), "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "Input":
        return cls(tuple(config["shape"]), name=config.get("name"))
