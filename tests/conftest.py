"""Test-session settings.

The suite runs in two pytest-xdist worker processes on a 2-core machine, each with a
2-thread OpenMP pool: more threads than cores, where spinning workers stall each other
(tinynet's bounded spin costs 1.5x there, libgomp's default 5-10x). Waiting passively
suits that; a wait policy changes no result (docs/tuning.md). For the same reason a fit
here starts no compile-ahead helper process (tests/core/test_compile_ahead.py checks it),
and neither ``import tinynet`` here nor in the tests' child processes starts an early one
(``TINYNET_COMPILE_AHEAD=0``; tests/core/test_compile_early.py turns it back on).
The thread count does not adapt to load either: the two workers would see each other as
load and run every kernel serially, so the tests that force the parallel variants would
not run them (tests/core/test_adaptive_threads.py tests the adaptation itself).
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TINYNET_ADAPTIVE_THREADS", "0")
os.environ.setdefault("TINYNET_COMPILE_AHEAD", "0")  # no early helper at import either

from tinynet.tools import compile_ahead  # noqa: E402 - after the environment is set

compile_ahead.set_enabled(False)
