"""``SeparableConv2D``: a depthwise convolution, then a 1x1 convolution (Keras 3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import regularizers
from tinynet.layers.depthwise_conv2d import DepthwiseConv2D
from tinynet.layers.layer import check_positive_int
from tinynet.layers.validation import check_initializer
from tinynet.ops.arrays.convolution import separable_conv_backward, separable_conv_forward
from tinynet.tensor import Tensor

__all__ = ["SeparableConv2D"]


class SeparableConv2D(DepthwiseConv2D):
    """Depthwise separable 2-D convolution over ``[batch, height, width, channels]``: the
    depthwise convolution of :class:`DepthwiseConv2D` (no bias), then each output pixel's
    ``channels * depth_multiplier`` values times the pointwise kernel (one GEMM), plus
    the bias, then the activation.

    Args:
        filters: Number of output channels (positive int).
        kernel_size: Int or ``(kh, kw)`` of the depthwise kernel.
        strides: Int or ``(sh, sw)``; ``> 1`` excludes ``dilation_rate > 1`` (Keras).
        padding: ``"valid"`` or ``"same"`` (case-insensitive; TF/Keras "same").
        depth_multiplier: Depthwise kernels per input channel (positive int).
        activation: Activation name or ``None``.
        dilation_rate: Int or ``(dh, dw)``.
        use_bias: Whether to add a bias vector (zeros at start).
        depthwise_initializer: Initializer name for the depthwise kernel.
        pointwise_initializer: Initializer name for the pointwise kernel.
        seed: Seed of the initializers; ``None`` draws from the global seed stream.
        depthwise_regularizer: Penalty on the depthwise kernel added to the training loss
            (a ``tn.regularizers`` object such as ``L2(0.01)``, a name such as ``"l2"``,
            or a callable ``weight -> scalar``); only while the kernel is trainable.
        pointwise_regularizer: Penalty on the pointwise kernel, likewise.
        bias_regularizer: Penalty on the bias, likewise.
        activity_regularizer: Penalty on the layer's output, divided by the batch size
            (Keras 3), added to the training loss.
        data_format: ``None`` or ``"channels_last"`` (the only layout).
        name: Layer name (default ``separable_conv2d``).
        input_shape: Optional input shape without the batch axis.
        trainable: ``False`` freezes the kernels and bias.

    Shape:
        Input: ``[batch, height, width, channels]``.
        Output: ``[batch, out_h, out_w, filters]`` (sizes as Conv2D).
        Parameters: ``depthwise_kernel`` ``[kh, kw, channels, depth_multiplier]``,
        ``pointwise_kernel`` ``[1, 1, channels * depth_multiplier, filters]``, ``bias``
        ``[filters]``.
    """

    _KERNEL = "depthwise_kernel"
    _REGULARIZERS = ("depthwise_regularizer", "pointwise_regularizer", "bias_regularizer",
                     "activity_regularizer")

    def __init__(self, filters: int, kernel_size: int | tuple, strides: int | tuple = 1,
                 padding: str = "valid", depth_multiplier: int = 1,
                 activation: str | None = None, *, dilation_rate: int | tuple = 1,
                 use_bias: bool = True, depthwise_initializer: str = "glorot_uniform",
                 pointwise_initializer: str = "glorot_uniform", seed: int | None = None,
                 data_format: str | None = None, depthwise_regularizer: Any = None,
                 pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        self.pointwise_regularizer = regularizers.check_layer_regularizer(
            pointwise_regularizer, "pointwise_regularizer", "SeparableConv2D")
        super().__init__(kernel_size, strides, padding, depth_multiplier, activation,
                         dilation_rate=dilation_rate, use_bias=use_bias,
                         depthwise_initializer=depthwise_initializer, seed=seed,
                         data_format=data_format, depthwise_regularizer=depthwise_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, name=name,
                         input_shape=input_shape, trainable=trainable)
        self._filters = check_positive_int(filters, "filters", "SeparableConv2D")
        self.pointwise_initializer = check_initializer(pointwise_initializer,
                                                       "SeparableConv2D",
                                                       "pointwise_initializer")
        self.pointwise = None

    @property
    def filters(self) -> int:
        return self._filters

    def output_shape(self, input_shape: tuple) -> tuple:
        return (*super().output_shape(input_shape)[:3], self._filters)

    def _build_more(self, depthwise_channels: int) -> int:
        self.pointwise = self.add_weight("pointwise_kernel",
                                         (1, 1, depthwise_channels, self._filters),
                                         self.pointwise_initializer,
                                         regularizer=self.pointwise_regularizer)
        return self._filters

    def _w2(self) -> np.ndarray:
        return self.pointwise.value.reshape(-1, self._filters)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x, geom = self._checked_input(x)
        bias = self.bias.value if self.use_bias else None
        y, pre, d = separable_conv_forward(x, self._w3(), self._w2(), bias, self.activation,
                                           self._tiling(geom))
        self._cache = {"x": x, "geom": geom, "d": d, "pre": pre, "y": y}
        if self.activity_regularizer is not None:
            regularizers.activity_loss(self, y, x.shape[0])
        return Tensor(y.reshape(*d.shape[:3], self._filters))

    def _gradients(self, grad_output: Any, want_dx: bool) -> np.ndarray | None:
        cache, g = self._output_grad(grad_output)
        want_dw, want_pw = self.depthwise.trainable, self.pointwise.trainable
        dx, dw3, dpw, db = separable_conv_backward(
            cache["x"], self._w3(), self._w2(), cache["d"], cache["pre"], cache["y"], g,
            self.activation, self._tiling(cache["geom"]), want_input=want_dx,
            want_depthwise=want_dw, want_pointwise=want_pw,
            want_bias=self.use_bias and self.bias.trainable)
        self.pointwise.grad = dpw.reshape(self.pointwise.value.shape) if want_pw else None
        self.depthwise.grad = dw3.reshape(self.depthwise.value.shape) if want_dw else None
        if self.use_bias:
            self.bias.grad = db
        return dx

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(filters=self._filters, pointwise_initializer=self.pointwise_initializer)
        return config
