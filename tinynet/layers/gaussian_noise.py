"""``GaussianNoise``: adds zero-mean Gaussian noise in training
(``keras.layers.GaussianNoise``); the identity at inference.

The noise comes from the layer's own NumPy generator (:class:`OwnGenerator`: the layer's
``seed`` if given, else the next stream of the global seed set by ``tn.set_seed``), as
for ``Dropout``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet import ops
from tinynet.layers.layer import Layer
from tinynet.layers.seeded import OwnGenerator
from tinynet.layers.validation import check_seed
from tinynet.scalars import is_real, to_float

__all__ = ["GaussianNoise"]


def check_unit_float(value: Any, arg: str, owner: str, upper_open: bool = False) -> float:
    """A float in ``[0, 1]`` (``[0, 1)`` when ``upper_open``)."""
    what = f"{owner}: {arg} must be a float in [0, 1{')' if upper_open else ']'}, got {value!r}"
    if not is_real(value):
        raise TypeError(what)
    value = to_float(value)
    if not math.isfinite(value) or value < 0 or value > 1 or (upper_open and value == 1):
        raise ValueError(what)
    return value


class GaussianNoise(OwnGenerator, Layer):
    """Adds ``N(0, stddev**2)`` noise to each entry when ``training=True``.

    Args:
        stddev: The noise's standard deviation, a float in ``[0, 1]`` (Keras's range).
        seed: Optional seed of this layer's generator; ``None`` uses the next stream of
            the global seed (``tn.set_seed``).
        name: Optional layer name.

    Shape:
        Input: any shape ``[batch, ...]``; output: the same.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stddev = check_unit_float(stddev, "stddev", "GaussianNoise")
        self.seed = check_seed(seed, "GaussianNoise")
        self._rng = None

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def call(self, inputs: Any, training: Any = None) -> Any:
        if training and self.stddev > 0:
            shape = tuple(ops.shape(inputs))
            noise = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(self.stddev)
            return ops.add(inputs, noise)
        return ops.copy(inputs)

    def get_config(self) -> dict:
        return {**super().get_config(), "stddev": self.stddev, "seed": self.seed}
