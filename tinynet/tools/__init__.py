"""Tools around the library, which may import any of it (nothing in the library imports
them back): ``calibrate`` (measure the tuning gates on this machine), ``warmup`` (compile
every kernel up front) and ``compile_ahead`` (a cold ``fit``'s helper process)."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on (at least 1)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
