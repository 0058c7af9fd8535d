"""``RandomZoom``: random zooms of each image in training (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.augmentation.base import BaseAffine, check_factor, factor_config, per_sample

__all__ = ["RandomZoom"]


class RandomZoom(BaseAffine):
    """Zooms each image in or out by a random amount in training, as
    ``keras.layers.RandomZoom``.

    Per sample, a height zoom ``zy`` uniform in ``[1 + lower, 1 + upper]`` of
    ``height_factor`` and a width zoom ``zx`` from ``width_factor`` (all the rows' ``zy``
    drawn first, then the ``zx``), or ``zx = zy`` (the aspect ratio kept) when
    ``width_factor`` is ``None``; float32. Output pixel ``(x, y)`` reads the input at
    ``(zx x + (width - 1) / 2 (1 - zx), zy y + (height - 1) / 2 (1 - zy))`` (Keras's
    matrix, float32): a zoom above 1 zooms out, below 1 zooms in. Sampling, interpolation
    and filling are the shared affine sampler's (:mod:`tinynet.ops.arrays.affine`), which
    computes what Keras's PyTorch backend computes; the backward pass is its adjoint. At
    inference the layer is the identity.

    Args:
        height_factor: A number ``f`` in ``(-1, 1]`` (zooms in ``[1 - |f|, 1 + |f|]``) or
            a tuple of 2 such numbers ``(lower, upper)``: positive values zoom out,
            negative ones zoom in.
        width_factor: The same for the width, or ``None`` (default) to use the height's
            zoom.
        fill_mode: How pixels read from outside the image are filled: ``"reflect"``
            (default; ``d c b a | a b c d | d c b a``), ``"wrap"`` (``a b c d | a b c d``),
            ``"nearest"`` (``a a a a | a b c d | d d d d``) or ``"constant"``
            (``fill_value``).
        interpolation: ``"bilinear"`` (default) or ``"nearest"``.
        seed: Optional seed of the layer's generator; ``None`` uses the next stream of the
            global seed (``tn.set_seed``).
        fill_value: The value of pixels outside the image with ``fill_mode="constant"``.
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, height, width, channels]``. Output: the same shape.

    Raises:
        TypeError: A factor that is not a number or a tuple of numbers, a ``fill_mode`` or
            ``interpolation`` that is not a str, a ``fill_value`` that is not a number.
        ValueError: A factor outside ``(-1, 1]`` or a tuple of the wrong length, an
            unknown ``fill_mode`` or ``interpolation``, a non-finite ``fill_value``, a
            negative ``seed``, or a ``data_format`` other than channels-last.
    """

    def __init__(self, height_factor: Any, width_factor: Any = None,
                 fill_mode: str = "reflect", interpolation: str = "bilinear",
                 seed: int | None = None, fill_value: float = 0.0,
                 data_format: str | None = None, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        owner = "RandomZoom"
        self.height_lower, self.height_upper = check_factor(
            height_factor, "height_factor", owner, -1.0, 1.0, low_open=True)
        if width_factor is not None:
            self.width_lower, self.width_upper = check_factor(
                width_factor, "width_factor", owner, -1.0, 1.0, low_open=True)
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, name=name,
                         trainable=trainable, input_shape=input_shape)
        self.height_factor = factor_config(height_factor)
        self.width_factor = None if width_factor is None else factor_config(width_factor)

    def _draw(self, input_shape: tuple) -> dict:
        b = input_shape[0]
        rng = self.rng
        height_zoom = rng.uniform(1.0 + self.height_lower, 1.0 + self.height_upper,
                                  b).astype(np.float32)
        if self.width_factor is None:
            width_zoom = height_zoom.copy()
        else:
            width_zoom = rng.uniform(1.0 + self.width_lower, 1.0 + self.width_upper,
                                     b).astype(np.float32)
        return {"height_zoom": height_zoom, "width_zoom": width_zoom}

    def _matrix(self, params: dict, input_shape: tuple) -> np.ndarray:
        b, h, w, _ = input_shape
        zy = per_sample(params["height_zoom"], b, "height_zoom", "RandomZoom")
        zx = per_sample(params["width_zoom"], b, "width_zoom", "RandomZoom")
        one = np.float32(1.0)
        x_offset = ((np.float32(w) - one) / np.float32(2.0)) * (one - zx)
        y_offset = ((np.float32(h) - one) / np.float32(2.0)) * (one - zy)
        zero = np.zeros(b, np.float32)
        return np.stack([zx, zero, x_offset, zero, zy, y_offset], axis=1).astype(np.float32)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height_factor=self.height_factor, width_factor=self.width_factor)
        return config
