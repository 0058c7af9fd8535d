"""Keras's lower-case merge functions: each builds the layer and calls it on the list
(``keras.layers.add`` and the others), on symbolic tensors from ``tn.Input`` or on arrays."""

from __future__ import annotations

from typing import Any

__all__ = ["add", "subtract", "multiply", "average", "maximum", "minimum", "concatenate",
           "dot"]


def _apply(cls_name: str, inputs: Any, **kwargs: Any) -> Any:
    import tinynet.layers as layers

    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"{cls_name.lower()}: inputs must be a list of tensors, got "
                        f"{type(inputs).__name__}")
    return getattr(layers, cls_name)(**kwargs)(list(inputs))


def add(inputs: Any, **kwargs: Any) -> Any:
    """``Add(**kwargs)(inputs)``: the element-wise sum of a list of tensors."""
    return _apply("Add", inputs, **kwargs)


def subtract(inputs: Any, **kwargs: Any) -> Any:
    """``Subtract(**kwargs)(inputs)``: ``inputs[0] - inputs[1]``."""
    return _apply("Subtract", inputs, **kwargs)


def multiply(inputs: Any, **kwargs: Any) -> Any:
    """``Multiply(**kwargs)(inputs)``: the element-wise product of a list of tensors."""
    return _apply("Multiply", inputs, **kwargs)


def average(inputs: Any, **kwargs: Any) -> Any:
    """``Average(**kwargs)(inputs)``: the element-wise mean of a list of tensors."""
    return _apply("Average", inputs, **kwargs)


def maximum(inputs: Any, **kwargs: Any) -> Any:
    """``Maximum(**kwargs)(inputs)``: the element-wise maximum of a list of tensors."""
    return _apply("Maximum", inputs, **kwargs)


def minimum(inputs: Any, **kwargs: Any) -> Any:
    """``Minimum(**kwargs)(inputs)``: the element-wise minimum of a list of tensors."""
    return _apply("Minimum", inputs, **kwargs)


def concatenate(inputs: Any, axis: int = -1, **kwargs: Any) -> Any:
    """``Concatenate(axis=axis, **kwargs)(inputs)``: the tensors joined along ``axis``."""
    return _apply("Concatenate", inputs, axis=axis, **kwargs)


def dot(inputs: Any, axes: Any = -1, normalize: bool = False, **kwargs: Any) -> Any:
    """``Dot(axes=axes, normalize=normalize, **kwargs)(inputs)``: the per-sample dot
    product of two tensors."""
    return _apply("Dot", inputs, axes=axes, normalize=normalize, **kwargs)
