"""Converters of the layers that need no layout change: ``Dense``, the activations, the
inference identities (dropout, augmentation), ``Flatten``, ``Reshape``, ``Rescaling``,
``Normalization``, ``Masking``, ``Embedding`` and the merging layers.

Every one works on channels-last values as tinynet holds them, so no ``Transpose`` is
needed; :func:`activation` is shared with the convolutions (their fused activation).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.activations import ActivationFn
from tinynet.export.builder import OnnxBuilder
from tinynet.export.registry import converts

__all__ = ["activation"]

_SQRT1_2 = np.float32(0.7071067811865476)


# -- activations ------------------------------------------------------------------------------
def _relu_general(b: OnnxBuilder, x: str, slope: float, top: float, threshold: float) -> str:
    """Keras ``relu(x, negative_slope, max_value, threshold)`` as tinynet computes it:
    ``min(x if x > threshold else 0, max_value) - slope * max(threshold - x, 0)``."""
    if threshold == 0.0:
        pos = b.op("Relu", [x])
    else:
        below = b.op("LessOrEqual", [x, b.const(threshold, "threshold")], "at_or_below")
        pos = b.op("Where", [below, b.const(0.0, "zero"), x], "positive_part")
    if np.isfinite(top):
        pos = b.op("Min", [pos, b.const(top, "max_value")], "capped")
    if slope == 0.0:
        return pos
    neg = b.op("Relu", [b.op("Sub", [b.const(threshold, "threshold"), x], "below")])
    return b.op("Sub", [pos, b.op("Mul", [b.const(slope, "negative_slope"), neg])], "relu")


def _gelu(b: OnnxBuilder, x: str) -> str:
    """The exact (erf) GELU: ONNX ``Gelu`` from opset 20, else ``0.5 x (1 + erf(x / sqrt 2))``
    in tinynet's order of operations."""
    if b.opset >= 20:
        return b.op("Gelu", [x], approximate="none")
    erf = b.op("Erf", [b.op("Mul", [x, b.const(_SQRT1_2, "sqrt1_2")])])
    half = b.op("Mul", [b.const(0.5, "half"), x])
    return b.op("Mul", [half, b.op("Add", [b.const(1.0, "one"), erf])], "gelu")


def activation(b: OnnxBuilder, fn: ActivationFn | None, x: str, axis: int = -1) -> str:
    """``fn(x)`` for a tinynet :class:`~tinynet.ops.fused.ActivationFn` (``None`` and
    ``"linear"`` are the identity); softmax normalizes ``axis``."""
    if fn is None or fn.form == "linear":
        return x
    p0, p1, p2 = (float(p) for p in fn.params)
    form = fn.form
    if form == "relu":
        return b.op("Relu", [x])
    if form == "leaky_relu":
        return b.op("LeakyRelu", [x], alpha=p0)
    if form == "relu_general":
        return _relu_general(b, x, p0, p1, p2)
    if form == "sigmoid":
        return b.op("Sigmoid", [x])
    if form == "tanh":
        return b.op("Tanh", [x])
    if form == "elu":
        return b.op("Elu", [x], alpha=p0)
    if form == "gelu":
        return _gelu(b, x)
    if form == "silu":
        return b.op("Mul", [x, b.op("Sigmoid", [x])], "silu")
    if form == "softmax":
        return b.op("Softmax", [x], axis=int(axis))
    raise ValueError(f"export: activation {fn.name!r} has no ONNX form")  # pragma: no cover


@converts("Activation", "ReLU", "LeakyReLU", "ELU", "Sigmoid", "Tanh",
          unknown_sizes=True)
def _activation_layer(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    return activation(b, layer._fn, x)


@converts("Softmax", unknown_sizes=True)
def _softmax(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    return activation(b, layer._fn, x, axis=layer.axis % len(shape))


# -- identities at inference -----------------------------------------------------------------
@converts("Dropout", "SpatialDropout2D", "RandomFlip", "RandomTranslation", "RandomRotation",
          "RandomZoom", "RandomContrast", unknown_sizes=True)
def _identity(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """Dropout and the augmentation layers (but ``RandomCrop``) pass inputs through at
    inference."""
    return x


# -- dense, reshaping, preprocessing ------------------------------------------------------------
@converts("Dense", unknown_sizes=True)
def _dense(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    kernel = b.const(layer.kernel.value, "kernel", key=(id(layer), "kernel"))
    y = b.op("MatMul", [x, kernel])
    bias = layer.bias.value if layer.use_bias else None
    return activation(b, layer.activation, b.add_bias(y, bias, (id(layer), "bias")))


@converts("Flatten")
def _flatten(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    return b.op("Flatten", [x], axis=1)


@converts("Reshape")
def _reshape(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    target = layer.output_shape(shape)[1:]
    return b.op("Reshape", [x, b.ints([0, *target], "target_shape")])


@converts("Rescaling", unknown_sizes=True)
def _rescaling(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    scaled = b.op("Mul", [x, b.const(layer.scale, "scale", key=(id(layer), "scale"))])
    return b.op("Add", [scaled, b.const(layer.offset, "offset", key=(id(layer), "offset"))])


@converts("Masking", unknown_sizes=True)
def _masking(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """``x`` times whether any feature of its step differs from ``mask_value``."""
    value = b.const(np.float32(layer.mask_value), "mask_value", key=(id(layer), "mask_value"))
    differs = b.op("Cast", [b.op("Not", [b.op("Equal", [x, value])])], "differs",
                   to=b.FLOAT)
    return b.op("Mul", [x, b.reduce("ReduceMax", differs, [len(shape) - 1], True, "kept")])


@converts("Normalization")
def _normalization(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """``(x - mean) / std`` (or ``mean + x * std`` inverted) with tinynet's float32
    ``std = max(sqrt(variance), 1e-7)``, the statistics broadcast over the input's rank."""
    mean = b.const(layer._stats()[0], "mean", key=(id(layer), "mean"))
    std = b.const(layer._std(), "std", key=(id(layer), "std"))
    if layer.invert:
        return b.op("Add", [mean, b.op("Mul", [x, std])], "denormalized")
    return b.op("Div", [b.op("Sub", [x, mean], "centered"), std], "normalized")


@converts("Embedding", unknown_sizes=True, integer_inputs=True)
def _embedding(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """The ids (float32, or the integer dtype of an integer ``Input``) cast to int64,
    then the table's rows."""
    ids = b.op("Cast", [x], "ids", to=b.INT64)
    table = b.const(layer.embeddings.value, "embeddings", key=(id(layer), "embeddings"))
    return b.op("Gather", [table, ids], "embedded", axis=0)


# -- merging ------------------------------------------------------------------------------------
def _fold(b: OnnxBuilder, op_type: str, xs: list[str]) -> str:
    """``((x0 op x1) op x2) ...``: left to right, as tinynet folds them."""
    out = xs[0]
    for x in xs[1:]:
        out = b.op(op_type, [out, x])
    return out


@converts("Add", "Subtract", "Multiply", "Maximum", "Minimum",
          unknown_sizes=True)
def _merge(b: OnnxBuilder, layer: Any, xs: list[str], shapes: list[tuple]) -> str:
    op_type = {"Add": "Add", "Subtract": "Sub", "Multiply": "Mul", "Maximum": "Max",
               "Minimum": "Min"}[type(layer).__name__]
    return _fold(b, op_type, xs)


@converts("Average", unknown_sizes=True)
def _average(b: OnnxBuilder, layer: Any, xs: list[str], shapes: list[tuple]) -> str:
    return b.op("Div", [_fold(b, "Add", xs), b.const(float(len(xs)), "count")], "average")


@converts("Concatenate", unknown_sizes=True)
def _concatenate(b: OnnxBuilder, layer: Any, xs: list[str], shapes: list[tuple]) -> str:
    return b.op("Concat", xs, axis=layer.axis % len(shapes[0]))
