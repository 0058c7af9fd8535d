"""``RandomFlip``: random horizontal and/or vertical flips in training (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.augmentation.base import BaseAugmentation, check_choice

__all__ = ["RandomFlip"]

HORIZONTAL = "horizontal"
VERTICAL = "vertical"
HORIZONTAL_AND_VERTICAL = "horizontal_and_vertical"
_MODES = (HORIZONTAL, VERTICAL, HORIZONTAL_AND_VERTICAL)


def _flip(x: np.ndarray, flips: np.ndarray, mode: str) -> np.ndarray:
    """``x`` with the samples where ``flips`` is set flipped (left-right, then top-bottom)."""
    out = x.copy()
    if mode in (HORIZONTAL, HORIZONTAL_AND_VERTICAL):
        out[flips] = out[flips][:, :, ::-1]
    if mode in (VERTICAL, HORIZONTAL_AND_VERTICAL):
        out[flips] = out[flips][:, ::-1]
    return out


class RandomFlip(BaseAugmentation):
    """Randomly flips each image in training, as ``keras.layers.RandomFlip``.

    One draw per sample: ``u = rng.random()``, and the sample is flipped when
    ``u <= 0.5`` (Keras's rule). With ``"horizontal_and_vertical"`` the same draw flips both
    axes, so a sample is either left as it is or turned by 180 degrees (as Keras does). At
    inference the layer is the identity. The backward pass flips the gradient back.

    Args:
        mode: ``"horizontal"`` (left-right), ``"vertical"`` (top-bottom) or
            ``"horizontal_and_vertical"`` (default).
        seed: Optional seed of the layer's generator; ``None`` uses the next stream of the
            global seed (``tn.set_seed``).
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, height, width, channels]``. Output: the same shape.

    Raises:
        TypeError: ``mode`` is not a str, or ``seed`` not an int.
        ValueError: An unknown ``mode``, a negative ``seed``, or a ``data_format`` other
            than channels-last.
    """

    def __init__(self, mode: str = HORIZONTAL_AND_VERTICAL, seed: int | None = None,
                 data_format: str | None = None, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(seed, data_format, name=name, trainable=trainable,
                         input_shape=input_shape)
        self.mode = check_choice(mode, "mode", "RandomFlip", _MODES)

    def _draw(self, input_shape: tuple) -> dict:
        return {"flips": self.rng.random(input_shape[0]) <= 0.5}

    def _transform(self, x: np.ndarray, params: dict) -> tuple[np.ndarray, Any]:
        flips = np.asarray(params["flips"], dtype=bool).reshape(-1)
        if flips.size != x.shape[0]:
            raise ValueError(f"RandomFlip {self.name!r}: the transformation holds "
                             f"{flips.size} flips for a batch of {x.shape[0]}")
        return _flip(x, flips, self.mode), flips

    def _adjoint(self, g: np.ndarray, input_shape: tuple, state: Any) -> np.ndarray:
        return _flip(g, state, self.mode)  # both flips commute and undo themselves

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(mode=self.mode)
        return config
