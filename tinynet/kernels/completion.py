"""The lock of a helper that completes the kernel cache, and the wait for it.

A first ``fit`` on a cold cache starts a compile-ahead helper
(:mod:`tinynet.tools.compile_ahead`) that, after compiling ahead of the fit, compiles
every serial and parallel variant of the model's kernels, and goes on after the fit's
process has ended. While it runs it holds an exclusive lock on one file in the cache
(:func:`completion_lock_path`). A process about to compile a kernel the cache does not
hold yet first waits for such a helper, then loads the kernel from the cache: a later
run of the same model never compiles what the helper is compiling for it.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from numba.core import caching

try:
    import fcntl
except ImportError:  # Windows: nothing is locked, nothing waits
    fcntl = None

__all__ = ["OWN_COMPLETER", "completion_lock_path", "hold_completion_lock",
           "release_completion_lock_copy", "wait_for_completion", "wait_for_completer"]

#: Whether this process started the helper completing the cache, or is that helper: it
#: never waits for it (:func:`wait_for_completer`).
OWN_COMPLETER: bool = False
_held: Any = None  # the lock's open file, while this process holds it

WAIT_NOTICE = "tinynet: waiting for another process to finish compiling kernels into {where}"


def _anchor() -> None:
    """A function of this folder: Numba's cache folder for it is the kernels' one."""


@functools.lru_cache(maxsize=1)
def completion_lock_path() -> str | None:
    """The lock file of a helper completing the cache: in the cache folder of this
    package's kernels (where Numba puts the cache of a function defined here)."""
    folder = getattr(caching.FunctionCache(_anchor), "_cache_path", None)
    return os.path.join(folder, "locks", "completing") if folder else None


def hold_completion_lock() -> bool:
    """Takes the lock for the rest of this process (and of a child forked after it: the
    lock belongs to the open file, which the child inherits); False where another process
    holds it or nothing can be locked."""
    global _held
    if _held is not None:
        return True
    path = completion_lock_path()
    if fcntl is None or path is None:
        return False
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fh = open(path, "a+b")
    except OSError:  # a read-only cache
        return False
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        return False
    _held = fh
    return True


def release_completion_lock_copy() -> None:
    """In the parent of a forked helper: closes this process's copy of the lock's file
    without unlocking it (the helper's copy keeps it locked until the helper ends)."""
    global _held
    fh, _held = _held, None
    if fh is not None:
        fh.close()


def wait_for_completion(path: str | None = None) -> bool:
    """Blocks while a helper completes the cache whose lock file is ``path`` (default:
    :func:`completion_lock_path`); returns whether one was running."""
    path = path or completion_lock_path()
    if fcntl is None or path is None or not os.path.exists(path):
        return False
    with open(path, "rb") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return False
        except OSError:
            fcntl.flock(fh, fcntl.LOCK_SH)
            return True


def wait_for_completer(dispatcher: Any, sig: Any) -> None:
    """Called before ``dispatcher`` compiles ``sig`` (holding no kernel lock): when another
    run's helper is completing the cache and the kernel is not in the cache yet, says so
    and waits for the helper (which compiles every variant of that run's kernels), so the
    compile that follows loads the kernel instead."""
    if OWN_COMPLETER or fcntl is None:
        return
    path = completion_lock_path()
    if path is None or not os.path.exists(path):
        return
    with open(path, "rb") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return  # no helper running
        except OSError:
            pass
        if dispatcher._cache.load_overload(sig, dispatcher.targetctx) is not None:
            return  # cached already (the compile that follows loads it)
        from tqdm import tqdm  # writes above any progress bar on the screen

        where = getattr(dispatcher._cache, "_cache_path", None) or os.path.dirname(path)
        tqdm.write(WAIT_NOTICE.format(where=where), file=sys.stderr)
        fcntl.flock(fh, fcntl.LOCK_SH)
