"""Masks as Keras 3 carries them: ``Embedding(mask_zero=True)`` and ``Masking`` make one,
``GlobalAveragePooling1D`` averages the valid steps, layers with ``supports_masking`` hand
it on, others drop it with a warning, and a mask on a model's output weighs its loss."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import warnings

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "keras"
_SPEC = importlib.util.spec_from_file_location("masking_models", DATA / "masking_models.py")
MODELS = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(MODELS)
REF = json.loads((DATA / "keras_masking_refs.json").read_text(encoding="utf-8"))


def _arrays(values: list) -> list[np.ndarray]:
    return [np.array(v, dtype=np.float32) for v in values]


@pytest.mark.parametrize("name", ["a", "b"])
def test_masked_models_match_keras(name):
    ids, seq, _ = MODELS.data()
    models = dict(zip("ab", MODELS.models(tn, L)))
    model, x = models[name], {"a": ids, "b": seq}[name]
    model.set_weights(_arrays(REF["w" + name]))
    np.testing.assert_allclose(model.predict(x, verbose=0), REF["p" + name], rtol=1e-5,
                               atol=1e-6)
    y = np.array(REF["y" + name], dtype=np.float32)
    model.compile(tn.optimizers.SGD(0.1), "mse")
    assert model.evaluate(x, y, verbose=0) == pytest.approx(REF["loss_" + name], rel=1e-5)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for got, want in zip(model.get_weights(), _arrays(REF["after_" + name])):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_embedding_mask_zero_makes_the_mask_of_nonzero_ids():
    layer = L.Embedding(5, 2, mask_zero=True)
    ids = np.array([[1, 0, 3], [0, 0, 2]])
    np.testing.assert_array_equal(layer.compute_mask(ids), ids != 0)
    assert L.Embedding(5, 2).compute_mask(ids) is None
    assert layer.get_config()["mask_zero"] is True


def test_masking_zeroes_the_padded_steps_and_masks_them():
    x = np.array([[[1.0, 2.0], [-1.0, -1.0], [-1.0, 3.0]]], dtype=np.float32)
    layer = L.Masking(mask_value=-1.0)
    np.testing.assert_array_equal(np.asarray(layer(x)), [[[1, 2], [0, 0], [-1, 3]]])
    np.testing.assert_array_equal(layer.compute_mask(x), [[True, False, True]])
    assert layer.get_config()["mask_value"] == -1.0


def test_masked_average_pooling_values_and_gradient():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 2)).astype(np.float32)
    mask = np.array([[1, 1, 0, 0], [1, 0, 1, 1], [0, 0, 0, 1]], dtype=bool)
    layer = L.GlobalAveragePooling1D()
    out = np.asarray(layer(x, mask=mask))
    x64, m64 = x.astype(np.float64), mask.astype(np.float64)[..., None]
    want = (x64 * m64).sum(1) / m64.sum(1)
    np.testing.assert_allclose(out, want, rtol=1e-6)
    g = rng.standard_normal(out.shape).astype(np.float32)
    dx = np.asarray(layer.backward(g))
    np.testing.assert_allclose(dx, g[:, None, :] * m64 / m64.sum(1, keepdims=True), rtol=1e-6)
    keep = L.GlobalAveragePooling1D(keepdims=True)
    assert np.asarray(keep(x, mask=mask)).shape == (3, 1, 2)
    # without a mask the plain (kernel) path runs again
    np.testing.assert_allclose(np.asarray(layer(x)), x64.mean(1), rtol=1e-6)


def test_a_mask_reaching_a_layer_without_support_is_dropped_with_a_warning():
    model = tn.Sequential([tn.Input((None, 2)), L.Masking(), L.Conv1D(3, 1),
                           L.GlobalAveragePooling1D()])
    x = np.ones((1, 4, 2), dtype=np.float32)
    x[0, 2:] = 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = model.predict(x, verbose=0)
    assert [str(w.message) for w in caught] == [
        "Layer 'conv1d' (Conv1D) does not support masking, but was passed an input with a "
        "mask attached to it; the layers after it will not see the mask"]
    conv = model.layers[1]
    h = np.asarray(conv(x * np.array([1, 1, 0, 0], dtype=np.float32)[None, :, None]))
    np.testing.assert_allclose(out, h.mean(1), rtol=1e-6)  # all four steps averaged


def test_nested_models_and_call_layers_carry_the_mask():
    seen = []

    class Spy(L.Layer):
        supports_masking = True

        def call(self, inputs, mask=None):
            seen.append(None if mask is None else np.asarray(mask).copy())
            return tn.ops.copy(inputs)

    inner = tn.Sequential([tn.Input((None,), dtype="int32"), L.Embedding(6, 2, mask_zero=True),
                           Spy()])
    outer = tn.Sequential([tn.Input((None,), dtype="int32"), inner, Spy(),
                           L.GlobalAveragePooling1D()])
    ids = np.array([[1, 2, 0], [3, 0, 0]])
    del seen[:]
    got = outer.predict(ids, verbose=0)
    assert len(seen) == 2 and all(np.array_equal(m, ids != 0) for m in seen)
    table = inner.layers[0].embeddings.value
    want = np.stack([table[[1, 2]].mean(0), table[[3]].mean(0)])
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_bad_masks_are_refused():
    with pytest.raises(ValueError, match=r"GlobalAveragePooling1D 'global_average_pooling1d': "
                                         r"mask must have shape \(2, 3\)"):
        L.GlobalAveragePooling1D()(np.ones((2, 3, 4)), mask=np.ones((2, 4), dtype=bool))
    with pytest.raises(TypeError, match="Masking: mask_value must be a real number, got 'x'"):
        L.Masking("x")
