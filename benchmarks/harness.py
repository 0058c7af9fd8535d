"""Shared benchmark helpers: thread setup, interleaved timing, bandwidth, machine facts.

Timing method (used by every group):

* every callable is warmed up first (the first tinynet call compiles or loads the Numba
  kernels; compile time is never part of a timed repetition);
* a repetition calls one callable ``number`` times back to back (``number`` is chosen so
  a repetition lasts at least ``min_rep_s``) and records the time per call;
* the callables of one case are interleaved: repetition ``k`` runs tinynet, then the
  PyTorch variants, and the order rotates with ``k`` so none always runs first;
* the reported time is the median over the repetitions; the spread is the
  interquartile range relative to the median;
* a *floor* callable (the norm group's bandwidth copy) can join the rotation: it runs in
  at most ``FLOOR_SAMPLES`` repetitions spread evenly over the measurement, once each,
  just before each compared callable in turn, and does not set the repetition count, so
  its median comes from the same stretch of the run as the times it is compared with.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import resource
import statistics
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

THREADS = 2
# harness is imported before tinynet (which may set GOMP_SPINCOUNT)
_ENV_AT_START = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
RETRY_IQR = 0.5     # re-measure a case whose relative interquartile range exceeds this,
RETRY_OTHER = 0.1   # or during which other processes kept more than this share of the cores busy
FLOOR_SAMPLES = 21  # at most this many floor samples per measurement (see measure)
_waited_s = 0.0     # time spent in wait_for_quiet during this run
_last_other = 0.0   # other processes' share of the cores during the last measurement


class Skip(Exception):
    """Raised by a case or group that cannot run here (missing tinynet pieces)."""


@dataclass(frozen=True)
class Settings:
    """How long to measure.

    Attributes:
        quick: Fewer repetitions (a smoke run).
        budget_s: Target measured time per callable per case (all repetitions).
        min_reps: At least this many repetitions per case.
        max_reps: At most this many repetitions per case.
        min_rep_s: A repetition lasts at least this long (``number`` calls).
        warmup_s: Warm-up time per callable after the first (compiling) call.
        retries: How many times a noisy or disturbed measurement is repeated at once.
        case_wait_s: Before a retry, wait up to this long for other processes to finish.
        run_wait_s: At most this much waiting in a whole run.
        redo_s: Time budget per group for measuring disturbed cases again at its end.
    """

    quick: bool = False
    budget_s: float = 0.5
    min_reps: int = 21
    max_reps: int = 300
    min_rep_s: float = 0.002
    warmup_s: float = 0.1
    retries: int = 1
    case_wait_s: float = 10.0
    run_wait_s: float = 120.0
    redo_s: float = 90.0

    @classmethod
    def make(cls, quick: bool) -> "Settings":
        if quick:
            return cls(quick=True, budget_s=0.06, min_reps=5, max_reps=40, warmup_s=0.03,
                       retries=1, case_wait_s=2.0, run_wait_s=10.0, redo_s=0.0)
        return cls()

    def scaled(self, factor: float) -> "Settings":
        """The same settings with ``factor`` times the time budget (secondary measurements)."""
        return replace(self, budget_s=self.budget_s * factor)


@dataclass
class Timing:
    """Median time per call of one callable, with its spread."""

    median_s: float
    iqr_rel: float
    reps: int
    number: int
    faults: float = 0.0  # minor page faults per call (fresh memory the kernel maps in)


@dataclass
class Comparison:
    """tinynet against the fastest PyTorch variant of one case."""

    tinynet: Timing
    torch: dict[str, Timing]
    other_work: float | None = None  # other processes' share of the cores meanwhile
    floor: Timing | None = None  # the floor callable interleaved with them (norm group)
    best_layout: str = field(init=False)

    def __post_init__(self) -> None:
        self.best_layout = min(self.torch, key=lambda k: self.torch[k].median_s)

    @property
    def torch_best(self) -> Timing:
        return self.torch[self.best_layout]

    @property
    def noise(self) -> float:
        """The larger relative interquartile range of tinynet and the fastest PyTorch variant."""
        return max(self.tinynet.iqr_rel, self.torch_best.iqr_rel)

    @property
    def ratio(self) -> float:
        """tinynet time / PyTorch time (below 1 means tinynet is faster)."""
        return self.tinynet.median_s / self.torch_best.median_s


def configure_threads(n: int = THREADS) -> None:
    """Both libraries at ``n`` threads, in this process. tinynet's adaptive thread count
    is turned off: it would read PyTorch's spinning threads, or the machine's noise, as
    another process's load and run some cases serially (the peer benchmark measures it)."""
    import torch

    from tinynet import tuning

    torch.set_num_threads(n)
    tuning.set_num_threads(n)
    tuning.set_adaptive_threads(False)


# glibc's mallopt parameters (malloc.h) and the largest mapping threshold it accepts on a
# 64-bit system (DEFAULT_MMAP_THRESHOLD_MAX).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 << 20


def keep_freed_memory() -> str:
    """Makes glibc keep freed memory for reuse: allocations up to 32 MiB come from the heap
    (a fixed mapping threshold instead of the one earlier frees raise), and the heap is
    never trimmed. PyTorch's fresh outputs then take no page faults in a steady loop,
    whatever the cases before left behind (tinynet reuses its large outputs itself).
    Returns what it did, for the machine table; raises ``OSError`` off glibc."""
    import ctypes

    libc = ctypes.CDLL("libc.so.6")
    if not (libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
            and libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)):
        raise OSError("mallopt refused the settings")
    return "glibc keeps freed memory (mmap threshold 32 MiB, heap not trimmed)"


def _minor_faults() -> int:
    """This process's minor page faults so far: a call that takes fresh pages from the
    operating system (a large allocation glibc maps afresh) pays one per 4 KiB page."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _time_calls(fn: Callable[[], Any], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def _warm_up(fn: Callable[[], Any], warmup_s: float) -> float:
    """Calls ``fn`` once (compile), then for ``warmup_s`` (at least 3 calls); returns a time estimate."""
    fn()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < 3 or time.perf_counter() - start < warmup_s:
        samples.append(_time_calls(fn, 1))
        if len(samples) >= 200:
            break
    return statistics.median(samples[-5:])


def measure(fns: dict[str, Callable[[], Any]], settings: Settings,
            floor: Callable[[], Any] | None = None) -> dict[str, Timing]:
    """Times several callables interleaved; returns the median time per call of each.

    Args:
        fns: Named callables (the first is run first in repetition 0).
        settings: Measurement budget.
        floor: Optional callable timed in the same rotation (one call per sample) in at
            most ``FLOOR_SAMPLES`` repetitions spread over the measurement; it does not
            count towards the repetition count. Its timing is returned as ``"floor"``.

    Returns:
        A ``Timing`` per name (and ``"floor"``).
    """
    names = list(fns)
    estimates = {name: max(_warm_up(fns[name], settings.warmup_s), 1e-7) for name in names}
    number = {name: max(1, math.ceil(settings.min_rep_s / est)) for name, est in estimates.items()}
    slowest_rep = max(number[n] * estimates[n] for n in names)
    reps = int(min(settings.max_reps, max(settings.min_reps, settings.budget_s / slowest_rep)))
    samples: dict[str, list[float]] = {name: [] for name in names}
    floor_at: dict[int, str] = {}  # repetition -> the callable the floor runs just before
    if floor is not None:
        floor()
        fns = {**fns, "floor": floor}
        number["floor"] = 1
        samples["floor"] = []
        count = min(reps, FLOOR_SAMPLES)
        # each compared callable follows the floor's copy (which leaves nothing of theirs
        # in the cache) equally often
        floor_at = {j * reps // count: names[j % len(names)] for j in range(count)}
    faults = dict.fromkeys(samples, 0)  # minor page faults during each callable's calls
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for k in range(reps):
            shift = k % len(names)
            order = names[shift:] + names[:shift]
            if k in floor_at:
                i = order.index(floor_at[k])
                order = order[:i] + ["floor"] + order[i:]
            for name in order:
                before = _minor_faults()
                samples[name].append(_time_calls(fns[name], number[name]))
                faults[name] += _minor_faults() - before
            if k % 8 == 7:
                gc.collect()
    finally:
        if gc_was_enabled:
            gc.enable()
    out = {}
    for name in samples:
        s = samples[name]
        med = statistics.median(s)
        q = statistics.quantiles(s, n=4) if len(s) >= 2 else [med, med, med]
        out[name] = Timing(med, (q[2] - q[0]) / med if med > 0 else 0.0, reps, number[name],
                           faults[name] / (len(s) * number[name]))
    return out


def _quiet_attempts(settings: Settings, attempts: int):
    """Up to ``attempts`` measurement attempts, each after waiting for idle cores when it is
    a retry or the last measurement was disturbed; yields an :class:`OtherWork` probe
    started just before each (the caller breaks out once an attempt is good enough)."""
    for attempt in range(attempts):
        if attempt or _last_other > RETRY_OTHER:
            wait_for_quiet(settings)
        yield OtherWork()


def compare(tinynet_fn: Callable[[], Any], torch_fns: dict[str, Callable[[], Any]],
            settings: Settings, floor: Callable[[], Any] | None = None) -> Comparison:
    """Times tinynet and every PyTorch layout interleaved; keeps the fastest PyTorch one.

    ``floor``, if given, is timed in the same rotation (see :func:`measure`) and kept in
    :attr:`Comparison.floor`.

    If the previous measurement was disturbed, it first waits for the cores to go idle.
    A measurement that other processes disturbed (they kept more than ``RETRY_OTHER`` of
    the cores busy meanwhile) or whose spread is large (interquartile range above
    ``RETRY_IQR`` of the median on either compared side) is repeated up to
    ``settings.retries`` times; the least disturbed, then least noisy, attempt is kept.
    """
    global _last_other
    fns = {"tinynet": tinynet_fn}
    fns.update({f"torch:{k}": v for k, v in torch_fns.items()})
    best: Comparison | None = None
    for probe in _quiet_attempts(settings, 1 + settings.retries):
        timings = measure(fns, settings, floor)
        comp = Comparison(timings["tinynet"], {k: timings[f"torch:{k}"] for k in torch_fns},
                          probe.fraction(), timings.get("floor"))
        _last_other = comp.other_work or 0.0
        if best is None or _badness(comp) < _badness(best):
            best = comp
        if not _disturbed(best):
            break
    return best


def wait_for_quiet(settings: Settings) -> None:
    """Waits (in 0.5 s polls) until other processes leave the cores idle.

    Waits at most ``settings.case_wait_s`` per call and ``settings.run_wait_s`` per run.
    """
    global _waited_s
    start = time.perf_counter()
    while True:
        left = min(settings.case_wait_s - (time.perf_counter() - start),
                   settings.run_wait_s - _waited_s)
        if left <= 0:
            return
        t0 = time.perf_counter()
        busy = busy_fraction(0.5)
        _waited_s += time.perf_counter() - t0
        if busy is None or busy <= RETRY_OTHER:
            return


def waited_s() -> float:
    """Seconds spent waiting for idle cores so far in this run."""
    return _waited_s


def _disturbed(c: Comparison) -> bool:
    return c.noise > RETRY_IQR or (c.other_work or 0.0) > RETRY_OTHER


def _badness(c: Comparison) -> tuple[float, float]:
    other = c.other_work or 0.0
    return (round(other, 1) if other > RETRY_OTHER else 0.0, c.noise)


def _case_badness(comps: dict[str, Comparison]) -> tuple[float, float]:
    worst = [_badness(c) for c in comps.values()]
    return max(w[0] for w in worst), max(w[1] for w in worst)


def measure_cases(ctx: Context, items: list[tuple[str, Callable[[], dict[str, Comparison]]]]
                  ) -> list[tuple[str, dict[str, Comparison] | Exception]]:
    """Measures every case, then once more (at the group's end) those other work disturbed.

    Contention on a shared machine comes in bursts; a case measured during one is
    measured again after the others (after waiting for idle cores), within
    ``settings.redo_s``, and the less disturbed result is kept.

    Args:
        ctx: The run context.
        items: ``(label, measure)`` pairs; ``measure()`` returns named comparisons. A case
            whose ``measure`` raises is returned with its exception (listed as skipped).

    Returns:
        ``(label, comparisons or exception)`` in the order of ``items``.
    """
    results: list[tuple[str, dict[str, Comparison] | Exception]] = []
    for label, fn in items:
        try:
            results.append((label, fn()))
        except Exception as exc:  # a missing or broken piece skips this case only
            ctx.progress(f"  {label}: skipped: {describe_error(exc)}")
            results.append((label, exc))
    redo = [i for i, (_, r) in enumerate(results)
            if isinstance(r, dict) and _case_badness(r)[0] > 0]
    if not redo or ctx.settings.redo_s <= 0:
        return results
    ctx.progress(f"  measuring again {len(redo)} case(s) disturbed by other processes")
    start = time.perf_counter()
    for i in redo:
        if time.perf_counter() - start > ctx.settings.redo_s:
            break
        wait_for_quiet(ctx.settings)
        label, old = results[i]
        try:
            new = dict(items[i][1]())
        except Exception:  # noqa: BLE001 - keep the first result
            continue
        if _case_badness(new) < _case_badness(old):
            results[i] = (label, new)
    return results


def geomean(values: list[float]) -> float:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return float("nan")
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


_COPY_BUFFERS: dict[int, tuple[np.ndarray, np.ndarray]] = {}
COPY_BYTES = 256 * 2**20  # the copy bandwidth's size: large copies take glibc's fastest path


def _copy_buffers(nbytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and destination of ``nbytes``, made (and touched) once per size and kept
    until :func:`release_copy_buffers`, so a later copy measures copying, not page faults."""
    if nbytes not in _COPY_BUFFERS:
        src = np.ones(nbytes // 4, dtype=np.float32)
        dst = np.zeros_like(src)
        np.copyto(dst, src)
        _COPY_BUFFERS[nbytes] = (src, dst)
    return _COPY_BUFFERS[nbytes]


def copy_gbs(seconds: float, nbytes: int = COPY_BYTES) -> float:
    """Bandwidth in GB/s (bytes read + bytes written, 1e9) of a copy of ``nbytes`` taking
    ``seconds``."""
    return 2 * nbytes / seconds / 1e9


def copier(nbytes: int = COPY_BYTES) -> Callable[[], None]:
    """A callable making one single-thread ``np.copyto`` of ``nbytes`` (the bandwidth copy,
    to time with :func:`measure`'s ``floor``)."""
    src, dst = _copy_buffers(nbytes)
    return lambda: np.copyto(dst, src)


def copy_samples(nbytes: int = COPY_BYTES, reps: int = 7) -> list[float]:
    """``reps`` bandwidth samples (GB/s, :func:`copy_gbs`) of :func:`copier`'s copy."""
    copy = copier(nbytes)
    out = []
    for _ in range(reps):
        start = time.perf_counter()
        copy()
        out.append(copy_gbs(time.perf_counter() - start, nbytes))
    return out


def release_copy_buffers() -> None:
    """Frees the buffers :func:`copier` keeps (512 MiB at the default size)."""
    _COPY_BUFFERS.clear()


def copy_bandwidth(nbytes: int = COPY_BYTES, reps: int = 7) -> float:
    """Single-thread ``np.copyto`` bandwidth in GB/s (bytes read + bytes written, 1e9):
    the median of :func:`copy_samples`."""
    return statistics.median(copy_samples(nbytes, reps))


def torch_copy_bandwidth(nbytes: int = COPY_BYTES, reps: int = 7) -> float:
    """``torch.Tensor.copy_`` bandwidth at the configured thread count, in GB/s (read + write)."""
    import torch

    src = torch.ones(nbytes // 4, dtype=torch.float32)
    dst = torch.zeros_like(src)
    dst.copy_(src)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        dst.copy_(src)
        times.append(time.perf_counter() - start)
    return 2 * src.numel() * 4 / statistics.median(times) / 1e9


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _cpuinfo(field: str) -> str | None:
    """The first value of ``field`` in ``/proc/cpuinfo`` (cpu0's), or None."""
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith(field):
            return line.split(":", 1)[1].strip()
    return None


def cpu_model() -> str:
    return _cpuinfo("model name") or platform.processor() or platform.machine()


def vector_extensions() -> str:
    """The vector instruction sets the kernels compile for here (x86 flags of
    ``/proc/cpuinfo``: AVX2, FMA, AVX-512F; LLVM's name for the host CPU), or n/a."""
    flags = set((_cpuinfo("flags") or "").split())
    known = [name for flag, name in (("avx2", "AVX2"), ("fma", "FMA"), ("avx512f", "AVX-512F"))
             if flag in flags]
    try:
        from llvmlite import binding

        host = binding.get_host_cpu_name()
    except Exception:  # noqa: BLE001  (a fact for the table only)
        host = "?"
    return f"{', '.join(known) or 'none of AVX2, FMA, AVX-512F'} (LLVM host CPU: {host})"


def cache_sizes() -> dict[str, str]:
    """Cache sizes of cpu0 from sysfs, e.g. ``{"L1d": "32K", "L2": "1024K", "L3": "32768K"}``."""
    from tinynet.ops.arrays.streaming import cache_entries

    suffix = {"Data": "d", "Instruction": "i"}
    return {f"L{level}{suffix.get(kind, '')}": f"{size >> 10}K"
            for level, kind, size, _ in cache_entries(0)}


HELD_SPEEDUP = 1.25  # a re-read this much faster than a read from memory: the data was held
HELD_SIZES_MIB = (1, 2, 4, 8, 16, 32, 64, 128)


def held_cache_bytes(reps: int = 9) -> tuple[int, dict[int, float]]:
    """The cache this process holds data in, measured: going up :data:`HELD_SIZES_MIB`,
    the last size before the first whose re-read, right after a first read, runs less
    than :data:`HELD_SPEEDUP` times as fast as that first read after a 256 MiB copy has
    flushed the caches (PyTorch sums at the configured threads, medians of ``reps``).
    Data of at most that size counts as fitting in the cache.

    The last-level cache sysfs reports is not that cache on a VM given two cores of a
    socket-wide one (260 MiB on the Intel VM, where two threads re-read 16-128 MiB at
    1.0-1.3x the speed of a read from memory).

    Returns:
        ``(bytes, {MiB: speedup})``; 0 bytes when no size qualifies.
    """
    import torch

    flush = copier()
    held, speedups = 0, {}
    for mib in HELD_SIZES_MIB:
        a = torch.ones(mib << 18)
        first, again = [], []
        for _ in range(reps):
            flush()
            start = time.perf_counter()
            a.sum()
            mid = time.perf_counter()
            a.sum()
            first.append(mid - start)
            again.append(time.perf_counter() - mid)
        speedups[mib] = statistics.median(first) / statistics.median(again)
        if speedups[mib] < HELD_SPEEDUP:
            break
        held = mib << 20
    return held, speedups


def machine_info() -> dict[str, str]:
    """Facts printed above the tables (CPU, cores, caches, versions, threading)."""
    import numba
    import torch

    import tinynet

    caches = cache_sizes()
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "not yet initialized"
    return {
        "CPU": cpu_model(),
        "vector extensions": vector_extensions(),
        "cores visible": f"{os.cpu_count()} (affinity: {len(os.sched_getaffinity(0))})",
        "caches (cpu0)": ", ".join(f"{k} {v}" for k, v in caches.items()) or "n/a",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": f"{numba.__version__} (threading layer: {layer})",
        "torch": torch.__version__,
        "tinynet": getattr(tinynet, "__version__", "?"),
        "threads": f"{THREADS} (torch.set_num_threads, tinynet.tuning.set_num_threads)",
        "OpenMP wait": (", ".join(f"{k} {v or 'unset'}" for k, v in _ENV_AT_START.items())
                        + " at start (read by PyTorch's libgomp, which Numba's OpenMP "
                        + "calls use too); after tinynet's import: "
                        + ", ".join(f"{k} {os.environ.get(k) or 'unset'}"
                                    for k in _ENV_AT_START)
                        + " (read only by an OpenMP runtime loaded later)"),
    }


def load_average() -> str:
    """The 1, 5 and 15 minute load averages (how busy the shared machine was)."""
    try:
        return ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def _cpu_ticks() -> tuple[int, int] | None:
    """(idle, total) jiffies summed over all cores, from /proc/stat."""
    text = _read("/proc/stat")
    if not text or not text.startswith("cpu "):
        return None
    vals = [int(v) for v in text.splitlines()[0].split()[1:]]
    return vals[3] + vals[4], sum(vals[:8])


class OtherWork:
    """Measures how busy the cores are with processes other than this one (and its children).

    ``fraction()`` is the share of all cores' time since construction spent running other
    processes: a noise indicator for the shared machine.
    """

    def __init__(self) -> None:
        self._ticks = _cpu_ticks()
        self._own = self._own_cpu()

    @staticmethod
    def _own_cpu() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def fraction(self) -> float | None:
        ticks = _cpu_ticks()
        if self._ticks is None or ticks is None or ticks[1] == self._ticks[1]:
            return None
        hz = os.sysconf("SC_CLK_TCK")
        total = (ticks[1] - self._ticks[1]) / hz
        busy = total - (ticks[0] - self._ticks[0]) / hz
        return min(max((busy - (self._own_cpu() - self._own)) / total, 0.0), 1.0)


def busy_fraction(seconds: float = 0.5) -> float | None:
    """Share of all cores busy with other processes over the next ``seconds``."""
    probe = OtherWork()
    time.sleep(seconds)
    return probe.fraction()


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    if ms >= 100:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


def fmt_ratio(r: float) -> str:
    return "n/a" if r is None or not math.isfinite(r) else f"{r:.2f}"


def describe_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# -- results ---------------------------------------------------------------------------


@dataclass
class Table:
    """One result table (rendered as aligned text on the console and markdown in the docs)."""

    title: str
    headers: list[str]
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class GroupResult:
    """What a benchmark group returns: tables, geometric means and notes."""

    name: str
    title: str
    tables: list[Table] = field(default_factory=list)
    geomeans: list[tuple[str, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None


@dataclass
class Context:
    """Passed to every group: measurement settings and machine facts."""

    settings: Settings
    bandwidth_gbs: float
    held_cache_bytes: int  # see held_cache_bytes()
    progress: Callable[[str], None] = print
    peer_path: str = ""  # folders holding keras and jax, for the Keras-on-JAX columns


def torch_layouts(x_nhwc: np.ndarray, requires_grad: bool = False) -> dict[str, Any]:
    """The same 4-D channels-last array as PyTorch NCHW tensors in both memory formats."""
    import torch

    logical = torch.from_numpy(np.ascontiguousarray(x_nhwc)).permute(0, 3, 1, 2)
    out = {"NCHW": logical.contiguous().clone(),
           "channels_last": logical.contiguous(memory_format=torch.channels_last).clone()}
    for t in out.values():
        t.requires_grad_(requires_grad)
    return out


def torch_cell(c: Comparison) -> str:
    """PyTorch's best time and the layout that won."""
    return f"{fmt_ms(c.torch_best.median_s)} ({c.best_layout})"


def noise_cell(c: Comparison, *related: Comparison) -> str:
    """``c``'s relative interquartile range; '*' if other work disturbed it or ``related``."""
    mark = "*" if any((r.other_work or 0.0) > RETRY_OTHER for r in (c, *related)) else ""
    return f"{100 * c.noise:.0f}%{mark}"


# -- generic single-layer forward + backward cases ------------------------------------------


@dataclass
class LayerCase:
    """One layer timed forward + backward against a ``torch.nn.functional`` op.

    Attributes:
        label: Row label.
        make_layer: Returns the (unbuilt) tinynet layer; it is built for ``x_shape``.
        x_shape: Channels-last input shape.
        torch_op: ``torch_op(x, *params)`` -> output (x in PyTorch's logical layout).
        param_shapes: Shapes of the PyTorch weights (all ``requires_grad``).
        sequence: A 3-D input ``[batch, steps, channels]`` goes to ``torch_op`` as
            PyTorch's 1-D ``[batch, channels, steps]``, contiguous ("NCL") or a view of the
            channels-last array ("NLC"); otherwise a 3-D input goes as it is.
    """

    label: str
    make_layer: Callable[[], Any]
    x_shape: tuple
    torch_op: Callable[..., Any]
    param_shapes: list[tuple] = field(default_factory=list)
    sequence: bool = False


def _sequence_layouts(x_nlc: np.ndarray, requires_grad: bool = False) -> dict[str, Any]:
    """A channels-last sequence as PyTorch ``[N, C, L]`` tensors, contiguous and not."""
    import torch

    out = {"NCL": torch.from_numpy(np.ascontiguousarray(x_nlc.transpose(0, 2, 1))),
           "NLC": torch.from_numpy(np.ascontiguousarray(x_nlc)).permute(0, 2, 1)}
    return {k: t.requires_grad_(True) if requires_grad else t for k, t in out.items()}


def _torch_fwd_bwd_fns(case: LayerCase, x: np.ndarray, g: np.ndarray,
                       rng: np.random.Generator) -> dict[str, Callable[[], Any]]:
    import torch

    if x.ndim == 4:
        xs, gs = torch_layouts(x, requires_grad=True), torch_layouts(g)
    elif case.sequence:
        xs, gs = _sequence_layouts(x, requires_grad=True), _sequence_layouts(g)
    else:
        xs = {"row-major": torch.from_numpy(x.copy()).requires_grad_(True)}
        gs = {"row-major": torch.from_numpy(g.copy())}
    values = [torch.from_numpy(rng.standard_normal(s, dtype=np.float32) * 0.1)
              for s in case.param_shapes]
    fns = {}
    for layout, xt in xs.items():
        params = []
        for v in values:
            p = v.clone()
            if layout == "channels_last" and p.ndim == 4:
                p = p.contiguous(memory_format=torch.channels_last)
            params.append(p.requires_grad_(True))

        def fn(xt=xt, gt=gs[layout], params=params) -> None:
            xt.grad = None
            for p in params:
                p.grad = None
            torch.autograd.backward(case.torch_op(xt, *params), gt)

        fns[layout] = fn
    return fns


def run_comparisons(ctx: Context, title: str, torch_header: str,
                    items: list[tuple[str, Callable[[], tuple[Callable, dict]]]]) -> tuple[Table, float]:
    """Times a list of cases; returns their table and the geometric mean of the ratios.

    Args:
        ctx: The run context.
        title: Table title.
        torch_header: Header of the PyTorch column, e.g. "torch ms (layout)".
        items: ``(label, make)`` pairs; ``make()`` returns the tinynet callable and a dict of
            PyTorch callables (variant name -> callable). A case whose ``make`` or warm-up
            raises is listed as skipped.
    """

    def measurer(label: str, make: Callable[[], tuple[Callable, dict]]):
        def fn() -> dict[str, Comparison]:
            tn_fn, torch_fns = make()
            comp = compare(tn_fn, torch_fns, ctx.settings)
            ctx.progress(f"  {label}: ratio {comp.ratio:.2f} (torch {comp.best_layout})")
            return {"": comp}

        return fn

    table = Table(title, ["case", "tinynet ms", torch_header, "ratio", "noise"])
    ratios = []
    for label, res in measure_cases(ctx, [(label, measurer(label, make)) for label, make in items]):
        if isinstance(res, Exception):
            table.rows.append([label, f"skipped: {describe_error(res)}", "", "", ""])
            continue
        comp = res[""]
        ratios.append(comp.ratio)
        table.rows.append([label, fmt_ms(comp.tinynet.median_s), torch_cell(comp),
                           fmt_ratio(comp.ratio), noise_cell(comp)])
    return table, geomean(ratios)


def run_layer_cases(ctx: Context, result: GroupResult, cases: list[LayerCase]) -> GroupResult:
    """Times every case forward + backward; fills ``result`` with a table and the geomean."""
    rng = np.random.default_rng(0)

    def maker(case: LayerCase) -> Callable[[], tuple[Callable, dict]]:
        def make() -> tuple[Callable, dict]:
            layer = case.make_layer()
            layer.build((None, *case.x_shape[1:]))
            x = rng.standard_normal(case.x_shape, dtype=np.float32)
            y = np.asarray(layer.forward(x, training=True))
            g = rng.standard_normal(y.shape, dtype=np.float32)

            def tn_fn() -> None:
                layer.forward(x, training=True)
                layer.backward(g)

            return tn_fn, _torch_fwd_bwd_fns(case, x, g, rng)

        return make

    table, gm = run_comparisons(
        ctx, "forward + backward (ratio = tinynet time / PyTorch time; < 1 is faster)",
        "torch ms (layout)", [(case.label, maker(case)) for case in cases])
    result.tables.append(table)
    result.geomeans.append(("geomean ratio fwd+bwd", gm))
    return result
