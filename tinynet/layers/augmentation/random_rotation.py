"""``RandomRotation``: random rotations of each image in training (Keras 3 semantics)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.layers.augmentation.base import BaseAffine, check_factor, per_sample

__all__ = ["RandomRotation"]


def rotation_matrix(angle: np.ndarray, height: int, width: int) -> np.ndarray:
    """Keras's rotation about the image centre, ``[batch, 6]`` float32 rows
    ``(cos, -sin, a2, sin, cos, b2)`` for ``angle`` in degrees, with ``cx = (width - 1) / 2``,
    ``cy = (height - 1) / 2``, ``a2 = (cx - cx cos) + cy sin`` and ``b2 = (cy - cx sin) -
    cy cos`` in float32 (``_compute_affine_matrix`` with no translation, scale 1, no
    shear). ``cos`` and ``sin`` are rounded from float64 (PyTorch's float32 ``sin`` and
    ``cos`` can be 1 ulp away from that)."""
    rad = angle.astype(np.float32) * np.float32(math.pi / 180.0)
    cos = np.cos(rad.astype(np.float64)).astype(np.float32)
    sin = np.sin(rad.astype(np.float64)).astype(np.float32)
    cx = np.float32(0.5) * np.float32(width - 1)
    cy = np.float32(0.5) * np.float32(height - 1)
    a2 = (cx - cx * cos) - cy * -sin
    b2 = (cy - cx * sin) - cy * cos
    return np.stack([cos, -sin, a2, sin, cos, b2], axis=1).astype(np.float32)


class RandomRotation(BaseAffine):
    """Rotates each image by a random angle in training, as ``keras.layers.RandomRotation``.

    Per sample, an angle in degrees uniform in ``[lower * 360, upper * 360]`` (float32);
    output pixel ``(x, y)`` reads the input at ``(cos a (x - cx) - sin a (y - cy) + cx,
    sin a (x - cx) + cos a (y - cy) + cy)`` about the centre ``cx = (width - 1) / 2``,
    ``cy = (height - 1) / 2`` (Keras's matrix, in float32; the drawn transformation holds
    ``angle`` and ``rotation_matrix``, as Keras's does). Sampling, interpolation and
    filling are the shared affine sampler's (:mod:`tinynet.ops.arrays.affine`), which computes
    what Keras's PyTorch backend computes; the backward pass is its adjoint. At inference
    the layer is the identity.

    Args:
        factor: A number ``f`` in ``[-1, 1]`` (angles in ``[-|f|, |f|] * 360`` degrees)
            or a tuple of 2 such numbers ``(lower, upper)``.
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
        TypeError: A ``factor`` that is not a number or a tuple of numbers, a
            ``fill_mode`` or ``interpolation`` that is not a str, a ``fill_value`` that is
            not a number.
        ValueError: A factor outside ``[-1, 1]`` or a tuple of the wrong length, an
            unknown ``fill_mode`` or ``interpolation``, a non-finite ``fill_value``, a
            negative ``seed``, or a ``data_format`` other than channels-last.
    """

    def __init__(self, factor: Any, fill_mode: str = "reflect",
                 interpolation: str = "bilinear", seed: int | None = None,
                 fill_value: float = 0.0, data_format: str | None = None, *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        self.factor = check_factor(factor, "factor", "RandomRotation", -1.0, 1.0)
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, name=name,
                         trainable=trainable, input_shape=input_shape)

    def _draw(self, input_shape: tuple) -> dict:
        b, h, w, _ = input_shape
        lower, upper = self.factor
        angle = self.rng.uniform(lower * 360.0, upper * 360.0, b).astype(np.float32)
        return {"angle": angle, "rotation_matrix": rotation_matrix(angle, h, w)}

    def _matrix(self, params: dict, input_shape: tuple) -> np.ndarray:
        """``params["rotation_matrix"]`` (Keras's transformation holds it, ``[batch, 6]``
        or ``[batch, 8]``, and its sampler reads only it) or, without one, the matrix of
        ``params["angle"]``."""
        b, h, w, _ = input_shape
        if params.get("rotation_matrix") is not None:
            matrix = np.asarray(params["rotation_matrix"], dtype=np.float32)
            if matrix.ndim != 2 or matrix.shape[0] != b or matrix.shape[1] not in (6, 8):
                raise ValueError(f"RandomRotation {self.name!r}: the transformation's "
                                 f"'rotation_matrix' must have shape [{b}, 6] or [{b}, 8], "
                                 f"got {matrix.shape}")
            return np.ascontiguousarray(matrix[:, :6])
        angle = per_sample(params["angle"], b, "angle", "RandomRotation")
        return rotation_matrix(angle, h, w)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(factor=list(self.factor))
        return config
