"""A small residual CNN on scikit-learn's digits (8x8x1), built with the functional API.

Run: python examples/residual_cnn.py [--epochs 12] [--out DIR]

Two residual blocks (Conv2D -> BatchNormalization -> Conv2D -> BatchNormalization, added
to the block's input), a GroupNormalization before the head; prints the summary (with
its "Connected to" column), trains with a progress bar per epoch, prints the test
accuracy, saves the model (in ``--out``, default ``outputs/residual_cnn``) and checks the
reloaded model predicts bitwise the same.
Everything is seeded: two runs print the same numbers at any thread count.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import tinynet as tn
from tinynet.layers import (Activation, Add, BatchNormalization, Conv2D, Dense,
                            GlobalAveragePooling2D, GroupNormalization, MaxPooling2D)
from tinynet.layers.node import SymbolicTensor


def residual_block(x: SymbolicTensor, filters: int) -> SymbolicTensor:
    """``relu(x + BN(Conv(relu(BN(Conv(x))))))``: the shortcut keeps the input's shape.

    The moving statistics follow the batches with ``momentum=0.9`` (Keras's default 0.99
    lags far behind a few hundred steps of training, and inference would use stale ones).
    """
    h = Conv2D(filters, 3, padding="same")(x)
    h = Activation("relu")(BatchNormalization(momentum=0.9)(h))
    h = BatchNormalization(momentum=0.9)(Conv2D(filters, 3, padding="same")(h))
    return Activation("relu")(Add()([x, h]))


def build_model() -> tn.Model:
    """Conv(16) -> block -> pool -> block -> GN(4) -> global pool -> Dense(10)."""
    inputs = tn.Input((8, 8, 1), name="digits")
    x = Conv2D(16, 3, padding="same", activation="relu")(inputs)
    x = residual_block(x, 16)
    x = MaxPooling2D(2)(x)
    x = residual_block(x, 16)
    x = GroupNormalization(4)(x)
    x = GlobalAveragePooling2D()(x)
    return tn.Model(inputs, Dense(10)(x), name="residual_cnn")


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--out", default=os.path.join("outputs", "residual_cnn"),
                        help="folder for the model file (created if missing; "
                        "default: %(default)s)")
    parser.add_argument("--verbose", type=int, default=1)
    args = parser.parse_args(argv)

    tn.set_seed(0)
    (x_train, y_train), (x_test, y_test) = tn.datasets.load_digits(test_size=0.25, seed=0)
    model = build_model()
    model.compile(optimizer=tn.optimizers.Adam(2e-3),
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs,
              validation_data=(x_test, y_test), verbose=args.verbose)

    logits = model.predict(x_test, verbose=0)
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    print(f"\ntest accuracy: {accuracy:.4f}")

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "residual_cnn.safetensors")
    model.save(path)
    same = np.array_equal(tn.load_model(path).predict(x_test, verbose=0), logits)
    print(f"saved {path}; reloaded predictions bitwise identical: {same}")
    if not same:
        raise SystemExit("the reloaded model does not reproduce the predictions")
    return accuracy


if __name__ == "__main__":
    main()
