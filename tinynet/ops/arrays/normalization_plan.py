"""Plans: the shape facts of one normalization pass, decided once per shape in Python.

A :class:`Plan` holds what the kernels need to know about ``[batch, positions, C]`` and
the groups (the :class:`Dims` they receive as one argument: a named tuple, or a plain
tuple for the parallel group drivers), the layout or row kind
that picks which compiled kernel runs, and the fold tasks. Plans are cached per shape (a
training loop repeats a few), and each thread keeps reusable scratch buffers for the
kernels' partial sums.
"""

from __future__ import annotations

import math
import threading

import numpy as np

from tinynet import tuning
from tinynet.ops.arrays import streaming
from tinynet.ops.arrays.streaming import streams
from tinynet.kernels.normalization.folds import rows_per_block
from tinynet.kernels.normalization.layout import (ALL_PASSES, BLOCKS, BY_BLOCKS, CHUNKS,
                                                                SERIAL, WIDE, Dims, can_stream,
                                                                layout_of, row_kind)

__all__ = ["Dims", "Plan", "plan_of", "scratch"]


class Plan:
    """Shape facts of one pass: ``[batch, positions, channels]``, groups and fold tasks.

    ``block`` positions per fold block (``rows_per_block(C)``); a sample of
    ``P >= block`` positions has ``nblk`` blocks, smaller samples pack ``spc`` to a task.
    ``rows``: one position and one group per sample (layer norm), the row kernels.
    ``dims`` and ``dims_blocks``: the kernels' ``Dims``, the latter for a parallel group
    driver in the ``BLOCKS`` mode (:meth:`dims_for`). ``bound``: the door's drivers bound
    to this shape and their arguments' types, made on first use.
    """

    __slots__ = ("batch", "positions", "channels", "groups", "cpg", "block", "nblk", "spc",
                 "ntasks", "rows", "layout", "kind", "dims", "dims_blocks", "bound", "_stream")

    def __init__(self, shape: tuple, num_groups: int, who: str) -> None:
        if len(shape) < 2:
            raise ValueError(f"{who}: input must have rank >= 2 ([batch, ..., channels]), "
                             f"got shape {tuple(shape)}")
        if (isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer))
                or num_groups < 1):
            raise ValueError(f"{who}: num_groups must be a positive int, got {num_groups!r}")
        self.channels = int(shape[-1])
        if self.channels % num_groups:
            raise ValueError(f"{who}: channels ({self.channels}) must be divisible by groups "
                             f"({num_groups})")
        self.batch = int(shape[0])
        self.positions = math.prod(int(d) for d in shape[1:-1])
        self.groups = int(num_groups)
        self.cpg = self.channels // self.groups
        self.block = rows_per_block(self.channels)
        if self.positions >= self.block:
            self.nblk = -(-self.positions // self.block)
            self.spc = 1
        else:
            self.nblk = 1
            self.spc = max(self.block // max(self.positions, 1), 1)
        self.ntasks = -(-self.batch // self.spc) * self.nblk
        self.rows = self.positions == 1 and self.groups == 1
        self.layout = layout_of(self.channels) if self.channels else 0
        self.kind = row_kind(self.channels) if self.channels else 0
        self.dims = Dims(self.batch, self.positions, self.channels, self.cpg, self.block,
                         self.nblk, self.spc, 0, self.batch, 0, self.nblk, ALL_PASSES)
        self.dims_blocks = self.dims._replace(passes=ALL_PASSES | BY_BLOCKS)
        # the door's drivers bound to their arguments' types (kernels' bound functions),
        # by the pass, mode, flags and the types of the arrays the caller supplies
        self.bound: dict = {}
        self._stream = (None, False)  # (the threshold it was decided at, the decision)

    def streams(self, nbytes: int) -> bool:
        """Whether the element-wise passes write with streaming stores: large outputs in
        rows of whole vectors (wide rows of 16-128 channels, or layer norm's rows of a
        multiple of 16 features), so every streamed vector is aligned."""
        if self.rows:
            return streams(nbytes, self.channels)
        return can_stream(self.channels) and streams(nbytes, WIDE)

    def stream(self) -> bool:
        """:meth:`streams` for this shape's float32 passes, decided again only when the
        streaming threshold changed since the last call."""
        at, decided = self._stream
        if at != streaming.STREAM_MIN_BYTES:
            decided = self.streams(4 * self.batch * self.positions * self.channels)
            self._stream = (streaming.STREAM_MIN_BYTES, decided)
        return decided

    def dims_for(self, mode: int) -> Dims:
        """The ``Dims`` a group driver of ``mode`` receives."""
        return self.dims_blocks if mode == BLOCKS else self.dims

    def mode(self, gate: str, size: int) -> int:
        """``SERIAL``, ``CHUNKS`` or ``BLOCKS`` for a pass of ``size`` elements (the same
        bits whichever): serial below the gate, else chunks of samples over threads when
        there are enough of them, else each sample's blocks over threads."""
        if not tuning.use_parallel(gate, size):
            return SERIAL
        nchunks = -(-self.batch // self.spc)
        if nchunks >= tuning.get_num_threads() or self.nblk == 1:
            return CHUNKS
        return BLOCKS


# Plans of the shapes seen lately (a training loop repeats a few shapes): building one is
# pure Python, and its cost showed on every call (docs/performance.md).
_PLANS: dict = {}
_PLANS_MAX = 64


def plan_of(shape: tuple, num_groups: int, who: str) -> Plan:
    """The :class:`Plan` of ``shape`` and ``num_groups``, built once per distinct pair."""
    key = (shape, type(num_groups), num_groups)  # True == 1 and 4.0 == 4 must not hit
    plan = _PLANS.get(key)
    if plan is None:
        plan = Plan(shape, num_groups, who)  # raises on bad arguments: nothing cached
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


# The kernels' own partial sums (block and task partials, per-group coefficients) never
# leave a call, so each thread keeps one buffer per size and reuses it: a fresh buffer of
# a few hundred KiB comes from the operating system page by page (a fault and a zeroed
# page each).
_SCRATCH = threading.local()
_SCRATCH_MAX = 32


def scratch(shape: tuple, dtype, use: str = "") -> np.ndarray:
    """This thread's reusable buffer of ``shape`` and ``dtype`` for ``use`` (contents
    undefined; two buffers of one call that may have the same shape take two uses)."""
    bufs = getattr(_SCRATCH, "bufs", None)
    if bufs is None:
        bufs = _SCRATCH.bufs = {}
    key = (shape, dtype, use)
    buf = bufs.get(key)
    if buf is None:
        if len(bufs) >= _SCRATCH_MAX:
            bufs.clear()
        buf = bufs[key] = np.empty(shape, dtype=dtype)
    return buf
