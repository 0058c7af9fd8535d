"""Writes the Keras reference values of the text and categorical preprocessing layers
(``keras_preprocessing_text_refs.json``), which tests/layers/test_preprocessing_keras.py
compares tinynet with (no Keras or TensorFlow needed there).

Run once with Keras 3.15.1 on the TensorFlow backend (these Keras layers need TensorFlow),
outside the project's environment, from a folder without a ``keras`` of its own::

    cd /tmp && KERAS_BACKEND=tensorflow \\
        python /path/to/tinynet/tests/data/keras/generate_preprocessing_text.py

Each case builds a layer from its class name and JSON arguments (a callable argument is
named ``{"callable": name}``, one of ``CALLABLES`` below, which the test mirrors in
NumPy), optionally adapts it, calls it on each input and stores what Keras returned
(dtype, shape, values; strings decoded from UTF-8), the vocabulary (and size) or the bin
boundaries, and Keras's error (class and message) where Keras refuses; and each layer's
default ``get_config()``.
"""

from __future__ import annotations

import json
import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

CALLABLES = {
    # standardize: digits to "#", then lower case (ASCII)
    "digits_to_hash": lambda x: tf.strings.lower(tf.strings.regex_replace(x, "[0-9]", "#")),
    # split: on commas
    "split_commas": lambda x: tf.strings.split(x, sep=","),
}

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "THE DOG barks; the fox runs!",
    "Ünïcödé ÄPFEL über straße, Café crème",
    "tabs\tand\nnewlines  and   spaces",
    "non\u00a0breaking and em\u2003space",
    "it's a dog-eat-dog world (isn't it?) #1 @home",
    "",
    "fox fox fox dog dog cat",
]
QUERIES = ["the fox and the unknown zebra", "Café DOG", "", "über straße!"]
RNG = np.random.default_rng(0)
HASH_STRINGS = ["", "a", "ab", "abc", "abcd", "hello", "hello world", "Ünïcödé",
                "x" * 16, "y" * 17, "z" * 31, "w" * 32, "q" * 33, "r" * 63, "s" * 64, "t" * 65,
                "0123456789" * 13, "The quick brown fox jumps over the lazy dog" * 3]


def _cases() -> list[dict]:
    """Each: id, layer, kwargs, optional adapt (data and kwargs), inputs, call kwargs."""
    c: list[dict] = []

    def add(id_, layer, kwargs=None, inputs=(), adapt=None, adapt_kwargs=None,
            call_kwargs=None, adapt_batches=False):
        c.append(dict(id=id_, layer=layer, kwargs=kwargs or {}, inputs=list(inputs),
                      adapt=adapt, adapt_kwargs=adapt_kwargs or {}, call_kwargs=call_kwargs or {},
                      adapt_batches=adapt_batches))

    tv = "TextVectorization"
    add("tv_default", tv, {}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_max_tokens_seq", tv, {"max_tokens": 8, "output_sequence_length": 5},
        [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_seq_long", tv, {"output_sequence_length": 12}, [QUERIES], adapt=TEXTS)
    add("tv_lower", tv, {"standardize": "lower"}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_strip", tv, {"standardize": "strip_punctuation"}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_none", tv, {"standardize": None}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_character", tv, {"split": "character", "max_tokens": 20}, [QUERIES, TEXTS],
        adapt=TEXTS)
    add("tv_split_none", tv, {"split": None}, [[[q] for q in QUERIES], [[t] for t in TEXTS]],
        adapt=TEXTS)
    add("tv_ngrams2", tv, {"ngrams": 2}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_ngrams_13", tv, {"ngrams": [1, 3], "max_tokens": 30}, [QUERIES], adapt=TEXTS)
    add("tv_multi_hot", tv, {"output_mode": "multi_hot"}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_binary_max", tv, {"output_mode": "binary", "max_tokens": 6}, [QUERIES], adapt=TEXTS)
    add("tv_count", tv, {"output_mode": "count"}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_count_pad", tv, {"output_mode": "count", "max_tokens": 40,
                             "pad_to_max_tokens": True}, [QUERIES], adapt=TEXTS)
    add("tv_tf_idf", tv, {"output_mode": "tf_idf"}, [QUERIES, TEXTS], adapt=TEXTS)
    add("tv_tf_idf_pad", tv, {"output_mode": "tf_idf", "max_tokens": 12,
                              "pad_to_max_tokens": True}, [QUERIES], adapt=TEXTS)
    add("tv_vocab", tv, {"vocabulary": ["fox", "dog", "the", "zebra"],
                         "output_sequence_length": 7}, [QUERIES, TEXTS])
    add("tv_vocab_tf_idf", tv, {"vocabulary": ["fox", "dog", "the"], "idf_weights": [0.5, 1.5, 2.0],
                                "output_mode": "tf_idf"}, [QUERIES])
    add("tv_callables", tv, {"standardize": {"callable": "digits_to_hash"},
                             "split": {"callable": "split_commas"}},
        [["A1,b2,A1", "c3,,d", "no commas 42"]], adapt=["A1,b2", "b2,c3,c3", "x9"])
    add("tv_scalar", tv, {}, ["The fox and the dog"], adapt=TEXTS)
    add("tv_split_none_rank1", tv, {"split": None}, [QUERIES], adapt=TEXTS)
    add("tv_split_none_multi_hot", tv, {"split": None, "output_mode": "multi_hot"},
        [[[q] for q in QUERIES]], adapt=TEXTS)
    add("tv_split_none_one_hot", tv, {"split": None, "output_mode": "one_hot"},
        [[[q] for q in QUERIES]], adapt=TEXTS)
    add("tv_split_none_seq", tv, {"split": None, "output_sequence_length": 3},
        [[[q] for q in QUERIES]], adapt=TEXTS)
    add("tv_one_hot_split", tv, {"output_mode": "one_hot"}, [QUERIES], adapt=TEXTS)
    add("tv_batches", tv, {"max_tokens": 10}, [QUERIES], adapt=[TEXTS[:3], TEXTS[3:]],
        adapt_batches=True)

    sl = "StringLookup"
    tokens = [["a", "b", "c", "a"], ["d", "a", "b", "zz"], ["c", "c", "c", "e"]]
    queries = [["a", "b", "q", "e"], ["zz", "", "xyz", "c"]]
    add("sl_adapt", sl, {}, [queries, ["a", "nope"]], adapt=tokens)
    add("sl_max_tokens", sl, {"max_tokens": 3}, [queries], adapt=tokens)
    add("sl_mask", sl, {"mask_token": ""}, [queries], adapt=tokens)
    add("sl_oov3", sl, {"num_oov_indices": 3}, [queries, HASH_STRINGS], adapt=tokens)
    add("sl_oov3_salt", sl, {"num_oov_indices": 3, "salt": [5, 9]}, [HASH_STRINGS], adapt=tokens)
    add("sl_oov0", sl, {"num_oov_indices": 0, "vocabulary": ["a", "b"]}, [["a", "b", "b"]])
    add("sl_oov0_unknown", sl, {"num_oov_indices": 0, "vocabulary": ["a", "b"]}, [["a", "x"]])
    add("sl_vocab_special", sl, {"vocabulary": ["[UNK]", "a", "b"]}, [["a", "b", "c"]])
    add("sl_invert", sl, {"vocabulary": ["a", "b", "c"], "invert": True}, [[[1, 2, 3], [0, 9, 1]]])
    add("sl_invert_mask", sl, {"vocabulary": ["a", "b"], "invert": True, "mask_token": "[M]"},
        [[[0, 1, 2, 3, 7]]])
    add("sl_one_hot", sl, {"vocabulary": ["a", "b", "c"], "output_mode": "one_hot"},
        [["a", "c", "x"], [["a"], ["b"]]])
    add("sl_multi_hot", sl, {"output_mode": "multi_hot"}, [queries, ["a", "b", "a"]], adapt=tokens)
    add("sl_count_mask", sl, {"output_mode": "count", "mask_token": ""}, [queries], adapt=tokens)
    add("sl_tf_idf", sl, {"output_mode": "tf_idf"}, [queries], adapt=tokens)
    add("sl_pad", sl, {"output_mode": "multi_hot", "max_tokens": 9, "pad_to_max_tokens": True},
        [queries], adapt=tokens)

    il = "IntegerLookup"
    ints = [[3, 5, 5, 7], [12, 5, 3, 3], [7, 7, 7, 100]]
    iq = [[3, 5, 8, 100], [-4, 0, 42, 7]]
    add("il_adapt", il, {}, [iq], adapt=ints)
    add("il_mask", il, {"mask_token": 0}, [iq], adapt=ints)
    add("il_oov3", il, {"num_oov_indices": 3}, [iq, [[11, -11, 123456789, 2**40]]], adapt=ints)
    add("il_farmhash", il, {"num_oov_indices": 3, "oov_method": "farmhash"},
        [[[11, -11, 123456789, 2**40]]], adapt=ints)
    add("il_farmhash_salt", il, {"num_oov_indices": 4, "oov_method": "farmhash", "salt": 3},
        [[[11, -11, 123456789, 2**40]]], adapt=ints)
    add("il_invert", il, {"vocabulary": [12, 36, 1138], "invert": True}, [[[0, 1, 2, 3, 9]]])
    add("il_count", il, {"output_mode": "count"}, [iq], adapt=ints)
    add("il_tf_idf_vocab", il, {"vocabulary": [3, 5, 7], "idf_weights": [0.25, 0.75, 0.6],
                                "output_mode": "tf_idf"}, [iq])
    add("il_max_tokens", il, {"max_tokens": 3, "output_mode": "multi_hot"}, [iq], adapt=ints)

    ce = "CategoryEncoding"
    add("ce_one_hot", ce, {"num_tokens": 4, "output_mode": "one_hot"}, [[3, 2, 0, 1], [[1], [2]]])
    add("ce_multi_hot", ce, {"num_tokens": 4}, [[[0, 1], [0, 0], [1, 2], [3, 1]], [0, 3, 3]])
    add("ce_count", ce, {"num_tokens": 5, "output_mode": "count"}, [[[0, 1, 1, 4], [2, 2, 2, 0]]])
    add("ce_count_weights", ce, {"num_tokens": 4, "output_mode": "count"},
        [[[0, 1], [0, 0], [1, 2], [3, 1]]],
        call_kwargs={"count_weights": [[0.1, 0.2], [0.1, 0.1], [0.2, 0.3], [0.4, 0.2]]})
    add("ce_out_of_range", ce, {"num_tokens": 3, "output_mode": "multi_hot"}, [[[0, 3], [1, 1]]])
    add("ce_binary_alias", ce, {"num_tokens": 3, "output_mode": "binary"}, [[[0, 2], [1, 1]]])

    hs = "Hashing"
    add("hash_strings", hs, {"num_bins": 7}, [HASH_STRINGS, [["a", "b"], ["c", "d"]]])
    add("hash_big_bins", hs, {"num_bins": 2**31 - 1}, [HASH_STRINGS])
    add("hash_ints", hs, {"num_bins": 5}, [[[0, 1, 2, -1, -12345, 2**40, 99999999]]])
    add("hash_floats", hs, {"num_bins": 5}, [[[1.7, -2.5, 3.0, 0.2]]])
    add("hash_mask_str", hs, {"num_bins": 4, "mask_value": ""}, [HASH_STRINGS])
    add("hash_mask_int", hs, {"num_bins": 4, "mask_value": 0}, [[[0, 1, 2, 3, 0, 17]]])
    add("hash_salt_int", hs, {"num_bins": 6, "salt": 133}, [HASH_STRINGS])
    add("hash_salt_pair", hs, {"num_bins": 6, "salt": [1, 2]}, [HASH_STRINGS, [[1, 2, 3]]])
    add("hash_one_hot", hs, {"num_bins": 3, "output_mode": "one_hot"}, [[["a"], ["b"], ["c"]]])
    add("hash_multi_hot", hs, {"num_bins": 4, "output_mode": "multi_hot"},
        [[["a", "b"], ["c", "d"]]])
    add("hash_count", hs, {"num_bins": 4, "output_mode": "count"},
        [[["a", "a", "b"], ["c", "d", "d"]]])

    dz = "Discretization"
    add("dz_bounds", dz, {"bin_boundaries": [0.0, 1.0, 2.0]},
        [[[-1.5, 1.0, 0.5, 2.0, 3.0], [0.0, -0.0, 1.999, 2.001, 0.1]]])
    add("dz_bounds_tenths", dz, {"bin_boundaries": [0.1, 0.2, 0.3]},
        [[[0.1, 0.2, 0.3, 0.15, 0.30000001]]])
    data = RNG.standard_normal((1000, 1)).astype(np.float32)
    add("dz_adapt", dz, {"num_bins": 5}, [[[-1.0, 0.0, 0.3, 2.0]]], adapt=data.tolist())
    add("dz_adapt_eps", dz, {"num_bins": 4, "epsilon": 0.05}, [[[-1.0, 0.0, 0.3, 2.0]]],
        adapt=data.tolist())
    add("dz_adapt_small", dz, {"num_bins": 3}, [[[0.0, 2.5, 5.0]]],
        adapt=[[1.0], [2.0], [3.0], [4.0], [5.0]])
    add("dz_adapt_batches", dz, {"num_bins": 4},
        [[[-1.0, 0.0, 0.3, 2.0]]], adapt=[data[:300].tolist(), data[300:].tolist()],
        adapt_batches=True)
    add("dz_one_hot", dz, {"bin_boundaries": [0.0, 1.0], "output_mode": "one_hot"},
        [[-1.0, 0.5, 2.0], [[-1.0], [0.5]]])
    add("dz_multi_hot", dz, {"bin_boundaries": [0.0, 1.0], "output_mode": "multi_hot"},
        [[[-1.0, 0.5], [2.0, 2.0]]])
    add("dz_count", dz, {"bin_boundaries": [0.0, 1.0], "output_mode": "count"},
        [[[-1.0, 0.5, 0.7], [2.0, 2.0, -3.0]]])
    return c


def _kwargs(kwargs: dict) -> dict:
    out = {}
    for k, v in kwargs.items():
        if isinstance(v, dict) and "callable" in v:
            v = CALLABLES[v["callable"]]
        elif k == "ngrams" and isinstance(v, list):
            v = tuple(v)
        out[k] = v
    return out


def _plain(x):
    if isinstance(x, (tf.Tensor, tf.RaggedTensor)):
        x = x.numpy() if isinstance(x, tf.Tensor) else x.to_list()
    arr = np.asarray(x)
    if arr.dtype.kind in "SO":
        values = np.vectorize(lambda b: b.decode("utf-8") if isinstance(b, bytes) else b,
                              otypes=[object])(arr).tolist() if arr.size else arr.tolist()
        return {"dtype": "string", "shape": list(arr.shape), "values": values}
    return {"dtype": str(arr.dtype), "shape": list(arr.shape), "values": arr.tolist()}


def _input(x, layer: str):
    if layer == "Discretization":
        return np.asarray(x, dtype=np.float32)
    return np.asarray(x) if not isinstance(x, str) else x


def run(case: dict) -> dict:
    cls = getattr(keras.layers, case["layer"])
    out: dict = {}
    try:
        layer = cls(**_kwargs(case["kwargs"]))
        if case["adapt"] is not None:
            data = case["adapt"]
            if case["adapt_batches"]:
                data = (np.asarray(b, dtype=np.float32 if case["layer"] == "Discretization"
                                   else None) for b in data)
            elif case["layer"] == "Discretization":
                data = np.asarray(data, dtype=np.float32)
            layer.adapt(data, **case["adapt_kwargs"])
    except Exception as exc:  # Keras refuses the layer or the data
        out["error"] = [type(exc).__name__, str(exc)[:300]]
        return out
    if hasattr(layer, "get_vocabulary"):
        out["vocabulary"] = [v if isinstance(v, str) else int(v) for v in layer.get_vocabulary()]
        out["vocabulary_size"] = int(layer.vocabulary_size())
    if case["layer"] == "Discretization":
        out["bin_boundaries"] = [float(b) for b in layer.bin_boundaries]
    outputs = []
    for x in case["inputs"]:
        try:
            kwargs = {k: np.asarray(v, dtype=np.float32) for k, v in case["call_kwargs"].items()}
            outputs.append(_plain(layer(_input(x, case["layer"]), **kwargs)))
        except Exception as exc:
            outputs.append({"error": [type(exc).__name__, str(exc)[:300]]})
    out["outputs"] = outputs
    return out


# the default configs (arguments as Keras names them and their defaults)
CONFIG_LAYERS = {"TextVectorization": {}, "StringLookup": {}, "IntegerLookup": {},
                 "CategoryEncoding": {"num_tokens": 3}, "Hashing": {"num_bins": 3},
                 "Discretization": {"bin_boundaries": [0.0]}}


def main() -> None:
    cases = _cases()
    for case in cases:
        case["keras"] = run(case)
    configs = {name: getattr(keras.layers, name)(**kwargs).get_config()
               for name, kwargs in CONFIG_LAYERS.items()}
    doc = {"keras_version": keras.__version__, "tensorflow_version": tf.__version__,
           "backend": keras.backend.backend(), "cases": cases,
           "config_kwargs": CONFIG_LAYERS, "configs": configs}
    path = os.path.join(HERE, "keras_preprocessing_text_refs.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
