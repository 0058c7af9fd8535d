"""Compile seconds of the group-norm kernels, one process, on an empty kernel cache.

Usage::

    python benchmarks/gn_compile.py [--layouts 0,1,2,3] [--modes serial,chunks,blocks]

Runs ``gn_forward`` (without ``x_normalized``, as the layers do) and ``gn_backward``
(recomputing ``x_normalized``) once per layout (channels 48, 32, 64, 128: SPANS,
HALF_ROWS, QUAD_ROWS, TWO_QUADS) and driver mode, in a fresh ``NUMBA_CACHE_DIR``, and
lists each kernel's compile seconds from Numba's compile events:
wall and CPU seconds (the compiling thread's: less affected by other processes on a
busy machine), with the helpers a kernel compiles on the way, and CPU seconds without.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

CHANNELS = {0: 48, 1: 32, 2: 64, 3: 128}


def _record(path: str) -> None:
    """Appends each compile's wall and CPU (this thread's) seconds to ``path``: total with
    the helpers it compiles on the way, self without."""
    from numba.core import event

    stack: list = []

    class Recorder(event.Listener):
        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            name = f"{fn.__module__.split('.')[-1]}.{fn.__qualname__.split('.')[-1]}"
            stack.append([name, time.perf_counter(), time.thread_time(), 0.0, 0.0])

        def on_end(self, ev):
            name, wall0, cpu0, child_wall, child_cpu = stack.pop()
            wall = time.perf_counter() - wall0
            cpu = time.thread_time() - cpu0
            if stack:
                stack[-1][3] += wall
                stack[-1][4] += cpu
            row = {"kernel": name, "depth": len(stack), "total": wall, "self": wall - child_wall,
                   "cpu": cpu, "cpu_self": cpu - child_cpu}
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row) + "\n")

    event.register("numba:compile", Recorder())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layouts", default="0,1,2,3")
    parser.add_argument("--modes", default="serial,chunks,blocks")
    parser.add_argument("--cache", default=None, help="kernel cache folder (default: a new one)")
    args = parser.parse_args()
    cache = args.cache or tempfile.mkdtemp(prefix="gn_compile_")
    os.environ["NUMBA_CACHE_DIR"] = cache
    os.environ["TINYNET_ADAPTIVE_THREADS"] = "0"
    trace = os.path.join(cache, "trace.jsonl")
    _record(trace)
    import numpy as np

    from tinynet import tuning
    from tinynet.ops.arrays.normalization import gn_backward, gn_forward

    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for layout in (int(v) for v in args.layouts.split(",")):
        c = CHANNELS[layout]
        for mode in args.modes.split(","):
            shape = {"serial": (4, 8, 8, c), "chunks": (8, 8, 8, c),
                     "blocks": (1, 64, 64, c)}[mode]
            x = rng.standard_normal(shape).astype(np.float32)
            gate = 0 if mode != "serial" else 1 << 62
            with tuning.override(gn_row_parallel_min_elems=gate):
                gamma = np.ones(c, np.float32)
                out, _, mean, _, inv = gn_forward(x, c // 8, gamma, gamma, 1e-3,
                                                  want_xn=False)
                gn_backward(out, x, inv, c // 8, gamma, mean=mean)
    wall = time.perf_counter() - t0
    with open(trace, encoding="utf-8") as fh:
        events = [json.loads(line) for line in fh if line.strip()]
    top = [e for e in events if e["depth"] == 0]
    print(f"{len(events)} compiles ({len(top)} from Python), {wall:.1f} s wall, "
          f"{sum(e['cpu'] for e in top):.1f} s CPU; load {os.getloadavg()[0]:.2f}")
    print("| kernel | depth | wall s | CPU s | CPU s without helpers |")
    print("|---|---:|---:|---:|---:|")
    for e in sorted(events, key=lambda e: -e["cpu"]):
        print(f"| `{e['kernel']}` | {e['depth']} | {e['total']:.2f} | {e['cpu']:.2f} | "
              f"{e['cpu_self']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
