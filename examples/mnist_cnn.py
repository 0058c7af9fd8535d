"""Train a small CNN on MNIST or Fashion-MNIST from IDX files you already have.

Run: python examples/mnist_cnn.py --data DIR [--epochs 2] [--limit N] [--optimizer sgd]

DIR must hold the four IDX files of MNIST or Fashion-MNIST, raw or gzip-compressed:

    train-images-idx3-ubyte[.gz]  train-labels-idx1-ubyte[.gz]
    t10k-images-idx3-ubyte[.gz]   t10k-labels-idx1-ubyte[.gz]

(the dotted spelling ``train-images.idx3-ubyte`` is accepted too). tinynet never
downloads anything: fetch the files from the dataset's own page and pass their folder.

The model is Conv2D(32)-GroupNormalization(8)-MaxPooling2D-Conv2D(64)-
GroupNormalization(8)-MaxPooling2D-Flatten-Dense(128)-Dense(10), trained with
SGD(0.01, momentum=0.9) (or Adam(1e-3)) on sparse categorical cross-entropy from logits.
It prints the summary, one progress bar (or line) per epoch and the test accuracy.
``--limit N`` keeps the first N training and the first N test samples, for a quick run.
Everything is seeded: two runs print the same numbers at any thread count.
"""

from __future__ import annotations

import argparse
import os
import time

import tinynet as tn
from tinynet.layers import Conv2D, Dense, Flatten, GroupNormalization, Input, MaxPooling2D

SPLITS = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def find_idx(folder: str, stem: str) -> str | None:
    """The path of ``stem`` in ``folder``: raw or ``.gz``, dashed or dotted spelling."""
    dotted = stem.replace("-idx", ".idx")
    for name in (stem, stem + ".gz", dotted, dotted + ".gz"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


def load_mnist(folder: str, limit: int | None = None) -> dict:
    """``{"train": (x, y), "test": (x, y)}`` from the IDX files in ``folder``.

    Raises:
        SystemExit: a file is missing (the message says what to put where).
    """
    paths, missing = {}, []
    for split, stems in SPLITS.items():
        found = [find_idx(folder, stem) for stem in stems]
        missing += [stem for stem, path in zip(stems, found) if path is None]
        paths[split] = found
    if missing:
        where = os.path.abspath(folder)
        head = (f"missing IDX files in {where!r}: {', '.join(missing)}" if os.path.isdir(where)
                else f"the folder {where!r} does not exist")
        raise SystemExit(
            f"mnist_cnn: {head}.\n"
            f"Put the four files of MNIST or Fashion-MNIST there, raw or .gz:\n"
            f"  train-images-idx3-ubyte.gz  train-labels-idx1-ubyte.gz\n"
            f"  t10k-images-idx3-ubyte.gz   t10k-labels-idx1-ubyte.gz\n"
            f"tinynet never downloads anything; get them from the dataset's page and pass "
            f"the folder with --data.")
    data = {}
    for split, (images, labels) in paths.items():
        x, y = tn.datasets.load_idx(images, labels)
        data[split] = (x[:limit], y[:limit]) if limit else (x, y)
    return data


def build_model(input_shape: tuple) -> tn.Sequential:
    """Conv(32) -> GN(8) -> pool -> Conv(64) -> GN(8) -> pool -> Dense(128) -> Dense(10)."""
    return tn.Sequential([
        Input(input_shape),
        Conv2D(32, 3, padding="same", activation="relu"),
        GroupNormalization(8),
        MaxPooling2D(2),
        Conv2D(64, 3, padding="same", activation="relu"),
        GroupNormalization(8),
        MaxPooling2D(2),
        Flatten(),
        Dense(128, activation="relu"),
        Dense(10),
    ])


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder holding the four IDX files")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None,
                        help="keep the first N training and test samples")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd")
    parser.add_argument("--verbose", type=int, default=1, help="0, 1 (bars) or 2 (lines)")
    args = parser.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        parser.error(f"--limit must be a positive int, got {args.limit}")

    tn.set_seed(0)
    data = load_mnist(args.data, args.limit)
    (x_train, y_train), (x_test, y_test) = data["train"], data["test"]
    print(f"train: {x_train.shape[0]} images {x_train.shape[1:]}, "
          f"test: {x_test.shape[0]} images")

    model = build_model(x_train.shape[1:])
    optimizer = (tn.optimizers.SGD(0.01, momentum=0.9) if args.optimizer == "sgd"
                 else tn.optimizers.Adam(1e-3))
    model.compile(optimizer=optimizer,
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()

    started = time.perf_counter()
    model.fit(x_train, y_train, batch_size=args.batch_size, epochs=args.epochs,
              verbose=args.verbose)
    trained = time.perf_counter() - started
    loss, accuracy = model.evaluate(x_test, y_test, batch_size=256, verbose=0)
    print(f"\ntrained {args.epochs} epoch(s) in {trained:.1f}s")
    print(f"test loss: {loss:.4f}  test accuracy: {accuracy:.4f}")
    return float(accuracy)


if __name__ == "__main__":
    main()
