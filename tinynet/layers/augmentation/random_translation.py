"""``RandomTranslation``: random shifts of each image in training (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.augmentation.base import BaseAffine, check_factor, factor_config, per_sample

__all__ = ["RandomTranslation"]


class RandomTranslation(BaseAffine):
    """Shifts each image by a random fraction of its size in training, as
    ``keras.layers.RandomTranslation``.

    Per sample, ``dy = u * height`` with ``u`` uniform in the height factor's range and
    ``dx = v * width`` likewise (all the rows' ``u`` drawn first, then the ``v``), in
    float32; output pixel ``(x, y)`` reads the input at ``(x - dx, y - dy)``, so a positive
    ``dy`` moves the image down and a positive ``dx`` right. Sampling, interpolation and
    filling are the shared affine sampler's (:mod:`tinynet.ops.arrays.affine`), which computes
    what Keras's PyTorch backend computes; the backward pass is its adjoint. At inference
    the layer is the identity.

    Args:
        height_factor: A number ``f`` in ``[-1, 1]`` (shifts in ``[-|f|, |f|]`` of the
            height) or a tuple of 2 such numbers ``(lower, upper)``.
        width_factor: The same for the width.
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
        ValueError: A factor outside ``[-1, 1]`` or a tuple of the wrong length, an
            unknown ``fill_mode`` or ``interpolation``, a non-finite ``fill_value``, a
            negative ``seed``, or a ``data_format`` other than channels-last.
    """

    def __init__(self, height_factor: Any, width_factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, data_format: str | None = None, *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        owner = "RandomTranslation"
        self.height_lower, self.height_upper = check_factor(height_factor, "height_factor",
                                                            owner, -1.0, 1.0)
        self.width_lower, self.width_upper = check_factor(width_factor, "width_factor",
                                                          owner, -1.0, 1.0)
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, name=name,
                         trainable=trainable, input_shape=input_shape)
        self.height_factor = factor_config(height_factor)
        self.width_factor = factor_config(width_factor)

    def _draw(self, input_shape: tuple) -> dict:
        b, h, w, _ = input_shape
        rng = self.rng
        dy = rng.uniform(self.height_lower, self.height_upper, b).astype(np.float32)
        dx = rng.uniform(self.width_lower, self.width_upper, b).astype(np.float32)
        return {"translations": np.stack([dx * np.float32(w), dy * np.float32(h)], axis=1)}

    def _matrix(self, params: dict, input_shape: tuple) -> np.ndarray:
        b = input_shape[0]
        t = np.asarray(params["translations"], dtype=np.float32).reshape(-1, 2)
        dx = per_sample(t[:, 0], b, "translations", "RandomTranslation")
        dy = per_sample(t[:, 1], b, "translations", "RandomTranslation")
        one, zero = np.ones(b, np.float32), np.zeros(b, np.float32)
        return np.stack([one, zero, -dx, zero, one, -dy], axis=1)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(height_factor=self.height_factor, width_factor=self.width_factor)
        return config
