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
for all kernels) and, per argument types, a small invoker that reads the arguments from
eight-byte slots and calls the kernel for one task (:func:`_slot_invoker`): built with
LLVM directly, not compiled by Numba, and kept in the kernel cache as object code. Only
argument types without a slot (tuples, say) take a small Numba-compiled serial launcher
(:func:`_launcher`).

The serial kernel runs exactly as when called from Python, so the bits are its own.
:func:`entry_address` gives the address (compiling or loading the kernel first); it
lives as long as the process keeps the kernel, which tinynet's kernels never give up.

Under ``NUMBA_DISABLE_JIT=1`` nothing is compiled and nothing has an address: the
"address" is then the kernel's Python function and :func:`call_at` calls it, so the
drivers run as Python the same way.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import struct
from typing import Any, Callable

import numba
import numpy as np
from numba import prange, types
from llvmlite import ir as llvm_ir
from numba.core import cgutils, config
from numba.extending import intrinsic

from tinynet.kernels._jit import njit

__all__ = ["call_at", "entry_address", "run_parallel", "bound_parallel", "run_tasks",
           "tasks_parallel"]

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
    return _address(dispatcher, tuple(_key(a) for a in args), args)


def _address(dispatcher: Any, arg_key: tuple, args: tuple) -> int:
    """:func:`entry_address` with the arguments' :func:`_key` already known."""
    key = (id(dispatcher), arg_key)
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


# :func:`run_parallel` passes a kernel's arguments in eight-byte slots: an array as the
# address of its NumPy object, whose data, shape and strides the invoker reads from the
# object's C struct (NumPy's ``PyArrayObject_fields``: ``data``, ``nd``, ``dimensions``,
# ``strides`` after the object header; checked once per process, :func:`_fields_ok`), a
# number as itself. Any other argument type goes through :func:`_launcher`.
_DATA, _DIMS, _STRIDES = 16, 32, 40  # byte offsets in PyArrayObject_fields (64-bit)


def _slot_code(ty: Any) -> str | None:
    """The ``struct`` format of a value of Numba type ``ty`` in a slot, or None."""
    if isinstance(ty, types.Array):
        return "Q" if ty.ndim > 0 else None
    if isinstance(ty, types.Boolean):
        return "?7x"
    if isinstance(ty, types.Integer):
        return "q" if ty.signed else "Q"
    if ty == types.float32:
        return "f4x"
    if ty == types.float64:
        return "d"
    return None


def _fields_ok() -> bool:
    """Whether NumPy arrays have the C layout :func:`_slot_invoker` reads (64-bit
    pointers, the fields at :data:`_DATA`, :data:`_DIMS`, :data:`_STRIDES`)."""
    if ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    x = np.zeros((3, 5), dtype=np.float32)[:, ::2]
    at = id(x)

    def word(address: int) -> int:
        return ctypes.c_int64.from_address(address).value

    return (ctypes.c_void_p.from_address(at + _DATA).value == x.ctypes.data
            and [word(word(at + _DIMS) + 8 * i) for i in range(2)] == list(x.shape)
            and [word(word(at + _STRIDES) + 8 * i) for i in range(2)] == list(x.strides))


def _slot_invoker(context: Any, module: Any, argtys: tuple, name: str) -> None:
    """Defines ``name(kernel, slots_ptr, t)`` in ``module``: ``kernel(*args, t, t + 1)``
    with ``args`` read from the slots at ``slots_ptr`` (arrays borrowed: a null meminfo,
    as :func:`_borrowed`), with Numba's calling convention, so :func:`call_at` can call it."""
    cc = context.call_conv
    fn = cgutils.get_or_insert_function(
        module, cc.get_function_type(types.none, (_I64, _I64, _I64)), name)
    builder = llvm_ir.IRBuilder(fn.append_basic_block("entry"))
    kernel, slots_at, t = cc.decode_arguments(builder, (_I64, _I64, _I64), fn)
    i64 = llvm_ir.IntType(64)
    slots = builder.inttoptr(slots_at, i64.as_pointer())

    def load(base: Any, index: int, ty: Any = i64) -> Any:
        ptr = builder.gep(base, [llvm_ir.Constant(i64, index)])
        return builder.load(builder.bitcast(ptr, ty.as_pointer()))

    values = []
    for at, ty in enumerate(argtys):
        if isinstance(ty, types.Array):
            obj = builder.inttoptr(load(slots, at), i64.as_pointer())
            dims = builder.inttoptr(load(obj, _DIMS // 8), i64.as_pointer())
            steps = builder.inttoptr(load(obj, _STRIDES // 8), i64.as_pointer())
            shape = [load(dims, i) for i in range(ty.ndim)]
            nitems = llvm_ir.Constant(i64, 1)
            for n in shape:
                nitems = builder.mul(nitems, n)
            ary = context.make_array(ty)(context, builder)
            ary.meminfo = cgutils.get_null_value(ary.meminfo.type)
            ary.parent = builder.bitcast(obj, ary.parent.type)
            ary.nitems = nitems
            ary.itemsize = context.get_constant(types.intp,
                                                context.get_abi_sizeof(
                                                    context.get_data_type(ty.dtype)))
            ary.data = builder.inttoptr(load(obj, _DATA // 8), ary.data.type)
            ary.shape = cgutils.pack_array(builder, shape)
            ary.strides = cgutils.pack_array(builder, [load(steps, i) for i in range(ty.ndim)])
            values.append(ary._getvalue())
        elif isinstance(ty, types.Boolean):
            byte = load(slots, at, llvm_ir.IntType(8))
            values.append(builder.icmp_unsigned("!=", byte, llvm_ir.Constant(byte.type, 0)))
        elif isinstance(ty, types.Integer):
            word = load(slots, at)
            values.append(builder.trunc(word, context.get_value_type(ty))
                          if ty.bitwidth < 64 else word)
        else:  # float32 or float64
            values.append(load(slots, at, context.get_value_type(ty)))
    kargtys = tuple(argtys) + (_I64, _I64)
    values += [t, builder.add(t, llvm_ir.Constant(t.type, 1))]
    kfnty = cc.get_function_type(types.none, kargtys)
    cc.call_function(builder, builder.inttoptr(kernel, kfnty.as_pointer()), types.none,
                     kargtys, values)
    cc.return_native_none(builder)


_plans: dict = {}  # argument key -> (invoker address, slot packer, which are arrays) or None
_libraries: list = []  # the invokers' code, kept as long as the process lives
_fields: list = []  # _fields_ok(), once known


def _plan(key: tuple, args: tuple) -> Any:
    """The slot invoker for arguments of ``key`` (once per process: loaded from the
    kernel cache, or built in a few milliseconds of LLVM, no Numba compile), or None where
    a type has no slot."""
    if key in _plans:
        return _plans[key]
    if not _fields:
        _fields.append(_fields_ok())
    argtys = tuple(numba.typeof(a) for a in args)
    codes = [_slot_code(ty) for ty in argtys]
    plan = None
    if _fields[0] and None not in codes:
        try:
            name, library = _invoker_library(argtys)
            plan = (library.get_pointer_to_function(name), struct.Struct("<" + "".join(codes)),
                    tuple(isinstance(ty, types.Array) for ty in argtys))
        except Exception:  # a Numba whose code-generation internals differ: the launcher
            plan = None
    _plans[key] = plan
    return plan


def _invoker_library(argtys: tuple) -> tuple[str, Any]:
    """The code library holding the slot invoker for ``argtys`` and its name: read from
    the kernel cache folder (object code, as Numba caches kernels) or built and saved
    there."""
    import pickle

    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:
        context = cpu_target.target_context
        codegen = context.codegen()
        stamp = repr((argtys, numba.__version__, codegen._get_host_cpu_name(),
                      codegen._get_host_cpu_features(), _DATA, _DIMS, _STRIDES))
        digest = hashlib.sha256(stamp.encode()).hexdigest()[:32]
        name = f"tinynet_slot_invoke_{digest}"
        folder = getattr(getattr(tasks_parallel, "_cache", None), "_cache_path", None)
        path = os.path.join(folder, "slot_invokers", name) if folder else None
        library = None
        if path and os.path.exists(path):
            try:
                with open(path, "rb") as fh:
                    saved_stamp, state = pickle.load(fh)
                if saved_stamp == stamp:
                    library = codegen.unserialize_library(state)
            except Exception:  # unreadable or foreign: built again below
                library = None
        if library is None:
            library = codegen.create_library(name)
            library.enable_object_caching()
            module = library.create_ir_module(name)
            _slot_invoker(context, module, argtys, name)
            library.add_ir_module(module)
            library.finalize()
            if path:
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    part = f"{path}.{os.getpid()}.part"
                    with open(part, "wb") as fh:
                        pickle.dump((stamp, library.serialize_using_object_code()), fh)
                    os.replace(part, path)  # whole or not at all, whoever writes last
                except OSError:  # a read-only cache: built again next time
                    pass
        _libraries.append(library)
    return name, library


_driver: list = []  # tasks_parallel's address, once known
_RANGE_KEY = (int, int)  # the task range's _key


def run_parallel(kernel: Any, tasks: int, *args: Any) -> None:
    """``kernel(*args, 0, tasks)`` run as ``tasks`` independent tasks over Numba's
    threads (:func:`tasks_parallel`): the parallel twin of a serial kernel taking a task
    range ``(t0, t1)`` as its last two arguments, without a compiled copy of its body.
    Arrays and numbers go in slots read by an invoker built per argument types (no Numba
    compile); other argument types through :func:`_launcher`."""
    bound_parallel(kernel, args)(tasks, *args)


def bound_parallel(kernel: Any, args: tuple) -> Callable[..., None]:
    """:func:`run_parallel` of ``kernel`` bound to the types of ``args``: ``run(tasks,
    *args)``, with the kernel's address and the slot invoker found here, once. Later
    calls must pass arguments of those types (a caller keeps its bound runs by them)."""
    key = tuple(_key(a) for a in args)
    kernel_at = _address(kernel, key + _RANGE_KEY, args + (0, 0))
    plan = _plan(key, args)
    if plan is None:
        if not _driver:
            _driver.append(entry_address(tasks_parallel, (0, 0, 0, 0)))

        def launch(tasks: int, *args: Any) -> None:
            _launcher(_driver[0], kernel_at, tasks, args)

        return launch
    invoke, packer, arrays = plan

    def run(tasks: int, *args: Any) -> None:
        slots = ctypes.create_string_buffer(packer.size)
        packer.pack_into(slots, 0, *[id(a) if is_array else a
                                     for is_array, a in zip(arrays, args)])
        tasks_parallel(invoke, kernel_at, ctypes.addressof(slots), int(tasks))

    return run


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

    def _address(dispatcher, arg_key, args):  # noqa: F811
        return dispatcher

    def _plan(key, args):  # noqa: F811
        return None  # every call through the launcher, in Python
