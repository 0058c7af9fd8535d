"""``DepthwiseConv2D``: each input channel convolved with its own kernels (Keras 3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import activations, regularizers
from tinynet.layers.convolutional import Windowed, check_strides_with_dilation
from tinynet.layers.layer import check_bool, check_positive_int
from tinynet.layers.validation import (check_data_format, check_initializer, check_padding,
                                       check_pair, check_seed)
from tinynet.ops.arrays.depthwise import depthwise_backward, depthwise_forward
from tinynet.tensor import Tensor, as_array

__all__ = ["DepthwiseConv2D"]


class DepthwiseConv2D(Windowed):
    """Depthwise 2-D convolution over ``[batch, height, width, channels]``: input channel
    ``c`` convolved with ``depth_multiplier`` kernels of its own gives output channels
    ``c * depth_multiplier + m`` (:mod:`tinynet.ops.arrays.depthwise`). The bias add is fused
    into the activation pass.

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

    def _depthwise(self, x: Any, bias: np.ndarray | None = None) -> tuple[np.ndarray, tuple]:
        """The checked input, its geometry and the depthwise output (plus ``bias`` if
        given, in the same pass)."""
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
        return x, geom, depthwise_forward(x, self._w3(), self._tiling(geom), bias)

    def _w3(self) -> np.ndarray:
        w = self.depthwise.value
        return w.reshape(w.shape[0], w.shape[1], -1)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        bias = self.bias.value if self.use_bias else None
        x, geom, z = self._depthwise(x, bias)
        y, pre = activations.bias_act_forward(z.reshape(-1, z.shape[-1]), None,
                                              self.activation)
        self._cache = {"x": x, "geom": geom, "pre": pre, "y": y}
        if self.activity_regularizer is not None:
            regularizers.activity_loss(self, y, x.shape[0])
        return Tensor(y.reshape(z.shape))

    def _output_grad(self, grad_output: Any, set_bias: bool = True) -> tuple[dict, np.ndarray]:
        """The cache and ``dL/d(pre-bias output)`` as ``[rows, channels]``; sets the bias
        gradient if ``set_bias`` (else the depthwise backward adds it up in its own pass)."""
        cache = self._require_cache()
        x, geom, y = cache["x"], cache["geom"], cache["y"]
        g = self._check_grad(grad_output, (x.shape[0], geom[0], geom[1], y.shape[-1]))
        g = g.reshape(y.shape)
        if self.activity_regularizer is not None:
            g = regularizers.activity_grad(self, y, x.shape[0], g)
        dz = activations.bias_act_backward(self.activation, cache["pre"], y, g)
        if self.use_bias and set_bias:
            self.bias.grad = activations.bias_grad(dz) if self.bias.trainable else None
        return cache, dz

    def _depthwise_grads(self, cache: dict, dz: np.ndarray, want_dx: bool,
                         with_bias: bool = False) -> np.ndarray | None:
        """Sets the depthwise kernel's gradient from ``dz`` (the depthwise output's
        gradient), and the bias gradient too if ``with_bias``; returns ``dx`` when
        ``want_dx``."""
        x, geom = cache["x"], cache["geom"]
        g = np.ascontiguousarray(dz, dtype=np.float32).reshape(
            x.shape[0], geom[0], geom[1], dz.shape[-1])  # not -1: the batch may be empty
        want_dw = self.depthwise.trainable
        want_db = with_bias and self.bias.trainable
        dx, dw3, db = depthwise_backward(x, self._w3(), g, self._tiling(geom), want_dx=want_dx,
                                         want_dw=want_dw, want_db=want_db)
        self.depthwise.grad = dw3.reshape(self.depthwise.value.shape) if want_dw else None
        if with_bias:
            self.bias.grad = db
        return dx

    def backward_params(self, grad_output: Any) -> None:
        cache, dz = self._output_grad(grad_output, set_bias=False)
        self._depthwise_grads(cache, dz, want_dx=False, with_bias=self.use_bias)

    def backward(self, grad_output: Any) -> Tensor:
        cache, dz = self._output_grad(grad_output, set_bias=False)
        return Tensor(self._depthwise_grads(cache, dz, want_dx=True, with_bias=self.use_bias))

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
