"""How the normalization passes walk a sample's ``[positions, C]`` rows.

A group is a contiguous run of ``cpg = C // groups`` channels of each position's channel
vector. The per-channel passes walk a block of positions in one of four *layouts*, fixed
by ``C`` alone and chosen in Python when the plan is made (:func:`layout_of`); each
layout compiles its own kernels, so a model compiles only the layouts it uses:

- ``SPANS``: spans of ``reps = max(SPAN_ELEMS // C, 1)`` consecutive positions
  (``reps * C`` contiguous floats) against per-channel vectors repeated ``reps`` times,
  so the loop set-up a row would cost is paid once per span. Lane accumulators are
  ``reps`` copies of the channel lanes, folded in copy order at the end of a block;
  positions left over after the last whole span go to the first copy.
- ``HALF_ROWS`` (``C`` divides 32), ``QUAD_ROWS`` (``C = 64``), ``TWO_QUADS``
  (``C = 128``): *wide rows* of ``max(64, C)`` floats (``64 // C`` positions per row, or
  one 128-channel position), each row one or two quads (four ``f32x16`` vectors) against
  per-channel vectors held in registers for the whole block (:mod:`.lanes`). The
  statistics and gradient lanes of ``HALF_ROWS`` are :data:`HALF` wide: each row adds its
  first half, then its second, into the same 32 lanes, so there are ``32 // C`` lane
  copies (position ``p`` feeds copy ``p mod (32 // C)``); half the accumulators fit in
  the registers of cores without AVX-512. Leftover positions (fewer than a wide row) go
  to copy 0 as one-position spans. The sweep and ``dx`` compute each element with the
  span expression (:mod:`.formulas`), so only the statistics lanes see the grouping.

Kernels index contiguous row views (``x[row:row + C]``), never ``x[row + c]``: Numba's
negative-index wraparound on a computed flat index blocks vectorization.

The helpers below are called, not inlined: each compiles once for every kernel, and LLVM
inlines such small functions into their callers anyway. (Numba's own inlining,
``inline="always"``, re-derives and copies a function's IR at every call site, which
costs compile time per site; tinynet keeps it for the loops whose constants must fold.)
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import _key, entry_address
from tinynet.kernels.simd import LANES as SIMD_LANES
from tinynet.kernels.normalization.folds import LANES

__all__ = ["Dims", "wide_argument", "parallel_entry", "VEC", "I64", "share_of", "task_count",
           "task_share",
           "STATS_PASS", "FINISH_PASS", "APPLY_PASS", "ALL_PASSES", "BY_BLOCKS",
           "SPANS", "HALF_ROWS", "QUAD_ROWS", "TWO_QUADS", "SPAN_ELEMS", "WIDE", "HALF",
           "SERIAL", "CHUNKS", "BLOCKS", "ROWS64", "ROWS32", "VECTORS", "PAIRS", "SINGLE",
           "layout_of", "row_kind", "can_stream", "STREAM_LAYOUTS", "next_sample_ahead",
           "PREFETCH_SAMPLE_FLOATS", "bound_driver"]

SPAN_ELEMS = 512
WIDE = 64
HALF = 32
SPANS, HALF_ROWS, QUAD_ROWS, TWO_QUADS = 0, 1, 2, 3
# How a driver spreads its work: all on the calling thread; chunks of ``spc`` samples
# over threads; or each sample's position blocks over threads (few large samples).
SERIAL, CHUNKS, BLOCKS = 0, 1, 2
# The passes of a group driver (bits of ``Dims.passes``): the block sums (statistics or
# gradient sums), their merge per sample, and the element-wise pass (sweep or ``dx``).
STATS_PASS, FINISH_PASS, APPLY_PASS = 1, 2, 4
ALL_PASSES = STATS_PASS | FINISH_PASS | APPLY_PASS
# Also in ``Dims.passes`` from Python: a parallel driver splits the samples into their
# position blocks (the ``BLOCKS`` mode) instead of runs of whole samples (``CHUNKS``).
BY_BLOCKS = 8
# Layer norm's row kinds (:mod:`.rows`): registers for 64 and 32 features, ``f32x16``
# vectors for other multiples of 16, row pairs for multiples of 8, else one row at a time.
ROWS64, ROWS32, VECTORS, PAIRS, SINGLE = 0, 1, 2, 3, 4
# Layouts whose wide rows consist of whole 16-float vectors: the outputs they can stream.
STREAM_LAYOUTS = frozenset((QUAD_ROWS, TWO_QUADS))
_STREAM_HALF_CHANNELS = (16, 32)


class Dims(NamedTuple):
    """The shape facts a kernel reads: ``[batch, positions, channels]``, ``cpg`` channels
    per group, fold blocks of ``block`` positions (``nblk`` per sample), and ``spc``
    samples per task for samples smaller than a block; then the share of the work a group
    driver runs: samples ``lo..hi``, blocks ``k0..k1`` of each, the ``passes`` (bits of
    :data:`ALL_PASSES`). From Python the share is everything (with :data:`BY_BLOCKS` for
    a parallel driver in the ``BLOCKS`` mode); a parallel driver passes each task's share
    to the serial driver (:func:`task_share`)."""

    batch: int
    positions: int
    channels: int
    cpg: int
    block: int
    nblk: int
    spc: int
    lo: int
    hi: int
    k0: int
    k1: int
    passes: int


def layout_of(channels: int) -> int:
    """The layout of ``C`` channels (see the module docstring)."""
    if channels == 2 * WIDE:
        return TWO_QUADS
    if channels == WIDE:
        return QUAD_ROWS
    if WIDE % channels == 0:
        return HALF_ROWS
    return SPANS


def row_kind(channels: int) -> int:
    """The row kind of ``C`` features (see :data:`ROWS64`)."""
    if channels == 64:
        return ROWS64
    if channels == 32:
        return ROWS32
    if channels % SIMD_LANES == 0:
        return VECTORS
    if channels % LANES == 0:  # the 8-lane folds of two rows run as one
        return PAIRS
    return SINGLE


def can_stream(channels: int) -> bool:
    """Whether the element-wise passes of ``C`` channels may use streaming stores: wide
    rows of whole vectors (16, 32, 64 or 128 channels), so every vector is aligned."""
    layout = layout_of(channels)
    return layout in STREAM_LAYOUTS or (layout == HALF_ROWS
                                        and channels in _STREAM_HALF_CHANNELS)


@njit(callee=True, cache=True, error_model="numpy")
def span_reps(channels):
    """Positions per span: ``max(SPAN_ELEMS // C, 1)``."""
    return max(SPAN_ELEMS // channels, 1)


@njit(callee=True, cache=True, error_model="numpy")
def span_count(p0, p1, reps):
    """Spans covering positions ``p0..p1``: the whole spans of ``reps``, then one per
    leftover position."""
    full = (p1 - p0) // reps
    return full + (p1 - p0 - full * reps)


@njit(callee=True, cache=True, error_model="numpy")
def span(q, base, p0, p1, reps, channels):
    """``(offset, width)`` of span ``q`` of positions ``p0..p1`` of the sample at ``base``:
    ``reps * C`` floats for a whole span, ``C`` for a leftover position."""
    full = (p1 - p0) // reps
    if q < full:
        return base + (p0 + q * reps) * channels, reps * channels
    return base + (p0 + full * reps + q - full) * channels, channels


@njit(callee=True, cache=True, error_model="numpy")
def repeat(vec, channels, copies):
    """``vec[k * C + c] = vec[c]`` for ``k < copies`` (the first ``C`` entries repeated)."""
    first = vec[:channels]
    for k in range(1, copies):
        other = vec[k * channels:(k + 1) * channels]
        for c in range(channels):
            other[c] = first[c]


@njit(callee=True, cache=True, error_model="numpy")
def fold_copies(lanes, channels, copies):
    """``lanes[:C] = ((copy 0 + copy 1) + copy 2) + ...``: the lane copies folded in order."""
    first = lanes[:channels]
    for k in range(1, copies):
        other = lanes[k * channels:(k + 1) * channels]
        for c in range(channels):
            first[c] += other[c]


@njit(callee=True, cache=True, error_model="numpy")
def row_floats(layout):
    """Floats per wide row: 128 for ``TWO_QUADS``, else 64."""
    return 2 * WIDE if layout == TWO_QUADS else WIDE


@njit(callee=True, cache=True, error_model="numpy")
def wide_rows(layout, p0, p1, channels):
    """``(positions per row, whole rows)`` of positions ``p0..p1``."""
    per_row = row_floats(layout) // channels
    return per_row, (p1 - p0) // per_row


@njit(callee=True, cache=True, error_model="numpy")
def lane_copies(layout, channels, reps):
    """Copies of the channel lanes a block's statistics or gradient sums keep: ``reps``
    on spans, ``32 // C`` for ``HALF_ROWS`` (one per position of a half row), else 1."""
    if layout == SPANS:
        return reps
    return max(HALF, channels) // channels


@njit(callee=True, cache=True, error_model="numpy")
def copies_needed(layout, channels, reps):
    """Copies of the per-channel vectors a pass reads: one per position of a wide row
    (leftover positions read copy 0 only), ``reps`` on spans."""
    return reps if layout == SPANS else row_floats(layout) // channels


@njit(callee=True, cache=True, error_model="numpy")
def expand(stat_a, stat_b, b, channels, cpg, out_a, out_b):
    """Two per-group values of sample ``b`` (``stat_a``, ``stat_b``) broadcast to one per
    channel (``out_a``, ``out_b``). One flat loop with a group counter: a few hundred
    stores per block, for which the vectorized and unrolled nested loop cost some 1000
    lines of LLVM IR in every driver that links it. Every caller broadcasts two values,
    and one loop for both halves the counter's work."""
    i = b * (channels // cpg)
    j = 0
    for c in range(channels):
        out_a[c] = stat_a[i]
        out_b[c] = stat_b[i]
        j += 1
        if j == cpg:
            j = 0
            i += 1


# The largest sample whose element-wise pass asks for the next sample's lines: both must
# fit in a core's cache beside each other (next_sample_ahead).
PREFETCH_SAMPLE_FLOATS = 64 * 1024


@njit(cache=True, inline="always", error_model="numpy")
def next_sample_ahead(b, d):
    """How far ahead (floats) the element-wise pass of sample ``b`` asks for lines: one
    sample, when the share ``d`` holds whole samples of at most
    :data:`PREFETCH_SAMPLE_FLOATS` and sample ``b + 1`` exists, so that its first pass
    finds its rows in the cache (in the same task, or the same thread's next task with
    the parallel loop's static split, except at its end); else 0 (no prefetch)."""
    floats = d.positions * d.channels
    if (b + 1 < d.batch and d.k0 == 0 and d.k1 == d.nblk
            and floats <= PREFETCH_SAMPLE_FLOATS):
        return np.int64(floats)
    return np.int64(0)


@njit(callee=True, cache=True, error_model="numpy")
def reversed_task(t, batch, nblk):
    """``(sample, block)`` of task ``batch * nblk - 1 - t``: the block-parallel kernels'
    second pass walks the blocks in reverse, so each thread starts on the blocks the
    first pass read last, still in the cache when the data is larger than the cache.
    Each block's work there is element-wise, so the order changes no bit."""
    u = batch * nblk - 1 - t
    b = u // nblk
    return b, u - b * nblk


@njit(cache=True, inline="always", error_model="numpy")
def share_of(d, lo, hi, k0, k1, passes):
    """``d`` with the share: samples ``lo..hi``, blocks ``k0..k1``, ``passes``."""
    return Dims(d.batch, d.positions, d.channels, d.cpg, d.block, d.nblk, d.spc, lo, hi, k0,
                k1, passes)


@njit(callee=True, cache=True, error_model="numpy")
def task_count(d, phase):
    """Tasks of a parallel driver's ``phase``: runs of ``spc`` whole samples (one phase);
    or, :data:`BY_BLOCKS`, every (sample, block), then every sample, then every (sample,
    block) again (the block sums, their merges, the element-wise pass; the drivers run
    the merges on the calling thread, without a parallel region of their own)."""
    if not d.passes & BY_BLOCKS:
        return (d.batch + d.spc - 1) // d.spc
    return d.batch if phase == 1 else d.batch * d.nblk


@njit(callee=True, cache=True, error_model="numpy")
def task_share(d, phase, t):
    """The share of task ``t`` of ``phase`` (:func:`task_count`) for the serial driver.
    The last phase walks the blocks in reverse (:func:`reversed_task`)."""
    t = np.int64(t)  # a parallel loop's index may be unsigned; the shares are int64
    if not d.passes & BY_BLOCKS:
        lo = t * d.spc
        return share_of(d, lo, min(lo + d.spc, d.batch), 0, d.nblk, ALL_PASSES)
    if phase == 1:
        return share_of(d, t, t + 1, 0, 0, FINISH_PASS)
    if phase == 0:
        b = t // d.nblk
        return share_of(d, b, b + 1, t - b * d.nblk, t - b * d.nblk + 1, STATS_PASS)
    b, k = reversed_task(t, d.batch, d.nblk)
    return share_of(d, b, b + 1, k, k + 1, APPLY_PASS)


@njit(callee=True, cache=True, error_model="numpy")
def zero(vec, n):
    """``vec[:n] = 0``."""
    for c in range(n):
        vec[c] = np.float32(0.0)


VEC = np.empty(0, dtype=np.float32)  # stand-in of the wide-row kernels' vector arguments
I64 = np.int64(0)  # and of their offsets and counts


def wide_argument(table: dict, key: tuple, kernels: Callable[[], tuple]) -> tuple:
    """A serial group driver's ``wide`` argument, ``(layout, address, address)``: the
    addresses of the layout's two wide-row kernels for one call's argument types, found
    in ``table`` by ``key`` (``(layout, flag, the arguments' types)``) or, on first use,
    those of the kernels ``kernels()`` names as ``((kernel, example arguments), ...)``,
    compiled or loaded from the cache then (:func:`tinynet.kernels.address.entry_address`)."""
    wide = table.get(key)
    if wide is None:
        wide = (key[0], *(entry_address(kernel, args) for kernel, args in kernels()))
        table[key] = wide
    return wide


def parallel_entry(table: dict, layout: int, flag: bool, wide: Callable[[], tuple],
                   serial: Any, args: tuple) -> tuple:
    """``(wide, address)`` for a parallel group driver: the serial driver's ``wide``
    argument (``wide()``, see :func:`wide_argument`) and the serial driver's address for
    ``args`` and it, found in ``table`` by the layout, the flag and the type key of every
    argument (:func:`tinynet.kernels.address._key`: the type of a number, flag or
    ``Dims``; an array's dtype, rank, contiguity and flags), so an entry is only ever
    used with the argument types it was compiled for. Made on first use; afterwards a
    call costs one lookup instead of two (the wide-row kernels' addresses, then the
    serial driver's for the type keys of all its arguments and ``wide``)."""
    key = (layout, flag, *map(_key, args))
    hit = table.get(key)
    if hit is None:
        argument = wide()
        hit = table[key] = (argument, entry_address(serial, (*args, argument)))
    return hit


def bound_driver(table: dict, layout: int, flag: bool, wide: Callable[[], tuple], serial: Any,
                 parallel_driver: Any, parallel: bool, args: tuple) -> Callable[..., None]:
    """A group driver bound to ``args`` (three arrays, the ``Dims``, then the rest):
    ``run(*args without the Dims)``. Serial: ``serial`` with the ``Dims`` and ``wide()``;
    parallel: ``parallel_driver`` with the serial driver's address and ``wide`` from
    :func:`parallel_entry` and the ``Dims`` as a plain tuple. What it finds here, once,
    holds for arguments of the types of ``args`` only."""
    d = args[3]
    if not parallel:
        argument = wide()

        def run(*a: Any) -> None:
            serial(a[0], a[1], a[2], d, *a[3:], argument)

        return run
    argument, addr = parallel_entry(table, layout, flag, wide, serial, args)
    dims = tuple(d)  # a plain tuple: Numba types it from Python faster than a named tuple

    def run(*a: Any) -> None:
        parallel_driver(addr, a[0], a[1], a[2], dims, *a[3:], argument)

    return run
