"""Compile early: on a cold kernel cache, ``import tinynet`` starts compiling at once.

A training script spends its first seconds importing (tinynet, Numba, its data library)
and loading its data before its first ``fit`` meets a kernel and starts the fit's
compile-ahead helper (:mod:`tinynet.tools.compile_ahead`); on a machine with two cores
or more the second core idles meanwhile. So on a cold cache ``import tinynet`` forks one
*early helper* that compiles, into the same cache, the kernels a small classifier's
training step runs whatever its other layers are: Adam's update and check blocks, then a
ReLU ``Dense`` layer's backward and forward (the small GEMM, the activation pair, the
bias gradient's column fold and merge) on batches of 32. The fit and its helper then load
those from the cache (or wait for the one the early helper is compiling; the compile locks
of :mod:`tinynet.kernels._jit`).

The early helper ends when its list is done, or after the kernel it is compiling when
the process that started it has ended, or when that process's first fit starts the fit's
own helper, which knows the model (:func:`tinynet.tools.primed.stop`). It computes
nothing the program reads.

A warm cache starts nothing. Deciding costs one ``stat`` and no Numba import: once the
early helper has finished its list, or a fit's helper has completed the cache, or the
warmup has run, a marker file sits in the cache's ``locks`` folder
(:func:`tinynet.tools.primed.marker_path`), and no early helper starts while a fit's
helper is still completing the cache. The cache folder is found without Numba, as Numba
finds it for tinynet's kernels: under ``NUMBA_CACHE_DIR`` when set, else the kernels'
``__pycache__`` (where that is not writable, nothing starts early). The helper is a
fork, so it starts only on Linux, with two usable cores or more, before Numba's thread
pool runs, with no library of :data:`tinynet.tools.compile_ahead.FORK_UNSAFE_MODULES`
loaded, no other Python thread running (a notebook's kernel has some) and not in a
``multiprocessing`` child; ``TINYNET_COMPILE_AHEAD=0`` turns it off (and the fits'
helpers with it), as the test suite does.
"""

from __future__ import annotations

import os
import signal
import sys
import warnings

from tinynet import tuning
from tinynet.tools import primed, usable_cores

__all__ = ["start"]

#: The libraries whose thread pools make a fork unsafe (as compile_ahead's list, which
#: this module does not import: it loads with ``import tinynet``).
_FORK_UNSAFE = ("torch", "tensorflow", "jax")
_stopping = False  # in the early helper: asked to stop after its current kernel


def _wanted() -> bool:
    """Whether this process forks an early helper (every condition of the module's
    docstring, the cheap ones first)."""
    if (tuning.env("TINYNET_COMPILE_AHEAD") or "1").strip() == "0":
        return False
    if (tuning.env("NUMBA_DISABLE_JIT") or "0").strip() not in ("", "0"):
        return False
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if any(name in sys.modules for name in _FORK_UNSAFE) or usable_cores() < 2:
        return False
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return False  # a fork keeps the locks the other threads hold (a notebook's)
    mp = sys.modules.get("multiprocessing")
    if mp is not None and (mp.parent_process() is not None
                           or getattr(mp.current_process(), "_inheriting", False)):
        # a worker of a process pool (the warmup's): its parent decides. A spawned worker
        # imports tinynet while it unpickles its task, before parent_process() is set
        return False
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is not None and parallel._is_initialized:
        return False
    marker = primed.marker_path()
    if marker is None or os.path.exists(marker):
        return False
    return not primed.completer_running(os.path.dirname(os.path.dirname(marker)))


def start() -> bool:
    """Forks the early helper where :func:`_wanted` says so (once per process); returns
    whether it did. ``import tinynet`` calls it."""
    if primed.helper_pid() is not None or not _wanted():
        return False
    parent = os.getpid()
    with warnings.catch_warnings():  # Python 3.12+ warns on a fork with threads running
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        primed.remember(pid)
        return True
    _child(parent)
    return False  # not reached: the child leaves with os._exit


def _ask_to_stop(signum: int, frame: object) -> None:
    global _stopping
    _stopping = True


def _child(parent: int) -> None:
    """The early helper: compiles the list, marks the cache primed if it got to the end,
    and leaves with ``os._exit`` (no exit handler of the program's)."""
    code = 1
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):  # not the program's own handlers
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGUSR1, _ask_to_stop)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        from tinynet.tools import compile_ahead

        if compile_ahead.run_head(lambda: _stopping or os.getppid() != parent):
            primed.mark_primed()
        code = 0
    finally:
        os._exit(code)
