"""A tour of tinynet's four normalization layers on one channels-last batch.

Run: python examples/normalization_tour.py

It builds BatchNormalization, GroupNormalization, InstanceNormalization and
LayerNormalization, prints the statistics each one normalizes over (before and after),
prints the tuning table, and shows that moving every gate and the thread count leaves the
output bits unchanged.
"""

from __future__ import annotations

import hashlib

import numpy as np

import tinynet as tn
from tinynet import tuning
from tinynet.layers import (BatchNormalization, GroupNormalization, InstanceNormalization,
                            LayerNormalization)

GATES = ("gn_row_parallel_min_elems", "gn_param_grad_parallel_min_elems",
         "bn_parallel_min_elems", "ln_parallel_min_elems")


def make_batch(seed: int = 0) -> np.ndarray:
    """[8, 16, 16, 8] channels-last batch; every channel has its own scale and offset."""
    rng = np.random.default_rng(seed)
    offsets = np.linspace(-50.0, 1000.0, 8, dtype=np.float32)
    scales = np.geomspace(0.1, 30.0, 8).astype(np.float32)
    return (rng.standard_normal((8, 16, 16, 8)).astype(np.float32) * scales + offsets)


def stats(x: np.ndarray, axes: tuple[int, ...], label: str) -> str:
    mean = x.astype(np.float64).mean(axis=axes)
    std = x.astype(np.float64).std(axis=axes)
    return (f"  {label:<7} mean [{mean.ravel().min():9.3f}, {mean.ravel().max():9.3f}]"
            f"  std [{std.ravel().min():8.3f}, {std.ravel().max():8.3f}]")


def run_all(x: np.ndarray, g: np.ndarray) -> bytes:
    """Forward + backward through every layer; a digest of every output and gradient."""
    digest = hashlib.sha256()
    for layer in make_layers():
        y = layer(x, training=True)
        dx = layer.backward(g)
        digest.update(np.asarray(y).tobytes())
        digest.update(np.asarray(dx).tobytes())
        for p in layer.trainable_parameters():
            digest.update(p.grad.tobytes())
    return digest.digest()


def make_layers():
    return [BatchNormalization(), GroupNormalization(groups=4), InstanceNormalization(),
            LayerNormalization(axis=(1, 2, 3))]


def main() -> None:
    tn.set_seed(0)
    x = make_batch()
    # The axes each layer's statistics cover (for a [N, H, W, C] batch).
    views = {
        "BatchNormalization": ((0, 1, 2), "per channel over batch and positions"),
        "GroupNormalization": (None, "per sample, per group of 2 channels"),
        "InstanceNormalization": ((1, 2), "per sample and channel"),
        "LayerNormalization": ((1, 2, 3), "per sample over H, W and C"),
    }
    print(f"input batch {x.shape} (channels-last)\n")
    for layer in make_layers():
        name = type(layer).__name__
        axes, what = views[name]
        y = np.asarray(layer(x, training=True))
        print(f"{name}: {what}")
        if axes is None:  # groups: view [N, H, W, G, C/G] and reduce over H, W, C/G
            gx = x.reshape(8, 16, 16, 4, 2)
            gy = y.reshape(8, 16, 16, 4, 2)
            print(stats(gx, (1, 2, 4), "before"))
            print(stats(gy, (1, 2, 4), "after"))
        else:
            print(stats(x, axes, "before"))
            print(stats(y, axes, "after"))
        print()

    print("tuning gates:")
    print(tuning.describe())
    print()

    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    digests = {}
    for threads in sorted({1, tuning.max_threads()}):
        tuning.set_num_threads(threads)
        for gate in (0, 2**62):
            with tuning.override(**{name: gate for name in GATES}):
                digests[(threads, gate)] = run_all(x, g)
    tuning.reset()
    for (threads, gate), d in digests.items():
        where = "parallel" if gate == 0 and threads > 1 else "serial"
        print(f"threads={threads} gates={gate:<20} ({where:8}) sha256 {d.hex()[:16]}")
    same = len(set(digests.values())) == 1
    print("outputs and gradients bitwise identical across gates and threads:", same)
    if not same:
        raise SystemExit("determinism violated")


if __name__ == "__main__":
    main()
