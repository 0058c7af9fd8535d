"""One small CNN, four normalization layers, three batch sizes: what the batch does to BN.

Run: python examples/normalization_zoo.py [--epochs 6] [--limit N]

The same CNN (Conv2D(16)-norm-pool-Conv2D(32)-norm-pool-Dense(64)-Dense(10)) is trained
on scikit-learn's 8x8 digits with each normalization layer

* BN: BatchNormalization() (per channel, over the batch and every position), and once
  more with momentum=0.9 (its moving averages adapt ten times faster),
* GN: GroupNormalization(4) (per sample, per group of channels),
* IN: InstanceNormalization() (per sample and channel),
* LN: LayerNormalization(axis=(1, 2, 3)) (per sample, over height, width and channels),

at batch sizes 2, 8 and 32 (same seed, same epochs, Adam(1e-3)), and prints the test
accuracies as a table (rows: normalization, columns: batch size) with a short reading.
It also checks that BN's momentum changes nothing but the test-time statistics, and,
layer by layer, whether a sample's training-mode output depends on the other samples in
its batch.
``--limit N`` keeps the first N training samples, for a quick run.
"""

from __future__ import annotations

import argparse
import textwrap
import time

import numpy as np

import tinynet as tn
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Flatten, GroupNormalization,
                            Input, InstanceNormalization, LayerNormalization, MaxPooling2D)

NORMS = {
    "BN": BatchNormalization,
    "BN(m=0.9)": lambda: BatchNormalization(momentum=0.9),
    "GN(4)": lambda: GroupNormalization(4),
    "IN": InstanceNormalization,
    "LN(1,2,3)": lambda: LayerNormalization(axis=(1, 2, 3)),
}
BATCH_SIZES = (2, 8, 32)


def build_model(make_norm) -> tn.Sequential:
    """Conv(16) -> norm -> pool -> Conv(32) -> norm -> pool -> Dense(64) -> Dense(10)."""
    return tn.Sequential([
        Input((8, 8, 1)),
        Conv2D(16, 3, padding="same", activation="relu"),
        make_norm(),
        MaxPooling2D(2),
        Conv2D(32, 3, padding="same", activation="relu"),
        make_norm(),
        MaxPooling2D(2),
        Flatten(),
        Dense(64, activation="relu"),
        Dense(10),
    ])


def train_and_test(make_norm, batch_size: int, epochs: int, train: tuple,
                   test: tuple) -> tuple[float, list[np.ndarray]]:
    """Test accuracy and trained trainable weights of a freshly seeded model."""
    tn.set_seed(0)
    model = build_model(make_norm)
    model.compile(optimizer=tn.optimizers.Adam(1e-3),
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(*train, batch_size=batch_size, epochs=epochs, verbose=0)
    _, accuracy = model.evaluate(*test, batch_size=256, verbose=0)
    return float(accuracy), [p.value.copy() for p in model.trainable_parameters()]


def batch_dependence(make_norm, x: np.ndarray) -> float:
    """Largest change of sample 0's training-mode output when 7 other samples join it."""
    tn.set_seed(0)
    layer = make_norm()
    alone = layer(x[:1], training=True).numpy()
    together = layer(x, training=True).numpy()[:1]
    return float(np.max(np.abs(alone - together)))


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--limit", type=int, default=None,
                        help="keep the first N training samples")
    args = parser.parse_args(argv)
    if args.epochs < 1 or (args.limit is not None and args.limit < 1):
        parser.error("--epochs and --limit must be positive ints")

    (x_train, y_train), (x_test, y_test) = tn.datasets.load_digits(test_size=0.25, seed=0)
    if args.limit is not None:
        x_train, y_train = x_train[:args.limit], y_train[:args.limit]
    n = x_train.shape[0]
    print(f"digits: {n} training and {x_test.shape[0]} test images, {args.epochs} epoch(s) "
          f"per run, Adam(1e-3), seed 0\n")

    results: dict[str, dict[int, float]] = {}
    weights: dict[str, dict[int, list]] = {}
    started = time.perf_counter()
    for label, make_norm in NORMS.items():
        results[label], weights[label] = {}, {}
        for b in BATCH_SIZES:
            results[label][b], weights[label][b] = train_and_test(
                make_norm, b, args.epochs, (x_train, y_train), (x_test, y_test))
    elapsed = time.perf_counter() - started

    steps = {b: args.epochs * -(-n // b) for b in BATCH_SIZES}
    print("test accuracy".ljust(18) + "".join(f"batch {b:<6}" for b in BATCH_SIZES) + "spread")
    print("(optimizer steps)".ljust(18) + "".join(f"{f'({steps[b]})':<12}" for b in BATCH_SIZES))
    spread = {}
    for label, row in results.items():
        values = [row[b] for b in BATCH_SIZES]
        spread[label] = max(values) - min(values)
        print(f"{label:<18}" + "".join(f"{v:<12.4f}" for v in values) + f"{spread[label]:.4f}")
    print(f"({len(results) * len(BATCH_SIZES)} runs in {elapsed:.0f}s)")
    same = all(np.array_equal(a, b) for size in BATCH_SIZES
               for a, b in zip(weights["BN"][size], weights["BN(m=0.9)"][size]))
    print(f"BN and BN(m=0.9) trained bitwise-identical weights at every batch size: {same}\n")

    feature_maps = np.random.default_rng(1).standard_normal((8, 4, 4, 16)).astype(np.float32)
    print("largest change of one sample's training-mode output when 7 others join its batch:")
    for label, make_norm in NORMS.items():
        change = batch_dependence(make_norm, feature_maps)
        print(f"  {label:<16}{change:.3g}" + ("  (bitwise identical)" if change == 0 else ""))

    bn = results["BN"]
    worst = min(BATCH_SIZES, key=lambda b: bn[b])
    others = max(spread[label] for label in ("GN(4)", "IN", "LN(1,2,3)"))
    print()
    print(textwrap.fill(
        "What it shows. BatchNormalization normalizes each channel with the current batch's "
        "statistics in training (a sample's output changes with its batch partners, as "
        "measured above) and with moving averages of them at test time. At tiny batches "
        "the batch statistics are noisy (at batch 2, each channel's mean and variance come "
        "from two images) and unlike the test-time averages. The averages move once per "
        "step (moving = 0.99 * moving + 0.01 * batch), so they need a few hundred steps to "
        "forget their start (mean 0, variance 1): with a fixed number of epochs a large "
        "batch means few steps, and test accuracy can collapse. momentum=0.9 adapts ten "
        "times faster and changes nothing else (BN and BN(m=0.9) learn the same weights), "
        "so their rows differ by the test-time statistics alone. Group, instance and layer "
        "normalization compute their statistics inside each sample, the same way in "
        "training and at test time, so the batch size reaches them only through the "
        "optimizer (more, noisier steps per epoch at small batches).", width=88))
    print(textwrap.fill(
        f"This run: BN's test accuracy spans {min(bn.values()):.4f} to {max(bn.values()):.4f} "
        f"over the batch sizes (worst at batch {worst}, {steps[worst]} steps); "
        f"BN(momentum=0.9) spans {spread['BN(m=0.9)']:.4f}; GN, IN and LN span at most "
        f"{others:.4f}.", width=88))
    return results


if __name__ == "__main__":
    main()
