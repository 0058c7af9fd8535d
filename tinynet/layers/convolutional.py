"""``Conv2D``: 2-D convolution, channels-last (Keras 3 semantics, TF "same" padding)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import activations, regularizers
from tinynet.layers.layer import Layer, check_bool, check_positive_int
from tinynet.layers.validation import (check_initializer, check_padding, check_pair,
                                       check_seed)
from tinynet.ops.arrays.convolution import conv_backward, conv_forward
from tinynet.ops.arrays.windows import window_axis
from tinynet.tensor import Tensor, as_array

__all__ = ["Conv2D", "Windowed", "conv_geometry", "check_strides_with_dilation"]


def check_strides_with_dilation(strides: Any, dilation_rate: Any, owner: str) -> None:
    """Keras refuses a stride above 1 together with a dilation above 1."""
    if max(np.atleast_1d(strides)) > 1 and max(np.atleast_1d(dilation_rate)) > 1:
        raise ValueError(
            f"{owner}: strides > 1 is not supported with dilation_rate > 1 (as in Keras), "
            f"got strides={strides} and dilation_rate={dilation_rate}")


def conv_geometry(h: int, w: int, kernel: tuple, strides: tuple, dilation: tuple,
                  same: bool) -> tuple[int, int, int, int]:
    """Output size and leading pads ``(oh, ow, pad_top, pad_left)`` of a 2-D convolution:
    :func:`tinynet.ops.arrays.windows.window_axis` per axis, the window being the dilated
    kernel ``(k - 1) * dilation + 1``. Unknown sizes (``None``) give ``None`` outputs
    (and a 0 pad)."""
    padding = "same" if same else "valid"
    oh, pad_top = window_axis(h, (kernel[0] - 1) * dilation[0] + 1, strides[0], padding)
    ow, pad_left = window_axis(w, (kernel[1] - 1) * dilation[1] + 1, strides[1], padding)
    return oh, ow, pad_top, pad_left


class Windowed(Layer):
    """The window geometry the 2-D convolutions share: a subclass sets ``kernel_size``,
    ``strides``, ``dilation_rate`` (pairs) and ``padding``; the sizes follow TF/Keras
    (:func:`conv_geometry`)."""

    # -- shapes ------------------------------------------------------------------------
    def _view(self, shape: tuple) -> tuple:
        """The ``[batch, height, width, channels]`` shape the 2-D kernels see for an
        input of ``shape`` (checked): the shape itself for a 2-D layer."""
        shape = tuple(shape)
        if len(shape) != 4:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: input must have rank 4 (batch, height, width, "
                f"channels), got shape {shape}")
        return shape

    def _pads(self, view: tuple) -> tuple:
        """``(oh, ow, pad_top, pad_left)`` of the 2-D view ``view``."""
        return conv_geometry(view[1], view[2], self.kernel_size, self.strides,
                             self.dilation_rate, self.padding == "same")

    def _geometry(self, shape: tuple) -> tuple:
        view = self._view(shape)
        if view[-1] is None or view[-1] < 1:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: the channel axis must be known and "
                f"hold at least 1 channel, got shape {tuple(shape)}")
        oh, ow, pt, pl = self._pads(view)
        if (oh is not None and oh <= 0) or (ow is not None and ow <= 0):
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: input spatial size "
                f"{tuple(shape)[1:-1]} is smaller than the dilated kernel with padding "
                f"\"valid\" (kernel_size={self._shown('kernel_size')}, "
                f"dilation_rate={self._shown('dilation_rate')})")
        return oh, ow, pt, pl

    def _shown(self, arg: str) -> Any:
        """Argument ``arg`` as the user gave it (a pair for a 2-D layer)."""
        return getattr(self, arg)

    def _out(self, batch: Any, geom: tuple) -> tuple:
        """The output shape from the 2-D output size in ``geom``."""
        return (batch, geom[0], geom[1], self.filters)

    def _tiling(self, geom: tuple) -> tuple:
        """The geometry tuple of :mod:`tinynet.ops.arrays.conv2d`."""
        oh, ow, pt, pl = geom
        return (*self.kernel_size, *self.strides, *self.dilation_rate, pt, pl, oh, ow)


class Conv2D(Windowed):
    """2-D convolution (cross-correlation) over ``[batch, height, width, channels]``.

    Each pass is one operation of :mod:`tinynet.ops.arrays.convolution`.
    :mod:`tinynet.ops.arrays.conv2d` picks the kernels: for output channels in multiples of 16,
    direct kernels that keep blocks of outputs in vector registers and need no patch
    matrix (:mod:`tinynet.kernels.conv_direct`); otherwise im2col + GEMM tile by tile, so
    the patches stay in cache (:mod:`tinynet.kernels.conv`), the backward computing
    ``dW = cols^T @ dY`` and ``dX = col2im(dY @ W^T)`` on the same tiles; the bias is
    added tile by tile. A 1x1 stride-1 convolution is one GEMM, the bias add fused into
    the activation pass.

    Args:
        filters: Number of output channels (positive int).
        kernel_size: Int or ``(kh, kw)``.
        strides: Int or ``(sh, sw)``; ``> 1`` excludes ``dilation_rate > 1`` (Keras).
        padding: ``"valid"`` or ``"same"`` (case-insensitive); "same" puts the odd
            padding cell at the end (bottom/right), as TF/Keras.
        activation: Activation name or ``None``.
        dilation_rate: Int or ``(dh, dw)``.
        use_bias: Whether to add a bias vector (zeros at start).
        kernel_initializer: Initializer name for the kernel.
        seed: Seed of the kernel initializer; ``None`` draws from the global seed stream.
        kernel_regularizer: Penalty on the kernel added to the training loss (a
            ``tn.regularizers`` object such as ``L2(0.01)``, a name such as ``"l2"``, or a
            callable ``weight -> scalar``); only while the kernel is trainable.
        bias_regularizer: Penalty on the bias, likewise.
        activity_regularizer: Penalty on the layer's output, divided by the batch size
            (Keras 3), added to the training loss.
        name: Layer name (default ``conv2d``).
        input_shape: Optional input shape without the batch axis.
        trainable: ``False`` freezes the kernel and bias.

    Shape:
        Input: ``[batch, height, width, in_channels]``.
        Output: ``[batch, out_h, out_w, filters]``; "same": ``out = ceil(in / stride)``,
        "valid": ``out = floor((in - (k - 1) * dilation - 1) / stride) + 1``.
        Parameters: ``kernel`` ``[kh, kw, in_channels, filters]``, ``bias`` ``[filters]``.
    """

    def __init__(self, filters: int, kernel_size: int | tuple, strides: int | tuple = 1,
                 padding: str = "valid", activation: str | None = None, *,
                 dilation_rate: int | tuple = 1, use_bias: bool = True,
                 kernel_initializer: str = "glorot_uniform", seed: int | None = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        self.filters = check_positive_int(filters, "filters", owner)
        self.kernel_size = check_pair(kernel_size, "kernel_size", owner)
        self.strides = check_pair(strides, "strides", owner)
        self.dilation_rate = check_pair(dilation_rate, "dilation_rate", owner)
        self.padding = check_padding(padding, owner)
        check_strides_with_dilation(self.strides, self.dilation_rate, owner)
        self.activation = activations.get(activation, owner=owner)
        self.use_bias = check_bool(use_bias, "use_bias", owner)
        self.kernel_initializer = check_initializer(kernel_initializer, owner)
        self.seed = check_seed(seed, owner)
        check = regularizers.check_layer_regularizer
        self.kernel_regularizer = check(kernel_regularizer, "kernel_regularizer", owner)
        self.bias_regularizer = check(bias_regularizer, "bias_regularizer", owner)
        self.activity_regularizer = check(activity_regularizer, "activity_regularizer", owner)
        self.kernel = None
        self.bias = None

    def output_shape(self, input_shape: tuple) -> tuple:
        return self._out(input_shape[0], self._geometry(input_shape))

    def _kernel_shape(self, channels: int) -> tuple:
        return (*self.kernel_size, channels, self.filters)

    def build(self, input_shape: tuple) -> None:
        self._geometry(input_shape)
        shape = self._kernel_shape(int(input_shape[-1]))
        self.kernel = self.add_weight("kernel", shape, self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), "zeros",
                                        regularizer=self.bias_regularizer)
        super().build(input_shape)

    # -- forward / backward ------------------------------------------------------------
    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = as_array(x)
        view = self._view(x.shape)
        if not self.built:
            self.build((None, *x.shape[1:]))
        ch = self.kernel.value.shape[-2]
        if x.shape[-1] != ch:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: expected {ch} input channels, got "
                f"shape {x.shape}")
        x4 = np.ascontiguousarray(x, dtype=np.float32).reshape(view)
        geom = self._geometry(x.shape)
        self._cache = None
        bias = self.bias.value if self.use_bias else None
        y, pre = conv_forward(x4, self.kernel.value.reshape(-1, self.filters), bias,
                              self.activation, self._tiling(geom))
        self._cache = {"x": x4, "shape": x.shape, "geom": geom, "pre": pre, "y": y}
        if self.activity_regularizer is not None:
            regularizers.activity_loss(self, y, x.shape[0])
        return Tensor(y.reshape(self._out(x.shape[0], geom)))

    def backward_params(self, grad_output: Any) -> None:
        self._gradients(grad_output, want_dx=False)

    def backward(self, grad_output: Any) -> Tensor:
        return Tensor(self._gradients(grad_output, want_dx=True))

    def _gradients(self, grad_output: Any, want_dx: bool) -> np.ndarray | None:
        """Fills the kernel/bias gradients; returns dL/dx when ``want_dx``."""
        cache = self._require_cache()
        x, geom, y = cache["x"], cache["geom"], cache["y"]
        g = as_array(grad_output)
        if g.size != y.size:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: grad_output must have shape "
                f"{self._out(x.shape[0], geom)}, got {g.shape}")
        g = g.reshape(y.shape)
        if self.activity_regularizer is not None:
            g = regularizers.activity_grad(self, y, x.shape[0], g)
        want_dw = self.kernel.trainable
        dx, dw2, db = conv_backward(
            x, self.kernel.value.reshape(-1, self.filters), cache["pre"], y, g,
            self.activation, self._tiling(geom), want_input=want_dx, want_kernel=want_dw,
            want_bias=self.use_bias and self.bias.trainable)
        self.kernel.grad = dw2.reshape(self.kernel.value.shape) if want_dw else None
        if self.use_bias:
            self.bias.grad = db
        return dx.reshape(cache["shape"]) if want_dx else None

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "filters": self.filters,
            "kernel_size": list(self.kernel_size),
            "strides": list(self.strides),
            "padding": self.padding,
            "activation": self.activation.name if self.activation is not None else "linear",
            "dilation_rate": list(self.dilation_rate),
            "use_bias": self.use_bias,
            "kernel_initializer": self.kernel_initializer,
            "seed": self.seed,
        })
        for arg in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
            config[arg] = regularizers.config_entry(getattr(self, arg), arg,
                                                    type(self).__name__)
        return config
