"""tinynet's own GEMM against torch.mm per shape, interleaved medians in one process.

Run by hand: ``python benchmarks/gemm_shapes.py [--threads 1 2] [--reps 21] [--cpu]``. Prints,
per shape and thread count, the median time of ``tinynet.ops.arrays.matmul.matmul`` and
of ``torch.mm`` (the same operands, transposed views where the product reads one
transposed), their ratio, and tinynet's GMAC/s. The shapes are the ones the dense, rnn
and transformer groups run. ``--cpu`` times CPU seconds of this process
(``time.process_time``) instead of wall-clock seconds: on a machine shared with other
work, one-thread figures then count less of the time the process waited for a core.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

# (label, M, K, N, trans_a, trans_b)
SHAPES = [
    ("lstm x@W 6400x64x256", 6400, 64, 256, False, False),
    ("lstm dz@W.T 6400x256x64", 6400, 256, 64, False, True),
    ("lstm x.T@dz 64x6400x256", 64, 6400, 256, True, False),
    ("lstm step 64x64x256", 64, 64, 256, False, False),
    ("dense 1024x512x512", 1024, 512, 512, False, False),
    ("dense dx 1024x512x512 tB", 1024, 512, 512, False, True),
    ("dense dW 512x1024x512 tA", 512, 1024, 512, True, False),
    ("xf ff1 2048x64x128", 2048, 64, 128, False, False),
    ("xf ff2 2048x128x64", 2048, 128, 64, False, False),
    ("xf dW 64x2048x128 tA", 64, 2048, 128, True, False),
    ("xf dW 128x2048x64 tA", 128, 2048, 64, True, False),
]


def _median_pair(f, g, reps: int, clock=time.perf_counter) -> tuple[float, float]:
    for fn in (f, g):
        for _ in range(3):
            fn()
    number = max(1, int(0.02 / max(1e-6, _once(f))))
    tf, tg = [], []
    for r in range(reps):
        order = (f, g) if r % 2 == 0 else (g, f)
        for fn in order:
            t0 = clock()
            for _ in range(number):
                fn()
            dt = (clock() - t0) / number
            (tf if fn is f else tg).append(dt)
    return statistics.median(tf), statistics.median(tg)


def _once(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=21)
    parser.add_argument("--only", default="", help="only the shapes whose label has this")
    parser.add_argument("--cpu", action="store_true", help="time CPU seconds (one thread)")
    args = parser.parse_args()
    import torch

    from tinynet import tuning
    from tinynet.ops.arrays.matmul import matmul

    rng = np.random.default_rng(0)
    print(f"load average {os.getloadavg()}")
    for threads in args.threads:
        tuning.set_num_threads(threads)
        torch.set_num_threads(threads)
        for label, m, k, n, ta, tb in SHAPES:
            if args.only and args.only not in label:
                continue
            a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
            b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
            out = np.empty((m, n), np.float32)
            at, bt = torch.from_numpy(a), torch.from_numpy(b)
            at = at.T if ta else at
            bt = bt.T if tb else bt
            ot = torch.empty((m, n))
            t_tn, t_pt = _median_pair(lambda: matmul(a, b, out, trans_a=ta, trans_b=tb),
                                      lambda: torch.mm(at, bt, out=ot), args.reps,
                                      time.process_time if args.cpu else time.perf_counter)
            print(f"{threads}T {label:28s} tinynet {t_tn * 1e3:8.3f} ms  torch "
                  f"{t_pt * 1e3:8.3f} ms  ratio {t_tn / t_pt:5.2f}  "
                  f"{m * n * k / t_tn / 1e9:6.1f} GMAC/s", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
