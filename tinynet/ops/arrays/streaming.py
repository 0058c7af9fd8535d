"""Streaming (non-temporal) stores for outputs larger than the cache: when and where.

An ordinary store first reads the destination line into the cache (read-for-ownership)
and later writes it back, so writing an output that cannot stay in the cache costs a
read and a write of every byte, and evicts data a later pass still needs. A streaming
store (:func:`tinynet.kernels.simd.vstream`) sends the line straight to memory. The
element-wise passes of the normalization kernels use them for outputs of at least
:data:`STREAM_MIN_BYTES`: on the project's 2-core AMD VM that cut a 25 MiB sweep to
0.8x and a 25 MiB ``dx`` pass (two inputs, one output) to 0.6-0.8x of its time
(``docs/normalization.md``). Smaller outputs keep ordinary stores, so the next layer still
finds them in the cache.

The threshold is a quarter of the last-level cache: an output that large, the input it
is computed from and the next layer's output fill most of the cache, which other cores
share besides. Where that cache is a whole socket's (larger than
:data:`LOCAL_CACHE_MAX_BYTES`: a server's mesh L3 that a VM's few cores share with many
others), it holds little of what a pass writes, and the bound is the private (L2) caches
of the cores this process may run on instead, when smaller: an output larger than they
are leaves them before the next layer reads it. A cache of a core complex (AMD's 32 MiB
L3 of up to 8 cores) keeps what the L2 caches evict, so the quarter stands there. Each
was measured on one of this project's 2-core VMs, interleaved with PyTorch as in the
benchmark and with a pass reading each output right after it was written (as the next
layer does):

- On the Intel VM (2 MiB L2 per core; a 260 MiB L3 shared with the whole socket,
  which holds little for two cores: two threads re-read 16-128 MiB at 1.0-1.3x the
  speed of a read from memory), streaming changed such a step to 0.97-1.04x of its time
  at 1-3 MiB outputs and 0.84-0.97x at 4 MiB; beyond, 0.75-0.99x (GN 256x28x28x32
  0.85x, 0.67x without the reading pass). The L2 bound, 4 MiB, is the crossover.
- On the AMD VM (512 KiB L2 per core, 32 MiB L3): 0.76-0.99x at 8 and 12 MiB (LN
  ``[64,196,256]`` from 0.87-1.09 to 0.80-0.90 against PyTorch); with the reading pass,
  0.86-0.97x (1.04x once). Below a quarter of the L3, 8 MiB, ordinary stores win: under
  the L2 bound (1 MiB), which streamed 2-6 MiB outputs, a layer's forward and backward
  took 1.08-1.43x the time of ordinary stores (GN, IN, BN), 1.05-1.09x (DepthwiseConv2D)
  and 0.98-1.06x (LN); with the reading pass 1.04-1.32x (GN, IN, BN, LN) and 0.98-1.06x
  (DepthwiseConv2D).

The L2 caches are those of the CPUs in the process's affinity set, each counted once
(hyperthreads or a cluster sharing one list the same CPUs in sysfs). A container's CPU
quota is not seen, nor a last-level cache shared far more widely than it looks. The size
tells a socket's cache from a core complex's only roughly, and neither of these was
measured: an Intel mesh L3 of 64 MiB or less (up to 38.5 MiB on Skylake-SP) is taken as
local and gets the quarter; an AMD core complex's 96 MiB L3 (the stacked-cache parts) is
taken as a socket's. Where the rule misjudges, ``TINYNET_STREAM_MIN_BYTES`` in the
environment sets the threshold.

One setting still loses: a forward alone, run just after a 96 MiB copy had filled the
cache with dirty lines, whose output is freed before the next call (1.4-1.6x, AMD).

Streaming changes where the bytes go, never which bytes: the values are those of the
ordinary stores, whatever the size, so the choice (by size alone) never changes a
result. Streamed vectors must start on :data:`~tinynet.kernels.simd.STREAM_ALIGN`-byte
boundaries; :func:`empty_aligned` allocates outputs that way, and reuses the memory of
those a caller no longer holds.
"""

from __future__ import annotations

import math
import os
import sys
import threading

import numpy as np

from tinynet import tuning
from tinynet.kernels.simd import LANES, STREAM_ALIGN

__all__ = ["STREAM_MIN_BYTES", "LAST_LEVEL_CACHE_BYTES", "PRIVATE_CACHE_BYTES", "POOL_SIZE",
           "LOCAL_CACHE_MAX_BYTES", "cache_entries", "empty_aligned", "empty_tasks",
           "release_pool", "stream_threshold", "streams"]

_SYSFS_CPU = "/sys/devices/system/cpu"
_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_MAX_CPUS_READ = 256  # the private caches are summed over at most this many CPUs


def _read_text(path: str) -> str:
    with open(path, encoding="ascii") as fh:
        return fh.read().strip()


def cache_entries(cpu: int = 0, root: str = _SYSFS_CPU) -> list[tuple[int, str, int, str]]:
    """The caches of one CPU as Linux's sysfs lists them, in index order:
    ``(level, type, bytes, shared_cpu_list)``, e.g. ``(2, "Unified", 2097152, "0")``.
    Entries it cannot read are left out; no sysfs gives an empty list."""
    base = os.path.join(root, f"cpu{cpu}", "cache")
    try:
        names = sorted(e for e in os.listdir(base) if e.startswith("index"))
    except OSError:
        return []
    out = []
    for name in names:
        entry = os.path.join(base, name)
        try:
            level = int(_read_text(os.path.join(entry, "level")))
            kind = _read_text(os.path.join(entry, "type"))
            text = _read_text(os.path.join(entry, "size"))
            size = int(text[:-1]) * _UNITS[text[-1]] if text[-1:] in _UNITS else int(text)
        except (OSError, ValueError, KeyError):
            continue
        try:
            shared = _read_text(os.path.join(entry, "shared_cpu_list"))
        except OSError:
            shared = ""
        out.append((level, kind, size, shared))
    return out


def _allowed_cpus() -> list[int]:
    """The CPUs this process may run on, in order."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def _last_level_cache_bytes(default: int = 32 << 20, root: str = _SYSFS_CPU,
                            cpus: list[int] | None = None) -> int:
    """The largest data or unified cache of the first CPU this process may run on
    (``default`` when sysfs tells none)."""
    cpu = (cpus or _allowed_cpus() or [0])[0]
    sizes = [size for _, kind, size, _ in cache_entries(cpu, root) if kind != "Instruction"]
    return max(sizes, default=0) or default


def _private_cache_bytes(root: str = _SYSFS_CPU, cpus: list[int] | None = None,
                         cap: int | None = None) -> int:
    """The L2 caches of the CPUs this process may run on, each counted once (CPUs that
    share one, hyperthreads or a cluster, list the same ``shared_cpu_list``); 0 when
    sysfs tells none. With ``cap``, the count stops once it reaches ``cap`` (a bigger
    total would not change the threshold), so a many-core machine reads a few CPUs'
    caches at import, not all of them."""
    seen, total = set(), 0
    for cpu in (cpus if cpus is not None else _allowed_cpus())[:_MAX_CPUS_READ]:
        if cap is not None and total >= cap:
            break
        for level, kind, size, shared in cache_entries(cpu, root):
            if level == 2 and kind != "Instruction" and (shared or cpu) not in seen:
                seen.add(shared or cpu)
                total += size
    return total


#: A last-level cache larger than this is taken as a whole socket's (see above).
LOCAL_CACHE_MAX_BYTES = 64 << 20


def stream_threshold(llc_bytes: int, private_bytes: int) -> int:
    """The streaming threshold for a last-level cache and private caches of these sizes:
    a quarter of the former; for a socket-wide one (over :data:`LOCAL_CACHE_MAX_BYTES`),
    the latter when smaller (and known)."""
    quarter = llc_bytes // 4
    if llc_bytes <= LOCAL_CACHE_MAX_BYTES or private_bytes <= 0:
        return quarter
    return min(quarter, private_bytes)


_CPUS = _allowed_cpus()

#: Size of the largest cache (L3 on this machine).
LAST_LEVEL_CACHE_BYTES: int = _last_level_cache_bytes(cpus=_CPUS)

#: The L2 caches of the CPUs this process may run on, together (0 when unknown), counted
#: up to a quarter of the last-level cache, beyond which the threshold is that quarter.
PRIVATE_CACHE_BYTES: int = _private_cache_bytes(cpus=_CPUS, cap=LAST_LEVEL_CACHE_BYTES // 4)

#: Outputs of at least this many bytes are written with streaming stores (see above);
#: ``TINYNET_STREAM_MIN_BYTES`` in the environment overrides the rule.
_OVERRIDE = tuning.env_bytes("TINYNET_STREAM_MIN_BYTES")
STREAM_MIN_BYTES: int = (stream_threshold(LAST_LEVEL_CACHE_BYTES, PRIVATE_CACHE_BYTES)
                         if _OVERRIDE is None else _OVERRIDE)


def streams(nbytes: int, row_floats: int) -> bool:
    """Whether a pass writing ``nbytes`` in rows of ``row_floats`` float32 streams them.

    Args:
        nbytes: Size of the output.
        row_floats: Floats per row of the pass; rows must be whole vectors (a multiple of
            16 floats) so every streamed vector of an aligned array is aligned.
    """
    return nbytes >= STREAM_MIN_BYTES and row_floats % LANES == 0


#: Large aligned buffers each thread keeps for reuse (see :func:`empty_aligned`).
POOL_SIZE = 8
_NEVER_POOLED = 1 << 62  # a pool_from no buffer reaches: scratch stays out of the pool

_POOL = threading.local()


def _aligned(nbytes: int) -> tuple:
    """``(raw, flat)``: a fresh byte buffer and its ``nbytes`` bytes from a
    ``STREAM_ALIGN`` boundary (``flat.base is raw``, as for every view of it)."""
    raw = np.empty(nbytes + STREAM_ALIGN, dtype=np.uint8)
    skip = -raw.ctypes.data % STREAM_ALIGN
    return raw, raw[skip:skip + nbytes]


def _owner_refs(views: int) -> int:
    """The reference count :func:`empty_aligned` sees for a pooled buffer that nothing
    but the pool and ``views`` views of it hold, measured on this interpreter."""
    entry = _aligned(0)
    held = [entry[1].view(np.float32) for _ in range(views)]  # noqa: F841  (held alive)
    return sys.getrefcount(entry[0])


# The check needs CPython's exact reference counts. Later versions may report fewer
# (3.14 documents that ``sys.getrefcount`` can), which would make a held buffer look free,
# so the pool is used only where the counts are known to be exact.
_POOLING = sys.implementation.name == "cpython" and sys.version_info < (3, 14)
_FREE_REFS = _owner_refs(0)     # the pool's entry and aligned view only
_CLAIMED_REFS = _owner_refs(1)  # ... and the one view being handed out


def empty_aligned(shape: tuple, dtype=np.float32, *, pool_from: int | None = None
                  ) -> np.ndarray:
    """An uninitialized C-contiguous array whose data starts on a ``STREAM_ALIGN`` boundary.

    Arrays of at least ``pool_from`` bytes (default :data:`STREAM_MIN_BYTES`, the streamed
    outputs; a pass whose ordinary outputs would be mapped afresh each step asks for
    less) come from a pool of up to :data:`POOL_SIZE` such buffers per thread when one of
    the same size is free: nothing references it any more, no array, view or ``Tensor``
    of it (every view of a NumPy array holds its owner, so CPython's reference count of
    the owner tells).
    Otherwise a fresh buffer is allocated and pooled (in place of a free buffer of another
    size when the pool is full). A training step then writes its large outputs into the
    buffers of the previous step, which have been freed by then: no allocation and no
    page faults. (With glibc an allocation of 32 MiB or more is a fresh memory mapping,
    faulted in page by page on its first writes, and a smaller one is too when the
    allocator has returned the freed memory to the system, which in some processes
    happened after every call: ``docs/normalization.md``.)

    A pooled buffer is claimed (the view to return is made) before its count is checked,
    so code that runs in between and allocates too (a signal handler, a finalizer) sees
    it taken.

    Shape:
        Output: ``shape``.
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < (STREAM_MIN_BYTES if pool_from is None else pool_from) or not _POOLING:
        return _aligned(nbytes)[1].view(dtype).reshape(shape)
    pool = getattr(_POOL, "bufs", None)
    if pool is None:
        pool = _POOL.bufs = []
    spare = -1
    for i, entry in enumerate(pool):
        if entry[1].nbytes == nbytes:
            out = entry[1].view(dtype)
            if sys.getrefcount(entry[0]) == _CLAIMED_REFS:
                return out.reshape(shape)
            del out
        elif sys.getrefcount(entry[0]) == _FREE_REFS:
            spare = i
    entry = _aligned(nbytes)
    if len(pool) < POOL_SIZE:
        pool.append(entry)
    elif spare >= 0:  # a free buffer of another size makes room
        pool[spare] = entry
    return entry[1].view(dtype).reshape(shape)


def empty_tasks(shape: tuple, dtype=np.float32, *, parallel: bool = True) -> np.ndarray:
    """Scratch shared out among parallel tasks, a block per task or slot along the first
    axis: on a ``STREAM_ALIGN`` boundary when ``parallel`` (:func:`empty_aligned`, never
    from its pool), so that every block whose size is a whole number of 64-byte lines
    starts on a line of its own and two threads never write one line; else a plain
    ``np.empty`` (an aligned buffer costs a few microseconds more to make).

    Shape:
        Output: ``shape``.
    """
    if parallel:
        return empty_aligned(shape, dtype, pool_from=_NEVER_POOLED)
    return np.empty(shape, dtype=dtype)


def release_pool() -> None:
    """Drops this thread's pooled buffers (those still in use stay with their users)."""
    _POOL.bufs = []
