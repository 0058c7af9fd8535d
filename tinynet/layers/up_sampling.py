"""``UpSampling2D``: each sample's height and width scaled by whole factors (Keras 3
semantics, ``"nearest"`` and ``"bilinear"``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.layers.validation import check_data_format, check_pair
from tinynet.tensor import Tensor, as_array

__all__ = ["UpSampling2D"]

_MODES = ("nearest", "bilinear")


@functools.lru_cache(maxsize=64)
def _taps(size_in: int, factor: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bilinear taps along one axis, half-pixel centres (PyTorch's ``align_corners=False``,
    which Keras's PyTorch backend calls), in float32 as PyTorch computes them: for output
    ``o``, source ``max((in / out) * (o + 0.5) - 0.5, 0)``; the lower and upper source
    indices and their weights ``(1 - t, t)``."""
    out = size_in * factor
    scale = np.float32(size_in) / np.float32(out)
    src = np.maximum(scale * (np.arange(out, dtype=np.float32) + np.float32(0.5))
                     - np.float32(0.5), np.float32(0.0))
    lo = np.minimum(src.astype(np.int64), size_in - 1)
    hi = np.minimum(lo + 1, size_in - 1)
    t = (src - lo.astype(np.float32)).astype(np.float32)
    return lo, hi, (np.float32(1.0) - t).astype(np.float32), t


class UpSampling2D(Layer):
    """Repeats or interpolates each sample's rows and columns, as
    ``keras.layers.UpSampling2D``.

    ``"nearest"`` repeats every row ``size[0]`` times and every column ``size[1]`` times
    (its backward sums each block). ``"bilinear"`` interpolates between the two nearest
    source pixels on each axis with half-pixel centres, as Keras on PyTorch does: along
    the width first, then the height, ``wh0 * (ww0 * a + ww1 * b) + wh1 * (ww0 * c + ww1 *
    d)`` in float32; its backward adds each output's four weighted shares to their
    sources in output order (a fixed order: the same bits at any thread count).

    Args:
        size: An int or a tuple of 2 positive ints, the height and width factors.
            Defaults to ``(2, 2)``.
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        interpolation: ``"nearest"`` (default) or ``"bilinear"`` (any case).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, height, width, channels]``.
        Output: ``[batch, height * size[0], width * size[1], channels]``.

    Raises:
        TypeError: ``size`` is not an int or a pair of ints, or ``interpolation`` is not
            a str.
        ValueError: A factor below 1, an unknown ``interpolation``, or a ``data_format``
            other than channels-last.
    """

    def __init__(self, size: Any = (2, 2), data_format: str | None = None,
                 interpolation: str = "nearest", *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self.size = check_pair(size, "size", "UpSampling2D")
        self.data_format = check_data_format(data_format, "UpSampling2D")
        what = f"UpSampling2D: interpolation must be 'nearest' or 'bilinear', got {interpolation!r}"
        if not isinstance(interpolation, str):
            raise TypeError(what)
        if interpolation.lower() not in _MODES:
            raise ValueError(what)
        self.interpolation = interpolation.lower()

    def output_shape(self, input_shape: tuple) -> tuple:
        input_shape = tuple(input_shape)
        if len(input_shape) != 4:
            raise ValueError(f"UpSampling2D {self.name!r}: input must have rank 4 [batch, "
                             f"height, width, channels], got shape {input_shape}")
        b, h, w, c = input_shape
        return (b, None if h is None else h * self.size[0],
                None if w is None else w * self.size[1], c)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = as_array(x)
        self._check_rank(arr, 4, 4)
        self._cache = arr.shape
        fh, fw = self.size
        if self.interpolation == "nearest":
            return Tensor(np.repeat(np.repeat(arr, fh, axis=1), fw, axis=2))
        h0, h1, a0, a1 = _taps(arr.shape[1], fh)
        w0, w1, b0, b1 = _taps(arr.shape[2], fw)
        bw0, bw1 = b0[:, None], b1[:, None]
        rows = bw0 * arr[:, :, w0] + bw1 * arr[:, :, w1]      # [b, h, w_out, c]
        return Tensor(a0[:, None, None] * rows[:, h0] + a1[:, None, None] * rows[:, h1])

    def backward(self, grad_output: Any) -> Tensor:
        shape = self._require_cache()
        g = self._check_grad(grad_output, self.output_shape(shape))
        b, h, w, c = shape
        fh, fw = self.size
        if self.interpolation == "nearest":
            return Tensor(g.reshape(b, h, fh, w, fw, c).sum(axis=(2, 4), dtype=np.float32))
        h0, h1, a0, a1 = _taps(h, fh)
        w0, w1, b0, b1 = _taps(w, fw)
        rows = np.zeros((b, h, w * fw, c), dtype=np.float32)   # the transpose of each step,
        np.add.at(rows, (slice(None), h0), a0[:, None, None] * g)  # in output order
        np.add.at(rows, (slice(None), h1), a1[:, None, None] * g)
        dx = np.zeros(shape, dtype=np.float32)
        np.add.at(dx, (slice(None), slice(None), w0), b0[:, None] * rows)
        np.add.at(dx, (slice(None), slice(None), w1), b1[:, None] * rows)
        return Tensor(dx)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(size=list(self.size), data_format=self.data_format,
                      interpolation=self.interpolation)
        return config
