"""Converters of the normalization layers.

* ``BatchNormalization``: the inference form with the moving statistics,
  ``(x - moving_mean) * (inv_std * gamma) + beta`` with tinynet's float32
  ``inv_std = 1 / sqrt(moving_variance + epsilon)``: ``Sub``, ``Mul``, ``Add`` on the
  channel axis where it is (no transpose).
* ``LayerNormalization``: ONNX ``LayerNormalization`` (opset 17 on; it normalizes the
  trailing axes, so other axes are transposed there and back), else primitive operators.
* ``InstanceNormalization``: ONNX ``InstanceNormalization`` (channels-first, so between
  transposes) for inputs with positions; primitive operators for rank-2 inputs.
* ``GroupNormalization``: ONNX ``GroupNormalization`` from opset 21 (the first to scale
  and shift per channel, as tinynet does; opset 18's scales per group), else primitive
  operators on the channels-last value viewed as ``[batch, positions, groups, size]``.

Every one divides by ``sqrt(variance + epsilon)`` with the biased variance, as tinynet.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.export.builder import OnnxBuilder
from tinynet.export.registry import converts

__all__: list[str] = []


def _affine(layer: Any) -> tuple[np.ndarray, np.ndarray]:
    """``gamma`` and ``beta`` as flat float32 vectors (ones and zeros when disabled), as
    the layer's forward reads them."""
    return layer._gamma_beta()


def _channel_shape(rank: int, axis: int, size: int) -> tuple:
    """The shape that broadcasts a per-channel vector along ``axis`` of a rank-``rank``
    value (``[C]`` for the last axis)."""
    if axis == rank - 1:
        return (size,)
    return tuple(size if a == axis else 1 for a in range(rank))


def _move_last(rank: int, axis: int) -> list[int]:
    return [a for a in range(rank) if a != axis] + [axis]


@converts("BatchNormalization", unknown_sizes=True)
def _batch_norm(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    rank = len(shape)
    axis = layer.axis % rank
    channels = shape[axis]
    inv_std = (1.0 / np.sqrt(layer.moving_variance.value.astype(np.float64)
                             + layer.epsilon)).astype(np.float32)
    gamma, beta = _affine(layer)
    at = _channel_shape(rank, axis, channels)
    key = id(layer)
    mean = b.const(layer.moving_mean.value.reshape(at), "moving_mean", key=(key, "mean"))
    scale = b.const((inv_std * gamma).reshape(at), "scale", key=(key, "scale"))
    y = b.op("Mul", [b.op("Sub", [x, mean], "centered"), scale], "scaled")
    return b.op("Add", [y, b.const(beta.reshape(at), "beta", key=(key, "beta"))], "batch_norm")


def _standardize(b: OnnxBuilder, x: str, axes: list[int], epsilon: float) -> str:
    """``(x - mean) / sqrt(var + epsilon)`` over ``axes`` (biased variance), primitives."""
    mean = b.reduce("ReduceMean", x, axes, True, "mean")
    centered = b.op("Sub", [x, mean], "centered")
    var = b.reduce("ReduceMean", b.op("Mul", [centered, centered], "squared"), axes, True,
                   "variance")
    std = b.op("Sqrt", [b.op("Add", [var, b.const(epsilon, "epsilon")])], "std")
    return b.op("Div", [centered, std], "standardized")


def _scale_shift(b: OnnxBuilder, layer: Any, y: str, at: tuple) -> str:
    gamma, beta = _affine(layer)
    y = b.op("Mul", [y, b.const(gamma.reshape(at), "gamma", key=(id(layer), "gamma", at))])
    return b.op("Add", [y, b.const(beta.reshape(at), "beta", key=(id(layer), "beta", at))])


def _group_norm_primitive(b: OnnxBuilder, layer: Any, x: str, shape: tuple, axis: int,
                          groups: int) -> str:
    rank = len(shape)
    perm = _move_last(rank, axis)
    inverse = list(np.argsort(perm))
    dims = [shape[a] for a in perm][1:]
    channels = dims[-1]
    h = b.transpose(x, perm)
    view = b.op("Reshape", [h, b.ints([0, -1, groups, channels // groups], "group_view")],
                "grouped")
    y = _standardize(b, view, [1, 3], layer.epsilon)
    y = b.op("Reshape", [y, b.ints([0, *dims], "shape")], "ungrouped")
    return b.transpose(_scale_shift(b, layer, y, (channels,)), inverse)


def _channels_first_op(b: OnnxBuilder, layer: Any, x: str, shape: tuple, axis: int,
                       op_type: str, **attrs: Any) -> str:
    """``op_type(x, gamma, beta)`` on the value with ``axis`` moved to position 1."""
    rank = len(shape)
    perm = [0, axis] + [a for a in range(1, rank) if a != axis]
    gamma, beta = _affine(layer)
    key = id(layer)
    y = b.op(op_type, [b.transpose(x, perm), b.const(gamma, "gamma", key=(key, "gamma")),
                       b.const(beta, "beta", key=(key, "beta"))],
             epsilon=float(layer.epsilon), **attrs)
    return b.transpose(y, list(np.argsort(perm)))


@converts("GroupNormalization")
def _group_norm(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    axis = layer.axis % len(shape)
    channels = shape[axis]
    groups = channels if layer.groups == -1 else layer.groups
    if b.opset >= 21 and len(shape) >= 3:
        return _channels_first_op(b, layer, x, shape, axis, "GroupNormalization",
                                  num_groups=groups, stash_type=1)
    return _group_norm_primitive(b, layer, x, shape, axis, groups)


@converts("InstanceNormalization")
def _instance_norm(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    rank = len(shape)
    if rank < 3:
        return _group_norm_primitive(b, layer, x, shape, rank - 1, shape[-1])
    return _channels_first_op(b, layer, x, shape, rank - 1, "InstanceNormalization")


@converts("LayerNormalization", unknown_sizes=True)
def _layer_norm(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    rank = len(shape)
    axes = sorted(a % rank for a in (layer.axis if isinstance(layer.axis, tuple) else
                                     (layer.axis,)))
    dims = tuple(shape[a] for a in axes)
    if b.opset >= 17:
        keep = [a for a in range(rank) if a not in axes]
        perm = keep + axes
        gamma, beta = _affine(layer)
        key = id(layer)
        y = b.op("LayerNormalization",
                 [b.transpose(x, perm), b.const(gamma.reshape(dims), "gamma", key=(key, "gamma")),
                  b.const(beta.reshape(dims), "beta", key=(key, "beta"))],
                 axis=len(keep), epsilon=float(layer.epsilon), stash_type=1)
        return b.transpose(y, list(np.argsort(perm)))
    at = tuple(shape[a] if a in axes else 1 for a in range(rank))
    return _scale_shift(b, layer, _standardize(b, x, axes, layer.epsilon), at)

