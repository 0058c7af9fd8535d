"""``DepthwiseConv2D``: each input channel convolved with its own kernels (Keras 3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import activations, regularizers
from tinynet.layers.convolutional import Windowed, check_strides_with_dilation
from tinynet.layers.layer import check_bool, check_positive_int
from tinynet.layers.validation import (check_data_format, check_initializer, check_padding,
                                       check_pair, check_seed)
from tinynet.ops.arrays.convolution import depthwise_conv_backward, depthwise_conv_forward
from tinynet.tensor import Tensor, as_array

__all__ = ["DepthwiseConv2D"]


class DepthwiseConv2D(Windowed):
    """Depthwise 2-D convolution over ``[batch, height, width, channels]``: input channel
    ``c`` convolved with ``depth_multiplier`` kernels of its own gives output channels
    ``c * depth_multiplier + m`` (:mod:`tinynet.ops.arrays.depthwise`). Each pass is one
    operation of :mod:`tinynet.ops.arrays.convolution`; the bias is added, and its gradient
    summed, in the depthwise pass.

    Args:
        kernel_size: Int or ``(kh, kw)``.
        strides: Int or ``(sh, sw)``; ``> 1`` excludes ``dilation_rate > 1`` (Keras).
        padding: ``"valid"`` or ``"same"`` (case-insensitive; TF/Keras "same").
        depth_multiplier: Kernels per input channel (positive int).
        activation: Activation name or ``None``.
        dilation_rate: Int or ``(dh, dw)``.
        use_bias: Whether to add a bias vector (zeros at start).
        depthwise_initializer: Initializer name for the kernel.
        seed: Seed of the kernel initializer; ``None`` draws from the global seed stream.
        depthwise_regularizer: Penalty on the kernel added to the training loss (a
            ``tn.regularizers`` object such as ``L2(0.01)``, a name such as ``"l2"``, or a
            callable ``weight -> scalar``); only while the kernel is trainable.
        bias_regularizer: Penalty on the bias, likewise.
        activity_regularizer: Penalty on the layer's output, divided by the batch size
            (Keras 3), added to the training loss.
        data_format: ``None`` or ``"channels_last"`` (the only layout).
        name: Layer name (default ``depthwise_conv2d``).
        input_shape: Optional input shape without the batch axis.
        trainable: ``False`` freezes the kernel and bias.

    Shape:
        Input: ``[batch, height, width, channels]``.
        Output: ``[batch, out_h, out_w, channels * depth_multiplier]`` (sizes as Conv2D).
        Parameters: ``kernel`` ``[kh, kw, channels, depth_multiplier]``, ``bias``
        ``[channels * depth_multiplier]``.
    """

    _KERNEL = "kernel"
    _REGULARIZERS = ("depthwise_regularizer", "bias_regularizer", "activity_regularizer")

    def __init__(self, kernel_size: int | tuple, strides: int | tuple = 1,
                 padding: str = "valid", depth_multiplier: int = 1,
                 activation: str | None = None, *, dilation_rate: int | tuple = 1,
                 use_bias: bool = True, depthwise_initializer: str = "glorot_uniform",
                 seed: int | None = None, data_format: str | None = None,
                 depthwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        self.kernel_size = check_pair(kernel_size, "kernel_size", owner)
        self.strides = check_pair(strides, "strides", owner)
        self.dilation_rate = check_pair(dilation_rate, "dilation_rate", owner)
        self.padding = check_padding(padding, owner)
        check_strides_with_dilation(self.strides, self.dilation_rate, owner)
        self.depth_multiplier = check_positive_int(depth_multiplier, "depth_multiplier",
                                                   owner)
        self.activation = activations.get(activation, owner=owner)
        self.use_bias = check_bool(use_bias, "use_bias", owner)
        self.depthwise_initializer = check_initializer(depthwise_initializer, owner,
                                                       "depthwise_initializer")
        self.seed = check_seed(seed, owner)
        self.data_format = check_data_format(data_format, owner)
        check = regularizers.check_layer_regularizer
        self.depthwise_regularizer = check(depthwise_regularizer, "depthwise_regularizer",
                                           owner)
        self.bias_regularizer = check(bias_regularizer, "bias_regularizer", owner)
        self.activity_regularizer = check(activity_regularizer, "activity_regularizer", owner)
        self.depthwise = None
        self.bias = None

    @property
    def filters(self) -> int | None:
        """Output channels: input channels times ``depth_multiplier`` (once built)."""
        if self.depthwise is None:
            return None
        return int(np.prod(self.depthwise.value.shape[2:]))

    def output_shape(self, input_shape: tuple) -> tuple:
        geom = self._geometry(input_shape)
        return (input_shape[0], geom[0], geom[1], input_shape[-1] * self.depth_multiplier)

    def build(self, input_shape: tuple) -> None:
        self._geometry(input_shape)
        channels = int(input_shape[-1])
        self.depthwise = self.add_weight(
            self._KERNEL, (*self.kernel_size, channels, self.depth_multiplier),
            self.depthwise_initializer, regularizer=self.depthwise_regularizer)
        outputs = self._build_more(channels * self.depth_multiplier)
        if self.use_bias:
            self.bias = self.add_weight("bias", (outputs,), "zeros",
                                        regularizer=self.bias_regularizer)
        super().build(input_shape)

    def _build_more(self, depthwise_channels: int) -> int:
        """Weights a subclass adds between the depthwise kernel and the bias; returns the
        layer's output channels (the depthwise output's here)."""
        return depthwise_channels

    def _checked_input(self, x: Any) -> tuple[np.ndarray, tuple]:
        """The input as float32 C-contiguous (the layer built on first use) and its
        geometry."""
        x = as_array(x)
        self._view(x.shape)
        if not self.built:
            self.build((None, *x.shape[1:]))
        ch = self.depthwise.value.shape[2]
        if x.shape[-1] != ch:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: expected {ch} input channels, got "
                f"shape {x.shape}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        geom = self._geometry(x.shape)
        self._cache = None
        return x, geom

    def _w3(self) -> np.ndarray:
        w = self.depthwise.value
        return w.reshape(w.shape[0], w.shape[1], -1)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x, geom = self._checked_input(x)
        bias = self.bias.value if self.use_bias else None
        y, pre = depthwise_conv_forward(x, self._w3(), bias, self.activation,
                                        self._tiling(geom))
        self._cache = {"x": x, "geom": geom, "pre": pre, "y": y}
        if self.activity_regularizer is not None:
            regularizers.activity_loss(self, y, x.shape[0])
        return Tensor(y.reshape(x.shape[0], geom[0], geom[1], y.shape[-1]))

    def _output_grad(self, grad_output: Any) -> tuple[dict, np.ndarray]:
        """The cache and the checked ``dL/dy`` as ``[rows, channels]`` (with the activity
        regularizer's term)."""
        cache = self._require_cache()
        x, geom, y = cache["x"], cache["geom"], cache["y"]
        g = self._check_grad(grad_output, (x.shape[0], geom[0], geom[1], y.shape[-1]))
        g = g.reshape(y.shape)
        if self.activity_regularizer is not None:
            g = regularizers.activity_grad(self, y, x.shape[0], g)
        return cache, g

    def _gradients(self, grad_output: Any, want_dx: bool) -> np.ndarray | None:
        """Fills the kernel/bias gradients; returns dL/dx when ``want_dx``."""
        cache, g = self._output_grad(grad_output)
        want_dw = self.depthwise.trainable
        dx, dw3, db = depthwise_conv_backward(
            cache["x"], self._w3(), cache["pre"], cache["y"], g, self.activation,
            self._tiling(cache["geom"]), want_input=want_dx, want_kernel=want_dw,
            want_bias=self.use_bias and self.bias.trainable)
        self.depthwise.grad = dw3.reshape(self.depthwise.value.shape) if want_dw else None
        if self.use_bias:
            self.bias.grad = db
        return dx

    def backward_params(self, grad_output: Any) -> None:
        self._gradients(grad_output, want_dx=False)

    def backward(self, grad_output: Any) -> Tensor:
        return Tensor(self._gradients(grad_output, want_dx=True))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "depth_multiplier": self.depth_multiplier,
            "activation": self.activation.name if self.activation is not None else "linear",
            "dilation_rate": list(self.dilation_rate),
            "use_bias": self.use_bias,
            "depthwise_initializer": self.depthwise_initializer,
            "seed": self.seed,
            "data_format": self.data_format,
        })
        for arg in self._REGULARIZERS:
            config[arg] = regularizers.config_entry(getattr(self, arg), arg,
                                                    type(self).__name__)
        return config
