"""Numbers from users, as floats: ``to_float`` and ``float_array``.

A Python int has no size limit, a float has: ``float(10**400)`` raises ``OverflowError``.
These conversions give such an int its float limit, ``+inf`` or ``-inf``, so the range
and finiteness checks that follow refuse it with their ``ValueError`` naming the argument.
This module imports nothing from tinynet (the lowest floor).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["is_real", "to_float", "float_array", "FLOAT32_MAX"]

#: float32's largest finite value: where tinynet computes in float32, larger numbers are inf.
FLOAT32_MAX = float(np.finfo(np.float32).max)


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number: a Python or NumPy int or float, not a bool."""
    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)))


def to_float(value: Any) -> float:
    """``float(value)``, with an int beyond the float range as ``+inf`` or ``-inf``."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def float_array(value: Any, dtype: Any = np.float64) -> np.ndarray:
    """``np.asarray(value, dtype)``, with ints beyond the float range as ``+inf`` or
    ``-inf`` (and floats beyond a float32 ``dtype``'s range as infinities, silently).

    Raises:
        TypeError, ValueError: as ``np.asarray`` does for what is not numbers.
    """
    with np.errstate(over="ignore"):
        try:
            return np.asarray(value, dtype=dtype)
        except OverflowError:
            objects = np.asarray(value, dtype=object)
            return np.asarray(np.frompyfunc(to_float, 1, 1)(objects), dtype=dtype)
