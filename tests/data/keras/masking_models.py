"""The masked models of ``keras_masking_refs.json`` (written by ``generate_masking.py`` with
Keras 3.15.1 on JAX), built from a models module ``K`` and a layers module ``L`` so the
same code builds the Keras and the tinynet model."""

import numpy as np


def data() -> tuple:
    """Token ids padded with 0, a sequence padded with -1 steps, and the generator."""
    rng = np.random.default_rng(0)
    ids = np.array([[3, 4, 0, 0, 0], [5, 1, 2, 0, 0], [1, 2, 3, 4, 6], [7, 0, 0, 0, 0]],
                   dtype=np.int32)
    seq = rng.standard_normal((4, 5, 3)).astype(np.float32)
    seq[0, 2:] = -1.0
    seq[1, 4] = -1.0
    seq[3, 1:] = -1.0
    return ids, seq, rng


def models(K, L) -> tuple:
    """An Embedding(mask_zero) text model pooled over its valid steps, and a Masking model
    with a per-step output (its loss masked)."""
    ids_in = K.Input((None,), dtype="int32")
    h = L.Embedding(8, 3, mask_zero=True)(ids_in)
    h = L.Dense(4, activation="tanh")(h)
    h = L.Dropout(0.0)(h)
    h = L.LayerNormalization()(h)
    pooled = L.GlobalAveragePooling1D()(h)
    a = K.Model(ids_in, L.Dense(2)(pooled))
    seq_in = K.Input((None, 3))
    b = K.Model(seq_in, L.Dense(2)(L.Masking(-1.0)(seq_in)))
    return a, b
