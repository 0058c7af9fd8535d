"""What the monitoring callbacks share: whether a logged value is finite, and whether a
monitored quantity improves upwards or downwards."""

from __future__ import annotations

import math
import numbers
from typing import Any

__all__ = ["finite", "monitor_direction"]

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
