"""The kernel cache's *primed* marker and the early helper's process id.

Shared by :mod:`tinynet.tools.compile_early` (which starts the early helper on a cold
cache), :mod:`tinynet.tools.compile_ahead` (whose fit helper stops it and marks the cache
once complete) and :mod:`tinynet.tools.warmup` (which marks it too); a leaf, so none of
them imports another for it. Nothing here imports Numba: ``import tinynet`` reads it.
"""

from __future__ import annotations

import hashlib
import os
import signal

from tinynet import tuning

__all__ = ["cache_folder", "marker_path", "is_primed", "mark_primed", "completer_running",
           "helper_pid", "remember", "stop", "reap"]

_MARKER = "primed"
_pid: int | None = None  # the early helper this process forked, until reaped


def _kernels_folder() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "kernels")


def cache_folder() -> str | None:
    """The cache folder of tinynet's kernels, as Numba's locators find it, without
    importing Numba: ``NUMBA_CACHE_DIR/kernels_<sha1 of the kernels folder>`` when that
    variable is set, else the kernels' ``__pycache__`` where writable (``None`` else:
    Numba's cache then lies elsewhere)."""
    kernels = _kernels_folder()
    root = tuning.env("NUMBA_CACHE_DIR")
    if root:
        return os.path.join(root, f"kernels_{hashlib.sha1(kernels.encode()).hexdigest()}")
    pycache = os.path.join(kernels, "__pycache__")
    writable = os.access(pycache if os.path.isdir(pycache) else kernels, os.W_OK)
    return pycache if writable else None


def marker_path() -> str | None:
    """The file whose presence says the cache is primed: no early helper starts."""
    folder = cache_folder()
    return os.path.join(folder, "locks", _MARKER) if folder else None


def is_primed() -> bool:
    """Whether the marker is there (or there is no cache folder to prime)."""
    path = marker_path()
    return path is None or os.path.exists(path)


def mark_primed() -> None:
    """Writes the marker (a failure, as a read-only cache, leaves it unwritten)."""
    path = marker_path()
    if path is None:
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "ab"):
            pass
    except OSError:
        pass


def completer_running(folder: str) -> bool:
    """Whether a fit's helper holds the lock of a cache completion in ``folder``
    (:mod:`tinynet.kernels.completion`)."""
    try:
        import fcntl
    except ImportError:
        return False
    path = os.path.join(folder, "locks", "completing")
    try:
        fh = open(path, "rb")
    except OSError:
        return False
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
    return False


def helper_pid() -> int | None:
    """The early helper this process forked, until it has ended and been reaped."""
    return _pid


def remember(pid: int) -> None:
    """Records the early helper this process forked (for :func:`stop` and :func:`reap`)."""
    global _pid
    _pid = pid


def stop() -> None:
    """Asks the early helper to stop after the kernel it is compiling (a fit's helper
    takes over, or compiling ahead was turned off)."""
    reap()
    if _pid is not None:
        try:
            os.kill(_pid, signal.SIGUSR1)
        except OSError:
            pass


def reap() -> None:
    """Collects the early helper's exit status once it has ended (no zombie)."""
    global _pid
    if _pid is None:
        return
    try:
        if os.waitpid(_pid, os.WNOHANG)[0] == 0:
            return
    except ChildProcessError:
        pass
    _pid = None
