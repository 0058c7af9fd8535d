"""``Conv1D``: 1-D convolution over ``[batch, steps, channels]`` (Keras 3 semantics).

It runs on the 2-D convolution's kernels: a sequence is a one-row image
``[batch, 1, steps, channels]`` and the kernel ``[k, channels, filters]`` a one-row kernel,
so Conv1D compiles nothing of its own and gives the bits Conv2D gives on that view.
``"causal"`` padding is a left padding of ``(k - 1) * dilation`` zeros: output step ``t``
sees input steps up to ``t`` only.
"""

from __future__ import annotations

from typing import Any

from tinynet.layers.convolutional import Conv2D, check_strides_with_dilation
from tinynet.layers.pooling.steps import check_single
from tinynet.layers.validation import check_data_format, check_padding
from tinynet.ops.arrays.windows import window_axis

__all__ = ["Conv1D"]

_PADDINGS = ("valid", "same", "causal")


class Conv1D(Conv2D):
    """1-D convolution (cross-correlation) over ``[batch, steps, channels]``.

    Args:
        filters: Number of output channels (positive int).
        kernel_size: Int or a tuple of one int.
        strides: Int or a tuple of one int; ``> 1`` excludes ``dilation_rate > 1`` (Keras).
        padding: ``"valid"``, ``"same"`` (the odd padding step at the end, as Keras) or
            ``"causal"`` (all ``(k - 1) * dilation`` padding steps at the start).
        activation: Activation name or ``None``.
        dilation_rate: Int or a tuple of one int.
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
        name: Layer name (default ``conv1d``).
        input_shape: Optional input shape without the batch axis.
        trainable: ``False`` freezes the kernel and bias.

    Shape:
        Input: ``[batch, steps, in_channels]``.
        Output: ``[batch, out_steps, filters]``; "same" and "causal":
        ``out = ceil(steps / stride)``; "valid":
        ``out = floor((steps - (k - 1) * dilation - 1) / stride) + 1``.
        Parameters: ``kernel`` ``[k, in_channels, filters]``, ``bias`` ``[filters]``.
    """

    def __init__(self, filters: int, kernel_size: int | tuple, strides: int | tuple = 1,
                 padding: str = "valid", activation: str | None = None, *,
                 dilation_rate: int | tuple = 1, use_bias: bool = True,
                 kernel_initializer: str = "glorot_uniform", seed: int | None = None,
                 data_format: str | None = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None,
                 name: str | None = None, input_shape: tuple | None = None,
                 trainable: bool = True) -> None:
        k = check_single(kernel_size, "kernel_size", "Conv1D")
        s = check_single(strides, "strides", "Conv1D")
        d = check_single(dilation_rate, "dilation_rate", "Conv1D")
        pad = check_padding(padding, "Conv1D", _PADDINGS)
        check_strides_with_dilation(s, d, "Conv1D")
        super().__init__(filters, (1, k), (1, s), "valid" if pad == "causal" else pad,
                         activation, dilation_rate=(1, d), use_bias=use_bias,
                         kernel_initializer=kernel_initializer, seed=seed,
                         kernel_regularizer=kernel_regularizer,
                         bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer, name=name,
                         input_shape=input_shape, trainable=trainable)
        self.padding = pad
        self.data_format = check_data_format(data_format, "Conv1D")

    def _view(self, shape: tuple) -> tuple:
        shape = tuple(shape)
        if len(shape) != 3:
            raise ValueError(
                f"Conv1D {self.name!r}: input must have rank 3 (batch, steps, channels), got "
                f"shape {shape}")
        return (shape[0], 1, shape[1], shape[2])

    def _pads(self, view: tuple) -> tuple:
        if self.padding != "causal":
            return super()._pads(view)
        span = (self.kernel_size[1] - 1) * self.dilation_rate[1]
        steps = None if view[2] is None else view[2] + span
        out, _ = window_axis(steps, span + 1, self.strides[1], "valid")
        return 1, out, 0, span

    def _shown(self, arg: str) -> Any:
        return getattr(self, arg)[1]

    def _out(self, batch: Any, geom: tuple) -> tuple:
        return (batch, geom[1], self.filters)

    def _kernel_shape(self, channels: int) -> tuple:
        return (self.kernel_size[1], channels, self.filters)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(kernel_size=[self.kernel_size[1]], strides=[self.strides[1]],
                      dilation_rate=[self.dilation_rate[1]], data_format=self.data_format)
        return config
