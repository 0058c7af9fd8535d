"""The float checks the optimizers and the learning-rate schedules share."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["check_float", "check_unit_interval"]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, (bool, np.bool_))


def check_float(value: Any, arg: str, owner: str, *, low: float = 0.0,
                high: float = math.inf, low_open: bool = False, high_open: bool = True,
                expected: str | None = None) -> float:
    """Validates a float argument in a range, naming ``owner``, ``arg`` and the value."""
    if expected is None:
        expected = "a non-negative float" if not low_open else "a positive float"
    if not _is_number(value):
        raise TypeError(f"{owner}: {arg} must be {expected}, got {value!r}")
    try:
        v = float(value)
    except OverflowError:  # an int beyond float range
        v = math.inf
    ok = (math.isfinite(v) and (v > low if low_open else v >= low)
          and (v < high if high_open else v <= high))
    if not ok:
        raise ValueError(f"{owner}: {arg} must be {expected}, got {value!r}")
    return v


def check_unit_interval(value: Any, arg: str, owner: str, interval: str) -> float:
    """Validates a float in ``interval``: ``"[0, 1)"``, ``"[0, 1]"`` or ``"(0, 1]"``."""
    return check_float(value, arg, owner, low_open=interval[0] == "(", high=1.0,
                       high_open=interval[-1] == ")", expected=f"a float in {interval}")
