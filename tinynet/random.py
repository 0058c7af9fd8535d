"""The global seed and per-consumer random generators.

``tn.set_seed(seed)`` makes everything random in tinynet reproducible: weight
initialisation, dropout masks and ``fit``'s shuffling. Each consumer (a layer's
initialiser, a dropout layer, a model's shuffler) draws its own
``numpy.random.Generator`` from the global seed and a running counter, so the streams
are independent of one another and of the thread count.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["set_seed", "get_seed", "make_rng", "check_seed"]

_lock = threading.Lock()
_seed: int | None = None
_counter = 0


def check_seed(value: Any, owner: str, allow_none: bool = True) -> int | None:
    """The one seed check (layers, ``set_seed``, ``make_rng``, ``load_digits``): a
    non-negative int, or ``None`` where ``allow_none``.

    Raises:
        TypeError: not an int (``bool`` included) and not an allowed ``None``.
        ValueError: a negative int.
    """
    if value is None and allow_none:
        return None
    expect = "None or a non-negative int" if allow_none else "a non-negative int"
    what = f"{owner}: seed must be {expect}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(what)
    if value < 0:
        raise ValueError(what)
    return int(value)


def set_seed(seed: int) -> None:
    """Seeds tinynet's random streams (weights, dropout, shuffling) for reproducibility.

    Args:
        seed: A non-negative int.

    Raises:
        TypeError: ``seed`` is not an int.
        ValueError: ``seed`` is negative.
    """
    global _seed, _counter
    seed = check_seed(seed, "set_seed", allow_none=False)
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
        return np.random.default_rng(check_seed(seed, "make_rng"))
    with _lock:
        if _seed is None:
            return np.random.default_rng()
        stream = _counter
        _counter += 1
        return np.random.default_rng([_seed, stream])
