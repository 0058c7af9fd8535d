"""Writes the ``.keras`` fixtures of a model of ``Attention`` and ``AdditiveAttention``
layers, both ways: Keras 3.15.1 writes ``keras_attention.keras``, tinynet reads it, trains
one epoch and writes ``tinynet_attention.keras``, and Keras reads that back.

Three steps, run by hand from the repository root (Keras is never a tinynet dependency)::

    # 1. Keras writes keras_attention.keras and its predictions (Keras 3.15.1, JAX)
    KERAS_BACKEND=jax /path/to/keras-venv/bin/python tests/data/keras/generate_keras_attention.py keras
    # 2. tinynet loads it, trains one epoch, writes tinynet_attention.keras
    PYTHONPATH=$PWD python tests/data/keras/generate_keras_attention.py tinynet
    # 3. Keras loads tinynet's file, predicts and trains one epoch
    KERAS_BACKEND=jax /path/to/keras-venv/bin/python tests/data/keras/generate_keras_attention.py back

The model (:func:`attention_model`) runs on padded token ids: ``Embedding(mask_zero=True)``
gives every attention layer its inputs' masks, and the layers cover ``use_scale``, both
score modes, dropout, a separate key, ``use_causal_mask`` and
``return_attention_scores``. ``keras_attention_refs.npz`` holds the ids ``x``, the labels
``y``, Keras's predictions of its own file (``keras_predictions``, before tinynet's epoch)
and of tinynet's (``back_predictions``), and the loss of Keras's epoch on tinynet's file
(``back_loss``).
"""

from __future__ import annotations

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERAS_FILE = os.path.join(HERE, "keras_attention.keras")
TINYNET_FILE = os.path.join(HERE, "tinynet_attention.keras")
REFS = os.path.join(HERE, "keras_attention_refs.npz")


def attention_model(L, M):
    """The model, built from ``L`` (``keras.layers`` or ``tinynet.layers``) and ``M``
    (``keras`` or ``tinynet``: ``Input`` and ``Model``)."""
    ids = M.Input((6,), dtype="int64")
    e = L.Embedding(20, 8, mask_zero=True)(ids)
    q = L.Dense(8)(e)
    v = L.Dense(5)(e)
    outs = [
        L.Attention(use_scale=True)([q, e]),
        L.Attention(use_scale=True, score_mode="concat", dropout=0.1)(
            [q, v, e], use_causal_mask=True),
        L.Attention(score_mode="concat")([e, q]),
        L.AdditiveAttention(use_scale=False)([e, v, q], use_causal_mask=True),
    ]
    out, scores = L.AdditiveAttention(dropout=0.1)([q, e], return_attention_scores=True)
    pooled = [L.GlobalAveragePooling1D()(t) for t in outs + [out]]
    pooled.append(L.Flatten()(scores))
    return M.Model(ids, L.Dense(3)(L.Concatenate()(pooled)))


def data() -> tuple[np.ndarray, np.ndarray]:
    """Sixteen padded id sequences (2 to 6 ids, zeros after) and their classes."""
    rng = np.random.default_rng(47)
    x = rng.integers(1, 20, (16, 6)).astype(np.int64)
    for row, length in zip(x, rng.integers(2, 7, 16)):
        row[length:] = 0
    return x, np.arange(16) % 3


def _keras():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras

    return keras


def keras_step() -> None:
    keras = _keras()
    keras.utils.set_random_seed(0)
    x, y = data()
    model = attention_model(keras.layers, keras)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(KERAS_FILE)
    np.savez(REFS, x=x, y=y, keras_predictions=model.predict(x, verbose=0))


def tinynet_step() -> None:
    import tinynet as tn

    refs = dict(np.load(REFS))
    tn.set_seed(0)  # the dropout draws of the epoch: the file's weights are reproducible
    model = tn.models.load_model(KERAS_FILE)
    model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(TINYNET_FILE)


def back_step() -> None:
    keras = _keras()
    refs = dict(np.load(REFS))
    model = keras.models.load_model(TINYNET_FILE)
    refs["back_predictions"] = model.predict(refs["x"], verbose=0)
    history = model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, verbose=0)
    refs["back_loss"] = np.float64(history.history["loss"][0])
    np.savez(REFS, **refs)


if __name__ == "__main__":
    {"keras": keras_step, "tinynet": tinynet_step, "back": back_step}[sys.argv[1]]()
