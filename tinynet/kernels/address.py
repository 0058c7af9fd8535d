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

:func:`run_parallel` goes one step further for kernels over a range of independent tasks:
one parallel driver with integer arguments only (:func:`tasks_parallel`, compiled once
for all kernels) and, per argument types, a small serial launcher (:func:`_launcher`).

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
from llvmlite import ir as llvm_ir
from numba.core import cgutils, config
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


# :func:`run_parallel`'s parallel driver takes integers only, so it compiles once (a
# ``parallel=True`` compile costs about half a second, and would come once per argument
# types). What depends on the kernel's argument types is a small serial launcher
# (:func:`_launcher`, a fraction of that to compile): it stores the argument tuple on its
# stack and hands the driver its address and that of an invoker it defines for the
# tuple's type, which loads the tuple back and calls the kernel for one task.
_I64 = types.int64


def _invoker(context: Any, module: Any, tuple_type: Any) -> Any:
    """The LLVM function ``invoke(kernel, args_ptr, t)`` for argument tuples of
    ``tuple_type``: ``kernel(*args, t, t + 1)``, with Numba's calling convention, so
    :func:`call_at` can call it (internal to the launcher's module, one per module)."""
    cc = context.call_conv
    argtys = (_I64, _I64, _I64)
    fn = cgutils.get_or_insert_function(module, cc.get_function_type(types.none, argtys),
                                        "tinynet_address_invoke")
    if fn.is_declaration:
        fn.linkage = "internal"
        builder = llvm_ir.IRBuilder(fn.append_basic_block("entry"))
        kernel, args_ptr, t = cc.decode_arguments(builder, argtys, fn)
        ptr = builder.inttoptr(args_ptr, context.get_value_type(tuple_type).as_pointer())
        args = builder.load(ptr)
        kargtys = tuple(tuple_type.types) + (_I64, _I64)
        values = [builder.extract_value(args, i) for i in range(len(tuple_type))]
        values += [t, builder.add(t, llvm_ir.Constant(t.type, 1))]
        kfnty = cc.get_function_type(types.none, kargtys)
        cc.call_function(builder, builder.inttoptr(kernel, kfnty.as_pointer()), types.none,
                         kargtys, values)
        cc.return_native_none(builder)
    return fn


def _borrowed(context: Any, builder: Any, tuple_type: Any, value: Any) -> Any:
    """``value`` with its arrays' reference counts taken away (a null meminfo, as Numba's
    gufuncs pass arrays): the caller holds them for the call, and the tasks' threads
    would otherwise contend for the same counters (an atomic increment and decrement per
    task and array the kernel passes on, a third of a pooling kernel's time)."""
    for i, ty in enumerate(tuple_type.types):
        if isinstance(ty, types.Array):
            ary = context.make_array(ty)(context, builder, builder.extract_value(value, i))
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            value = builder.insert_value(value, ary._getvalue(), i)
    return value


@intrinsic
def _launch_at(typingctx, driver, kernel, tasks, args):
    """``_launch_at(driver, kernel, tasks, args)``: calls the compiled
    :func:`tasks_parallel` at ``driver`` with this tuple type's invoker, ``kernel``, the
    address of ``args`` (on this function's stack for the call) and ``tasks``."""
    if not all(isinstance(a, types.Integer) for a in (driver, kernel, tasks)) or \
            not isinstance(args, types.BaseTuple):
        return None

    def codegen(context, builder, sig, llargs):
        cc = context.call_conv
        i64 = llvm_ir.IntType(64)
        invoke = _invoker(context, builder.module, sig.args[3])
        slot = cgutils.alloca_once_value(builder, _borrowed(context, builder, sig.args[3],
                                                            llargs[3]))
        driver_at, kernel_at, ntasks = (context.cast(builder, v, ty, _I64)
                                        for v, ty in zip(llargs[:3], sig.args[:3]))
        values = [builder.ptrtoint(invoke, i64), kernel_at, builder.ptrtoint(slot, i64),
                  ntasks]
        argtys = (_I64,) * 4
        fnty = cc.get_function_type(types.none, argtys)
        cc.call_function(builder, builder.inttoptr(driver_at, fnty.as_pointer()), types.none,
                         argtys, values)
        return context.get_dummy_value()

    return types.void(driver, kernel, tasks, args), codegen


# tinynet's njit: its cache, its compile locks, and a wait for another run's helper
# completing the cache (a plain numba.njit would compile beside them)
@njit(cache=True, parallel=True, error_model="numpy")
def tasks_parallel(invoke, kernel, args_ptr, tasks):
    """Runs ``invoke(kernel, args_ptr, t)`` for every task ``t < tasks`` over Numba's
    threads (all four integers: compiled once); ``invoke`` calls the kernel at ``kernel``
    with the argument tuple at ``args_ptr`` and the range ``(t, t + 1)``. The bits are the
    serial kernel's whatever the threads."""
    for t in prange(tasks):
        call_at(invoke, (kernel, args_ptr, t))


@njit(cache=True, error_model="numpy", no_cfunc_wrapper=True)
def _launcher(driver, kernel, tasks, args):
    """:func:`tasks_parallel` (compiled, at ``driver``) over the kernel at ``kernel`` with
    the argument tuple ``args``: the serial part compiled per argument types."""
    _launch_at(driver, kernel, tasks, args)


_driver: list = []  # tasks_parallel's address, once known


def run_parallel(kernel: Any, tasks: int, *args: Any) -> None:
    """``kernel(*args, 0, tasks)`` run as ``tasks`` independent tasks over Numba's
    threads (:func:`tasks_parallel`, through :func:`_launcher`): the parallel twin of a serial
    kernel taking a task range ``(t0, t1)`` as its last two arguments, without a compiled
    copy of its body."""
    if not _driver:
        _driver.append(entry_address(tasks_parallel, (0, 0, 0, 0)))
    _launcher(_driver[0], entry_address(kernel, args + (0, 0)), tasks, args)


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

    def _invoke(kernel, args, t):
        kernel(*args, t, t + 1)

    def _launch_at(driver, kernel, tasks, args):  # noqa: F811
        # the tuple itself stands for its address, a Python function for the invoker
        call_at(driver, (_invoke, kernel, args, tasks))

    def entry_address(dispatcher, args):  # noqa: F811
        return dispatcher
