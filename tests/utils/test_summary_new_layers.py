"""The summaries of models made of the convolutions, preprocessing and augmentation layers
added for Keras breadth equal Keras 3.15.1's byte for byte (``tests/data/keras``)."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

import tinynet as tn

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "keras"
_SPEC = importlib.util.spec_from_file_location("summary_models", DATA / "summary_models.py")
_MODULE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MODULE)
SUMMARY_MODELS = _MODULE.SUMMARY_MODELS


@pytest.mark.parametrize("name", sorted(SUMMARY_MODELS))
def test_summary_equals_keras(name):
    model = SUMMARY_MODELS[name](tn.layers, tn)
    rows: list[str] = []
    model.summary(print_fn=rows.append)
    assert "\n".join(rows) == (DATA / f"{name}.txt").read_text(encoding="utf-8")
