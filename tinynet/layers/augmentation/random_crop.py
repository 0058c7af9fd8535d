"""``RandomCrop``: a random ``height x width`` window of each batch in training (Keras 3
semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.augmentation.base import BaseAugmentation
from tinynet.layers.layer import check_positive_int
from tinynet.ops.arrays import affine

__all__ = ["RandomCrop"]


class RandomCrop(BaseAugmentation):
    """Crops a random window of the batch in training, as ``keras.layers.RandomCrop``.

    In training, when the input is larger than the target in both dimensions
    (``in_height > height`` and ``in_width > width``), one window start is drawn for the
    whole batch (Keras crops every image of a batch at the same place):
    ``h_start = rng.integers(0, in_height - height + 1)``, then ``w_start`` likewise, and
    the output is ``x[:, h_start:h_start + height, w_start:w_start + width]``.

    Otherwise, and at inference, the start is Keras's fixed one: ``crop_height =
    clip(int(in_width * height / width), 1, in_height)``, ``crop_width =
    clip(int(in_height * width / height), 1, in_width)``, ``h_start = int((in_height -
    crop_height) / 2)``, ``w_start = int((in_width - crop_width) / 2)``; the window
    ``x[:, h_start:h_start + height, w_start:w_start + width]`` (cut at the image's edge)
    is resized to ``height x width`` with bilinear interpolation (half-pixel centres, as
    PyTorch's ``align_corners=False``) when it is smaller. An image at least as large as
    the target is thus cropped to it, a smaller one stretched. (This differs from Keras
    3.15.1 on PyTorch at inference, which returns the input uncropped although its
    ``compute_output_shape`` says ``height x width``; tinynet keeps the shape it declares.)

    The backward pass puts the gradient back in the window (the transpose of the resize
    when there is one), zeros elsewhere.

    Args:
        height: Positive int, the output height.
        width: Positive int, the output width.
        seed: Optional seed of the layer's generator; ``None`` uses the next stream of the
            global seed (``tn.set_seed``).
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, in_height, in_width, channels]``.
        Output: ``[batch, height, width, channels]``.

    Raises:
        TypeError: ``height`` or ``width`` is not an int, or ``seed`` not an int.
        ValueError: ``height`` or ``width`` below 1, a negative ``seed``, or a
            ``data_format`` other than channels-last.
    """

    def __init__(self, height: int, width: int, seed: int | None = None,
                 data_format: str | None = None, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(seed, data_format, name=name, trainable=trainable,
                         input_shape=input_shape)
        self.height = check_positive_int(height, "height", "RandomCrop")
        self.width = check_positive_int(width, "width", "RandomCrop")

    def output_shape(self, input_shape: tuple) -> tuple:
        b, _, _, c = self._shape4(input_shape)
        return (b, self.height, self.width, c)

    def _fixed_start(self, in_height: int, in_width: int) -> dict:
        """Keras's start outside random cropping (its ``get_random_transformation`` with
        ``training=False`` or a small image)."""
        crop_height = int(float(in_width * self.height) / self.width)
        crop_height = max(min(in_height, crop_height), 1)
        crop_width = int(float(in_height * self.width) / self.height)
        crop_width = max(min(in_width, crop_width), 1)
        return {"h_start": int(float(in_height - crop_height) / 2),
                "w_start": int(float(in_width - crop_width) / 2)}

    def _draw(self, input_shape: tuple) -> dict:
        _, in_height, in_width, _ = input_shape
        if in_height > self.height and in_width > self.width:
            h_start = int(self.rng.integers(0, in_height - self.height + 1))
            w_start = int(self.rng.integers(0, in_width - self.width + 1))
            return {"h_start": h_start, "w_start": w_start}
        return self._fixed_start(in_height, in_width)

    def _inference(self, x: np.ndarray):
        return self._apply(x, self._fixed_start(x.shape[1], x.shape[2]))

    def _transform(self, x: np.ndarray, params: dict) -> tuple[np.ndarray, Any]:
        _, in_height, in_width, _ = x.shape
        top, left = int(params["h_start"]), int(params["w_start"])
        if not (0 <= top < in_height and 0 <= left < in_width):
            raise ValueError(f"RandomCrop {self.name!r}: window start ({top}, {left}) is "
                             f"outside the input of shape {x.shape}")
        rows = min(in_height, top + self.height) - top
        cols = min(in_width, left + self.width) - left
        if (rows, cols) == (self.height, self.width):
            out = np.ascontiguousarray(x[:, top:top + rows, left:left + cols])
            return out, (top, left, None)
        out, sampling = affine.crop_resize(x, (top, left, rows, cols), (self.height, self.width))
        return out, (top, left, sampling)

    def _adjoint(self, g: np.ndarray, input_shape: tuple, state: Any) -> np.ndarray:
        top, left, sampling = state
        if sampling is not None:
            return affine.sample_backward(g, sampling)
        dx = np.zeros(input_shape, dtype=np.float32)
        dx[:, top:top + self.height, left:left + self.width] = g
        return dx

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height=self.height, width=self.width)
        return config
