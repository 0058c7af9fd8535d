"""``Rescaling``: ``x * scale + offset`` (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.reprs import plain_repr
from tinynet.scalars import FLOAT32_MAX, float_array
from tinynet.tensor import Tensor, as_array

__all__ = ["Rescaling"]


def _factor(value: Any, arg: str) -> float | np.ndarray:
    """A finite float, or a float32 array of them (per channel, broadcast over the last
    axes as NumPy broadcasts); each within float32's range, where the layer computes."""
    what = (f"Rescaling: {arg} must be a finite float or an array of them, each within "
            f"float32's range (|v| <= {FLOAT32_MAX:.7g}), got {plain_repr(value)}")
    if isinstance(value, bool) or isinstance(value, str):
        raise TypeError(what)
    try:
        arr = float_array(value)
    except (TypeError, ValueError):
        raise TypeError(what) from None
    if not np.all(np.abs(arr) <= FLOAT32_MAX):  # NaN and inf fail too
        raise ValueError(what)
    return float(arr) if arr.ndim == 0 else arr.astype(np.float32)


class Rescaling(Layer):
    """Multiplies by ``scale`` and adds ``offset``, as ``keras.layers.Rescaling``.

    In float32, in training and inference alike: ``x * float32(scale)`` rounded, then
    ``+ float32(offset)`` rounded (Keras's two operations). Integer inputs are cast to
    float32 first. ``scale = 1 / 255`` maps ``[0, 255]`` to ``[0, 1]``; ``scale = 1 / 127.5,
    offset = -1`` maps it to ``[-1, 1]``.

    Args:
        scale: A float, or an array broadcast against each sample (e.g. one per channel).
        offset: A float or such an array. Defaults to ``0.0``.
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, ...]``; output: the same shape, float32.

    Raises:
        TypeError: ``scale`` or ``offset`` is not a number or an array of numbers.
        ValueError: ``scale`` or ``offset`` is not finite.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, scale: Any, offset: Any = 0.0, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self.scale = _factor(scale, "scale")
        self.offset = _factor(offset, "offset")

    def output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = as_array(x)
        if arr.dtype != np.float32:
            arr = arr.astype(np.float32)
        try:
            fits = np.broadcast_shapes(arr.shape, np.shape(self.scale),
                                       np.shape(self.offset)) == arr.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"Rescaling {self.name!r}: scale {np.shape(self.scale)} and offset "
                             f"{np.shape(self.offset)} must broadcast to the input's shape "
                             f"{arr.shape} without changing it")
        self._cache = arr.shape
        return Tensor(arr * np.asarray(self.scale, np.float32)
                      + np.asarray(self.offset, np.float32))

    def backward(self, grad_output: Any) -> Tensor:
        g = self._check_grad(grad_output, self._require_cache())
        return Tensor(g * np.asarray(self.scale, np.float32))

    def get_config(self) -> dict:
        config = super().get_config()
        for key in ("scale", "offset"):
            value = getattr(self, key)
            config[key] = value if isinstance(value, float) else value.tolist()
        return config
