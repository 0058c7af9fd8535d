"""``Input`` and ``InputLayer``: where a model's data comes in (Keras 3).

``tn.Input(shape)`` returns a :class:`~tinynet.layers.node.SymbolicTensor` made by a new
``InputLayer``: the start of a functional model (``tn.Model(inputs, outputs)``), or the
first item of a ``Sequential`` list, which then knows its input shape.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from tinynet.keywords import checked_function
from tinynet.layers.layer import Layer, normalize_shape
from tinynet.layers.node import Node, SymbolicTensor
from tinynet.tensor import Tensor, as_array

__all__ = ["Input", "InputLayer"]

_DTYPES = ("float32",)


def _checked_shape(shape: Any, batch_shape: Any, dtype: Any, owner: str) -> tuple:
    """The per-sample shape from ``shape`` or ``batch_shape``, with ``dtype`` checked."""
    if (shape is None) == (batch_shape is None):
        raise ValueError(f"{owner}: give exactly one of shape and batch_shape, got "
                         f"shape={shape!r}, batch_shape={batch_shape!r}")
    if batch_shape is not None:
        batch = normalize_shape(batch_shape, f"{owner}: batch_shape")
        if not batch or batch[0] is not None:
            raise ValueError(f"{owner}: batch_shape must start with None (any batch size), "
                             f"got {batch_shape!r}")
        shape = batch[1:]
    shape = normalize_shape(shape, f"{owner}: shape")
    if any(d is None for d in shape):
        raise ValueError(f"{owner}: shape must hold known sizes (no None), got {shape}")
    if dtype not in _DTYPES:
        raise ValueError(f"{owner}: dtype must be one of {_DTYPES}, got {dtype!r}")
    return shape


class InputLayer(Layer):
    """The layer behind ``tn.Input``: no weights, the identity on data.

    Args:
        shape: The per-sample shape, without the batch axis, e.g. ``(8, 8, 1)``.
        dtype: ``"float32"`` (the dtype every tinynet layer computes in).
        batch_shape: The shape with the batch axis (its first entry must be ``None``);
            instead of ``shape``.
        name: Optional name (default ``input_layer``, made unique in a model).

    Attributes:
        output: The symbolic tensor this layer produces (what ``tn.Input`` returns).

    Shape:
        Input and output: ``[batch, *shape]`` (identity).
    """

    def __init__(self, shape: tuple | None = None, *, dtype: str = "float32",
                 batch_shape: tuple | None = None, name: str | None = None) -> None:
        super().__init__(name=name)
        self.shape = _checked_shape(shape, batch_shape, dtype, type(self).__name__)
        self.dtype = dtype
        self.input_shape_arg = (None, *self.shape)
        self.build(self.input_shape_arg)
        node = Node(self, [], listed=False)
        self.inbound_nodes.append(node)
        self.output = SymbolicTensor(self.input_shape_arg, dtype, self, 0)
        node.outputs.append(self.output)

    def output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        return Tensor(as_array(x))

    def backward(self, grad_output: Any) -> Tensor:
        return Tensor(as_array(grad_output))

    def get_config(self) -> dict:
        return {"batch_shape": list(self.input_shape_arg), "dtype": self.dtype,
                "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "InputLayer":
        config = dict(config)
        if "shape" in config:  # files written before InputLayer (class name "Input")
            return cls(tuple(config["shape"]), name=config.get("name"))
        batch_shape = config.get("batch_shape")
        return cls(batch_shape=tuple(batch_shape) if isinstance(batch_shape, list) else batch_shape,
                   dtype=config.get("dtype", "float32"), name=config.get("name"))


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _shape_not_spread(function: Callable) -> Callable:
    """Refuses ``Input(8, 8, 1)``: a shape spread over positional arguments (which would
    make 8 the dtype and 1 the name), whatever their number, naming ``shape``."""
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if len(args) > 1 and _is_int(args[0]) and _is_int(args[1]):
            args = tuple(int(a) if _is_int(a) else a for a in args)
            extra = args[1:]
            raise TypeError(
                f"Input: shape must be a tuple, e.g. Input(shape={tuple(args)!r}); got extra "
                f"positional argument{'s' if len(extra) > 1 else ''} "
                f"{', '.join(repr(a) for a in extra)}")
        return function(*args, **kwargs)
    return wrapper


@_shape_not_spread
@checked_function
def Input(shape: tuple | None = None, dtype: str = "float32", name: str | None = None, *,
          batch_shape: tuple | None = None) -> SymbolicTensor:
    """A symbolic input tensor (``keras.Input``): call layers on it, then build a
    ``tn.Model(inputs, outputs)``; or put it first in a ``Sequential`` list.

    Args:
        shape: The per-sample shape, without the batch axis, e.g. ``(8, 8, 1)``.
        dtype: ``"float32"``.
        name: The input's name (used by ``Model`` to match a dict of inputs).
        batch_shape: The shape with a ``None`` batch axis, instead of ``shape``.

    Returns:
        The :class:`~tinynet.layers.node.SymbolicTensor` of a new ``InputLayer``.

    Raises:
        TypeError: the shape spread over positional arguments (``Input(8, 8, 1)``; write
            ``Input((8, 8, 1))``), or an unknown keyword (the message suggests the closest).
        ValueError: a size is negative or unknown, a ``dtype`` other than ``"float32"``,
            or both or neither of ``shape`` and ``batch_shape``.

    Shape:
        ``(None, *shape)``.
    """
    shape = _checked_shape(shape, batch_shape, dtype, "Input")
    return InputLayer(shape, dtype=dtype, name=name).output
