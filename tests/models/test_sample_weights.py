"""fit(sample_weight=..., class_weight=..., initial_epoch=...), weighted validation data
and evaluate(sample_weight=...) against Keras 3.15.1 (PyTorch backend): histories and
final weights of a Dense model trained from fixed weights (``tests/data/keras``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tinynet as tn

REFS = np.load(os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                            "keras_refs.npz"))
R = "weighted_fit/"
CASES = {"sample_weight": {"sample_weight": REFS[R + "sw"]},
         "class_weight": {"class_weight": {0: 0.5, 1: 2.0}},
         "initial_epoch": {"sample_weight": REFS[R + "sw"], "initial_epoch": 2},
         "validation": {"sample_weight": REFS[R + "sw"],
                        "validation_data": (REFS[R + "x"][:8], REFS[R + "y"][:8],
                                            REFS[R + "sw"][:8])}}


def _model() -> tn.Sequential:
    model = tn.Sequential([tn.Input((4,)), tn.layers.Dense(3)])
    model.set_weights([REFS[R + "w0"], REFS[R + "b0"]])
    model.compile(tn.optimizers.SGD(0.1),
                  tn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


@pytest.mark.parametrize("case", sorted(CASES))
def test_weighted_fit_matches_keras(case):
    model = _model()
    history = model.fit(REFS[R + "x"], REFS[R + "y"], batch_size=8, epochs=4, shuffle=False,
                        verbose=0, **CASES[case])
    keys = [k[len(R + case) + 1:] for k in REFS.files if k.startswith(f"{R}{case}/")
            and not k.split("/")[-1].startswith("w")]
    assert sorted(history.history) == sorted(keys)
    for key in keys:
        np.testing.assert_allclose(history.history[key], REFS[f"{R}{case}/{key}"], rtol=1e-5,
                                   err_msg=key)
    for i, w in enumerate(model.get_weights()):
        np.testing.assert_allclose(w, REFS[f"{R}{case}/w{i}"], rtol=1e-5, atol=1e-6)


def test_weighted_evaluate_matches_keras():
    model = _model()
    model.fit(REFS[R + "x"], REFS[R + "y"], batch_size=8, epochs=4, shuffle=False, verbose=0,
              sample_weight=REFS[R + "sw"])
    value = model.evaluate(REFS[R + "x"], REFS[R + "y"], batch_size=8, verbose=0,
                           sample_weight=REFS[R + "sw"])
    np.testing.assert_allclose(value, float(REFS[R + "evaluate"]), rtol=1e-5)


def test_unit_weights_change_nothing_and_class_weight_is_sample_weight_by_label():
    x, y = REFS[R + "x"], REFS[R + "y"]
    plain, ones = _model(), _model()
    h1 = plain.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    h2 = ones.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
                  sample_weight=np.ones(20))
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-12)
    for a, b in zip(plain.get_weights(), ones.get_weights()):
        np.testing.assert_array_equal(a, b)
    by_class, by_sample = _model(), _model()
    table = np.array([3.0, 1.0, 0.25], dtype=np.float32)  # class 1 unlisted: 1.0
    by_class.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
                 class_weight={0: 3.0, 2: 0.25})
    by_sample.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False,
                  sample_weight=table[y])
    for a, b in zip(by_class.get_weights(), by_sample.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_shuffled_weighted_fit_is_reproducible_and_weights_follow_their_samples():
    x, y = REFS[R + "x"], REFS[R + "y"]
    sw = REFS[R + "sw"]
    runs = []
    for _ in range(2):
        tn.set_seed(5)
        model = _model()
        model.fit(x, y, batch_size=8, epochs=3, verbose=0, sample_weight=sw)
        runs.append(model.get_weights())
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    # a zero-weight sample teaches nothing: dropping it gives the same loss sum
    model = _model()
    keep = sw > 0.5
    w = np.where(keep, sw, 0.0).astype(np.float32)
    full = model.evaluate(x, y, batch_size=20, verbose=0, sample_weight=w)
    part = model.evaluate(x[keep], y[keep], batch_size=20, verbose=0, sample_weight=w[keep])
    assert full * 20 == pytest.approx(part * keep.sum(), rel=1e-6)


def test_both_weights_are_refused():
    model = _model()
    with pytest.raises(ValueError, match="give class_weight or sample_weight, not both"):
        model.fit(REFS[R + "x"], REFS[R + "y"], verbose=0, sample_weight=np.ones(20),
                  class_weight={0: 1.0})


def test_class_weight_leaves_the_split_validation_loss_unweighted():
    """Keras splits first and weighs the training part only."""
    x, y = REFS[R + "x"], REFS[R + "y"]
    model = _model()
    history = model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False,
                        validation_split=0.4, class_weight={0: 5.0, 1: 1.0, 2: 0.1})
    assert history.history["val_loss"][0] == model.evaluate(x[12:], y[12:], batch_size=8,
                                                            verbose=0)
