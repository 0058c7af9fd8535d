"""``StepUndo``: one optimizer step made undoable, for the training loop's promise that a
fit never keeps non-finite weights (the optimizers that cannot test their step before
taking it, see :meth:`tinynet.optimizers.optimizer.Optimizer.apply_or_undo`).

Before the step it copies what the step changes (each weight and each existing slot, the
iterations count and the optimizer's scalars) into buffers it reuses from step to step;
parameters whose weights and slots live in the optimizer's flat buffers
(:mod:`tinynet.optimizers.flat`) cost one copy per buffer, not one per array. After the
step, :meth:`StepUndo.first_non_finite` finds a weight that came out NaN or infinite, and
:meth:`StepUndo.restore` puts everything back bitwise, also when the step moved weights
into new flat buffers (the old arrays, which it keeps, were then left as they were).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.layers.layer import Parameter
from tinynet.optimizers.flat import FlatGroup

__all__ = ["StepUndo", "is_finite"]


def is_finite(arr: np.ndarray) -> bool:
    """Whether every entry of ``arr`` is finite: a dot product of ``arr`` with itself is
    NaN or infinite whenever an entry is; when it is infinite, an overflow of big finite
    values is told apart by the exact test."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _finite(arr)


def _finite(arr: np.ndarray) -> bool:
    """:func:`is_finite` where the caller has silenced NumPy's overflow warnings."""
    flat = arr.reshape(-1)
    return math.isfinite(np.dot(flat, flat)) or bool(np.isfinite(flat).all())


class StepUndo:
    """The state one :meth:`~tinynet.optimizers.optimizer.Optimizer.apply` changes, saved
    so the step can be undone (see the module docstring)."""

    __slots__ = ("_signature", "_refs", "_sources", "_buffers", "_had_slots", "_counters")

    def __init__(self) -> None:
        self._signature: tuple = ()
        self._refs: list[tuple[Parameter, str | None, np.ndarray]] = []
        self._sources: list[np.ndarray] = []
        self._buffers: list[np.ndarray] = []
        self._had_slots: set[int] = set()
        self._counters: tuple[int, dict[str, Any]] = (0, {})

    def _plan(self, params: list[Parameter], slots: dict, group: FlatGroup | None) -> None:
        """Which arrays to copy: each flat buffer once, every other array on its own. The
        plan keeps the arrays it names alive, so the ids of its signature stay theirs."""
        shared = {} if group is None else {id(a): a for a in (group.w, *group.slots.values())}
        refs, sources = [], {}
        for p in params:
            entry = slots.get(id(p))
            for name, arr in [(None, p.value), *(entry[1].items() if entry else ())]:
                refs.append((p, name, arr))
                base = arr.base
                source = shared.get(id(base), arr) if base is not None else arr
                sources[id(source)] = source
        self._refs = refs
        self._sources = list(sources.values())
        self._buffers = [np.empty_like(s) for s in self._sources]
        self._had_slots = {id(p) for p in params if id(p) in slots}

    def save(self, params: list[Parameter], slots: dict, group: FlatGroup | None,
             iterations: int, scalars: dict[str, Any]) -> None:
        """Copies each parameter's weight and its slots (``slots``: the optimizer's
        ``{id(param): (param, {name: array})}``; ``group``: its flat buffers), and the
        counters."""
        signature = (id(slots), len(slots), id(group), *(id(p.value) for p in params))
        if signature != self._signature:
            self._plan(params, slots, group)
            self._signature = signature
        for source, buf in zip(self._sources, self._buffers):
            np.copyto(buf, source)
        self._counters = (iterations, dict(scalars))

    @staticmethod
    def first_non_finite(params: list[Parameter], group: FlatGroup | None) -> Parameter | None:
        """The first of ``params`` whose weight holds a NaN or an infinity, else ``None``
        (the weights in ``group``'s flat buffer are tested together first)."""
        flat_ok = None
        with np.errstate(over="ignore", invalid="ignore"):
            for p in params:
                if group is not None and p.value.base is group.w:
                    if flat_ok is None:
                        flat_ok = _finite(group.w)
                    if flat_ok:
                        continue
                if not _finite(p.value):
                    return p
        return None

    def restore(self, params: list[Parameter], slots: dict) -> tuple[int, dict[str, Any]]:
        """Copies the saved weights and slots back (slots the step created are dropped
        from ``slots``) and returns the saved ``(iterations, scalars)``."""
        for source, buf in zip(self._sources, self._buffers):
            np.copyto(source, buf)
        for p, name, arr in self._refs:  # arrays the step moved into new flat buffers
            current = p.value if name is None else slots[id(p)][1][name]
            if current is not arr:
                np.copyto(current, arr)
        for p in params:
            if id(p) not in self._had_slots:
                slots.pop(id(p), None)
        self._signature = ()
        return self._counters
