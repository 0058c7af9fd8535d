"""What the monitoring callbacks share: whether a logged value is finite, and whether a
monitored quantity improves upwards or downwards."""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["finite", "monitor_direction", "lower_is_better", "improves", "check_monitor_args",
           "check_counts"]

def finite(value: numbers.Real) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range
        return False


_UP_WORDS = ("acc", "auc", "precision", "recall", "iou", "f1")
_DOWN_WORDS = ("loss", "error", "crossentropy", "hinge", "mse", "mae", "mape", "msle",
               "divergence", "poisson")


def _metric_direction(model: Any, name: str) -> str | None:
    """``"up"``/``"down"`` for a compiled metric key (or metric name), else ``None``."""
    keys = list(getattr(model, "metrics_names", []) or [])[1:]
    for key, metric in zip(keys, getattr(model, "metrics", []) or []):
        if name not in (key, getattr(metric, "name", None)):
            continue
        direction = getattr(metric, "direction", None) or getattr(metric, "_direction", None)
        if direction in ("up", "down"):
            return direction
        lowered = f"{key} {getattr(metric, 'name', '')}".lower()
        if any(w in lowered for w in _UP_WORDS):
            return "up"
        if any(w in lowered for w in _DOWN_WORDS):
            return "down"
    return None


def monitor_direction(model: Any, monitor: str, mode: str) -> str | None:
    """``"down"`` (lower is better), ``"up"``, or ``None`` when ``mode="auto"`` cannot tell:
    an explicit mode wins, then the loss, then the compiled metric's direction."""
    if mode != "auto":
        return "down" if mode == "min" else "up"
    name = monitor[4:] if monitor.startswith("val_") else monitor
    return "down" if name == "loss" else _metric_direction(model, name)


def check_monitor_args(owner: str, monitor: Any, min_delta: Any, mode: Any) -> None:
    """The checks of the arguments every monitoring callback takes."""
    if not isinstance(monitor, str) or not monitor:
        raise TypeError(f"{owner}: monitor must be a non-empty str, got {monitor!r}")
    if isinstance(min_delta, bool) or not isinstance(min_delta, numbers.Real):
        raise TypeError(f"{owner}: min_delta must be a float, got {min_delta!r}")
    if not finite(min_delta):
        raise ValueError(f"{owner}: min_delta must be a finite float, got {min_delta!r}")
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{owner}: mode must be one of 'auto', 'min', 'max', got {mode!r}")


def check_counts(owner: str, **counts: Any) -> None:
    """Each of ``counts`` must be a non-negative int."""
    for arg, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{owner}: {arg} must be a non-negative int, got {value!r}")
        if value < 0:
            raise ValueError(f"{owner}: {arg} must be a non-negative int, got {value}")


def lower_is_better(owner: str, model: Any, monitor: str, mode: str) -> bool:
    """Whether ``monitor`` improves downwards (:func:`monitor_direction`); ``ValueError``
    naming ``owner`` when ``mode="auto"`` cannot tell."""
    direction = monitor_direction(model, monitor, mode)
    if direction is None:
        raise ValueError(f"{owner}: cannot tell whether monitor={monitor!r} should be "
                         f"minimized or maximized; pass mode='min' or mode='max'")
    return direction == "down"


def improves(value: float, best: float | None, min_delta: float, lower: bool) -> bool:
    """Whether ``value`` beats ``best`` (``None``: nothing yet) by more than ``min_delta``,
    downwards when ``lower``."""
    if best is None:
        return True
    return value + min_delta < best if lower else value - min_delta > best
