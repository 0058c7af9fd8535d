"""Writes the string-input text-model fixtures: Keras 3.15.1's summaries of two models on
``Input(dtype="string")``, a Keras-written ``.keras`` file of a text classifier and Keras's
predictions of it and of tinynet's file of the same model (Keras's TextVectorization needs
TensorFlow, which CI does not install).

Three steps, run by hand from the repository root::

    # 1. Keras writes keras_text.keras and the summaries (Keras 3.15.1 with TensorFlow)
    /path/to/tf-venv/bin/python tests/data/keras/generate_keras_text.py keras
    # 2. tinynet loads it, trains one epoch, writes tinynet_text.keras
    PYTHONPATH=$PWD python tests/data/keras/generate_keras_text.py tinynet
    # 3. Keras loads tinynet's file, predicts on raw strings and trains one epoch
    /path/to/tf-venv/bin/python tests/data/keras/generate_keras_text.py back

The model (keras-io "text classification from scratch"): ``Input(shape=(1,),
dtype="string")`` -> an adapted ``TextVectorization(max_tokens=30, output_mode="int",
output_sequence_length=6)`` -> ``Embedding(30, 4)`` -> ``GlobalAveragePooling1D`` ->
``Dense(1, "sigmoid")``, compiled with Adam and binary cross-entropy and trained one epoch.
``keras_text_refs.json`` holds the texts, labels, Keras's predictions of its own file
(``keras_predictions``) and of tinynet's (``back_predictions``) and the loss of Keras's
epoch on tinynet's file (``back_loss``).
"""

from __future__ import annotations

import io
import json
import os
import sys
from contextlib import redirect_stdout

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERAS_FILE = os.path.join(HERE, "keras_text.keras")
TINYNET_FILE = os.path.join(HERE, "tinynet_text.keras")
REFS = os.path.join(HERE, "keras_text_refs.json")

WORDS = ["good", "great", "fine", "bad", "awful", "poor", "the", "movie", "plot", "was",
         "a", "really", "Acting!", "not"]


def data() -> tuple[list[str], list[float]]:
    """Sixteen short reviews (label 1 when it has more good than bad words)."""
    rng = np.random.default_rng(47)
    texts, labels = [], []
    for _ in range(16):
        words = list(rng.choice(WORDS, size=int(rng.integers(2, 9))))
        texts.append(" ".join(words))
        score = sum(w in ("good", "great", "fine") for w in words) - sum(
            w in ("bad", "awful", "poor") for w in words)
        labels.append(float(score > 0))
    return texts, labels


def summary_models(L, M, vocabulary):
    """Builders of the models whose summaries are golden (each built in a fresh session,
    so Keras's names start over): a functional one with ``TextVectorization`` on
    ``shape=(1,)`` and a Sequential one with ``StringLookup`` on ``shape=(None,)``."""
    def functional():
        text = L.Input(shape=(1,), dtype="string", name="text")
        vectorize = L.TextVectorization(max_tokens=30, output_mode="int",
                                        output_sequence_length=6, vocabulary=vocabulary)
        x = L.Embedding(30, 4)(vectorize(text))
        x = L.Dropout(0.5)(L.GlobalAveragePooling1D()(x))
        return M.Model(text, L.Dense(1, activation="sigmoid")(x))

    def sequential():
        return M.Sequential([
            L.Input(shape=(None,), dtype="string"), L.StringLookup(vocabulary=vocabulary),
            L.Embedding(len(vocabulary) + 1, 3), L.GlobalMaxPooling1D(), L.Dense(2)])

    return {"summary_text_strings": functional, "summary_string_lookup": sequential}


def summary_text(model) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        model.summary()
    return out.getvalue()


def keras_step() -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    from keras import layers

    keras.utils.set_random_seed(0)
    texts, labels = data()
    for name, build in summary_models(layers, keras, ["good", "bad", "movie"]).items():
        keras.backend.clear_session()
        with open(os.path.join(HERE, name + ".txt"), "w", encoding="utf-8") as f:
            f.write(summary_text(build()))
    keras.backend.clear_session()
    vectorize = layers.TextVectorization(max_tokens=30, output_mode="int",
                                         output_sequence_length=6)
    vectorize.adapt(texts)
    inputs = keras.Input(shape=(1,), dtype="string")
    x = layers.GlobalAveragePooling1D()(layers.Embedding(30, 4)(vectorize(inputs)))
    model = keras.Model(inputs, layers.Dense(1, activation="sigmoid")(x))
    model.compile(optimizer="adam", loss="binary_crossentropy")
    import tensorflow as tf  # Keras 3.15.1 fits on tf string tensors, not NumPy ones

    x = tf.constant(np.array(texts)[:, None])
    model.fit(x, tf.constant(labels), batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(KERAS_FILE)
    refs = {"texts": texts, "labels": labels,
            "vocabulary": [str(t) for t in vectorize.get_vocabulary()],
            "keras_predictions": model.predict(x, verbose=0).ravel().tolist()}
    with open(REFS, "w", encoding="utf-8") as f:
        json.dump(refs, f, indent=1)


def tinynet_step() -> None:
    import tinynet as tn

    with open(REFS, encoding="utf-8") as f:
        refs = json.load(f)
    model = tn.models.load_model(KERAS_FILE)
    x = np.array(refs["texts"], dtype=object)[:, None]
    model.fit(x, np.array(refs["labels"]), batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(TINYNET_FILE)


def back_step() -> None:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

    with open(REFS, encoding="utf-8") as f:
        refs = json.load(f)
    model = keras.models.load_model(TINYNET_FILE)
    import tensorflow as tf

    x = tf.constant(np.array(refs["texts"])[:, None])
    refs["back_predictions"] = model.predict(x, verbose=0).ravel().tolist()
    history = model.fit(x, tf.constant(refs["labels"]), batch_size=8, epochs=1, verbose=0)
    refs["back_loss"] = float(history.history["loss"][0])
    with open(REFS, "w", encoding="utf-8") as f:
        json.dump(refs, f, indent=1)


if __name__ == "__main__":
    {"keras": keras_step, "tinynet": tinynet_step, "back": back_step}[sys.argv[1]]()
