"""``njit`` for tinynet's kernels: ``numba.njit`` with LLVM's SLP vectorizer on while they compile.

The seed's folds keep 8 independent lane accumulators (``a0 += x[j]``, ``a1 += x[j+1]``,
...). They are ordinary scalar code whose order of additions is fixed by the shape, and
the SLP ("superword-level parallelism") vectorizer packs such independent lanes into one
SIMD register without reordering any addition. Numba turns that vectorizer off by default
(numba#8852, after miscompilations with older LLVMs); with it the lane folds run 2-3x
faster. So tinynet switches it on for its own kernels only: the flag is set while one of
these dispatchers compiles, under Numba's global compiler lock, and restored afterwards,
so other Numba code in the process compiles exactly as it would without tinynet.

Packing independent lanes changes no result bit (each lane still computes the same IEEE
operations in the same order), and the test suite checks that: the compiled kernels are
compared with float64 references, and byte for byte with the same kernels run without
JIT (``tests/hardening/test_nojit.py``). ``NUMBA_SLP_VECTORIZE=0`` in the environment
turns it off for tinynet too.
"""

from __future__ import annotations

import os
from typing import Any, Callable

import numba
from numba.core import config
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher

__all__ = ["njit", "SLP"]

# The environment has the last word: NUMBA_SLP_VECTORIZE=0 keeps the vectorizer off.
SLP: int = 0 if os.environ.get("NUMBA_SLP_VECTORIZE", "1").strip() in ("0", "") else 1


def _with_slp(dispatcher: Dispatcher) -> Dispatcher:
    compile_plain = dispatcher.compile

    def compile_with_slp(sig: Any) -> Any:
        with global_compiler_lock:
            saved = config.SLP_VECTORIZE
            config.SLP_VECTORIZE = SLP
            try:
                return compile_plain(sig)
            finally:
                config.SLP_VECTORIZE = saved

    dispatcher.compile = compile_with_slp
    return dispatcher


def njit(*args: Any, **kwargs: Any) -> Any:
    """``numba.njit`` (same arguments) whose compilations run with SLP vectorization.

    Under ``NUMBA_DISABLE_JIT=1`` it returns the plain Python function, as ``numba.njit``.
    """

    def decorate(fn: Callable) -> Any:
        compiled = numba.njit(**kwargs)(fn)
        return _with_slp(compiled) if isinstance(compiled, Dispatcher) else compiled

    if len(args) == 1 and callable(args[0]) and not kwargs:
        return decorate(args[0])
    if args:
        raise TypeError(f"njit: expected keyword options only, got positional {args!r}")
    return decorate
