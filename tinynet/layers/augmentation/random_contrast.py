"""``RandomContrast``: random contrast changes of each image in training (Keras 3
semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.augmentation.base import BaseAugmentation, check_factor, per_sample

__all__ = ["RandomContrast"]


def _check_value_range(value: Any) -> tuple[float, float]:
    shown = tuple(value) if isinstance(value, list) else value
    what = (f"RandomContrast: value_range must be a tuple of 2 finite numbers (low, high) "
            f"with low < high, got {shown!r}")
    if not isinstance(value, (tuple, list)):
        raise TypeError(what)
    if len(value) != 2:
        raise ValueError(what)
    for v in value:
        if isinstance(v, (bool, np.bool_)) or not isinstance(
                v, (int, float, np.integer, np.floating)):
            raise TypeError(what)
    low, high = float(value[0]), float(value[1])
    if not (np.isfinite(low) and np.isfinite(high) and low < high):
        raise ValueError(what)
    return low, high


class RandomContrast(BaseAugmentation):
    """Randomly changes each image's contrast in training, as
    ``keras.layers.RandomContrast``.

    Per sample, a contrast factor ``f`` uniform in ``[1 - lower, 1 + upper]`` (float32).
    Each channel of each image moves about its own mean over the height and width:
    ``clip((x - mean) * f + mean, low, high)`` with ``(low, high) = value_range``, in
    float32. As in Keras, a single number ``factor=f`` gives ``(lower, upper) = (0, f)``,
    so factors in ``[1, 1 + f]`` (contrast is only raised); give a tuple ``(lower,
    upper)`` for ``[1 - lower, 1 + upper]``. At inference the layer is the identity.

    The backward pass is the derivative of that map, the mean included: with ``gz`` the
    output gradient where the clip is not active (``low <= z <= high``, PyTorch's rule)
    and 0 where it is, the input gradient is ``f * gz + (1 - f) * mean(gz)`` per image
    and channel.

    Args:
        factor: A number ``f`` in ``[0, 1]`` or a tuple of 2 numbers ``(lower, upper)`` in
            ``[0, 1]``.
        value_range: ``(low, high)``, the range of the images' values the output is
            clipped to. Defaults to ``(0, 255)``.
        seed: Optional seed of the layer's generator; ``None`` uses the next stream of the
            global seed (``tn.set_seed``).
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, height, width, channels]``. Output: the same shape.

    Raises:
        TypeError: A ``factor`` or ``value_range`` that is not numbers.
        ValueError: A factor outside ``[0, 1]``, a tuple of the wrong length, a
            ``value_range`` with ``low >= high`` or not finite, a negative ``seed``, or a
            ``data_format`` other than channels-last.
    """

    def __init__(self, factor: Any, value_range: Any = (0, 255), seed: int | None = None,
                 *, data_format: str | None = None, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        self.factor = check_factor(factor, "factor", "RandomContrast", 0.0, 1.0)
        self._range = _check_value_range(value_range)
        super().__init__(seed, data_format, name=name, trainable=trainable,
                         input_shape=input_shape)
        self.value_range = [v if isinstance(v, (int, float)) else v.item()
                            for v in value_range]

    def _draw(self, input_shape: tuple) -> dict:
        lower, upper = self.factor
        f = self.rng.uniform(1.0 - lower, 1.0 + upper, input_shape[0])
        return {"contrast_factor": f.astype(np.float32)}

    def _transform(self, x: np.ndarray, params: dict) -> tuple[np.ndarray, Any]:
        f = per_sample(params["contrast_factor"], x.shape[0], "contrast_factor",
                       "RandomContrast")[:, None, None, None]
        mean = x.mean(axis=(1, 2), keepdims=True, dtype=np.float64).astype(np.float32)
        z = (x - mean) * f + mean
        low, high = np.float32(self._range[0]), np.float32(self._range[1])
        inside = (z >= low) & (z <= high)
        return np.clip(z, low, high).astype(np.float32), (f, inside)

    def _adjoint(self, g: np.ndarray, input_shape: tuple, state: Any) -> np.ndarray:
        f, inside = state
        gz = np.where(inside, g, np.float32(0.0)).astype(np.float64)
        f64 = f.astype(np.float64)
        dx = f64 * gz + (1.0 - f64) * gz.mean(axis=(1, 2), keepdims=True)
        return dx.astype(np.float32)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(factor=list(self.factor), value_range=list(self.value_range))
        return config
