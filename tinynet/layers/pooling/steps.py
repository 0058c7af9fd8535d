"""The 1-D pooling layers as the 2-D ones on a view: ``[batch, steps, channels]`` is pooled
as ``[batch, steps, 1, channels]`` (windows ``(pool, 1)``), the same kernels and bits."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.validation import check_data_format, check_size_limit
from tinynet.ops.arrays.windows import window_axis
from tinynet.tensor import Tensor, as_array

__all__ = ["Windows1D", "Global1D", "check_single"]


def check_single(value: Any, arg: str, owner: str) -> int:
    """A positive int, or a tuple of one (Keras's 1-D ``pool_size`` and ``strides``)."""
    what = f"{owner}: {arg} must be a positive int or a tuple of 1 positive int, got {value!r}"
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(what)
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(what)
    if value < 1:
        raise ValueError(what)
    check_size_limit((value,), arg, owner)
    return int(value)


def _rank3(layer: Any, input_shape: tuple) -> tuple:
    input_shape = tuple(input_shape)
    if len(input_shape) != 3:
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: input must have rank 3 "
                         f"(batch, steps, channels), got shape {input_shape}")
    return input_shape


def _steps_as_rows(layer: Any, x: Any) -> np.ndarray:
    """``x`` (``[batch, steps, channels]``, checked) as ``[batch, steps, 1, channels]``."""
    arr = as_array(x)
    layer._check_rank(arr, 3, 3)
    layer.output_shape(arr.shape)
    return arr[:, :, None, :]


class Windows1D:
    """Mixin before ``MaxPooling2D`` or ``AveragePooling2D``: Keras's 1-D arguments
    (``pool_size=2, strides=None, padding="valid", data_format=None``), 1-D shapes and
    config over the 2-D layer's forward and backward.

    Shape:
        Input: ``[batch, steps, channels]``; output: ``[batch, out_steps, channels]``.
    """

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        owner = type(self).__name__
        pool = check_single(pool_size, "pool_size", owner)
        step = pool if strides is None else check_single(strides, "strides", owner)
        super().__init__((pool, 1), (step, 1), padding, name=name, trainable=trainable,
                         input_shape=input_shape)
        self.data_format = check_data_format(data_format, owner)

    def output_shape(self, input_shape: tuple) -> tuple:
        b, steps, c = _rank3(self, input_shape)
        if steps is None:
            return (b, None, c)
        out, _ = window_axis(steps, self.pool_size[0], self.strides[0], self.padding)
        if out < 1:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: pool_size {self.pool_size[0]} does not "
                f"fit input shape {tuple(input_shape)} with padding {self.padding!r} (the "
                f"output would be empty)")
        return (b, out, c)

    def _prepare_input(self, x: Any) -> np.ndarray:
        return _steps_as_rows(self, x)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        out = np.asarray(super().forward(x, training))
        return Tensor(out.reshape(out.shape[0], out.shape[1], out.shape[3]))

    def backward(self, grad_output: Any) -> Tensor:
        b, steps, _, c = self._require_cache()[0]  # the 2-D forward's input shape first
        g = self._check_grad(grad_output, self.output_shape((b, steps, c)))
        dx = np.asarray(super().backward(g[:, :, None, :]))
        return Tensor(dx.reshape(b, steps, c))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(pool_size=[self.pool_size[0]], strides=[self.strides[0]],
                      data_format=self.data_format)
        return config


class Global1D:
    """Mixin before ``GlobalAveragePooling2D`` or ``GlobalMaxPooling2D``: Keras's 1-D
    arguments (``data_format=None, keepdims=False``), shapes and config.

    Shape:
        Input: ``[batch, steps, channels]``; output: ``[batch, channels]``, or
        ``[batch, 1, channels]`` with ``keepdims``.
    """

    def __init__(self, data_format: str | None = None, keepdims: bool = False, *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(keepdims, name=name, trainable=trainable, input_shape=input_shape)
        self.data_format = check_data_format(data_format, type(self).__name__)

    def output_shape(self, input_shape: tuple) -> tuple:
        b, steps, c = _rank3(self, input_shape)
        if steps == 0:
            raise ValueError(f"{type(self).__name__} {self.name!r}: input must have at least "
                             f"one step, got shape {tuple(input_shape)}")
        return (b, 1, c) if self.keepdims else (b, c)

    def _prepare_input(self, x: Any) -> np.ndarray:
        return _steps_as_rows(self, x)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        out = np.asarray(super().forward(x, training))
        return Tensor(out.reshape(out.shape[0], 1, out.shape[-1]) if self.keepdims else out)

    def _prepare_grad(self, grad_output: Any, input_shape: tuple) -> np.ndarray:
        b, steps, _, c = input_shape
        return self._check_grad(grad_output, self.output_shape((b, steps, c))).reshape(b, c)

    def backward(self, grad_output: Any) -> Tensor:
        dx = np.asarray(super().backward(grad_output))
        return Tensor(dx.reshape(dx.shape[0], dx.shape[1], dx.shape[3]))

    def get_config(self) -> dict:
        config = super().get_config()
        config["data_format"] = self.data_format
        return config
