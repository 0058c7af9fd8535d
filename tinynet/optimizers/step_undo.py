"""``StepUndo``: one optimizer step made undoable, for the training loop's promise that a
fit never keeps non-finite weights.

Before the step it copies what the step changes (each weight, each existing slot, the
iterations count and the optimizer's scalars) into buffers it reuses from step to step;
after it, :meth:`StepUndo.first_non_finite` finds a weight that came out NaN or infinite,
and :meth:`StepUndo.restore` puts everything back bitwise. Arrays are found again by
parameter and slot name when restoring, since the first step may move weights into the
optimizer's flat buffers (:mod:`tinynet.optimizers.flat`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.layers.layer import Parameter

__all__ = ["StepUndo", "is_finite"]


def is_finite(arr: np.ndarray) -> bool:
    """Whether every entry of ``arr`` is finite: one float64 sum (finite float32 values
    never overflow it; a NaN or an infinity always shows), no temporary array."""
    with np.errstate(invalid="ignore"):  # inf + -inf
        return math.isfinite(np.add.reduce(arr, axis=None, dtype=np.float64))


class StepUndo:
    """The state one :meth:`~tinynet.optimizers.optimizer.Optimizer.apply` changes, saved
    so the step can be undone (see the module docstring)."""

    __slots__ = ("_buffers", "_saved", "_had_slots", "_counters")

    def __init__(self) -> None:
        self._buffers: dict[tuple[int, str | None], np.ndarray] = {}
        self._saved: list[tuple[Parameter, str | None, np.ndarray]] = []
        self._had_slots: set[int] = set()
        self._counters: tuple[int, dict[str, Any]] = (0, {})

    def _copy(self, p: Parameter, name: str | None, arr: np.ndarray) -> None:
        key = (id(p), name)
        buf = self._buffers.get(key)
        if buf is None or buf.shape != arr.shape:
            buf = self._buffers[key] = np.empty_like(arr)
        np.copyto(buf, arr)
        self._saved.append((p, name, buf))

    def save(self, params: list[Parameter], slots: dict, iterations: int,
             scalars: dict[str, Any]) -> None:
        """Copies each parameter's weight and its slots (``slots``: the optimizer's
        ``{id(param): (param, {name: array})}``), and the counters."""
        self._saved.clear()
        self._had_slots = set()
        for p in params:
            self._copy(p, None, p.value)
            entry = slots.get(id(p))
            if entry is not None:
                self._had_slots.add(id(p))
                for name, arr in entry[1].items():
                    self._copy(p, name, arr)
        self._counters = (iterations, dict(scalars))

    def first_non_finite(self, params: list[Parameter]) -> Parameter | None:
        """The first of ``params`` whose weight holds a NaN or an infinity, else ``None``."""
        with np.errstate(invalid="ignore"):
            for p in params:
                if not math.isfinite(np.add.reduce(p.value, axis=None, dtype=np.float64)):
                    return p
        return None

    def restore(self, params: list[Parameter], slots: dict) -> tuple[int, dict[str, Any]]:
        """Copies the saved weights and slots back (slots the step created are dropped
        from ``slots``) and returns the saved ``(iterations, scalars)``."""
        for p, name, buf in self._saved:
            np.copyto(p.value if name is None else slots[id(p)][1][name], buf)
        for p in params:
            if id(p) not in self._had_slots:
                slots.pop(id(p), None)
        return self._counters
