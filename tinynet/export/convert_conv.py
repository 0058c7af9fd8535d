"""Converters of the windowed layers: the convolutions (``Conv1D``, ``Conv2D``,
``Conv2DTranspose``, ``DepthwiseConv2D``, ``SeparableConv2D``) and the pooling layers.

ONNX defines ``Conv``, ``ConvTranspose``, ``MaxPool`` and ``AveragePool`` channels-first,
so each converter transposes its channels-last input to ``[batch, channels, ...]``, runs
the operator with explicit ``pads`` from tinynet's own window rule
(:func:`tinynet.ops.arrays.windows.window_axis`: "same" puts the odd padding cell at the end),
and transposes back. An elementwise fused activation runs before the transpose back (a
runtime may fuse it into the convolution); softmax, which normalizes the channel axis,
after it. The global poolings reduce the channels-last value directly.
"""

from __future__ import annotations

from typing import Any

from tinynet.export.builder import OnnxBuilder, channels_first, channels_last
from tinynet.export.convert_basic import activation
from tinynet.export.registry import converts
from tinynet.layers.conv2d_transpose import transpose_axis
from tinynet.ops.arrays.windows import window_axis

__all__ = ["window_pads"]


def window_pads(size: int, window: int, stride: int, padding: str) -> tuple[int, int]:
    """``(before, after)`` padding of one axis: tinynet's leading pad, and the trailing
    pad its output size needs (0 when "valid" drops the input's last cells)."""
    out, before = window_axis(size, window, stride, padding)
    return before, max((out - 1) * stride + window - size - before, 0)


def _finish(b: OnnxBuilder, layer: Any, y: str, rank: int) -> str:
    """Channels-first ``y`` back to channels-last, with the layer's activation."""
    fn = layer.activation
    if fn is not None and fn.form != "softmax":
        return b.transpose(activation(b, fn, y), channels_last(rank))
    return activation(b, fn, b.transpose(y, channels_last(rank)))


def _bias(b: OnnxBuilder, layer: Any) -> list[str]:
    if not layer.use_bias:
        return []
    return [b.const(layer.bias.value, "bias", key=(id(layer), "bias"))]


def _conv_pads(shape: tuple, layer: Any) -> list[int]:
    """ONNX ``pads`` (all befores, then all afters) of a 2-D convolution."""
    padding = "same" if layer.padding == "same" else "valid"
    pairs = [window_pads(shape[1 + a], (layer.kernel_size[a] - 1) * layer.dilation_rate[a] + 1,
                         layer.strides[a], padding) for a in (0, 1)]
    return [pairs[0][0], pairs[1][0], pairs[0][1], pairs[1][1]]


@converts("Conv2D")
def _conv2d(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    kernel = b.const(layer.kernel.value.transpose(3, 2, 0, 1), "kernel",
                     key=(id(layer), "kernel"))
    y = b.op("Conv", [b.transpose(x, channels_first(4)), kernel, *_bias(b, layer)],
             kernel_shape=list(layer.kernel_size), strides=list(layer.strides),
             dilations=list(layer.dilation_rate), pads=_conv_pads(shape, layer))
    return _finish(b, layer, y, 4)


@converts("Conv1D")
def _conv1d(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """A 1-D ``Conv`` on ``[batch, channels, steps]``; "causal" pads ``(k - 1) * dilation``
    steps before and none after."""
    k, s, d = layer.kernel_size[1], layer.strides[1], layer.dilation_rate[1]
    if layer.padding == "causal":
        pads = [(k - 1) * d, 0]
    else:
        pads = list(window_pads(shape[1], (k - 1) * d + 1, s, layer.padding))
    kernel = b.const(layer.kernel.value.transpose(2, 1, 0), "kernel", key=(id(layer), "kernel"))
    y = b.op("Conv", [b.transpose(x, channels_first(3)), kernel, *_bias(b, layer)],
             kernel_shape=[k], strides=[s], dilations=[d], pads=pads)
    return _finish(b, layer, y, 3)


@converts("Conv2DTranspose")
def _conv2d_transpose(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """``ConvTranspose`` with tinynet's (Keras's) output size: the leading crop is the
    equivalent convolution's pad, and the size left over becomes a trailing crop or
    ``output_padding``."""
    begins, ends, extra = [], [], []
    for a in (0, 1):
        k, s, d = layer.kernel_size[a], layer.strides[a], layer.dilation_rate[a]
        given = None if layer.output_padding is None else layer.output_padding[a]
        out, lead = transpose_axis(shape[1 + a], k, s, d, layer.padding, given)
        rest = out - ((shape[1 + a] - 1) * s + (k - 1) * d + 1 - lead)
        begins.append(lead)
        ends.append(max(-rest, 0))
        extra.append(max(rest, 0))
    kernel = b.const(layer.kernel.value.transpose(3, 2, 0, 1), "kernel",
                     key=(id(layer), "kernel"))
    y = b.op("ConvTranspose", [b.transpose(x, channels_first(4)), kernel, *_bias(b, layer)],
             kernel_shape=list(layer.kernel_size), strides=list(layer.strides),
             dilations=list(layer.dilation_rate), pads=begins + ends,
             output_padding=extra if any(extra) else None)
    return _finish(b, layer, y, 4)


def _depthwise(b: OnnxBuilder, layer: Any, x: str, shape: tuple, bias: list[str]) -> str:
    """The grouped ``Conv`` (``group = channels``) of the depthwise kernel
    ``[kh, kw, C, M]``, whose output channel ``c * M + m`` is input channel ``c``'s
    ``m``-th kernel, on the channels-first input; returns a channels-first value."""
    w = layer.depthwise.value
    kh, kw, c, m = w.shape
    kernel = b.const(w.reshape(kh, kw, c * m).transpose(2, 0, 1)[:, None], "depthwise_kernel",
                     key=(id(layer), "depthwise"))
    return b.op("Conv", [b.transpose(x, channels_first(4)), kernel, *bias],
                kernel_shape=[kh, kw], strides=list(layer.strides),
                dilations=list(layer.dilation_rate), pads=_conv_pads(shape, layer), group=c)


@converts("DepthwiseConv2D")
def _depthwise_conv2d(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    return _finish(b, layer, _depthwise(b, layer, x, shape, _bias(b, layer)), 4)


@converts("SeparableConv2D")
def _separable_conv2d(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """The depthwise ``Conv``, then the pointwise kernel as a 1x1 ``Conv`` with the bias."""
    d = _depthwise(b, layer, x, shape, [])
    kernel = b.const(layer.pointwise.value.transpose(3, 2, 0, 1), "pointwise_kernel",
                     key=(id(layer), "pointwise"))
    y = b.op("Conv", [d, kernel, *_bias(b, layer)], "pointwise", kernel_shape=[1, 1])
    return _finish(b, layer, y, 4)


# -- pooling ----------------------------------------------------------------------------------
def _pool(b: OnnxBuilder, layer: Any, x: str, shape: tuple, op_type: str) -> str:
    """``MaxPool``/``AveragePool`` over the spatial axes of a rank-4 (2-D) or rank-3
    (1-D, ``pool_size = (p, 1)``) input; average pooling counts only the cells inside
    the input (``count_include_pad=0``), as tinynet's "same"."""
    rank = len(shape)
    axes = range(rank - 2)
    pairs = [window_pads(shape[1 + a], layer.pool_size[a], layer.strides[a], layer.padding)
             for a in axes]
    attrs: dict[str, Any] = {"count_include_pad": 0} if op_type == "AveragePool" else {}
    y = b.op(op_type, [b.transpose(x, channels_first(rank))],
             kernel_shape=[layer.pool_size[a] for a in axes],
             strides=[layer.strides[a] for a in axes],
             pads=[p[0] for p in pairs] + [p[1] for p in pairs], **attrs)
    return b.transpose(y, channels_last(rank))


@converts("MaxPooling2D", "MaxPooling1D")
def _max_pooling(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    return _pool(b, layer, x, shape, "MaxPool")


@converts("AveragePooling2D", "AveragePooling1D")
def _average_pooling(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    return _pool(b, layer, x, shape, "AveragePool")


@converts("GlobalAveragePooling2D", "GlobalAveragePooling1D", "GlobalMaxPooling2D",
          "GlobalMaxPooling1D", unknown_sizes=True)
def _global_pooling(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """``ReduceMean``/``ReduceMax`` over every axis but the batch and the channels."""
    op_type = "ReduceMax" if "Max" in type(layer).__name__ else "ReduceMean"
    return b.reduce(op_type, x, range(1, len(shape) - 1), layer.keepdims)
