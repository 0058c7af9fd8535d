"""``python -m tinynet.warmup``: compile every kernel up front (:mod:`tinynet.tools.warmup`)."""

from __future__ import annotations

from tinynet.tools.warmup import TASKS, main, run_task, warmup

__all__ = ["warmup", "main", "TASKS", "run_task"]

if __name__ == "__main__":
    raise SystemExit(main())
