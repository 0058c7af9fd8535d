"""The text and categorical preprocessing layers against Keras 3.15.1 (TensorFlow backend):
every case of tests/data/keras/keras_preprocessing_text_refs.json (written once by
generate_preprocessing_text.py beside it) is rebuilt in tinynet, adapted on the same
data and called on the same inputs; vocabularies, bin boundaries, dtypes, shapes and
values must equal Keras's (float32 encodings to 1e-6 relative: tf-idf means are summed
in another order), and where Keras refuses an input tinynet must refuse it too."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tinynet import layers as L

REFS = json.loads((Path(__file__).parents[1] / "data" / "keras"
                   / "keras_preprocessing_text_refs.json").read_text(encoding="utf-8"))
CASES = {c["id"]: c for c in REFS["cases"]}

# NumPy twins of the generator's TensorFlow callables (they get and return str arrays)
CALLABLES = {
    "digits_to_hash": np.vectorize(lambda s: re.sub("[0-9]", "#", s).lower(), otypes=[str]),
    "split_commas": lambda texts: [s.split(",") for s in texts],
}


def _kwargs(kwargs: dict) -> dict:
    return {k: CALLABLES[v["callable"]] if isinstance(v, dict) and "callable" in v else v
            for k, v in kwargs.items()}


def _layer(case: dict):
    layer = getattr(L, case["layer"])(**_kwargs(case["kwargs"]))
    if case["adapt"] is not None:
        data = case["adapt"]
        if case["adapt_batches"]:
            dtype = np.float32 if case["layer"] == "Discretization" else None
            data = (np.asarray(b, dtype=dtype) for b in data)
        elif case["layer"] == "Discretization":
            data = np.asarray(data, dtype=np.float32)
        layer.adapt(data)
    return layer


def _call(layer, case: dict, x):
    if case["layer"] == "Discretization":
        x = np.asarray(x, dtype=np.float32)
    elif not isinstance(x, str):
        x = np.asarray(x)
    kwargs = {k: np.asarray(v, dtype=np.float32) for k, v in case["call_kwargs"].items()}
    return layer(x, **kwargs)


def _check(got, want: dict, where: str) -> None:
    arr = np.asarray(got)
    assert list(arr.shape) == want["shape"], (where, arr.shape, want["shape"])
    if want["dtype"] == "string":
        assert arr.tolist() == want["values"], where
        return
    assert str(arr.dtype) == want["dtype"], (where, arr.dtype, want["dtype"])
    expected = np.asarray(want["values"], dtype=want["dtype"]).reshape(want["shape"])
    if arr.dtype.kind == "f":
        np.testing.assert_allclose(arr, expected, rtol=1e-6, atol=0, err_msg=where)
    else:
        np.testing.assert_array_equal(arr, expected, err_msg=where)


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_matches_keras(case_id):
    case = CASES[case_id]
    keras = case["keras"]
    assert "error" not in keras, keras["error"]
    layer = _layer(case)
    if "vocabulary" in keras:
        assert layer.get_vocabulary() == keras["vocabulary"]
        assert layer.vocabulary_size() == keras["vocabulary_size"]
    if "bin_boundaries" in keras:
        np.testing.assert_array_equal(np.float32(layer.bin_boundaries),
                                      np.float32(keras["bin_boundaries"]))
    for i, (x, want) in enumerate(zip(case["inputs"], keras["outputs"])):
        where = f"{case_id} input {i}"
        if "error" in want:  # Keras refuses: an OOV value with num_oov_indices=0 (TF's
            with pytest.raises(ValueError):  # InvalidArgumentError), one_hot after a split
                _call(layer, case, x)
            continue
        _check(_call(layer, case, x), want, where)


def test_the_references_come_from_keras_3_15_1_on_tensorflow():
    assert REFS["keras_version"] == "3.15.1" and REFS["backend"] == "tensorflow"


@pytest.mark.parametrize("name", sorted(REFS["configs"]))
def test_default_config_has_keras_arguments_and_defaults(name):
    """Every key of Keras's default ``get_config()`` (but the name and dtype policy) is in
    tinynet's with the same value, and tinynet builds the layer from Keras's config."""
    keras = {k: v for k, v in REFS["configs"][name].items() if k not in ("name", "dtype")}
    cls = getattr(L, name)
    ours = cls(**REFS["config_kwargs"][name]).get_config()
    assert {k: ours.get(k, "<missing>") for k in keras} == keras
    rebuilt = cls.from_config(keras).get_config()
    assert {k: rebuilt[k] for k in keras} == keras
