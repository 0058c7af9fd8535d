"""``ZeroPadding2D``: zeros around each sample's height and width (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

from tinynet.layers.margins import Margins2D
from tinynet.ops.arrays.margins import crop2d, pad2d

__all__ = ["ZeroPadding2D"]


class ZeroPadding2D(Margins2D):
    """Pads each sample with rows and columns of zeros, as ``keras.layers.ZeroPadding2D``.

    The backward pass returns the gradient's inner block (the zeros have no input).

    Args:
        padding: An int (the same on every side), a tuple of 2 ints (symmetric height,
            symmetric width padding) or a tuple of 2 tuples of 2 ints
            ``((top, bottom), (left, right))``; each ``>= 0``. Defaults to ``(1, 1)``.
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, height, width, channels]``.
        Output: ``[batch, top + height + bottom, left + width + right, channels]``.

    Raises:
        TypeError: ``padding`` is not an int or a tuple of them.
        ValueError: A negative padding, a tuple of the wrong length, or a ``data_format``
            other than channels-last.
    """

    arg = "padding"
    apply = staticmethod(pad2d)
    undo = staticmethod(crop2d)

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None, *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(padding, data_format, name=name, trainable=trainable,
                         input_shape=input_shape)

    def output_shape(self, input_shape: tuple) -> tuple:
        b, h, w, c = self._shape4(input_shape)
        (top, bottom), (left, right) = self.padding
        return (b, None if h is None else h + top + bottom,
                None if w is None else w + left + right, c)
