"""``compile(weighted_metrics=...)`` and ``AUC(multi_label=True)`` against Keras 3.15.1.

The reference numbers are in tests/data/keras/keras_fit_refs.json (written once by
tests/data/keras/generate_fit.py in a scratch virtualenv): a one-unit sigmoid Dense with
fixed weights evaluated with ``sample_weight``, and fit with ``class_weight`` at learning
rate 0 (so the weights stay) with weighted validation data; and a multi-label AUC fed two
batches, the second weighted. Keras computes in float32, hence the tolerance.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import Dense, Input
from tinynet.metrics import AUC

REFS = os.path.join(os.path.dirname(__file__), "data", "keras", "keras_fit_refs.json")


def _refs() -> dict:
    with open(REFS, encoding="utf-8") as fh:
        return json.load(fh)


def _weighted_model(ref: dict) -> tn.Sequential:
    model = tn.Sequential([Input((3,)), Dense(1, activation="sigmoid")])
    model.set_weights([np.array(ref["kernel"], np.float32), np.array(ref["bias"], np.float32)])
    model.compile(tn.optimizers.SGD(0.0), "binary_crossentropy", metrics=["accuracy"],
                  weighted_metrics=["accuracy", "mse", AUC(name="wauc")])
    return model


def _close(got: dict, want: dict) -> None:
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=2e-6), key


def test_weighted_metrics_in_evaluate_match_keras():
    ref = _refs()["weighted"]
    model = _weighted_model(ref)
    x, y = np.array(ref["x"], np.float32), np.array(ref["y"], np.float32)
    sw = np.array(ref["sample_weight"], np.float32)
    assert model.metrics_names == ["loss", "accuracy", "weighted_accuracy", "mse", "wauc"]
    _close(model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0, return_dict=True),
           ref["evaluate_weighted"])
    _close(model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True), ref["evaluate"])


def test_weighted_metrics_with_class_weight_in_fit_match_keras():
    ref = _refs()["weighted"]
    model = _weighted_model(ref)
    x, y = np.array(ref["x"], np.float32), np.array(ref["y"], np.float32)
    sw = np.array(ref["sample_weight"], np.float32)
    class_weight = {int(k): v for k, v in ref["class_weight"].items()}
    history = model.fit(x, y, class_weight=class_weight, batch_size=4, epochs=1,
                        shuffle=False, verbose=0, validation_data=(x, y, sw))
    _close({k: v[0] for k, v in history.history.items()}, ref["fit"])


def test_weighted_metrics_are_plain_metrics_without_weights():
    ref = _refs()["weighted"]
    model = _weighted_model(ref)
    x, y = np.array(ref["x"], np.float32), np.array(ref["y"], np.float32)
    logs = model.evaluate(x, y, batch_size=3, verbose=0, return_dict=True)
    assert logs["weighted_accuracy"] == logs["accuracy"]


@pytest.mark.parametrize("key", sorted(_refs()["auc"]["values"]))
def test_multi_label_auc_matches_keras(key):
    ref = _refs()["auc"]
    curve, summation, num = key.split("-")
    metric = AUC(num_thresholds=int(num), curve=curve, summation_method=summation,
                 multi_label=True)
    b1 = np.array(ref["b1_t"]), np.array(ref["b1_p"], np.float32)
    b2 = np.array(ref["b2_t"]), np.array(ref["b2_p"], np.float32)
    metric.update_state(*b1)
    first = metric.result()
    metric.update_state(*b2, sample_weight=np.array(ref["b2_w"], np.float32))
    second = metric.result()
    metric.reset_state()
    metric.update_state(*b2)
    assert [first, second, metric.result()] == pytest.approx(ref["values"][key], abs=1e-6)


def test_multi_label_auc_config_round_trip_and_errors():
    metric = AUC(multi_label=True, curve="PR")
    again = AUC.from_config(metric.get_config())
    assert again.multi_label and again.curve == "PR"
    with pytest.raises(ValueError, match=re.escape(
            "AUC: multi_label=True needs predictions of shape (samples, labels), got shape "
            "(4,)")):
        metric.update_state(np.ones(4), np.ones(4, np.float32))
    metric.update_state(np.ones((2, 3)), np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "AUC: multi_label=True was fed 3 labels before and now 2")):
        metric.update_state(np.ones((2, 2)), np.ones((2, 2), np.float32))


def test_weighted_metrics_survive_save_and_load(tmp_path):
    ref = _refs()["weighted"]
    model = _weighted_model(ref)
    x, y = np.array(ref["x"], np.float32), np.array(ref["y"], np.float32)
    sw = np.array(ref["sample_weight"], np.float32)
    path = str(tmp_path / "m.safetensors")
    model.save(path)
    loaded = tn.load_model(path)
    assert loaded.metrics_names == model.metrics_names
    assert loaded.evaluate(x, y, sample_weight=sw, verbose=0, return_dict=True) == \
        model.evaluate(x, y, sample_weight=sw, verbose=0, return_dict=True)
