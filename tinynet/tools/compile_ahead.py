"""Compile ahead: the first ``fit`` on an empty kernel cache compiles on two cores.

Numba compiles a kernel in the process that first calls it, one kernel at a time, so a
first training step would compile everything its model needs one kernel after another
on one core. When a kernel starts compiling during a ``fit``, tinynet starts one helper
process (where the process may run on two cores or more). The helper pushes batches of
the fit's shapes through the optimizer, the loss and then the layers from the last to
the first, so it compiles the end of a step while the fit compiles its beginning. Both
compile into the same cache, and each kernel is compiled by one of them only: the other
waits for it and loads it from the cache (the compile locks of
:mod:`tinynet.kernels._jit`).

On Linux the helper is a fork of the fit's process, taken while Numba's thread pool has
not started yet (GNU OpenMP aborts a forked child that uses its parent's pool) and no
other library with its own thread pools (PyTorch) is loaded (a fork keeps their locks
as some pool thread held them, and the child can wait on one forever): it has
the fit's modules and model already and starts compiling at once. Elsewhere, or once the
pool runs, it is a new interpreter that imports tinynet and rebuilds the model from a
pickle, about a second later (a model that cannot be pickled, with layers defined in the
script itself, then gets no helper).

Then the helper completes the cache: it runs the same step again with every gate forcing
the serial kernels, then with every gate forcing the parallel ones (the adaptive thread
count off), so a later run of the model finds every variant a gate, the thread count or
the machine's load may pick there, and compiles nothing. By then every kernel of the fit
is in the cache, and the work is for later runs: a forked helper starts it once the fit
has ended (a fit's parallel steps share a core badly with a compiling process, whatever
its priority), and does it at a lower scheduling priority (``nice``), so the program's
work after its fit comes first where cores are short. The fit does not wait for that:
the helper goes on after the fit, and after the fit's process, until it is done. While it
runs it holds a lock file in the cache (:mod:`tinynet.kernels.completion`);
another process about to compile a kernel that is not in the cache yet waits for it
instead, and then loads the kernel.

A model that is not a chain of layers (a functional graph, a subclassed model) cannot be
pushed through layer by layer: its helper skips the work ahead of the fit and completes
the cache with whole training and test steps of the fit's batch sizes.

The helper only fills the cache: it computes nothing the fit reads, so no result changes.
A process starts one helper at most (for the first fit that compiles); a warm cache never
starts it. :func:`set_enabled` turns it off (the test suite does, to keep to its two
worker processes).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

from tinynet import tuning
from tinynet.tools import primed, usable_cores

__all__ = ["set_enabled", "is_enabled", "ahead_of_fit", "run", "main"]

_enabled = (tuning.env("TINYNET_COMPILE_AHEAD") or "1").strip() != "0"
_pending: dict | None = None  # the running fit's spec, until its helper starts
_helper: subprocess.Popen | int | None = None  # a new interpreter, or a fork's pid
_fit_ends: int | None = None  # the write end of a fork's pipe, closed when its fit ends
_started = False  # one helper per process: the first fit that compiles gets it


def set_enabled(enabled: bool) -> None:
    """Whether a fit on an empty cache starts a compile-ahead helper (default: yes, unless
    ``TINYNET_COMPILE_AHEAD=0``); off also stops the early helper ``import tinynet``
    may have started (:mod:`tinynet.tools.compile_early`) after its current kernel."""
    global _enabled
    if not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"compile_ahead.set_enabled: enabled must be a bool, got {enabled!r}")
    _enabled = bool(enabled)
    if not _enabled:
        primed.stop()


def is_enabled() -> bool:
    """Whether a fit on an empty cache starts a compile-ahead helper."""
    return _enabled



def _batch_sizes(n: int, batch_size: int) -> list[int]:
    """The batch sizes a pass over ``n`` samples in batches of ``batch_size`` sees."""
    sizes = [min(batch_size, n)] if n else []
    if n > batch_size and n % batch_size:
        sizes.append(n % batch_size)
    return sizes


@contextlib.contextmanager
def ahead_of_fit(model: Any, x: np.ndarray, y: np.ndarray, batch_size: int,
                 val: tuple | None) -> Iterator[None]:
    """Within it, the first kernel compile starts the helper for this fit; on leaving,
    the helper goes on alone until the cache is complete. ``val`` is the validation
    ``(x, y)`` or ``None``."""
    global _pending
    if not _enabled or _started or _pending is not None or usable_cores() < 2:
        yield
        return
    from tinynet.kernels import _jit

    _pending = {"model": model, "x": (x.shape[1:], x.dtype.str), "y": (y.shape[1:], y.dtype.str),
                "train": _batch_sizes(x.shape[0], batch_size),
                "test": _batch_sizes(val[0].shape[0], batch_size) if val is not None else [],
                "gates": tuning.gates(), "threads": tuning.get_num_threads(),
                "by_layer": bool(getattr(model, "_ahead_by_layer", False))}
    _jit.COMPILE_HOOKS.append(_start)
    try:
        yield
    finally:
        _jit.COMPILE_HOOKS.remove(_start)
        _pending = None
        _detach()


def _start(dispatcher: Any) -> None:
    """Starts the pending fit's helper (called as ``dispatcher`` starts compiling)."""
    global _pending, _helper, _started, _fit_ends
    spec, _pending = _pending, None
    if spec is None:
        return
    _started = True
    primed.stop()  # this helper knows the model: the early one yields to it
    from tinynet.kernels import completion

    completion.OWN_COMPLETER = True  # this process never waits for its own helper
    if _can_fork():
        completion.hold_completion_lock()  # taken before the fork: held from the start
        fit_ends, _fit_ends = os.pipe()  # the fork's; the fit closes its end as it ends
        try:
            _helper = _fork(spec, dispatcher, fit_ends, _fit_ends)
        finally:
            os.close(fit_ends)
        completion.release_completion_lock_copy()  # the child's copy holds it
    else:
        _helper = _spawn(spec)


#: Modules whose thread pools make a fork unsafe once loaded (their pools may start at
#: any call, and a child forked then can block on a lock a pool thread held).
FORK_UNSAFE_MODULES = ("torch", "tensorflow", "jax")


def _can_fork() -> bool:
    """Whether the helper can be a fork of this process: on Linux, before Numba's thread
    pool starts (a forked child must not use its parent's OpenMP pool; its own is fine),
    and with no library of :data:`FORK_UNSAFE_MODULES` loaded."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return False
    if any(name in sys.modules for name in FORK_UNSAFE_MODULES):
        return False
    from numba.np.ufunc import parallel

    return not parallel._is_initialized


def _fork(spec: dict, dispatcher: Any, fit_ends: int, parent_end: int) -> int:
    """Forks the helper; the child runs :func:`run` and leaves with ``os._exit`` (no exit
    handlers of the parent's, no second flush of its buffered output). ``fit_ends`` is
    the read end of a pipe whose write end (``parent_end``, closed in the child) the fit
    closes as it ends (:func:`_detach`)."""
    with warnings.catch_warnings():  # Python 3.12+ warns on a fork with threads running
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):  # not the script's own handlers
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        from tinynet.kernels import _jit

        _jit.forget_compile_in_progress(dispatcher)
        os.close(parent_end)
        run(spec, fit_ends)
        code = 0
    finally:
        os._exit(code)


def _spawn(spec: dict) -> subprocess.Popen | None:
    """Starts the helper as a new interpreter that unpickles ``spec`` (``None`` when the
    model cannot be pickled)."""
    fd, path = tempfile.mkstemp(prefix="tinynet-ahead-", suffix=".pkl")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(spec, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # e.g. layers defined in the user's script: no helper
        os.unlink(path)
        return None
    import tinynet  # the folder holding this tinynet goes first on the helper's path

    root = os.path.dirname(os.path.dirname(os.path.abspath(tinynet.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["TINYNET_COMPILE_AHEAD"] = "0"  # its import of tinynet starts no early helper
    return subprocess.Popen([sys.executable, "-m", "tinynet.tools.compile_ahead", path],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _detach() -> None:
    """At the fit's end: the helper goes on by itself until the cache is complete (a fork
    still running is reaped when it ends; ``os.waitpid`` at the next call, or never: the
    process ending first hands it to init)."""
    global _helper, _fit_ends
    helper, _helper = _helper, None
    if _fit_ends is not None:  # the fork completes the cache from now on
        with contextlib.suppress(OSError):
            os.close(_fit_ends)
        _fit_ends = None
    if helper is not None:
        _running.append(helper)
    _reap()
    primed.reap()


_running: list = []  # helpers that outlived their fit: pids of forks, or Popen objects


def _reap() -> None:
    """Collects the exit status of the helpers that have ended (no zombies)."""
    for helper in list(_running):
        if isinstance(helper, int):
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(helper, os.WNOHANG)[0] == 0:
                    continue
        elif helper.poll() is None:
            continue
        _running.remove(helper)


def _random(shape: tuple, dtype: str, rng: np.random.Generator) -> np.ndarray:
    if np.dtype(dtype).kind in "iub":
        return np.zeros(shape, dtype=dtype)  # class 0: a valid label for any loss
    return rng.standard_normal(shape).astype(dtype)


def _tasks(spec: dict) -> list:
    """The helper's work as small tasks: a training step's kernels in the reverse of the
    order the fit meets them (the fit runs each layer's forward, first layer first, the
    loss, each backward, last layer first, then the optimizer). So the helper starts with
    the optimizer and the first layer's backward, the fit with the first forward, and the
    two meet in the middle of the backward pass, each then compiling kernels the other
    has left, instead of one following the other through the same layers and waiting at
    each. Then the inference passes of the validation sizes."""
    from tinynet.kernels._jit import shapes_only

    model, rng = spec["model"], np.random.default_rng(0)
    if not spec.get("by_layer", True):
        return _step_tasks(spec, rng)
    layers = model.layers

    def optimizer() -> None:
        params = model.trainable_parameters()
        for p in params:
            p.grad = _random(p.value.shape, p.value.dtype.str, rng)
        model.optimizer.apply_or_undo(params)  # the training step: its check kernel too

    def loss(size: int, out_shape: tuple, training: bool) -> None:
        y_pred = _random(out_shape, "<f4", rng)
        y_true = _random((size, *spec["y"][0]), spec["y"][1], rng)
        model.loss.value_and_grad(y_true, y_pred) if training else model.loss(y_true, y_pred)
        for metric in model.metrics:
            metric(y_true, y_pred)

    def layer(i: int, shape: tuple, training: bool, backward_first: bool) -> None:
        x = _random(shape, spec["x"][1] if i == 0 else "<f4", rng)
        with shapes_only() if backward_first else contextlib.nullcontext():
            out = np.asarray(layers[i].forward(x, training=training))
        if training:  # as the fit: no dx for the first layer
            grad = _random(out.shape, "<f4", rng)
            (layers[i].backward if i else layers[i].backward_params)(grad)

    tasks = [optimizer]
    for training, sizes in ((True, spec["train"]), (False, spec["test"])):
        for size in sizes:
            shapes = [(size, *spec["x"][0])]
            for lay in layers:
                shapes.append(tuple(lay.compute_output_shape(shapes[-1])))
            if training:  # the backwards (normalization and convolution layers skip
                # their forward kernels for it: kernels._jit.shapes_only)
                tasks += [functools.partial(layer, i, shapes[i], True, True)
                          for i in range(len(layers))]
            tasks.append(functools.partial(loss, size, shapes[-1], training))
            tasks += [functools.partial(layer, i, shapes[i], training, False)
                      for i in reversed(range(len(layers)))]
    return tasks


def _step_tasks(spec: dict, rng: np.random.Generator) -> list:
    """The work for a model that is not a chain of layers (a functional graph, a
    subclassed model): its whole training step on each batch size of the fit (the
    optimizer updating the helper's copy of the weights), then its test step on each
    validation size."""
    model = spec["model"]

    def step(size: int, training: bool) -> None:
        xs = [_random((size, *spec["x"][0]), spec["x"][1], rng)]
        ys = [_random((size, *spec["y"][0]), spec["y"][1], rng)]
        if training:
            params, guard = model._step_state()
            model._train_step(xs, ys, params, guard, lambda: "compile-ahead helper")
        else:
            model._test_step(xs, ys)

    return ([functools.partial(step, size, True) for size in spec["train"]]
            + [functools.partial(step, size, False) for size in spec["test"]])


def run(spec: dict, fit_ends: int | None = None) -> None:
    """The helper's work (:func:`_tasks`): ahead of the fit with the fit's gates, then
    every gate forcing serial, then parallel kernels, holding the completion lock; a fork
    starts the latter once its fit has ended (``fit_ends``: :func:`_wait_for_fit`). A task
    whose kernel the fit is compiling goes to the back of the queue instead of waiting, so
    the helper keeps compiling what the fit needs later (a helper kernel met inside a
    compile already under way is waited for:
    :data:`tinynet.kernels._jit.WAIT_FOR_BUSY_KERNELS`); a task that fails again with no
    kernel busy is dropped."""
    from tinynet.kernels import _jit, completion

    _jit.silence_compile_notice()
    _jit.WAIT_FOR_BUSY_KERNELS = False
    completion.OWN_COMPLETER = True
    completion.hold_completion_lock()  # (a fork holds it already)
    tuning.set(**spec["gates"])
    tuning.set_num_threads(spec["threads"])
    if spec.get("by_layer", True):  # a whole step would only follow the fit's own order
        _drain(_tasks(spec))  # ahead of the fit, with its gates
    # The fit's kernels are all in the cache now: what follows is for later runs, so it
    # waits for the fit to end and then yields the processor to anything else wherever
    # cores are short.
    if fit_ends is not None:
        _wait_for_fit(fit_ends)
    _lower_priority()
    # Then every other variant the model's calls may pick: all serial, all parallel (on
    # every thread, whatever the load: a busy machine would send the calls to serial).
    tuning.set_adaptive_threads(False)
    tuning.set_num_threads(tuning.max_threads())
    for gate in _FORCED:
        with tuning.override(**{name: gate for name in tuning.defaults()}):
            _drain(_tasks(spec))
    primed.mark_primed()  # a later import of tinynet starts no early helper


def _head_spec() -> dict:
    """The spec of a small classifier's head (128 features, a 64-unit ReLU ``Dense``, a
    10-unit ``Dense``; Adam; the sparse crossentropy of logits; batches of 32): the
    kernels a training step runs whatever the layers before it are."""
    import types

    from tinynet.layers import Dense
    from tinynet.losses import SparseCategoricalCrossentropy
    from tinynet.optimizers import Adam

    layers, shape = [Dense(64, activation="relu"), Dense(10)], (None, 128)
    for lay in layers:
        lay.build(shape)
        shape = tuple(lay.compute_output_shape(shape))
    params = [p for lay in layers for p in lay.parameters() if p.trainable]
    model = types.SimpleNamespace(layers=layers, optimizer=Adam(), metrics=[],
                                  loss=SparseCategoricalCrossentropy(from_logits=True),
                                  trainable_parameters=lambda: params)
    return {"model": model, "x": ((128,), "<f4"), "y": ((), "<i8"), "train": [32], "test": []}


def run_head(stop: Callable[[], bool]) -> bool:
    """The early helper's work (:mod:`tinynet.tools.compile_early`): a training step of
    :func:`_head_spec`, in the fit's helper's order (the optimizer first), with the
    default gates; ``stop`` is asked before each task. Returns whether it got to the
    end."""
    from tinynet.kernels import _jit, completion

    _jit.silence_compile_notice()
    _jit.WAIT_FOR_BUSY_KERNELS = False
    completion.OWN_COMPLETER = True  # it compiles what a completing helper may hold
    return _drain(_tasks(_head_spec()), stop)


def _wait_for_fit(fit_ends: int) -> None:
    """Returns when the fit that forked this helper has ended: the pipe's write end is
    closed (:func:`_detach`, or the fit's process ended), or this process has been handed
    to another parent (the fit's process ended while a child of its own, forked after this
    helper, still holds a copy of the write end). A fit's parallel steps share the cores
    badly with a compiling process, however low its priority: a thread of each parallel
    region waits for the one the compile has taken the core from."""
    parent = os.getppid()
    try:
        while not select.select([fit_ends], [], [], 0.5)[0] and os.getppid() == parent:
            pass
    finally:
        os.close(fit_ends)


#: The niceness the helper adds once the fit's own kernels are compiled (Unix).
COMPLETION_NICENESS = 10


def _lower_priority() -> None:
    """Lowers this process's scheduling priority by :data:`COMPLETION_NICENESS` (where
    the platform has ``os.nice``; a failure leaves it as it was)."""
    with contextlib.suppress(AttributeError, OSError):
        os.nice(COMPLETION_NICENESS)


_FORCED = (2**62, 0)  # every gate set to this: the serial kernels, then the parallel ones


def _drain(tasks: list, stop: Callable[[], bool] = lambda: False) -> bool:
    """Runs ``tasks``; one whose kernel another process is compiling goes to the back of
    the queue instead of waiting. ``stop`` is asked before each task; returns whether
    every task ran (or failed with a real error) before it said yes."""
    from tinynet.kernels import _jit

    queue = collections.deque(tasks)
    stalled = 0  # tasks in a row that met a busy kernel
    while queue and not stop():
        task = queue.popleft()
        try:
            task()
            stalled = 0
        except Exception as exc:  # noqa: BLE001
            if _jit.BUSY not in str(exc):  # a real error: the fit reports it
                continue
            queue.append(task)
            stalled += 1
            if stalled >= len(queue):  # every task left waits on the fit: let it finish one
                time.sleep(0.1)
                stalled = 0
    return not queue


def main(argv: list[str] | None = None) -> int:
    """``python -m tinynet.tools.compile_ahead SPEC``: runs (and deletes) a pickled spec."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m tinynet.tools.compile_ahead SPEC (started by Sequential.fit)",
              file=sys.stderr)
        return 2
    try:
        with open(argv[0], "rb") as fh:
            spec = pickle.load(fh)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(argv[0])
    run(spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
