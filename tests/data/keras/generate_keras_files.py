"""Writes the Keras-written ``.keras`` files the saving tests read without Keras
(``keras_cnn.keras`` with ``keras_cnn_refs.npz``, ``keras_unknown_layer.keras``,
``keras_lambda.keras``).

Run with Keras 3.15.1 on the JAX backend, outside the project's environment (Keras is
never a tinynet dependency), e.g.::

    KERAS_BACKEND=jax /path/to/keras-venv/bin/python tests/data/keras/generate_keras_files.py

``keras_cnn.keras`` is the digits CNN of ``examples/train_digits_cnn.py`` built with
Keras's own layers, compiled (Adam, sparse crossentropy from logits, accuracy) and
trained two steps on fixed data, so its optimizer variables are not the initial ones;
the npz holds that data and Keras's predictions. The other two hold a layer tinynet does
not have (``AlphaDropout``) and a ``Lambda`` layer (Python bytecode in the file).

Two hostile archives derive from ``keras_unknown_layer.keras`` (:func:`hostile`, no Keras
needed): ``keras_truncated.keras`` (its first half) and ``keras_traversal.keras`` (its
members plus one named ``../escaped.txt``).
"""

from __future__ import annotations

import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
try:
    import keras
    from keras import layers
except ImportError:  # hostile() alone needs no Keras
    keras = layers = None

HERE = os.path.dirname(os.path.abspath(__file__))


def digits_cnn() -> keras.Sequential:
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        layers.Conv2D(16, 3, padding="same", activation="relu"),
        layers.GroupNormalization(4),
        layers.MaxPooling2D(2),
        layers.Conv2D(32, 3, padding="same", activation="relu"),
        layers.BatchNormalization(),
        layers.MaxPooling2D(2),
        layers.Flatten(),
        layers.Dense(64, activation="relu"),
        layers.Dense(10),
    ])


def main() -> None:
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.random((16, 8, 8, 1)).astype("float32")
    y = np.arange(16) % 10
    model = digits_cnn()
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(os.path.join(HERE, "keras_cnn.keras"))
    np.savez(os.path.join(HERE, "keras_cnn_refs.npz"), x=x, y=y,
             predictions=model.predict(x, verbose=0))
    unknown = keras.Sequential([keras.Input((4,)), layers.Dense(3),
                                layers.AlphaDropout(0.1, name="alpha")])
    unknown.save(os.path.join(HERE, "keras_unknown_layer.keras"))
    lam = keras.Sequential([keras.Input((4,)), layers.Lambda(lambda t: t * 2.0, name="double")])
    lam.save(os.path.join(HERE, "keras_lambda.keras"))


def hostile() -> None:
    import zipfile

    source = os.path.join(HERE, "keras_unknown_layer.keras")
    with open(source, "rb") as file:
        data = file.read()
    with open(os.path.join(HERE, "keras_truncated.keras"), "wb") as file:
        file.write(data[: len(data) // 2])
    with zipfile.ZipFile(source) as archive, \
            zipfile.ZipFile(os.path.join(HERE, "keras_traversal.keras"), "w") as evil:
        for info in archive.infolist():
            evil.writestr(info.filename, archive.read(info))
        evil.writestr("../escaped.txt", b"written outside the target?")


if __name__ == "__main__":
    main()
    hostile()
