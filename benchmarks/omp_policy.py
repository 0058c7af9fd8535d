"""Does PyTorch care about ``OMP_WAIT_POLICY=PASSIVE``? Times PyTorch alone under both policies.

``benchmarks/run.py`` sets ``OMP_WAIT_POLICY=PASSIVE`` for its whole process, PyTorch
included, because the two libraries end up sharing one OpenMP runtime: Numba's OpenMP
threading layer binds ``GOMP_parallel`` to the libgomp that ``import torch`` loaded
first. With libgomp's default policy the idle pool threads spin after every parallel
region and take the cores from tinynet's BLAS worker threads (a Conv2D step ran about
1.6x slower), and tinynet's own default is PASSIVE. This script checks that the change
does not slow PyTorch: each policy runs in a fresh interpreter (the policy is read once,
when libgomp starts), PyTorch only, 2 threads, and the ratios passive / default are
printed per case (medians of interleaved rounds; ~1.0 means PyTorch does not care).

Usage: ``python benchmarks/omp_policy.py [--rounds N]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
import torch
import torch.nn.functional as F
torch.set_num_threads(2)
torch.manual_seed(0)

def conv(n, c, h, f):
    x = torch.randn(n, c, h, h).contiguous(memory_format=torch.channels_last).requires_grad_(True)
    w = torch.randn(f, c, 3, 3, requires_grad=True)
    b = torch.zeros(f, requires_grad=True)
    g = torch.ones(n, f, h, h).contiguous(memory_format=torch.channels_last)
    def run():
        x.grad = w.grad = b.grad = None
        torch.autograd.backward(F.conv2d(x, w, b, padding=1), g)
    return run

def norm(kind, shape, groups=None):
    x = torch.randn(*shape, requires_grad=True)
    c = shape[1] if kind != "LN" else shape[-1]
    w = torch.ones(c, requires_grad=True)
    b = torch.zeros(c, requires_grad=True)
    g = torch.randn(*shape)
    op = {"GN": lambda: F.group_norm(x, groups, w, b, 1e-3),
          "BN": lambda: F.batch_norm(x, None, None, w, b, True, 0.01, 1e-3),
          "LN": lambda: F.layer_norm(x, (c,), w, b, 1e-3)}[kind]
    def run():
        x.grad = w.grad = b.grad = None
        torch.autograd.backward(op(), g)
    return run

cases = {
    "conv 64x28x28x1->32": conv(64, 1, 28, 32),
    "conv 32x32x32x16->32": conv(32, 16, 32, 32),
    "conv 16x56x56x32->32": conv(16, 32, 56, 32),
    "GN 32x32x32x64 G=8": norm("GN", (32, 64, 32, 32), 8),
    "BN 64x16x16x128": norm("BN", (64, 128, 16, 16)),
    "LN 64x196x256": norm("LN", (64, 196, 256)),
}
out = {}
for name, run in cases.items():
    for _ in range(3):
        run()
    times = []
    for _ in range(int(sys.argv[1])):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    out[name] = times
print(json.dumps(out))
"""


def _child(policy: str | None, reps: int) -> dict[str, list[float]]:
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    res = subprocess.run([sys.executable, "-c", CHILD, str(reps)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(res.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds per policy")
    parser.add_argument("--reps", type=int, default=21, help="timed calls per case and round")
    args = parser.parse_args()
    samples: dict[str, dict[str, list[float]]] = {"default": {}, "PASSIVE": {}}
    for _ in range(args.rounds):
        for policy in ("default", "PASSIVE"):
            res = _child(None if policy == "default" else "PASSIVE", args.reps)
            for name, times in res.items():
                samples[policy].setdefault(name, []).extend(times)
    print(f"PyTorch alone, 2 threads, {args.rounds} rounds x {args.reps} calls per policy")
    print(f"{'case':24s} {'default ms':>11s} {'PASSIVE ms':>11s} {'passive/default':>16s}")
    ratios = []
    for name in samples["default"]:
        d = statistics.median(samples["default"][name]) * 1e3
        p = statistics.median(samples["PASSIVE"][name]) * 1e3
        ratios.append(p / d)
        print(f"{name:24s} {d:11.3f} {p:11.3f} {p / d:16.2f}")
    geo = statistics.geometric_mean(ratios)
    print(f"geomean passive/default: {geo:.2f}")


if __name__ == "__main__":
    main()
