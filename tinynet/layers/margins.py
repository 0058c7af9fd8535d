"""The shared body of ``ZeroPadding2D`` and ``Cropping2D``: zero margins added or removed
at each sample's height and width, the one operation's backward being the other's
forward (:mod:`tinynet.ops.arrays.margins`)."""

from __future__ import annotations

from typing import Any, Callable

from tinynet.layers.layer import Layer
from tinynet.layers.validation import check_data_format, check_margins
from tinynet.ops.arrays.margins import crop2d, pad2d
from tinynet.tensor import Tensor, as_array

__all__ = ["Margins2D"]


class Margins2D(Layer):
    """Base of the 2-D margin layers: ``margins`` is ``((top, bottom), (left, right))``,
    stored under the Keras argument's name (``arg``); subclasses set ``arg``, ``apply``
    (the forward) and ``undo`` (the backward) and define ``output_shape``.

    Shape:
        Input: ``[batch, height, width, channels]``; output: ``output_shape``.
    """

    arg = ""
    apply: Callable = staticmethod(pad2d)
    undo: Callable = staticmethod(crop2d)

    def __init__(self, margins: Any, data_format: str | None, *, name: str | None,
                 trainable: bool, input_shape: tuple | None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        setattr(self, self.arg, check_margins(margins, self.arg, owner))
        self.data_format = check_data_format(data_format, owner)

    @property
    def margins(self) -> tuple:
        return getattr(self, self.arg)

    def build(self, input_shape: tuple) -> None:
        self.output_shape(input_shape)
        super().build(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = as_array(x)
        self._check_rank(arr, 4, 4)
        self.output_shape(arr.shape)
        self._cache = arr.shape
        return Tensor(self.apply(arr, self.margins))

    def backward(self, grad_output: Any) -> Tensor:
        shape = self._require_cache()
        g = self._check_grad(grad_output, self.output_shape(shape))
        return Tensor(self.undo(g, self.margins))

    def get_config(self) -> dict:
        config = super().get_config()
        config[self.arg] = [list(pair) for pair in self.margins]
        config["data_format"] = self.data_format
        return config
