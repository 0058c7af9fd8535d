"""Weight initialisers (Keras names): glorot_uniform, he_normal, zeros, ones, ..."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tinynet.random import make_rng

__all__ = ["get", "fans"]


def fans(shape: tuple) -> tuple[int, int]:
    """Keras's (fan_in, fan_out): kernels ``[kh, kw, in, out]`` use the receptive field."""
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


_NAMES = ("glorot_uniform", "glorot_normal", "he_uniform", "he_normal", "zeros", "ones",
          "lecun_uniform", "lecun_normal", "uniform", "random_uniform", "normal",
          "random_normal")
# Keras's RandomUniform(-0.05, 0.05) and RandomNormal(0.0, 0.05) under their string names
_FIXED_SCALE = {"uniform": "uniform", "random_uniform": "uniform", "normal": "normal",
                "random_normal": "normal"}


def get(name: str, layer=None, seed: int | None = None) -> Callable[[tuple], np.ndarray]:
    """Returns the initialiser ``name`` as ``shape -> float32 ndarray``.

    The generator comes from the layer's ``seed`` (if any) or the global seed stream.
    """
    if name not in _NAMES:
        raise ValueError(f"unknown initializer {name!r}; expected one of {', '.join(_NAMES)}")
    if name == "zeros":
        return lambda shape: np.zeros(shape, dtype=np.float32)
    if name == "ones":
        return lambda shape: np.ones(shape, dtype=np.float32)
    if seed is None and layer is not None:
        seed = getattr(layer, "seed", None)

    def init(shape: tuple) -> np.ndarray:
        rng = make_rng(seed)
        kind = _FIXED_SCALE.get(name)
        if kind == "uniform":
            return rng.uniform(-0.05, 0.05, size=shape).astype(np.float32)
        if kind == "normal":
            return (rng.standard_normal(size=shape) * 0.05).astype(np.float32)
        fan_in, fan_out = fans(shape)
        if name.startswith("glorot"):
            scale = 2.0 / max(1.0, fan_in + fan_out)
        elif name.startswith("he"):
            scale = 2.0 / max(1.0, fan_in)
        else:
            scale = 1.0 / max(1.0, fan_in)
        if name.endswith("uniform"):
            limit = np.sqrt(3.0 * scale)
            return rng.uniform(-limit, limit, size=shape).astype(np.float32)
        # truncated normal at 2 std, Keras's stddev correction
        std = np.sqrt(scale) / 0.87962566103423978
        out = rng.standard_normal(size=shape)
        bad = np.abs(out) > 2.0
        while bad.any():
            out[bad] = rng.standard_normal(size=int(bad.sum()))
            bad = np.abs(out) > 2.0
        return (out * std).astype(np.float32)

    return init
