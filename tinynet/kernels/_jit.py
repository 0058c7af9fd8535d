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

The cache of compiled kernels (``cache=True``) is checked against all of tinynet's kernel
sources, not only the kernel's own file. Numba stamps a cached kernel with a hash of the
file that defines it, but a kernel also carries the code it inlines from other files
(``simd``'s vector intrinsics, the normalization folds): after an edit to ``simd.py`` alone,
Numba would keep loading the normalization kernels compiled with the old intrinsics.
tinynet's cache locators add :func:`kernel_sources_digest` to the stamp, so an edit to
any file that defines or inlines kernel code recompiles every kernel (about 15 minutes
on a 2-core machine) instead of leaving stale ones. They apply to tinynet's files only,
and only where Numba picks its locators itself (not under
``NUMBA_CACHE_LOCATOR_CLASSES``).

Processes that share a cache compile each kernel once: a compile holds a lock file for
its kernel (:func:`lock_path`), and a second process that needs the same
kernel meanwhile waits, then loads the first one's result from the cache. This is what
lets the warmup's workers, the test workers and a fit's compile-ahead helper
(:mod:`tinynet.tools.compile_ahead`) split the work instead of repeating it.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
import hashlib
import os
import sys
import types
from typing import Any, Callable

import numba
from numba.core import caching, config, event, inline_closurecall, sigutils
from numba.core import ir as numba_ir
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.registry import CPUDispatcher

from tinynet import tuning
from tinynet.kernels import completion

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

__all__ = ["njit", "SLP", "LINEAR_INLINING", "COMPILE_HOOKS", "WAIT_FOR_BUSY_KERNELS",
           "KernelBusy", "BUSY", "lock_path", "SHAPES_ONLY", "shapes_only",
           "kernel_sources_digest", "sources_digest", "silence_compile_notice", "CALLEE_OPTIONS",
           "inlined", "forget_compile_in_progress"]

# The environment has the last word: NUMBA_SLP_VECTORIZE=0 keeps the vectorizer off.
SLP: int = 0 if (tuning.env("NUMBA_SLP_VECTORIZE") or "1").strip() in ("0", "") else 1


# ---------------------------------------------------- inlining in linear time
# Numba releases whose every caller of ``inline_ir`` discards its first result.
_ONE_COPY: bool = tuple(numba.version_info[:2]) <= (0, 68)


class _BlockCopier:
    """Stands in for the ``copy`` module in ``numba.core.inline_closurecall`` during one
    inlining: the blocks of one IR are deep-copied with one shared memo per scope, so the
    scope they share (and every variable in it) is copied once, not once per block.

    ``inline_ir`` copies the callee's IR twice: once to splice into the caller, then that
    copy again as an "unmutated original" it returns first, which every caller of
    ``inline_ir`` in Numba discards (``_, _, _, new_blocks = ...``). A block this copier
    made is handed back as it is instead of being copied a second time (up to the Numba
    release whose callers this was checked against: a later one copies twice, as Numba
    does)."""

    def __init__(self) -> None:
        self._memos: dict = {}
        self._made: set = set()

    def deepcopy(self, x: Any, memo: Any = None) -> Any:
        if memo is None and isinstance(x, numba_ir.Block):
            if id(x) in self._made and _ONE_COPY:
                return x
            memo = self._memos.setdefault(id(x.scope), {})  # scopes live through the call
            block = copy.deepcopy(x, memo)
            self._made.add(id(block))
            return block
        return copy.deepcopy(x, memo)

    def __getattr__(self, name: str) -> Any:
        return getattr(copy, name)


def _inline_ir_linear(worker: Any, *args: Any, **kwargs: Any) -> Any:
    saved = inline_closurecall.copy
    inline_closurecall.copy = _BlockCopier()
    try:
        return _INLINE_IR(worker, *args, **kwargs)
    finally:
        inline_closurecall.copy = saved


# The IR an inlined function gets before it is copied into a caller: Numba re-derives it
# from the bytecode at every call site, each derivation inlining the callee's own callees
# again, so nested inlining costs the product of the fan-outs. Derived once per function
# and compiler flags instead (the inliner copies it before changing anything).
_DERIVED: dict = {}


def _run_untyped_passes_once(worker: Any, func: Any, enable_ssa: bool = False) -> Any:
    key = (func, enable_ssa, str(worker.flags))
    func_ir = _DERIVED.get(key)
    if func_ir is None:
        func_ir = _DERIVE(worker, func, enable_ssa)
        _DERIVED[key] = func_ir
    else:
        worker.flags.enable_ssa = enable_ssa  # as a derivation leaves it
    return func_ir


_WORKER = getattr(inline_closurecall, "InlineWorker", None)
_INLINE_IR = getattr(_WORKER, "inline_ir", None)
_DERIVE = getattr(_WORKER, "run_untyped_passes", None)
# Where Numba's inliner differs from the one this was written for, it is left alone.
LINEAR_INLINING: bool = (_INLINE_IR is not None and _DERIVE is not None
                         and getattr(inline_closurecall, "copy", None) is copy)


# ------------------------------------------------- one compile across processes
_HELD: set = set()  # the lock files this process holds (compiles nest)
#: Whether an outermost compile whose kernel another process is compiling waits for it
#: (True) or raises :class:`KernelBusy` (the compile-ahead helper, which then does other
#: work). A nested compile (a helper of the kernel being compiled) always waits: giving
#: up there would throw away the part of the outer compile already done.
WAIT_FOR_BUSY_KERNELS: bool = True


class KernelBusy(RuntimeError):
    """Another process is compiling this kernel (raised only where waiting is off). Numba
    may wrap it in its own error when a caller's compile meets it: its message keeps
    :data:`BUSY`."""


BUSY = "is being compiled by another process"


def lock_path(dispatcher: Dispatcher, sig: Any) -> str | None:
    """The lock file of a kernel (``None`` where the kernel has no cache): one for all its
    signatures (``sig`` does not count), because each compile of one signature reads the
    kernel's index file, adds its entry and writes it back, numbering its data file after
    the entries it read, so two processes saving two signatures at once would lose an
    entry, or file one signature's code under the other's."""
    del sig
    folder = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
    if not folder:
        return None
    fn = dispatcher.py_func
    key = hashlib.sha256(f"{fn.__module__}.{fn.__qualname__}".encode()).hexdigest()[:32]
    return os.path.join(folder, "locks", key)


@contextlib.contextmanager
def _compile_lock(dispatcher: Dispatcher, sig: Any):
    """Holds a lock file for one kernel in the kernel's cache folder while it
    compiles, so processes sharing a cache (the warmup's workers, test workers, a fit
    and its compile-ahead helper) compile each kernel once: a process that finds the lock
    taken waits, then loads the other's result from the cache (``Dispatcher.compile``
    looks there first). Taken under Numba's compiler lock, so in one process a single
    thread holds these locks, and nested compiles take them along the call graph (callers
    before callees, never a cycle): no deadlock across processes. Without a cache folder
    or ``fcntl`` (Windows), nothing is locked."""
    path = lock_path(dispatcher, sig)
    if fcntl is None or path is None or path in _HELD:
        yield
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fh = open(path, "a+b")
    except OSError:  # a read-only cache: compile unlocked, as Numba would
        yield
        return
    # A nested compile waits even where waiting is off: the locks a process holds follow
    # the call graph (callers first), so two processes can only wait on each other through
    # a cycle of kernels calling each other, which Numba cannot compile anyway.
    wait = WAIT_FOR_BUSY_KERNELS or _depth > 0
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise KernelBusy(f"{dispatcher.py_func.__qualname__} {BUSY}") from None
        _HELD.add(path)
        try:
            yield
        finally:
            _HELD.discard(path)
            fcntl.flock(fh, fcntl.LOCK_UN)


_depth = 0  # kernel compiles under way in this process (they nest)
_paused = False  # whether the outermost one paused the garbage collector


def _resume_collector(collect: bool) -> None:
    """Turns the collector back on after :func:`_outermost_compile` paused it."""
    global _paused
    _paused = False
    gc.enable()
    if collect:
        gc.collect()  # the frozen objects from before are not walked
    gc.unfreeze()


@contextlib.contextmanager
def _outermost_compile():
    """Marks a kernel compile; the outermost one of a nest ends by dropping the IR of the
    functions it inlined (:data:`_DERIVED`, kept for one compile only) and pauses the
    garbage collector while it runs. A compile makes a few hundred thousand objects, many
    of them in reference cycles (Numba's IR), and let the collector run a dozen full
    collections that would each also walk all the process held before (the program's
    data, earlier kernels' compile results): ``gc.freeze()`` sets those aside,
    ``gc.disable()`` holds the collections, and at the end one ``gc.collect()`` walks only
    the compile's objects before ``gc.unfreeze()`` puts the old ones back (freeze and
    unfreeze are O(1)). The collector is left alone where the program has frozen objects
    itself or turned it off."""
    global _depth, _paused
    outermost = _depth == 0
    if outermost and gc.isenabled() and not gc.get_freeze_count():
        gc.freeze()
        gc.disable()
        _paused = True
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if outermost:
            _DERIVED.clear()
            if _paused:
                _resume_collector(collect=True)


def _slim(dispatcher: Dispatcher, key: tuple) -> None:
    """Keeps of a kernel just compiled (argument types ``key``) what a kernel loaded from
    the cache keeps: not its typed IR (the type annotation) nor its compile metadata, some
    ten thousand objects that every later full collection, and the one at exit, would
    walk again."""
    cres = dispatcher.overloads.get(key)
    if cres is not None and (cres.metadata is not None
                             or not isinstance(cres.type_annotation, (str, type(None)))):
        dispatcher.overloads[key] = cres._replace(type_annotation=None, metadata=None)


def _with_slp(dispatcher: Dispatcher) -> Dispatcher:
    compile_plain = dispatcher.compile

    def compile_with_slp(sig: Any) -> Any:
        key = tuple(sigutils.normalize_signature(sig)[0])
        if key in dispatcher.overloads:
            return compile_plain(sig)  # compiled or loaded already: nothing to lock
        with global_compiler_lock:
            if _depth == 0:  # an outermost compile holds no kernel lock: it may wait
                completion.wait_for_completer(dispatcher, sig)
            return _compile_locked(sig, key)

    def _compile_locked(sig: Any, key: tuple) -> Any:
        with _compile_lock(dispatcher, sig), _outermost_compile():
            saved = config.SLP_VECTORIZE
            config.SLP_VECTORIZE = SLP
            inline_ir, derive = _WORKER.inline_ir, _WORKER.run_untyped_passes
            if LINEAR_INLINING:
                _WORKER.inline_ir = _inline_ir_linear
                _WORKER.run_untyped_passes = _run_untyped_passes_once
            try:
                entry = compile_plain(sig)
                _slim(dispatcher, key)
                return entry
            finally:
                config.SLP_VECTORIZE = saved
                _WORKER.inline_ir, _WORKER.run_untyped_passes = inline_ir, derive

    dispatcher.compile = compile_with_slp
    return dispatcher


# ------------------------------------------------------------ callee kernels
#: Target options of a kernel helper only kernels call: no Python or C entry point.
CALLEE_OPTIONS: dict = {"no_cpython_wrapper": True, "no_cfunc_wrapper": True}


def _plain_options(dispatcher: Dispatcher) -> dict:
    """``dispatcher``'s own target options, for ``njit``: without the callee options and
    the ``nopython`` flag Numba adds itself."""
    return {k: v for k, v in dispatcher.targetoptions.items()
            if k not in CALLEE_OPTIONS and k != "nopython"}


class _CalleeDispatcher(CPUDispatcher):
    """A kernel helper compiled without its Python and C entry points (``njit(callee=
    True)``): a kernel that calls it links its code and never needs them, and making them
    is a good part of a small function's compile time. Called from Python (a test, a
    session at the prompt), it runs its *twin*: the same function compiled as an ordinary
    kernel, with cache files of its own (Numba's cache does not tell the two apart)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        twin = self.__dict__.get("_tinynet_twin")
        if twin is None:
            fn = self.py_func
            copied = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__,
                                        fn.__defaults__, fn.__closure__)
            copied.__qualname__ = f"{fn.__qualname__}_py"
            copied.__module__ = fn.__module__
            copied.__doc__ = fn.__doc__
            cache = not isinstance(self._cache, caching.NullCache)
            twin = njit(cache=cache, **_plain_options(self))(copied)
            self.__dict__["_tinynet_twin"] = twin
        return twin(*args, **kwargs)


def inlined(kernel: Any) -> Any:
    """An ``inline="always"`` twin of the compiled helper ``kernel`` (same options).

    A serial driver that calls a row or block helper in a loop inlines this twin: the
    helper's body compiles inside the driver instead of as a library of its own that the
    driver links and optimizes again, one compile less for a model that runs only the
    serial driver. The parallel driver keeps calling ``kernel`` (a parallel loop with a
    large inlined body costs Numba's parfor passes seconds). Under
    ``NUMBA_DISABLE_JIT=1``, ``kernel`` itself.
    """
    fn = getattr(kernel, "py_func", None)
    if fn is None:
        return kernel
    return njit(inline="always", **_plain_options(kernel))(fn)


def njit(*args: Any, variant: Any = None, callee: bool = False, **kwargs: Any) -> Any:
    """``numba.njit`` (same arguments) whose compilations run with SLP vectorization.

    ``variant`` names one kernel a factory builds (a closure over constants, such as a
    layout): it joins the function's qualified name, so each variant keeps cache files of
    its own. Variants sharing one index file would share its slots, and two processes
    compiling two of them at once (the warmup's workers, the test workers) could leave an
    index entry pointing at the other variant's code.

    ``callee``: a helper only other kernels call, compiled without Python and C entry
    points (:class:`_CalleeDispatcher`; a Python call still works, through a twin).

    Under ``NUMBA_DISABLE_JIT=1`` it returns the plain Python function, as ``numba.njit``.
    """

    def decorate(fn: Callable) -> Any:
        if variant is not None:
            fn.__qualname__ = f"{fn.__qualname__}_{variant}"
        compiled = numba.njit(**kwargs, **(CALLEE_OPTIONS if callee else {}))(fn)
        if not isinstance(compiled, Dispatcher):
            return compiled
        if callee:
            compiled.__class__ = _CalleeDispatcher
        return _with_slp(compiled)

    if len(args) == 1 and callable(args[0]) and not kwargs and variant is None and not callee:
        return decorate(args[0])
    if args:
        raise TypeError(f"njit: expected keyword options only, got positional {args!r}")
    return decorate


# ------------------------------------------------------- backward-first runs
#: While true, the normalization and convolution forwards return uninitialized outputs
#: of the right shapes without running a kernel (their backwards need only the input and
#: those shapes): the compile-ahead helper (:mod:`tinynet.tools.compile_ahead`) runs a layer's
#: backward this way, to compile its backward kernels while the fit compiles the forward
#: ones. Set only through :func:`shapes_only`.
SHAPES_ONLY: bool = False


@contextlib.contextmanager
def shapes_only():
    """Within it, :data:`SHAPES_ONLY` holds (this process, every thread)."""
    global SHAPES_ONLY
    saved, SHAPES_ONLY = SHAPES_ONLY, True
    try:
        yield
    finally:
        SHAPES_ONLY = saved


# ------------------------------------------------------------ first-use notice
_NOTICE = "tinynet: compiling kernels for first use (cached in {where}; later runs skip this)"
_noticed = False
#: Called with the dispatcher as each tinynet kernel starts compiling, before it compiles:
#: the compile-ahead helper of a fit starts from here (:mod:`tinynet.tools.compile_ahead`).
COMPILE_HOOKS: list[Callable[[Dispatcher], None]] = []


def _cache_dir(dispatcher: Any) -> str:
    path = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
    return path or config.CACHE_DIR or "Numba's cache"


class _FirstCompileNotice(event.Listener):
    """Says once per process, before the first tinynet kernel compiles, that kernels are
    being compiled and where they are cached: a first run otherwise sits silent (a
    progress bar frozen at 0) for as long as compiling takes. Runs the
    :data:`COMPILE_HOOKS` before each tinynet kernel compiles."""

    def on_start(self, ev: Any) -> None:
        global _noticed
        dispatcher = ev.data.get("dispatcher")
        module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
        if not module.startswith("tinynet."):
            return
        for hook in COMPILE_HOOKS:
            hook(dispatcher)
        if _noticed:
            return
        _noticed = True
        from tqdm import tqdm  # writes above any progress bar on the screen

        tqdm.write(_NOTICE.format(where=_cache_dir(dispatcher)), file=sys.stderr)

    def on_end(self, ev: Any) -> None:
        pass


event.register("numba:compile", _FirstCompileNotice())


def forget_compile_in_progress(dispatcher: Dispatcher) -> None:
    """In a process forked while ``dispatcher`` was starting to compile (a compile hook):
    this process is not compiling it. It holds none of the parent's kernel locks (the
    parent releases the one it took: a forked child shares it), ``dispatcher`` no longer
    reads as being compiled (a kernel that calls it would fail to type, as an unsupported
    recursion), and the garbage collector runs again (:func:`_outermost_compile`)."""
    global _depth
    _HELD.clear()
    dispatcher._compiling_counter = type(dispatcher._compiling_counter)()
    _depth = 0
    if _paused:
        _resume_collector(collect=False)


def silence_compile_notice() -> None:
    """No first-use notice in this process (the warmup shows a progress bar instead)."""
    global _noticed
    _noticed = True


# ------------------------------------------------------------- cache stamps
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../tinynet
# A file is kernel code when it names Numba or this module: only those files can define
# kernels, intrinsics or overloads, or the functions and constants kernels inline.
_KERNEL_MARKERS = (b"numba", b"kernels._jit")


def sources_digest(root: str) -> str:
    """SHA-256 over the ``.py`` files under ``root`` that name Numba or this module
    (relative path and content, in sorted order); other files do not count."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            with open(path, "rb") as fh:
                data = fh.read()
            if any(marker in data for marker in _KERNEL_MARKERS):
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                digest.update(rel.encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def kernel_sources_digest() -> str:
    """:func:`sources_digest` of the installed tinynet package (computed once)."""
    return sources_digest(PACKAGE_DIR)


class _KernelSourcesStamp:
    """Locator mixin for tinynet's files: the stamp also holds :func:`kernel_sources_digest`."""

    _tinynet = True

    @classmethod
    def from_function(cls, py_func, py_file):
        if not os.path.abspath(py_file).startswith(PACKAGE_DIR + os.sep):
            return None
        return super().from_function(py_func, py_file)

    def get_source_stamp(self):
        return super().get_source_stamp(), kernel_sources_digest()


def _install_locators() -> bool:
    """Puts tinynet's locators first in Numba's list (once); False where Numba's caching
    internals differ from the ones this was written for (Numba's own locators then)."""
    classes = getattr(getattr(caching, "CacheImpl", None), "_locator_classes", None)
    names = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
    bases = [getattr(caching, name, None) for name in names]
    if not isinstance(classes, list) or not all(isinstance(b, type) for b in bases):
        return False
    if not any(getattr(c, "_tinynet", False) for c in classes):
        classes[:0] = [type(f"Tinynet{b.__name__}", (_KernelSourcesStamp, b), {}) for b in bases]
    return True


LOCATORS_INSTALLED = _install_locators()
