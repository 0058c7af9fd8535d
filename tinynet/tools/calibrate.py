"""Measure each tuning gate's serial-vs-parallel crossover on this machine.

For every gate, a probe runs the gated work over a ladder of sizes twice per repetition,
once with the gate at 0 (parallel) and once at 2**62 (serial), interleaved, and keeps the
medians. The crossover is the first size where parallel wins by more than 5 % with at
most one losing size above it; a gate whose parallel variant never wins is set to 2**62.

With ``loaded`` (``--loaded``) every measurement runs beside one CPU-bound background
process, as on a machine shared with other work: a parallel region then waits whenever
the scheduler takes a core from one of its threads, so the crossovers move up.

Run ``python -m tinynet.tools.calibrate [--quick] [--loaded] [--gates a,b] [--write PATH]``
(or call :func:`calibrate`); load the written profile with ``TINYNET_TUNING_FILE=PATH``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import numpy as np

from tinynet import tuning

__all__ = ["busy_process", "calibrate", "crossover", "main", "PROBES"]

NEVER = 2**62
WIN = 0.95  # parallel must take less than 95 % of the serial time


def crossover(sizes: list[int], ratios: list[float]) -> int:
    """The calibration rule: first size where parallel/serial < 0.95 with at most one
    losing size (ratio > 1) above it; ``2**62`` when there is none."""
    for i, r in enumerate(ratios):
        if r < WIN and sum(1 for later in ratios[i + 1:] if later > 1.0) <= 1:
            return int(sizes[i])
    return NEVER


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _layer_probe(make_layer, shape_for: Callable[[int], tuple]) -> Callable[[int], Callable]:
    def build(n: int) -> Callable[[], None]:
        shape = shape_for(n)
        x = _rng().standard_normal(shape).astype(np.float32)
        layer = make_layer()
        y = np.asarray(layer(x, training=True))
        g = np.ones_like(y)

        def run() -> None:
            layer.forward(x, training=True)
            layer.backward(g)
        return run
    return build


def _norm_probe(cls_name: str, channels: int, **kwargs):
    def make():
        from tinynet import layers

        return getattr(layers, cls_name)(**kwargs)
    return _layer_probe(make, lambda n: (max(n // (64 * channels), 1), 8, 8, channels))


def _ln_probe():
    def make():
        from tinynet.layers import LayerNormalization

        return LayerNormalization()
    return _layer_probe(make, lambda n: (max(n // 256, 1), 256))


def _merge_probe(n: int) -> Callable[[], None]:
    from tinynet.ops.arrays import normalization as core

    x = _rng().standard_normal((max(n // 4096, 1), 64, 64)).astype(np.float32)
    out, _, mean, _, inv = core.gn_forward(x, 8, np.ones(64), np.zeros(64), 1e-3, want_xn=False)
    g = np.ones_like(x)
    return lambda: core.gn_backward(g, x, inv, 8, np.ones(64, np.float32), mean=mean)


def _reduce_probe(n: int) -> Callable[[], None]:
    from tinynet.ops.arrays.reduction import det_reduce

    x = _rng().standard_normal(n).astype(np.float32)
    return lambda: det_reduce(x)


def _matmul_probe(n: int) -> Callable[[], None]:
    from tinynet.ops.arrays.matmul import matmul

    k = 128
    m = max(n // (k * k), 1)
    a = _rng().standard_normal((m, k)).astype(np.float32)
    b = _rng().standard_normal((k, k)).astype(np.float32)
    return lambda: matmul(a, b)


def _optimizer_probe(n: int) -> Callable[[], None]:
    from tinynet.layers.layer import Parameter
    from tinynet.optimizers import Adam

    p = Parameter(_rng().standard_normal(n).astype(np.float32), "kernel")
    p.grad = np.ones(n, dtype=np.float32)
    opt = Adam()
    return lambda: opt.apply([p])


def _simple_layer(cls_name: str, *args, channels: int = 16, **kwargs):
    def make():
        from tinynet import layers

        return getattr(layers, cls_name)(*args, **kwargs)
    return _layer_probe(make, lambda n: (max(n // (256 * channels), 1), 16, 16, channels))


def _lstm():
    from tinynet.layers import LSTM

    return LSTM(32, return_sequences=True)


# gate -> (probe builder taking a size in the gate's unit, ladder scale)
PROBES: dict[str, Callable[[int], Callable[[], None]]] = {
    "gn_row_parallel_min_elems": _norm_probe("GroupNormalization", 32, groups=8),
    "gn_param_grad_parallel_min_elems": _merge_probe,
    "bn_parallel_min_elems": _norm_probe("BatchNormalization", 32),
    "ln_parallel_min_elems": _ln_probe(),
    "reduce_parallel_min_elems": _reduce_probe,
    "elementwise_parallel_min_elems": _simple_layer("ReLU"),
    "matmul_parallel_min_flops": _matmul_probe,
    "conv_parallel_min_elems": _simple_layer("Conv2D", 16, 3, padding="same"),
    "pool_parallel_min_elems": _simple_layer("MaxPooling2D", 2),
    "optimizer_parallel_min_elems": _optimizer_probe,
    # an LSTM of 32 units on 16 features, 8 steps: 8 * 32 * 128 multiply-adds per sample
    "rnn_parallel_min_muladds": _layer_probe(_lstm, lambda n: (max(n // (8 * 32 * 128), 1), 8, 16)),
}


def _time(fn: Callable[[], None]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure(gate: str, sizes: list[int], reps: int) -> list[float]:
    """parallel/serial median-time ratios of ``gate``'s probe at each size."""
    build = PROBES[gate]
    ratios = []
    for n in sizes:
        run = build(n)
        with tuning.override(**{gate: 0}):
            run()
        with tuning.override(**{gate: NEVER}):
            run()
        par, ser = [], []
        for _ in range(reps):
            with tuning.override(**{gate: 0}):
                par.append(_time(run))
            with tuning.override(**{gate: NEVER}):
                ser.append(_time(run))
        ratios.append(float(np.median(par) / np.median(ser)))
    return ratios


@contextlib.contextmanager
def busy_process(active: bool = True) -> Iterator[None]:
    """One CPU-bound background process (a Python busy loop) while the block runs."""
    if not active:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", "while True:\n    pass"])
    try:
        time.sleep(0.2)  # let it start and take its core
        yield
    finally:
        proc.kill()
        proc.wait()


def calibrate(gates: list[str] | None = None, *, quick: bool = False, loaded: bool = False,
              write: str | None = None, verbose: bool = True) -> dict[str, int]:
    """Measures each gate's crossover on this machine.

    Args:
        gates: Gate names (default: every gate).
        quick: Fewer sizes and repetitions.
        loaded: Measure beside one CPU-bound background process (:func:`busy_process`).
        write: Write a JSON profile here (load it with ``TINYNET_TUNING_FILE``).
        verbose: Print the table.

    Returns:
        ``{gate: crossover}``; gates whose probe cannot run (a missing optional
        piece) keep their current value and are reported.
    """
    names = list(PROBES) if gates is None else list(gates)
    for name in names:
        tuning.get(name)  # KeyError for unknown names
    lo, hi = (14, 22) if quick else (12, 23)
    sizes = [2**k for k in range(lo, hi + 1, 2 if quick else 1)]
    reps = 5 if quick else 11
    lines = [f"calibrating on {tuning.get_num_threads()} threads"
             f"{', beside a busy process' if loaded else ''}; sizes "
             f"2^{lo}..2^{hi}; ratio = parallel / serial (median of {reps})"]
    adaptive = tuning.get_adaptive_threads()
    tuning.set_adaptive_threads(False)  # the parallel runs must use every thread
    try:
        result = _measure_all(names, sizes, reps, loaded, lines)
    finally:
        tuning.set_adaptive_threads(adaptive)
    if verbose:
        print("\n".join(lines))
    if write:
        profile = {"gates": result, "num_threads": tuning.get_num_threads(),
                   "machine": platform.platform(), "sizes": sizes, "loaded": loaded}
        with open(write, "w", encoding="utf-8") as fh:
            json.dump(profile, fh, indent=2)
        if verbose:
            print(f"wrote {write}")
    return result


def _measure_all(names: list[str], sizes: list[int], reps: int, loaded: bool,
                 lines: list[str]) -> dict[str, int]:
    """Each gate's crossover; appends a table row per gate to ``lines``."""
    result: dict[str, int] = {}
    for name in names:
        try:
            with busy_process(loaded):
                ratios = measure(name, sizes, reps)
        except Exception as exc:  # a probe whose layer is unavailable
            result[name] = tuning.get(name)
            lines.append(f"{name:34} skipped ({type(exc).__name__}: {exc})")
            continue
        result[name] = crossover(sizes, ratios)
        cells = " ".join(f"{r:5.2f}" for r in ratios)
        lines.append(f"{name:34} {result[name]:>20}   {cells}")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinynet.tools.calibrate")
    parser.add_argument("--write", metavar="PATH", help="write a JSON tuning profile")
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    parser.add_argument("--loaded", action="store_true",
                        help="measure beside one CPU-bound background process")
    parser.add_argument("--gates", help="comma-separated gate names (default: all)")
    args = parser.parse_args(argv)
    gates = args.gates.split(",") if args.gates else None
    calibrate(gates, quick=args.quick, loaded=args.loaded, write=args.write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
