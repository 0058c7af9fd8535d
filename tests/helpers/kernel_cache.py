"""Waiting for the compile-ahead helpers that complete a test's kernel cache."""

from __future__ import annotations

import glob
import os

from tinynet.kernels import completion


def wait_for_helpers(cache) -> None:
    """Blocks until no compile-ahead helper completes the Numba cache folder ``cache``
    any more (tinynet.tools.compile_ahead: it outlives the run that started it), so no
    helper outlives the test that started it."""
    for path in glob.glob(os.path.join(str(cache), "*", "locks", "completing")):
        completion.wait_for_completion(path)
