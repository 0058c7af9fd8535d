"""Writes the vocabulary-layer ``.keras`` fixtures and Keras's predictions of them, both
directions (Keras's IntegerLookup needs TensorFlow, which CI does not install).

Three steps, run by hand from the repository root::

    # 1. Keras writes keras_vocabulary.keras (Keras 3.15.1 with TensorFlow)
    /path/to/tf-venv/bin/python tests/data/keras/generate_keras_vocabulary.py keras
    # 2. tinynet loads it, trains one epoch, writes tinynet_vocabulary.keras
    PYTHONPATH=$PWD python tests/data/keras/generate_keras_vocabulary.py tinynet
    # 3. Keras loads tinynet's file, predicts and trains one epoch
    /path/to/tf-venv/bin/python tests/data/keras/generate_keras_vocabulary.py back

The model: int64 ids -> an adapted ``IntegerLookup`` (its vocabulary an asset) ->
``Embedding`` -> ``GlobalAveragePooling1D``, beside a given-vocabulary
``IntegerLookup(output_mode="multi_hot")`` and an adapted ``"tf_idf"`` one (idf weights
in the weights file), concatenated into a ``Dense``; compiled with Adam and trained
one epoch. ``keras_vocabulary_refs.npz`` holds the data, Keras's predictions of its own
file (``keras_predictions``) and of tinynet's (``back_predictions``) and the loss of
Keras's epoch on tinynet's file (``back_loss``).

``hostile`` (no Keras needed) derives three refused archives from
``keras_vocabulary.keras``: ``keras_vocabulary_too_large.keras`` (the adapted lookup's
config says ``vocabulary_size=2**40``), ``keras_vocabulary_not_utf8.keras`` (its asset
has bytes that are not UTF-8) and ``keras_vocabulary_traversal.keras`` (an extra member
``assets/../../escaped/vocabulary.txt``).
"""

from __future__ import annotations

import json
import os
import sys
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERAS_FILE = os.path.join(HERE, "keras_vocabulary.keras")
TINYNET_FILE = os.path.join(HERE, "tinynet_vocabulary.keras")
REFS = os.path.join(HERE, "keras_vocabulary_refs.npz")


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(47)
    x = rng.choice([3, 5, 7, 9, 11, 13, 40], size=(16, 4)).astype(np.int64)
    return x, (np.arange(16) % 3).astype(np.int64)


def keras_step() -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    x, y = data()
    ids = layers.IntegerLookup(name="ids")
    ids.adapt(x[:8])
    tfidf = layers.IntegerLookup(output_mode="tf_idf", name="tfidf")
    tfidf.adapt(x[:8])
    inputs = keras.Input((4,), dtype="int64")
    seq = layers.GlobalAveragePooling1D()(layers.Embedding(12, 3)(ids(inputs)))
    hot = layers.IntegerLookup(vocabulary=[3, 5, 40], output_mode="multi_hot")(inputs)
    merged = layers.Concatenate()([seq, hot, tfidf(inputs)])
    model = keras.Model(inputs, layers.Dense(3)(merged))
    model.compile(optimizer="adam",
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    model.save(KERAS_FILE)
    np.savez(REFS, x=x, y=y, keras_predictions=model.predict(x, verbose=0))


def tinynet_step() -> None:
    import tinynet as tn

    refs = dict(np.load(REFS))
    model = tn.models.load_model(KERAS_FILE)
    model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(TINYNET_FILE)


def back_step() -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    refs = dict(np.load(REFS))
    model = keras.models.load_model(TINYNET_FILE)
    refs["back_predictions"] = model.predict(refs["x"], verbose=0)
    history = model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, verbose=0)
    refs["back_loss"] = np.float64(history.history["loss"][0])
    np.savez(REFS, **refs)


def _derive(name: str, replace: dict | None = None, edit=None) -> None:
    with zipfile.ZipFile(KERAS_FILE) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    members.update(replace or {})
    if edit is not None:
        config = json.loads(members["config.json"])
        edit(config["config"]["layers"][1]["config"])
        members["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(os.path.join(HERE, name), "w") as archive:
        for member, data in members.items():
            archive.writestr(zipfile.ZipInfo(member, date_time=(2026, 12, 6, 0, 0, 0)), data)


def hostile_step() -> None:
    _derive("keras_vocabulary_too_large.keras", edit=lambda c: c.update(vocabulary_size=2 ** 40))
    _derive("keras_vocabulary_not_utf8.keras",
            replace={"assets/layers/integer_lookup/vocabulary.txt": b"-1\n13\n\xff\n3"})
    _derive("keras_vocabulary_traversal.keras",
            replace={"assets/../../escaped/vocabulary.txt": b"1"})


if __name__ == "__main__":
    {"keras": keras_step, "tinynet": tinynet_step, "back": back_step,
     "hostile": hostile_step}[sys.argv[1]]()
