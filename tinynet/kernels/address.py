"""Calling a compiled kernel through its address, so a parallel driver need not link it.

A parallel driver whose loop body calls a serial kernel directly links that kernel's
code: Numba clones the callee's module into the loop's gufunc and the driver, and
optimizes it again in each, so every parallel variant costs about as much to compile as
its serial twin (the group-norm forward's four-second parallel drivers). A driver can
instead take the serial kernel's address as an integer and call it there
(:func:`call_at`): it compiles without the callee's code, in under a second, once per
argument types, and one driver serves every serial kernel of those argument types. An
integer argument also keeps the driver in Numba's cache (a function-typed argument would
not be cached, and would compile once per function passed).

The serial kernel runs exactly as when called from Python, so the bits are its own.
:func:`entry_address` gives the address (compiling or loading the kernel first); it
lives as long as the process keeps the kernel, which tinynet's kernels never give up.

Under ``NUMBA_DISABLE_JIT=1`` nothing is compiled and nothing has an address: the
"address" is then the kernel's Python function and :func:`call_at` calls it, so the
drivers run as Python the same way.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from numba import prange, types
from numba.core import config
from numba.extending import intrinsic

from tinynet.kernels._jit import njit

__all__ = ["call_at", "entry_address", "run_parallel", "run_tasks", "tasks_parallel"]

_addresses: dict = {}  # (dispatcher id, argument key) -> address, for this process


@intrinsic
def call_at(typingctx, addr, args):
    """``call_at(addr, args)``: calls the compiled kernel at ``addr`` (from
    :func:`entry_address` for the types of ``args``) with the tuple ``args``, its result
    dropped. The kernel must not raise: its error status is not looked at."""
    if not isinstance(addr, types.Integer) or not isinstance(args, types.BaseTuple):
        return None
    argtys = tuple(args.types)

    def codegen(context, builder, sig, llargs):
        fnty = context.call_conv.get_function_type(types.none, argtys)
        fn = builder.inttoptr(llargs[0], fnty.as_pointer())
        values = [builder.extract_value(llargs[1], i) for i in range(len(argtys))]
        context.call_conv.call_function(builder, fn, types.none, argtys, values)
        return context.get_dummy_value()

    return types.void(addr, args), codegen


def _key(value: Any) -> Any:
    """What decides ``value``'s Numba type among the arguments tinynet's kernels take
    (checked on every parallel call, so kept cheap: one ``flags`` lookup an array)."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return (value.dtype.num, value.ndim, flags.c_contiguous, flags.f_contiguous,
                flags.writeable, flags.aligned)
    return type(value)


def entry_address(dispatcher: Any, args: tuple) -> int:
    """The address of ``dispatcher``'s compiled code for the types of ``args`` (compiled,
    or loaded from the cache, on first use), for :func:`call_at`. The kernel must return
    nothing."""
    key = (id(dispatcher), tuple(_key(a) for a in args))
    addr = _addresses.get(key)
    if addr is None:
        sig = tuple(numba.typeof(a) for a in args)
        dispatcher.compile(sig)
        cres = dispatcher.overloads[sig]
        addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
        _addresses[key] = addr
    return addr


# tinynet's njit: its cache, its compile locks, and a wait for another run's helper
# completing the cache (a plain numba.njit would compile beside them)
@njit(cache=True, parallel=True, error_model="numpy")
def tasks_parallel(addr, tasks, args):
    """Runs ``kernel(*args, t, t + 1)`` for every task ``t < tasks`` over Numba's threads,
    ``kernel`` being the compiled function at ``addr``. One driver, compiled once per the
    argument types of ``args``, serves every kernel whose last two arguments are a range of
    independent tasks; the bits are the serial kernel's whatever the threads."""
    for t in prange(tasks):
        call_at(addr, args + (t, t + 1))


def run_parallel(kernel: Any, tasks: int, *args: Any) -> None:
    """``kernel(*args, 0, tasks)`` run as ``tasks`` independent tasks over Numba's
    threads (:func:`tasks_parallel`): the parallel twin of a serial kernel taking a task
    range ``(t0, t1)`` as its last two arguments, without a compiled copy of its body."""
    tasks_parallel(entry_address(kernel, args + (0, 0)), tasks, args)


def run_tasks(kernel: Any, tasks: int, parallel: bool, *args: Any) -> None:
    """``kernel(*args, 0, tasks)`` on the calling thread, or (``parallel``) its tasks
    spread over Numba's threads (:func:`run_parallel`): the same bits either way."""
    if parallel:
        run_parallel(kernel, tasks, *args)
    else:
        kernel(*args, 0, tasks)


if config.DISABLE_JIT:  # plain Python: the kernel itself stands for its address
    def call_at(addr, args):  # noqa: F811
        addr(*args)

    def entry_address(dispatcher, args):  # noqa: F811
        return dispatcher
