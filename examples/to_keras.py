"""Train here, continue in Keras, come back: the digits CNN as a Keras 3 ``.keras`` file.

Trains the digits CNN of ``train_digits_cnn.py`` for a few epochs in tinynet, saves it
with ``model.save("digits_cnn.keras")`` (a genuine Keras 3 archive: ``config.json``,
``model.weights.h5`` with the optimizer's variables, ``metadata.json``) and checks that
tinynet reads it back bitwise. Where Keras 3 is installed (``pip install keras jax``),
Keras opens the same file, predicts the same, and continues ``fit`` from the saved
optimizer state; its own ``.keras`` file then comes back to tinynet. Needs h5py
(``pip install "tinynet[keras]"``) and scikit-learn (the digits).

    python examples/to_keras.py --epochs 3 --keras-epochs 1
"""

from __future__ import annotations

import argparse
import os
import zipfile

import numpy as np

import tinynet as tn
from train_digits_cnn import compiled_model


def accuracy(model, x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(np.argmax(np.asarray(model.predict(x, verbose=0)), axis=1) == y))


def continue_in_keras(path: str, out: str, data: tuple, epochs: int, verbose: int) -> dict:
    """Keras opens tinynet's file, predicts, trains ``epochs`` more and saves its own file,
    which tinynet reads back. Empty when Keras is not installed."""
    os.environ.setdefault("KERAS_BACKEND", "jax")
    try:
        import keras
    except ImportError:
        print("Keras is not installed; with pip install keras jax, "
              f"keras.models.load_model({path!r}) opens the file and fit continues there")
        return {}
    (x_train, y_train), (x_test, y_test) = data
    k = keras.models.load_model(path)
    ours = tn.models.load_model(path).predict(x_test, verbose=0)
    gap = float(np.abs(np.asarray(k.predict(x_test, verbose=0)) - ours).max())
    print(f"Keras {keras.__version__} ({keras.backend.backend()}) opened {path}: "
          f"predictions within {gap:.1e} of tinynet's, optimizer at step "
          f"{int(k.optimizer.iterations)}")
    k.fit(x_train, y_train, batch_size=32, epochs=epochs, verbose=verbose)
    back_path = os.path.join(out, "digits_cnn_from_keras.keras")
    k.save(back_path)
    back = tn.models.load_model(back_path)
    result = {"keras_gap": gap, "keras_accuracy": accuracy(k, x_test, y_test),
              "back_accuracy": accuracy(back, x_test, y_test)}
    print(f"after {epochs} more epoch(s) in Keras: test accuracy {result['keras_accuracy']:.4f}; "
          f"tinynet read {back_path} back: {result['back_accuracy']:.4f}")
    return result


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--keras-epochs", type=int, default=1)
    parser.add_argument("--out", default=os.path.join("outputs", "to_keras"),
                        help="folder for the .keras files (created if missing; "
                        "default: %(default)s)")
    parser.add_argument("--verbose", type=int, default=0)
    args = parser.parse_args(argv)

    tn.set_seed(0)
    data = tn.datasets.load_digits(test_size=0.25, seed=0)
    (x_train, y_train), (x_test, y_test) = data
    model = compiled_model()
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, verbose=args.verbose)
    result = {"accuracy": accuracy(model, x_test, y_test)}
    print(f"tinynet, {args.epochs} epoch(s): test accuracy {result['accuracy']:.4f}")

    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "digits_cnn.keras")
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        print(f"saved {path}: {', '.join(archive.namelist())}")
    reloaded = tn.models.load_model(path)
    if not np.array_equal(reloaded.predict(x_test, verbose=0), model.predict(x_test, verbose=0)):
        raise SystemExit("the reloaded model does not reproduce the predictions")
    print("tinynet reads it back: the same predictions, bit for bit")
    result.update(continue_in_keras(path, args.out, data, args.keras_epochs, args.verbose))
    return result


if __name__ == "__main__":
    main()
