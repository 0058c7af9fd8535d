"""``Conv2DTranspose``: the transposed 2-D convolution (Keras 3 semantics, channels-last).

A transposed convolution is the input gradient of a convolution: the convolution from its
output's shape back to its input's shape, with the same kernel ``[kh, kw, filters,
in_channels]`` read as ``[kh, kw, conv_in, conv_out]``. So it runs on the 2-D
convolution's kernels with the roles swapped: the forward is that convolution's input
gradient, the input gradient its forward, the kernel gradient its kernel gradient with
``dy`` as the input and ``x`` as the output gradient. No kernel of its own to compile.

Output size and crop follow Keras 3 (its JAX padding rule, which its PyTorch backend
reproduces by cropping): with ``k`` the dilated kernel, "valid" pads ``k - 1`` before and
``k - 1 + output_padding`` after (``output_padding`` by default ``max(k, s) - k``);
"same" pads ``p = s + k - 2`` (or ``k + k % 2 - 2 + output_padding``) split with the odd
cell first, the first part capped at ``k - 1``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import regularizers
from tinynet.layers.convolutional import Conv2D
from tinynet.layers.validation import check_data_format
from tinynet.ops.arrays.convolution import conv_transpose_backward, conv_transpose_forward
from tinynet.ops.arrays.windows import transpose_axis
from tinynet.tensor import Tensor, as_array

__all__ = ["Conv2DTranspose", "transpose_axis"]


def _check_output_padding(value: Any, strides: tuple) -> tuple | None:
    what = ("Conv2DTranspose: output_padding must be None, a non-negative int or a tuple of "
            f"2 non-negative ints, each less than the stride {strides}, got {value!r}")
    if value is None:
        return None
    pair = tuple(value) if isinstance(value, (list, tuple)) else (value, value)
    if len(pair) != 2:
        raise ValueError(what)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in pair):
        raise TypeError(what)
    if any(v < 0 or v >= s for v, s in zip(pair, strides)):
        raise ValueError(what)
    return int(pair[0]), int(pair[1])


class Conv2DTranspose(Conv2D):
    """Transposed 2-D convolution over ``[batch, height, width, channels]``.

    Args:
        filters: Number of output channels (positive int).
        kernel_size: Int or ``(kh, kw)``.
        strides: Int or ``(sh, sw)``; ``> 1`` excludes ``dilation_rate > 1`` (Keras).
        padding: ``"valid"`` or ``"same"`` (case-insensitive).
        output_padding: ``None``, an int or ``(oh, ow)``, each below its stride: extra
            rows/columns at the end of the output (Keras).
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
        data_format: ``None`` or ``"channels_last"`` (the only layout).
        name: Layer name (default ``conv2d_transpose``).
        input_shape: Optional input shape without the batch axis.
        trainable: ``False`` freezes the kernel and bias.

    Shape:
        Input: ``[batch, height, width, in_channels]``.
        Output: ``[batch, out_h, out_w, filters]``; with ``k = (kernel - 1) * dilation + 1``:
        "same" without ``output_padding``: ``out = in * stride``; "valid" without it:
        ``out = in * stride + max(k - stride, 0)``; with it: ``out = (in - 1) * stride + k
        - 2 * pad + output_padding``, ``pad = 0`` ("valid") or ``k // 2`` ("same").
        Parameters: ``kernel`` ``[kh, kw, filters, in_channels]``, ``bias`` ``[filters]``.
    """

    def __init__(self, filters: int, kernel_size: int | tuple, strides: int | tuple = 1,
                 padding: str = "valid", output_padding: int | tuple | None = None,
                 activation: str | None = None, *, dilation_rate: int | tuple = 1,
                 use_bias: bool = True, kernel_initializer: str = "glorot_uniform",
                 seed: int | None = None, data_format: str | None = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None,
                 name: str | None = None, input_shape: tuple | None = None,
                 trainable: bool = True) -> None:
        super().__init__(filters, kernel_size, strides, padding, activation,
                         dilation_rate=dilation_rate, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, seed=seed,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, name=name,
                         input_shape=input_shape, trainable=trainable)
        self.output_padding = _check_output_padding(output_padding, self.strides)
        self.data_format = check_data_format(data_format, "Conv2DTranspose")

    def _pads(self, view: tuple) -> tuple:
        ops = self.output_padding or (None, None)
        axes = [transpose_axis(view[1 + a], self.kernel_size[a], self.strides[a],
                               self.dilation_rate[a], self.padding, ops[a]) for a in (0, 1)]
        return axes[0][0], axes[1][0], axes[0][1], axes[1][1]

    def _kernel_shape(self, channels: int) -> tuple:
        return (*self.kernel_size, self.filters, channels)

    def _tiling_of(self, x_shape: tuple, geom: tuple) -> tuple:
        """The geometry of the equivalent convolution (output shape -> ``x_shape``)."""
        _, _, pt, pl = geom
        return (*self.kernel_size, *self.strides, *self.dilation_rate, pt, pl, x_shape[1],
                x_shape[2])

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = as_array(x)
        self._view(x.shape)
        if not self.built:
            self.build((None, *x.shape[1:]))
        ch = self.kernel.value.shape[-1]
        if x.shape[-1] != ch:
            raise ValueError(
                f"Conv2DTranspose {self.name!r}: expected {ch} input channels, got shape "
                f"{x.shape}")
        x = np.ascontiguousarray(x, dtype=np.float32)
        geom = self._geometry(x.shape)
        out_shape = self._out(x.shape[0], geom)
        self._cache = None
        bias = self.bias.value if self.use_bias else None
        y, pre = conv_transpose_forward(x, self.kernel.value.reshape(-1, ch), bias,
                                        self.activation, self._tiling_of(x.shape, geom),
                                        out_shape)
        self._cache = {"x": x, "geom": geom, "pre": pre, "y": y}
        if self.activity_regularizer is not None:
            regularizers.activity_loss(self, y, x.shape[0])
        return Tensor(y.reshape(out_shape))

    def _gradients(self, grad_output: Any, want_dx: bool) -> np.ndarray | None:
        cache = self._require_cache()
        x, geom, y = cache["x"], cache["geom"], cache["y"]
        out_shape = self._out(x.shape[0], geom)
        g = self._check_grad(grad_output, out_shape)
        g = g.reshape(y.shape)
        if self.activity_regularizer is not None:
            g = regularizers.activity_grad(self, y, x.shape[0], g)
        want_dw = self.kernel.trainable
        dx, dw2, db = conv_transpose_backward(
            x, self.kernel.value.reshape(-1, x.shape[-1]), cache["pre"], y, g,
            self.activation, self._tiling_of(x.shape, geom), out_shape, want_input=want_dx,
            want_kernel=want_dw, want_bias=self.use_bias and self.bias.trainable)
        self.kernel.grad = dw2.reshape(self.kernel.value.shape) if want_dw else None
        if self.use_bias:
            self.bias.grad = db
        return dx

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(output_padding=(list(self.output_padding)
                                      if self.output_padding is not None else None),
                      data_format=self.data_format)
        return config
