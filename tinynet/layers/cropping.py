"""``Cropping2D``: drops rows and columns at each sample's edges (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

from tinynet.layers.margins import Margins2D
from tinynet.ops.arrays.margins import crop2d, pad2d

__all__ = ["Cropping2D"]


class Cropping2D(Margins2D):
    """Crops each sample's height and width, as ``keras.layers.Cropping2D``.

    The backward pass puts the gradient back in the kept block and zeros elsewhere.

    Args:
        cropping: An int (the same on every side), a tuple of 2 ints (symmetric height,
            symmetric width cropping) or a tuple of 2 tuples of 2 ints
            ``((top, bottom), (left, right))``; each ``>= 0``. Defaults to
            ``((0, 0), (0, 0))``.
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, height, width, channels]``.
        Output: ``[batch, height - top - bottom, width - left - right, channels]``.

    Raises:
        TypeError: ``cropping`` is not an int or a tuple of them.
        ValueError: A negative cropping, a tuple of the wrong length, a ``data_format``
            other than channels-last, or (at build or call) a cropping that leaves no row
            or no column.
    """

    arg = "cropping"
    apply = staticmethod(crop2d)
    undo = staticmethod(pad2d)

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None, *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(cropping, data_format, name=name, trainable=trainable,
                         input_shape=input_shape)

    def output_shape(self, input_shape: tuple) -> tuple:
        b, h, w, c = self._shape4(input_shape)
        (top, bottom), (left, right) = self.cropping
        if (h is not None and top + bottom >= h) or (w is not None and left + right >= w):
            raise ValueError(f"Cropping2D {self.name!r}: cropping {self.cropping} leaves "
                             f"nothing of input shape {tuple(input_shape)} (expected top + "
                             f"bottom < height and left + right < width)")
        return (b, None if h is None else h - top - bottom,
                None if w is None else w - left - right, c)
