"""Global tuning gates: where each kernel runs (serial or parallel), never what it computes.

Every serial/parallel decision in tinynet goes through this module. A *gate* is an
element (or work) count at or above which a kernel runs its parallel variant. Gates are
read only in Python wrappers, never inside Numba kernels, and every parallel variant
computes the same bits as its serial twin (fixed, shape-derived blocks merged in order),
so moving a gate or the thread count changes speed only.

Sources, later wins: built-in defaults, the JSON profile named by
``TINYNET_TUNING_FILE``, environment variables ``TINYNET_<NAME_UPPER>``, then
:func:`set` / :func:`override`. ``TINYNET_NUM_THREADS`` sets the thread count.

Example:
    >>> from tinynet import tuning
    >>> with tuning.override(gn_row_parallel_min_elems=0):
    ...     pass  # group norm runs its parallel passes at any size here
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from tinynet.tuning import load

__all__ = [
    "get", "set", "reset", "override", "gates", "defaults", "describe", "sources",
    "set_num_threads", "get_num_threads", "max_threads", "use_parallel", "load_profile",
    "set_adaptive_threads", "get_adaptive_threads", "ADAPT_PERIOD",
    "GATE_DOCS", "ENVIRONMENT", "env", "env_bytes", "SPIN_COUNT",
]

_MAX_GATE = 2**62


@dataclass(frozen=True)
class _Gate:
    default: int
    unit: str
    doc: str


# Built-in defaults: serial-vs-parallel crossovers measured on the 2-core CI machine with
# the calibrate command (python -m tinynet.tools.calibrate), the median of three runs
# (tables in docs/tuning.md). 2**62 = never parallel. The convolution and pooling gates sit
# above their probes' crossovers: in a training step a region's second thread starts
# cold after the Python between layers, and the digits CNN's convolutions and pools ran
# faster serial (docs/tuning.md).
_GATES: dict[str, _Gate] = {
    "gn_row_parallel_min_elems": _Gate(
        262_144, "elements",
        "group/instance norm per-sample statistics and row sweeps (forward and backward)"),
    "gn_param_grad_parallel_min_elems": _Gate(
        2**62, "partial elements",
        "merge of the gamma/beta column-fold partials (group-norm core)"),
    "bn_parallel_min_elems": _Gate(
        1_048_576, "elements",
        "batch norm statistics, sweeps and parameter-gradient folds"),
    "ln_parallel_min_elems": _Gate(
        32_768, "elements",
        "layer norm per-row statistics and sweeps"),
    "reduce_parallel_min_elems": _Gate(
        32_768, "elements", "det_reduce blocked sums"),
    "elementwise_parallel_min_elems": _Gate(
        131_072, "elements", "activations, dropout and other elementwise passes"),
    "matmul_parallel_min_flops": _Gate(
        2_097_152, "multiply-adds", "deterministic GEMM tiles on Numba's threads"),
    "conv_parallel_min_elems": _Gate(
        131_072, "patch elements",
        "convolution passes (direct register kernels, tiled im2col / GEMM / col2im; "
        "depthwise rows)"),
    "pool_parallel_min_elems": _Gate(
        65_536, "elements", "pooling forward and backward"),
    "optimizer_parallel_min_elems": _Gate(
        65_536, "elements", "fused optimizer update kernels"),
    "rnn_parallel_min_muladds": _Gate(
        65_536, "multiply-adds",
        "recurrent layers' step loops (batch rows on threads; the recurrent products of "
        "the whole sequence counted)"),
}

GATE_DOCS: dict[str, str] = {name: gate.doc for name, gate in _GATES.items()}

_lock = threading.RLock()
_values: dict[str, int] = {}
_sources: dict[str, str] = {}
_threads: int | None = None
_threads_source = "default"
_loaded = False
_workqueue: bool | None = None  # Numba runs on its workqueue layer (known once launched)
# Per thread: the (count, generation) for which Numba's thread count was last checked.
# Asking Numba costs microseconds per call (tens once big tensors have pushed the
# interpreter's data out of the cache), so it is asked once per thread and per
# set_num_threads call, not on every kernel launch.
_checked = threading.local()
_generation = 0
_adaptive = True  # fewer threads while other processes keep cores busy
#: Seconds between two looks at how many cores other processes leave free.
ADAPT_PERIOD = 0.1
_adapt_at = 0.0  # time.monotonic() of the next look
_adapt_free: int | None = None  # free cores at the last look (None: unknown)


def _check_name(name: str) -> None:
    if name not in _GATES:
        valid = ", ".join(sorted(_GATES))
        raise KeyError(f"unknown tuning gate {name!r}; valid gates: {valid}")


def _check_value(name: str, value: object, origin: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"tuning gate {name} ({origin}): value must be a non-negative int, "
            f"got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(
            f"tuning gate {name} ({origin}): value must be >= 0, got {value}")
    return int(value)


def _parse_env_int(var: str, text: str, unit: str = "") -> int:
    """``text`` as an int (``_`` separators allowed); a gate's own check rejects negative
    values with its name, :func:`env_bytes` with this message."""
    try:
        return int(text.strip().replace("_", ""))
    except ValueError:
        raise ValueError(f"environment variable {var}={text!r}: expected a non-negative "
                         f"integer{unit}") from None


# -- the environment -----------------------------------------------------------------------
#: Every environment variable tinynet reads, all of them through this module, and what
#: each does (docs/tuning.md lists them).
ENVIRONMENT: dict[str, str] = {
    "TINYNET_TUNING_FILE": "a JSON profile of gate values and the thread count",
    "TINYNET_<GATE>": "one gate's value, e.g. TINYNET_GN_ROW_PARALLEL_MIN_ELEMS=0",
    "TINYNET_NUM_THREADS": "the thread count of tinynet's parallel kernels",
    "TINYNET_ADAPTIVE_THREADS": "0 keeps the thread count fixed when other processes "
                                "are busy (default 1: fewer threads then)",
    "TINYNET_STREAM_MIN_BYTES": "outputs of at least this many bytes are written with "
                                "streaming stores (default: from the cache sizes)",
    "NUMBA_SLP_VECTORIZE": "0 keeps LLVM's SLP vectorizer off for tinynet's kernels too "
                           "(tinynet turns it on for them otherwise)",
    "OMP_WAIT_POLICY": "set: tinynet leaves OpenMP's wait policy alone (else it sets "
                       "GOMP_SPINCOUNT)",
    "GOMP_SPINCOUNT": "set: tinynet keeps it (else it sets 10,000 before Numba starts "
                      "its OpenMP pool)",
    "COLUMNS": "the width of model summaries, as Keras reads it",
    "TINYNET_COMPILE_AHEAD": "0: no compile-ahead helper processes on a cold kernel "
                             "cache (default 1)",
    "NUMBA_CACHE_DIR": "read beside Numba to find the kernel cache before Numba loads "
                       "(tinynet.tools.compile_early)",
    "NUMBA_DISABLE_JIT": "read beside Numba: set, no early compile helper starts",
}


def env(name: str) -> str | None:
    """The environment's value of ``name`` (one of :data:`ENVIRONMENT`'s), or ``None``.

    Raises:
        KeyError: ``name`` is not a variable tinynet reads.
    """
    if name not in ENVIRONMENT:
        raise KeyError(f"tinynet reads no environment variable {name!r}; it reads "
                       f"{', '.join(sorted(ENVIRONMENT))}")
    return os.environ.get(name)


def env_bytes(name: str) -> int | None:
    """:func:`env` as a non-negative integer (``None`` when unset or blank).

    Raises:
        ValueError: set to anything but a non-negative integer.
    """
    text = env(name)
    if text is None or not text.strip():
        return None
    value = _parse_env_int(name, text, " (bytes)")
    if value < 0:
        raise ValueError(f"environment variable {name}={text!r}: expected a non-negative "
                         "integer (bytes)")
    return value


# How long an idle OpenMP worker spins before it sleeps, set before Numba starts its
# OpenMP pool unless the user chose a wait policy or spin count (docs/tuning.md). Waking a
# sleeping worker costs a parallel region 64-230 us on this project's VMs, against 3-10 us
# for a spinning one, and a training step runs hundreds of regions: sleeping at once
# (OMP_WAIT_POLICY=PASSIVE) made a digits epoch 1.3-1.5x as long. libgomp's default spin
# (300,000 rounds) is as fast alone but 5-10x slower with two such processes on two cores;
# 10,000 rounds keeps most of the speed alone and costs 1.5x there. It goes into the
# environment, so it reaches child processes and an OpenMP runtime loaded later (a
# PyTorch imported after tinynet), not one loaded already; only libgomp reads it.
SPIN_COUNT = 10_000
if env("OMP_WAIT_POLICY") is None and env("GOMP_SPINCOUNT") is None:
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)


def load_profile(path: str | os.PathLike) -> dict[str, int]:
    """Reads a JSON tuning profile: ``{"gates": {name: value}, "num_threads": n}``.

    A flat ``{name: value}`` mapping is accepted too.

    Args:
        path: The profile file.

    Returns:
        The gate values it sets (validated).

    Raises:
        ValueError: The file is not valid JSON or not a mapping.
        KeyError: It names an unknown gate.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"tuning profile {os.fspath(path)!r} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"tuning profile {os.fspath(path)!r}: expected a JSON object, got {type(data).__name__}")
    gate_values = data.get("gates", data if "gates" not in data else {})
    out = {}
    for name, value in gate_values.items():
        if name == "num_threads":
            continue
        _check_name(name)
        out[name] = _check_value(name, value, f"profile {os.fspath(path)}")
    return out


def _ensure_loaded() -> None:
    global _loaded, _threads, _threads_source, _adaptive
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        values = {name: gate.default for name, gate in _GATES.items()}
        sources = {name: "default" for name in _GATES}
        profile = env("TINYNET_TUNING_FILE")
        if profile:
            for name, value in load_profile(profile).items():
                values[name], sources[name] = value, "profile"
            with open(profile, encoding="utf-8") as fh:
                threads = json.load(fh).get("num_threads")
            if threads is not None:
                _threads, _threads_source = _check_threads(threads, "profile"), "profile"
        for name in _GATES:
            var = f"TINYNET_{name.upper()}"
            if var in os.environ:
                value = _parse_env_int(var, os.environ[var])
                values[name] = _check_value(name, value, f"environment {var}")
                sources[name] = "env"
        if env("TINYNET_ADAPTIVE_THREADS"):
            text = env("TINYNET_ADAPTIVE_THREADS").strip()
            if text not in ("0", "1"):
                raise ValueError(f"environment variable TINYNET_ADAPTIVE_THREADS={text!r}: "
                                 "expected 0 or 1")
            _adaptive = text == "1"
        if env("TINYNET_NUM_THREADS"):
            n = _parse_env_int("TINYNET_NUM_THREADS", env("TINYNET_NUM_THREADS"))
            _threads, _threads_source = _check_threads(n, "environment TINYNET_NUM_THREADS"), "env"
        _values.update(values)
        _sources.update(sources)
        _loaded = True


def get(name: str) -> int:
    """Returns the current value of gate ``name`` (``KeyError`` if unknown)."""
    _ensure_loaded()
    _check_name(name)
    return _values[name]


def set(**values: int) -> None:  # noqa: A001 - pinned public name
    """Sets one or more gates, e.g. ``tuning.set(gn_row_parallel_min_elems=0)``.

    Raises:
        KeyError: An unknown gate name (the message lists the valid ones).
        TypeError: A value that is not an int.
        ValueError: A negative value.
    """
    _ensure_loaded()
    checked = {}
    for name, value in values.items():
        _check_name(name)
        checked[name] = _check_value(name, value, "tuning.set")
    with _lock:
        for name, value in checked.items():
            _values[name], _sources[name] = value, "set"


def reset(*names: str) -> None:
    """Restores gates to their built-in defaults; no names resets every gate and the threads."""
    global _threads, _threads_source, _generation
    _ensure_loaded()
    for name in names:
        _check_name(name)
    with _lock:
        for name in names or tuple(_GATES):
            _values[name], _sources[name] = _GATES[name].default, "default"
        if not names:
            _threads, _threads_source = None, "default"
            _generation += 1


@contextlib.contextmanager
def override(**values: int) -> Iterator[None]:
    """Context manager that sets gates and restores their previous values on exit."""
    _ensure_loaded()
    with _lock:
        saved = {name: (_values.get(name), _sources.get(name)) for name in values}
    set(**values)
    try:
        yield
    finally:
        with _lock:
            for name, (value, source) in saved.items():
                _values[name], _sources[name] = value, source


def gates() -> dict[str, int]:
    """Returns every gate's current value."""
    _ensure_loaded()
    return dict(_values)


def defaults() -> dict[str, int]:
    """Returns every gate's built-in default."""
    return {name: gate.default for name, gate in _GATES.items()}


def sources() -> dict[str, str]:
    """Returns where each gate's current value came from (default/profile/env/set)."""
    _ensure_loaded()
    return dict(_sources)


def max_threads() -> int:
    """The most threads tinynet may use here (Numba's ``NUMBA_NUM_THREADS``)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


def _check_threads(n: object, origin: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"num_threads ({origin}): expected an int, got {n!r}")
    limit = max_threads()
    if not 1 <= n <= limit:
        raise ValueError(f"num_threads ({origin}): expected 1 <= n <= {limit}, got {n}")
    return n


def set_num_threads(n: int) -> None:
    """Sets how many threads tinynet's parallel kernels and GEMM blocks use.

    Results never depend on this number (docs/determinism.md).

    Raises:
        TypeError: ``n`` is not an int.
        ValueError: ``n`` is below 1 or above :func:`max_threads`.
    """
    global _threads, _threads_source, _generation
    _ensure_loaded()
    n = _check_threads(n, "set_num_threads")
    with _lock:
        _threads, _threads_source = n, "set"
        _generation += 1


def get_num_threads() -> int:
    """Returns the thread count tinynet uses (default: every core Numba sees)."""
    _ensure_loaded()
    return _threads if _threads is not None else max_threads()


def set_adaptive_threads(on: bool) -> None:
    """Turns the adaptive thread count on (the default) or off.

    When on, parallel kernels use no more threads than the cores other processes leave
    free, looked up every :data:`ADAPT_PERIOD` seconds (Linux; elsewhere it has no
    effect): with another process keeping a core busy, a parallel region waits whenever
    the scheduler sets one of its threads aside, so on a busy 2-core machine the serial
    kernels run instead. Results never depend on it (docs/determinism.md).

    Raises:
        TypeError: ``on`` is not a bool.
    """
    global _adaptive, _adapt_at
    if not isinstance(on, bool):
        raise TypeError(f"set_adaptive_threads(on): expected a bool, got {on!r}")
    _ensure_loaded()
    with _lock:
        _adaptive, _adapt_at = on, 0.0


def get_adaptive_threads() -> bool:
    """Whether the thread count adapts to other processes' load (default ``True``)."""
    _ensure_loaded()
    return _adaptive


def _threads_free(n: int) -> int:
    """``n``, or fewer when other processes leave fewer cores free (looked at every
    :data:`ADAPT_PERIOD` seconds)."""
    global _adapt_at, _adapt_free
    now = time.monotonic()
    if now >= _adapt_at:
        _adapt_free = load.free_cores()
        _adapt_at = now + ADAPT_PERIOD
    free = _adapt_free
    return n if free is None else min(n, free)


def use_parallel(name: str, work: int) -> bool:
    """Whether a kernel with ``work`` units under gate ``name`` should run in parallel.

    Called only from Python wrappers. With the adaptive thread count on
    (:func:`set_adaptive_threads`) it counts only the cores other processes leave free,
    and answers no when that leaves one. When it answers yes it also sets Numba's thread
    count for the calling thread to that many threads (checked once per thread and
    per :func:`set_num_threads` call: code that changes it with ``numba.set_num_threads``
    behind tinynet's back should call :func:`set_num_threads` again). On Numba's
    ``workqueue`` threading layer (not thread-safe) it answers yes on the main thread
    only, and warns once.
    """
    _ensure_loaded()
    if work < _values[name]:
        return False
    n = _threads if _threads is not None else max_threads()
    if n > 1 and _adaptive:
        n = _threads_free(n)
    if n <= 1:
        return False
    if getattr(_checked, "key", None) != (n, _generation):
        import numba

        if numba.get_num_threads() != n:
            numba.set_num_threads(n)
        _checked.key = (n, _generation)
    if _workqueue is not False and _on_workqueue() \
            and threading.current_thread() is not threading.main_thread():
        return False  # workqueue aborts on concurrent launches: serial variant, same bits
    return True


def _on_workqueue() -> bool:
    """Whether Numba's threads run on its ``workqueue`` layer; warns once if so.

    That layer aborts the process when parallel kernels are launched from two threads at
    once, so :func:`use_parallel` then answers yes on the main thread only.
    """
    global _workqueue
    if _workqueue is None:
        import numba

        try:
            layer = numba.threading_layer()
        except ValueError:  # no threads launched yet
            return False
        with _lock:
            if _workqueue is None:
                _workqueue = layer == "workqueue"
                if _workqueue:
                    warnings.warn(
                        "tinynet: Numba is using its 'workqueue' threading layer, which is "
                        "not thread-safe, so tinynet runs parallel kernels on the main thread "
                        "only (other threads use the serial kernels; results are the same). "
                        "To fix it, install an OpenMP runtime (e.g. apt-get install libgomp1) "
                        "or TBB (pip install tbb) and set NUMBA_THREADING_LAYER=omp (or tbb).",
                        RuntimeWarning, stacklevel=4)
    return _workqueue


def describe() -> str:
    """Returns a table of every gate: name, value, default, source and what it gates."""
    _ensure_loaded()
    rows = [("gate", "value", "default", "source", "what it gates")]
    for name, gate in _GATES.items():
        rows.append((name, str(_values[name]), str(gate.default), _sources[name], gate.doc))
    rows.append(("num_threads", str(get_num_threads()), str(max_threads()),
                 _threads_source, "threads for parallel kernels and GEMM blocks"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]),
                 row[2].rjust(widths[2]), row[3].ljust(widths[3]), row[4]]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths) + "  " + "-" * 13)
    return "\n".join(lines)
