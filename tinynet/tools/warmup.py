"""Compile (or load from the cache) every Numba kernel once: ``python -m tinynet.warmup``.

Numba compiles a kernel on its first call and caches it on disk (``cache=True``). Run this
once after installing, so a user's first real run starts fast: it pushes small batches
through every layer, loss and optimizer, in both serial and parallel variants, and every
layout the normalization kernels have (each layout compiles kernels of its own).
What no layer runs is left to its first use: the variants of the public group-norm
cores (``group_norm_forward_core`` returning ``x_normalized``, the backward without
recomputing it), which only a direct call of those functions compiles.

Numba compiles under a lock per process, so the work is split into tasks (a family of
kernels in its serial or its parallel variants) run by one worker process per core, all
compiling into the same cache; a progress bar counts the tasks done.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Callable

import numpy as np

from tinynet.tools import usable_cores

__all__ = ["warmup", "main", "TASKS"]

_SERIAL, _PARALLEL = 2**62, 0  # every gate set to this: serial, or parallel, variants


def _x(shape: tuple, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _train_and_infer(layer, x: np.ndarray) -> None:
    y = np.asarray(layer(x, training=True))
    layer.backward(np.ones_like(y))
    layer(x, training=False)


def _conv() -> None:
    from tinynet import layers as L

    x = _x((2, 8, 8, 4))
    for layer in (L.Conv2D(4, 3, padding="same", activation="relu"), L.Conv2D(4, 1),
                  L.Conv2D(4, 3, strides=2)):
        _train_and_infer(layer, x)
    _train_and_infer(L.Conv2D(16, 3, padding="same"), np.repeat(x, 4, axis=3))  # direct


def _depthwise() -> None:
    from tinynet import layers as L

    _train_and_infer(L.DepthwiseConv2D(3, padding="same", depth_multiplier=2),
                     _x((2, 8, 8, 4)))


def _pooling() -> None:
    from tinynet import layers as L

    x = _x((2, 8, 8, 4))
    for layer in (L.MaxPooling2D(2), L.AveragePooling2D(2, padding="same"),
                  L.GlobalAveragePooling2D(), L.GlobalMaxPooling2D()):
        _train_and_infer(layer, x)


# One channel count per layout of the group kernels (layout.layout_of): half rows,
# quads, two quads and spans; batch 1 of a large sample runs the blocks-parallel driver,
# batch 2 of small samples the chunks.
_NORM_CHANNELS = (4, 64, 128, 48)


def _normalization(c: int) -> None:
    from tinynet import layers as L

    for shape in ((2, 4, 4, c), (1, 48, 48, c)):
        x = _x(shape)
        for layer in (L.BatchNormalization(), L.GroupNormalization(2),
                      L.InstanceNormalization()):
            _train_and_infer(layer, x)


# One feature count per row kind of layer norm's rows (rows.row_kind).
_ROW_FEATURES = (64, 32, 48, 24, 6)


def _layer_norm() -> None:
    from tinynet import layers as L

    for f in _ROW_FEATURES:
        _train_and_infer(L.LayerNormalization(), _x((5, f)))
    _train_and_infer(L.LayerNormalization(axis=(1, 2, 3)), _x((2, 4, 4, 4)))


def _elementwise() -> None:
    from tinynet import layers as L

    x = _x((2, 8, 8, 4))
    for layer in (*[L.Activation(a) for a in ("relu", "sigmoid", "tanh", "softmax", "elu",
                                              "leaky_relu", "gelu", "silu")],
                  L.ReLU(max_value=6.0), L.LeakyReLU(), L.ELU(), L.Softmax(),
                  L.Dropout(0.5), L.SpatialDropout2D(0.5), L.Flatten(), L.Reshape((-1,))):
        _train_and_infer(layer, x)


def _dense() -> None:
    from tinynet.layers import Dense
    from tinynet.ops.arrays.matmul import matmul
    from tinynet.ops.arrays.reduction import det_reduce

    x = _x((2, 8, 8, 4))
    dense = Dense(3, activation="relu")
    y = np.asarray(dense(x.reshape(2, -1)))
    dense.backward(np.ones_like(y))
    dense.backward_params(np.ones_like(y))
    matmul(x.reshape(32, 16), x.reshape(16, 32))
    det_reduce(x)


def _recurrent() -> None:
    from tinynet import layers as L

    x = _x((2, 5, 3))
    for layer in (L.SimpleRNN(4, return_sequences=True), L.LSTM(4),
                  L.GRU(4, return_sequences=True), L.GRU(4, reset_after=False)):
        _train_and_infer(layer, x)
    table = L.Embedding(10, 3)
    y = table(np.array([[1, 2, 1]]))
    table.backward(np.ones_like(np.asarray(y)))  # the table gradient's kernel


def _attention() -> None:
    from tinynet import layers as L

    q, v = _x((2, 4, 6)), _x((2, 5, 6))
    for layer in (L.MultiHeadAttention(2, 3), L.Attention(use_scale=True),
                  L.AdditiveAttention()):
        inputs = [q, v]
        y = layer(q, v) if isinstance(layer, L.MultiHeadAttention) else layer(inputs)
        layer.backward(np.ones_like(np.asarray(y)))


def _losses_and_optimizers() -> None:
    from tinynet import losses, optimizers
    from tinynet.layers.layer import Parameter

    rng = np.random.default_rng(0)
    logits = rng.standard_normal((4, 3)).astype(np.float32)
    for loss in (losses.SparseCategoricalCrossentropy(from_logits=True),
                 losses.CategoricalCrossentropy(), losses.BinaryCrossentropy(),
                 losses.MeanSquaredError(), losses.MeanAbsoluteError()):
        target = (np.array([0, 1, 2, 0]) if "Sparse" in type(loss).__name__
                  else np.eye(3, dtype=np.float32)[[0, 1, 2, 0]])
        loss.value_and_grad(target, 1.0 / (1.0 + np.exp(-logits)))
    for opt in (optimizers.SGD(momentum=0.9), optimizers.Adam(), optimizers.AdamW(),
                optimizers.RMSprop(momentum=0.9), optimizers.Adagrad(),
                optimizers.SGD(clipnorm=1.0), optimizers.Adam(global_clipnorm=1.0)):
        p = Parameter(rng.standard_normal(64).astype(np.float32), "kernel")
        p.grad = np.ones(64, dtype=np.float32)
        opt.apply_or_undo([p])  # the training step (Adam: its check kernel too)


#: The kernel families (the normalization one per layout), each run once with serial and
#: once with parallel gates. Serial tasks go first, in this order: the longest first, so
#: the workers finish together (by compile CPU: layer norm, recurrent and conv, then
#: depthwise and attention, docs/performance.md); the first normalization task compiles
#: the group kernels the other three share, so it runs well before them (no waiting on
#: its locks).
TASKS: dict[str, Callable[[], None]] = {
    "layer norm": _layer_norm, "recurrent": _recurrent, "conv": _conv,
    "depthwise conv": _depthwise,
    **{f"normalization {c} channels": functools.partial(_normalization, c)
       for c in _NORM_CHANNELS[:1]},
    "attention": _attention, "elementwise": _elementwise,
    **{f"normalization {c} channels": functools.partial(_normalization, c)
       for c in _NORM_CHANNELS[1:]},
    "pooling": _pooling, "losses, optimizers": _losses_and_optimizers, "dense": _dense,
}

#: The parallel tasks after all serial ones (each reuses its family's serial kernels),
#: the longest first: most compile a few small launchers only (:mod:`.kernels.address`);
#: group norm, conv and pooling have parallel kernels of their own.
_PARALLEL_ORDER: tuple[str, ...] = (
    "normalization 4 channels", "conv", "pooling", "recurrent", "dense",
    "losses, optimizers", "layer norm", "depthwise conv", "attention", "elementwise",
    *(f"normalization {c} channels" for c in _NORM_CHANNELS[1:]))


def _jobs() -> list[tuple[str, int]]:
    """The warmup's ``(task, gate)`` pairs in the order the workers take them."""
    return ([(name, _SERIAL) for name in TASKS]
            + [(name, _PARALLEL) for name in _PARALLEL_ORDER])


def run_task(name: str, gate: int) -> float:
    """Runs task ``name`` with every gate set to ``gate``; returns its seconds."""
    from tinynet import tuning
    from tinynet.kernels._jit import silence_compile_notice

    silence_compile_notice()  # the warmup's progress bar says it
    start = time.perf_counter()
    adaptive = tuning.get_adaptive_threads()
    tuning.set_adaptive_threads(False)  # parallel gates run parallel kernels, however busy
    try:
        with tuning.override(**{g: gate for g in tuning.defaults()}):
            TASKS[name]()
    finally:
        tuning.set_adaptive_threads(adaptive)
    return time.perf_counter() - start



def warmup(verbose: bool = True, workers: int | None = None) -> float:
    """Runs every kernel family once in its serial and parallel variants.

    Args:
        verbose: Show a progress bar and the total time.
        workers: Worker processes compiling at once (default: one per core the process
            may run on); ``1`` runs every task in this process.

    Returns:
        The seconds it took (compile time with an empty cache, load time with a warm one).
    """
    from tqdm import tqdm

    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise TypeError(f"warmup: workers must be a positive int, got {workers!r}")
        if workers < 1:
            raise ValueError(f"warmup: workers must be a positive int, got {workers!r}")
    from tinynet.tools import primed

    primed.stop()  # the warmup compiles every kernel: no early helper beside it
    start = time.perf_counter()
    todo = _jobs()
    workers = min(workers or usable_cores(), len(todo))
    bar = tqdm(total=len(todo), desc="tinynet: compiling kernels", unit="task",
               disable=not verbose, file=sys.stderr)
    with bar:
        if workers == 1:
            for job in todo:
                run_task(*job)
                bar.update()
        else:
            with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
                for done in as_completed([pool.submit(run_task, *job) for job in todo]):
                    done.result()
                    bar.update()
    seconds = time.perf_counter() - start
    primed.mark_primed()
    if verbose:
        print(f"tinynet kernels ready in {seconds:.1f} s")
    return seconds


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive int, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    """``python -m tinynet.warmup [--workers N] [--quiet]``; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tinynet.warmup",
        description="Compile (or load from Numba's cache) every tinynet kernel once, in its "
                    "serial and parallel variants, so the first real run starts fast. Run it "
                    "once after installing; with a warm cache it only loads the kernels.",
        epilog="The kernels go to Numba's cache (the folder NUMBA_CACHE_DIR names, when "
               "set).")
    parser.add_argument("--workers", type=_positive_int, default=None, metavar="N",
                        help="worker processes compiling at once (default: one per core "
                             "this process may run on); 1 compiles in this process")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress bar and no closing line")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    warmup(verbose=not args.quiet, workers=args.workers)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
