"""Augmented training on the digits: random shifts, rotations, zooms and contrast, a
cosine learning-rate schedule, ReduceLROnPlateau and a CSV log of every epoch.

Run: python examples/augmented_cnn.py [--epochs 30] [--out DIR]

The augmentation layers sit at the front of the model: they transform each training
batch with draws from tinynet's seeded generator and are the identity at inference, so
``evaluate`` and ``predict`` see the digits as they are. The learning rate follows a
cosine decay over the epochs (``tn.optimizers.schedules.CosineDecay``, applied by a
LearningRateScheduler as a per-epoch factor) and ReduceLROnPlateau halves it when
``val_loss`` stalls; the two compose, because the scheduler scales whatever rate is in
force (an optimizer built on a schedule object cannot also be lowered by
ReduceLROnPlateau, in Keras as here). ``training_log.csv`` gets one row per epoch
(CSVLogger, with the rate in force). It ends with the test accuracy and a model saved
and reloaded. Both files go to ``--out`` (default ``outputs/augmented_cnn``).
"""

from __future__ import annotations

import argparse
import csv
import os

import numpy as np

import tinynet as tn
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Dropout, Flatten, Input,
                            MaxPooling2D, RandomContrast, RandomRotation, RandomTranslation,
                            RandomZoom)


def build_model() -> tn.Sequential:
    return tn.Sequential([
        Input((8, 8, 1)),
        RandomTranslation(0.1, 0.1, fill_mode="constant"),
        RandomRotation(0.04, fill_mode="constant"),
        RandomZoom(0.1, fill_mode="constant"),
        RandomContrast((0.2, 0.2), value_range=(0.0, 1.0)),  # a tuple: down and up
        Conv2D(32, 3, padding="same", activation="relu"),
        BatchNormalization(),
        MaxPooling2D(2),
        Conv2D(32, 3, padding="same", activation="relu"),
        MaxPooling2D(2),
        Flatten(),
        Dropout(0.2),
        Dense(10),
    ])


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--out", default=os.path.join("outputs", "augmented_cnn"),
                        help="folder for the CSV log and the model (created if missing; "
                        "default: %(default)s)")
    parser.add_argument("--verbose", type=int, default=2)
    args = parser.parse_args(argv)

    tn.set_seed(0)
    (x_train, y_train), (x_test, y_test) = tn.datasets.load_digits(test_size=0.25, seed=0)
    batch_size = 32
    cosine = tn.optimizers.schedules.CosineDecay(1.0, decay_steps=args.epochs, alpha=0.05)

    def cosine_factor(epoch: int, lr: float) -> float:
        """The rate in force times this epoch's step down the cosine."""
        return lr if epoch == 0 else lr * float(cosine(epoch)) / float(cosine(epoch - 1))

    model = build_model()
    model.compile(optimizer=tn.optimizers.Adam(3e-3),
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()
    os.makedirs(args.out, exist_ok=True)
    log_path = os.path.join(args.out, "training_log.csv")
    callbacks = [tn.callbacks.LearningRateScheduler(cosine_factor),
                 tn.callbacks.ReduceLROnPlateau(factor=0.5, patience=3),
                 tn.callbacks.CSVLogger(log_path)]
    model.fit(x_train, y_train, batch_size=batch_size, epochs=args.epochs,
              validation_split=0.1, callbacks=callbacks, verbose=args.verbose)

    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"\ntest loss: {loss:.4f}  test accuracy: {accuracy:.4f}")
    with open(log_path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    print(f"{log_path}: {len(rows)} epochs, columns {', '.join(rows[0])}")
    path = os.path.join(args.out, "augmented_cnn.safetensors")
    model.save(path)
    again = tn.load_model(path).evaluate(x_test, y_test, verbose=0)[1]
    print(f"saved {path}; reloaded test accuracy: {again:.4f}")
    if not np.isclose(again, accuracy, rtol=0, atol=0):
        raise SystemExit("the reloaded model does not reproduce the accuracy")
    return accuracy


if __name__ == "__main__":
    main()
