"""``GaussianDropout``: multiplies by ``N(1, rate / (1 - rate))`` noise in training
(``keras.layers.GaussianDropout``); the identity at inference.

The noise comes from the layer's own NumPy generator (:class:`OwnGenerator`), as for
``Dropout``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet import ops
from tinynet.layers.gaussian_noise import check_unit_float
from tinynet.layers.layer import Layer
from tinynet.layers.seeded import OwnGenerator
from tinynet.layers.validation import check_seed

__all__ = ["GaussianDropout"]


class GaussianDropout(OwnGenerator, Layer):
    """Multiplies each entry by ``1 + sqrt(rate / (1 - rate)) * N(0, 1)`` when
    ``training=True``.

    Args:
        rate: The drop probability of the equivalent dropout, a float in ``[0, 1)``.
        seed: Optional seed of this layer's generator; ``None`` uses the next stream of
            the global seed (``tn.set_seed``).
        name: Optional layer name.

    Shape:
        Input: any shape ``[batch, ...]``; output: the same.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate = check_unit_float(rate, "rate", "GaussianDropout", upper_open=True)
        self.seed = check_seed(seed, "GaussianDropout")
        self._rng = None

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def call(self, inputs: Any, training: Any = None) -> Any:
        if training and self.rate > 0:
            shape = tuple(ops.shape(inputs))
            stddev = np.float32(math.sqrt(self.rate / (1.0 - self.rate)))
            noise = self.rng.standard_normal(shape, dtype=np.float32) * stddev + np.float32(1)
            return ops.multiply(inputs, noise)
        return ops.copy(inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "rate": self.rate, "seed": self.seed}
