"""The float checks the optimizers and the learning-rate schedules share."""

from __future__ import annotations

import math
from typing import Any

from tinynet.scalars import FLOAT32_MAX, is_real, to_float

__all__ = ["check_float", "check_unit_interval", "check_rate", "RATE"]

#: What a learning rate must be: the optimizers compute in float32.
RATE = f"a non-negative float no larger than float32's largest ({FLOAT32_MAX:.8g})"


def check_float(value: Any, arg: str, owner: str, *, low: float = 0.0,
                high: float = math.inf, low_open: bool = False, high_open: bool = True,
                expected: str | None = None) -> float:
    """Validates a float argument in a range, naming ``owner``, ``arg`` and the value."""
    if expected is None:
        expected = "a non-negative float" if not low_open else "a positive float"
    if not is_real(value):
        raise TypeError(f"{owner}: {arg} must be {expected}, got {value!r}")
    v = to_float(value)
    ok = (math.isfinite(v) and (v > low if low_open else v >= low)
          and (v < high if high_open else v <= high))
    if not ok:
        raise ValueError(f"{owner}: {arg} must be {expected}, got {value!r}")
    return v


def check_unit_interval(value: Any, arg: str, owner: str, interval: str) -> float:
    """Validates a float in ``interval``: ``"[0, 1)"``, ``"[0, 1]"`` or ``"(0, 1]"``."""
    return check_float(value, arg, owner, low_open=interval[0] == "(", high=1.0,
                       high_open=interval[-1] == ")", expected=f"a float in {interval}")


def check_rate(value: Any, arg: str, owner: str, expected: str = RATE) -> float:
    """A learning rate (or a schedule's rate argument): a number in ``[0, FLOAT32_MAX]``."""
    return check_float(value, arg, owner, high=FLOAT32_MAX, high_open=False,
                       expected=expected)
