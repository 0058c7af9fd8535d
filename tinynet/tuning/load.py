"""How many cores other processes leave free right now (Linux ``/proc``; elsewhere unknown).

The adaptive thread count (:func:`tinynet.tuning.set_adaptive_threads`) looks here. A
parallel region waits for its slowest thread, so on a machine where another process
keeps a core busy, a region whose thread the scheduler has set aside waits a whole time
slice: small regions then take many times their serial time.
"""

from __future__ import annotations

import os

__all__ = ["cores", "others_running", "free_cores"]

_LOADAVG = "/proc/loadavg"
_TASKS = "/proc/self/task"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _running_total() -> int:
    with open(_LOADAVG, encoding="ascii") as fh:  # "0.12 0.30 0.41 2/345 6789"
        return int(fh.read().split()[3].split("/", 1)[0])


def _running_ours() -> int:
    count = 0
    for tid in os.listdir(_TASKS):
        try:
            with open(f"{_TASKS}/{tid}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:  # the thread ended meanwhile
            continue
        # "pid (comm) S ...": the state follows the last ')' (comm may hold one too)
        if stat[stat.rindex(")") + 2] == "R":
            count += 1
    return count


def others_running() -> int | None:
    """Threads of other processes that run or wait to run now; ``None`` when unknown.

    The kernel's count of runnable threads (``/proc/loadavg``) less this process's own
    (read just after it). Of three looks the smallest counts: a worker of ours that goes
    to sleep between the two reads would otherwise count as another process's.
    """
    try:
        looks = [_running_total() - _running_ours() for _ in range(3)]
    except (OSError, ValueError, IndexError):
        return None
    return max(0, min(looks))


def free_cores() -> int | None:
    """Cores no other process is using now (at least 1); ``None`` when unknown."""
    others = others_running()
    return None if others is None else max(1, cores() - others)
