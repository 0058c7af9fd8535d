"""Classify generated 1-D signals with Conv1D: which of four wave shapes is in the noise?

Run: python examples/sequence_conv1d.py [--epochs 12] [--samples 1200]

The data are generated (nothing is downloaded): each sample is 128 steps of one of four
shapes (sine, square, sawtooth, a decaying chirp) with a random frequency, phase and
amplitude, plus noise, as ``[steps, 1]``. The model stacks causal and "same" Conv1D
layers with pooling, ends in GlobalAveragePooling1D, and trains with Adam and an
exponential learning-rate decay; it then prints the test accuracy per shape.
"""

from __future__ import annotations

import argparse

import numpy as np

import tinynet as tn
from tinynet.layers import (AveragePooling1D, Conv1D, Dense, GlobalAveragePooling1D, Input,
                            MaxPooling1D)

SHAPES = ("sine", "square", "sawtooth", "chirp")
STEPS = 128


def make_signals(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` noisy signals ``[n, STEPS, 1]`` (float32) and their shape labels."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 1.0, STEPS)
    labels = rng.integers(0, len(SHAPES), n)
    freq = rng.uniform(2.0, 8.0, (n, 1))
    phase = rng.uniform(0.0, 2 * np.pi, (n, 1))
    amp = rng.uniform(0.5, 1.5, (n, 1))
    cycles = freq * t + phase / (2 * np.pi)
    waves = np.stack([
        np.sin(2 * np.pi * cycles),
        np.sign(np.sin(2 * np.pi * cycles)),
        2.0 * (cycles - np.floor(cycles + 0.5)),
        np.sin(2 * np.pi * (freq * t * (1 + 2 * t)) + phase) * np.exp(-2 * t),
    ])
    x = amp * waves[labels, np.arange(n)] + rng.normal(0.0, 0.3, (n, STEPS))
    return x[..., None].astype(np.float32), labels


def build_model() -> tn.Sequential:
    return tn.Sequential([
        Input((STEPS, 1)),
        Conv1D(16, 5, padding="causal", activation="relu"),
        MaxPooling1D(2),
        Conv1D(32, 3, padding="same", activation="relu", dilation_rate=2),
        AveragePooling1D(2),
        Conv1D(32, 3, padding="same", activation="relu"),
        GlobalAveragePooling1D(),
        Dense(len(SHAPES)),
    ])


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--samples", type=int, default=1200)
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args(argv)

    tn.set_seed(0)
    x, y = make_signals(args.samples, seed=1)
    x_test, y_test = make_signals(max(args.samples // 4, 4), seed=2)
    model = build_model()
    steps = -(-len(x) // 32)
    schedule = tn.optimizers.schedules.ExponentialDecay(3e-3, decay_steps=steps,
                                                        decay_rate=0.9)
    model.compile(optimizer=tn.optimizers.Adam(schedule),
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()
    model.fit(x, y, batch_size=32, epochs=args.epochs, validation_split=0.1,
              verbose=args.verbose)
    pred = np.argmax(model.predict(x_test, verbose=0), axis=1)
    accuracy = float(np.mean(pred == y_test))
    print(f"\ntest accuracy: {accuracy:.4f}")
    for k, shape in enumerate(SHAPES):
        mask = y_test == k
        print(f"  {shape:>8}: {np.mean(pred[mask] == k) if mask.any() else 0.0:.3f} "
              f"({int(mask.sum())} signals)")
    return accuracy


if __name__ == "__main__":
    main()
