"""Waiting for the compile-ahead helpers that complete a test's kernel cache."""

from __future__ import annotations

import glob
import os

from tinynet.kernels import completion


#: Script lines that record every Numba compile of the process in ``compiles`` (the
#: qualified names of the functions compiled), for the scripts the cache tests run.
COUNT_COMPILES = """
from numba.core import event
compiles = []
class Count(event.Listener):
    def on_start(self, ev):
        compiles.append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
"""


def wait_for_helpers(cache) -> None:
    """Blocks until no compile-ahead helper completes the Numba cache folder ``cache``
    any more (tinynet.tools.compile_ahead: it outlives the run that started it), so no
    helper outlives the test that started it."""
    for path in glob.glob(os.path.join(str(cache), "*", "locks", "completing")):
        completion.wait_for_completion(path)
