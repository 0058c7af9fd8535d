"""Train a small CNN on scikit-learn's bundled digits (8x8x1), the tinynet way.

Run: python examples/train_digits_cnn.py [--epochs 15] [--out DIR]

Prints the model summary, trains with a progress bar per epoch, prints the test accuracy
and a confusion matrix, saves the training curves (training_curves.png) and the model
(digits_cnn.safetensors) in ``--out`` (default ``outputs/train_digits_cnn``), reloads the
model and checks the reloaded accuracy is identical.
Everything is seeded: two runs print the same numbers at any thread count.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import tinynet as tn
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Flatten, GroupNormalization,
                            Input, MaxPooling2D)


def build_model() -> tn.Sequential:
    """Conv(16) -> GN(4) -> pool -> Conv(32) -> BN -> pool -> Dense(64) -> Dense(10)."""
    return tn.Sequential([
        Input((8, 8, 1)),
        Conv2D(16, 3, padding="same", activation="relu"),
        GroupNormalization(4),
        MaxPooling2D(2),
        Conv2D(32, 3, padding="same", activation="relu"),
        BatchNormalization(),
        MaxPooling2D(2),
        Flatten(),
        Dense(64, activation="relu"),
        Dense(10),
    ])


def compiled_model() -> tn.Sequential:
    """The model, compiled: Adam(1e-3) on the sparse crossentropy of its logits."""
    model = build_model()
    model.compile(optimizer=tn.optimizers.Adam(1e-3),
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def confusion_matrix(y_true: np.ndarray, y_pred: np.ndarray, classes: int = 10) -> str:
    counts = np.zeros((classes, classes), dtype=np.int64)
    np.add.at(counts, (y_true, y_pred), 1)
    lines = ["true\\pred " + " ".join(f"{c:>4}" for c in range(classes))]
    for c in range(classes):
        lines.append(f"{c:>9} " + " ".join(f"{v:>4}" for v in counts[c]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--out", default=os.path.join("outputs", "train_digits_cnn"),
                        help="folder for the plot and the model file (created if missing; "
                        "default: %(default)s)")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args(argv)

    tn.set_seed(0)
    (x_train, y_train), (x_test, y_test) = tn.datasets.load_digits(test_size=0.25, seed=0)
    model = compiled_model()
    model.summary()
    history = model.fit(x_train, y_train, batch_size=32, epochs=args.epochs,
                        validation_data=(x_test, y_test), verbose=args.verbose)

    logits = model.predict(x_test, verbose=0)
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    print(f"\ntest accuracy: {accuracy:.4f}")
    print(confusion_matrix(y_test, np.argmax(logits, axis=1)))

    os.makedirs(args.out, exist_ok=True)
    try:
        plot = os.path.join(args.out, "training_curves.png")
        tn.utils.plot_history(history, plot)
        print(f"saved {plot}")
    except ImportError as exc:  # matplotlib is optional
        print(f"skipped the plot: {exc}")

    path = os.path.join(args.out, "digits_cnn.safetensors")
    model.save(path)
    reloaded = tn.load_model(path)
    again = float(np.mean(np.argmax(reloaded.predict(x_test, verbose=0), axis=1) == y_test))
    print(f"saved {path}; reloaded test accuracy: {again:.4f}")
    if again != accuracy:
        raise SystemExit("the reloaded model does not reproduce the accuracy")
    return accuracy


if __name__ == "__main__":
    main()
