"""``Dropout`` and ``SpatialDropout2D``: inverted dropout (Keras 3 semantics).

In training, each mask entry is kept with probability ``1 - rate`` and kept values are
scaled by ``1 / (1 - rate)``, so the expected output equals the input; at inference the
layer is the identity. Masks come from the layer's own NumPy generator, created on the
first training call with :func:`tinynet.random.make_rng` (the layer's ``seed`` if given,
else the next stream of the global seed set by ``tn.set_seed``). The mask is drawn on the
calling thread, so it does not depend on the thread count or any tuning gate.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.layers.seeded import OwnGenerator
from tinynet.layers.validation import check_seed
from tinynet.tensor import Tensor, as_array

__all__ = ["Dropout", "SpatialDropout2D"]


def _check_rate(rate: Any, owner: str) -> float:
    expected = f"{owner}: rate must be a float in [0, 1), got {rate!r}"
    if isinstance(rate, (bool, np.bool_)) or not isinstance(rate, (int, float, np.integer, np.floating)):
        raise TypeError(expected)
    if not 0.0 <= rate < 1.0:  # also rejects NaN
        raise ValueError(expected)
    return float(rate)


def _check_noise_shape(noise_shape: Any, owner: str) -> tuple | None:
    if noise_shape is None:
        return None
    expected = (f"{owner}: noise_shape must be a tuple of positive ints or None entries "
                f"(batch axis included), got {noise_shape!r}")
    if not isinstance(noise_shape, (tuple, list)):
        raise TypeError(expected)
    for d in noise_shape:
        if d is None:
            continue
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(expected)
        if d < 1:
            raise ValueError(expected)
    return tuple(None if d is None else int(d) for d in noise_shape)


class Dropout(OwnGenerator, Layer):
    """Randomly zeroes inputs in training, as ``keras.layers.Dropout``.

    Args:
        rate: Fraction of the inputs to drop, ``0 <= rate < 1``.
        seed: Optional seed of this layer's mask generator; ``None`` uses the next
            stream of the global seed (``tn.set_seed``).
        noise_shape: Optional mask shape (batch axis included) broadcast against the
            input; ``None`` entries take the input's size, e.g. ``(None, 1, 1, C)``
            shares one draw over the spatial axes. Default: the input's shape.
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights; dropout runs whenever
            ``training=True``).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: any shape ``[batch, ...]``. Output: the same shape.

    Attributes:
        rng: The layer's ``numpy.random.Generator`` (created on first use); saving
            stores ``rng.bit_generator.state`` so training can resume bitwise.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, rate: float, *, seed: int | None = None, noise_shape: tuple | None = None,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        self.rate = _check_rate(rate, owner)
        self.seed = check_seed(seed, owner)
        self.noise_shape = _check_noise_shape(noise_shape, owner)
        self._rng: np.random.Generator | None = None

    # -- shapes ----------------------------------------------------------------
    def _check_input_shape(self, input_shape: tuple) -> None:
        """Validates the input rank (and ``noise_shape`` against it)."""
        if len(input_shape) < 1:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: input must have rank >= 1 "
                f"(batch axis included), got shape {tuple(input_shape)}")
        self._mask_shape(input_shape)

    def _mask_shape(self, input_shape: tuple) -> tuple:
        """The mask's shape for ``input_shape`` (``noise_shape`` resolved, Keras rules)."""
        if self.noise_shape is None:
            return tuple(input_shape)
        if len(self.noise_shape) != len(input_shape) or any(
                d is not None and s is not None and d != 1 and d != s
                for d, s in zip(self.noise_shape, input_shape)):
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: noise_shape {self.noise_shape} does not "
                f"broadcast to input shape {tuple(input_shape)} (same rank, each entry None, "
                f"1 or the input's size)")
        return tuple(s if d is None else d for d, s in zip(self.noise_shape, input_shape))

    def output_shape(self, input_shape: tuple) -> tuple:
        input_shape = tuple(input_shape)
        self._check_input_shape(input_shape)
        return input_shape

    def build(self, input_shape: tuple) -> None:
        self._check_input_shape(tuple(input_shape))
        super().build(input_shape)

    # -- forward / backward ----------------------------------------------------
    def _draw_mask(self, mask_shape: tuple) -> np.ndarray:
        """Draws the scaled keep-mask: ``1 / (1 - rate)`` where kept, 0 where dropped."""
        keep = np.float32(1.0 - self.rate)
        scale = np.float32(1.0 / (1.0 - self.rate))
        kept = self.rng.random(mask_shape, dtype=np.float32) < keep
        return np.multiply(kept, scale, dtype=np.float32)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = as_array(x)
        self._check_input_shape(arr.shape)
        if not training or self.rate == 0.0:
            self._cache = (arr.shape, None)
            return Tensor(arr)
        mask = self._draw_mask(self._mask_shape(arr.shape))
        self._cache = (arr.shape, mask)
        return Tensor(np.multiply(arr, mask))

    def backward(self, grad_output: Any) -> Tensor:
        input_shape, mask = self._require_cache()
        g = as_array(grad_output)
        if g.shape != input_shape:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: grad_output must have shape "
                f"{input_shape} (the last output's shape), got {g.shape}")
        if mask is None:
            return Tensor(g)
        return Tensor(np.multiply(g, mask))

    @property
    def mask(self) -> np.ndarray | None:
        """The scaled mask of the last training forward (``None`` after an identity pass)."""
        return None if self._cache is None else self._cache[1]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(rate=self.rate, seed=self.seed,
                      noise_shape=None if self.noise_shape is None else list(self.noise_shape))
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Dropout":
        config = dict(config)
        if config.get("noise_shape") is not None:
            config["noise_shape"] = tuple(config["noise_shape"])
        return super().from_config(config)


class SpatialDropout2D(Dropout):
    """Drops whole channels in training, as ``keras.layers.SpatialDropout2D``.

    One keep/drop draw per sample and channel, broadcast over rows and columns (the mask
    is ``[batch, 1, 1, channels]``); kept channels are scaled by ``1 / (1 - rate)``.

    Args:
        rate: Fraction of the channels to drop, ``0 <= rate < 1``.
        seed: Optional seed of this layer's mask generator; ``None`` uses the next
            stream of the global seed (``tn.set_seed``).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, rows, cols, channels]``. Output: the same shape.
    """

    def __init__(self, rate: float, *, seed: int | None = None, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(rate, seed=seed, name=name, trainable=trainable,
                         input_shape=input_shape)

    def _check_input_shape(self, input_shape: tuple) -> None:
        if len(input_shape) != 4:
            raise ValueError(
                f"SpatialDropout2D {self.name!r}: input must have rank 4 "
                f"(batch, rows, cols, channels), got shape {tuple(input_shape)}")

    def _mask_shape(self, input_shape: tuple) -> tuple:
        return (input_shape[0], 1, 1, input_shape[3])

    def get_config(self) -> dict:
        config = super().get_config()
        del config["noise_shape"]
        return config

