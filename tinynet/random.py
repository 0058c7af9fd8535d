"""The global seed and per-consumer random generators.

``tn.set_seed(seed)`` makes everything random in tinynet reproducible: weight
initialisation, dropout masks and ``fit``'s shuffling. Each consumer (a layer's
initialiser, a dropout layer, a model's shuffler) draws its own
``numpy.random.Generator`` from the global seed and a running counter, so the streams
are independent of one another and of the thread count.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["set_seed", "get_seed", "make_rng"]

_lock = threading.Lock()
_seed: int | None = None
_counter = 0


def _check_seed(seed: object, arg: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{arg} must be a non-negative int, got {seed!r} of type {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"{arg} must be a non-negative int, got {seed}")
    return int(seed)


def set_seed(seed: int) -> None:
    """Seeds tinynet's random streams (weights, dropout, shuffling) for reproducibility.

    Args:
        seed: A non-negative int.

    Raises:
        TypeError: ``seed`` is not an int.
        ValueError: ``seed`` is negative.
    """
    global _seed, _counter
    seed = _check_seed(seed)
    with _lock:
        _seed, _counter = seed, 0


def get_seed() -> int | None:
    """Returns the global seed, or ``None`` when none was set."""
    return _seed


def make_rng(seed: int | None = None) -> np.random.Generator:
    """Returns a new generator: from ``seed`` if given, else the next global stream.

    Without a global seed (and no ``seed``), the generator is seeded from the OS.
    """
    global _counter
    if seed is not None:
        return np.random.default_rng(_check_seed(seed))
    with _lock:
        if _seed is None:
            return np.random.default_rng()
        stream = _counter
        _counter += 1
        return np.random.default_rng([_seed, stream])
