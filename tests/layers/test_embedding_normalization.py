"""Embedding and the Normalization preprocessing layer against Keras 3.15.1 (PyTorch
backend) on fixed weights and inputs (``tests/data/keras/generate.py``), hand-derived
values, adapt() by batches by Keras's merge formula, and their place in a model."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import Dense, Embedding, Flatten, Normalization

REFS = np.load(os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                            "keras_refs.npz"))


def test_embedding_matches_keras():
    ids = REFS["embedding/ids"]
    layer = Embedding(10, 4)
    layer.build(ids.shape)
    assert [p.name for p in layer.parameters()] == ["embeddings"]
    layer.set_weights([REFS["embedding/w0"]])
    y = np.asarray(layer(ids, training=True))
    np.testing.assert_array_equal(y, REFS["embedding/y"])
    dx = np.asarray(layer.backward(REFS["embedding/g"]))
    np.testing.assert_array_equal(dx, np.zeros(ids.shape, np.float32))
    np.testing.assert_allclose(layer.embeddings.grad, REFS["embedding/dw0"], rtol=1e-6,
                               atol=1e-7)


def test_embedding_gradient_adds_repeats_in_input_order():
    layer = Embedding(3, 1)
    layer.build((None, 4))
    layer.set_weights([np.zeros((3, 1), np.float32)])
    layer(np.array([[2, 0, 2, 2]]), training=True)
    layer.backward(np.array([[[1.0], [5.0], [1e8], [1.0]]], dtype=np.float32))
    # ((1 + 1e8) + 1) in float32: each 1 is lost against 1e8 one at a time
    assert layer.embeddings.grad.ravel().tolist() == [5.0, 0.0, np.float32(1e8)]


@pytest.mark.parametrize("ids, shown", [([[0, 10]], "10 at index (0, 1)"),
                                        ([[-1, 2]], "-1 at index (0, 0)"),
                                        ([[1.5, 2.0]], "1.5 at index (0, 0)")])
def test_embedding_names_the_bad_id(ids, shown):
    layer = Embedding(10, 2)
    with pytest.raises(ValueError) as info:
        layer(np.array(ids))
    assert "ids must be integers in [0, 10)" in str(info.value)
    assert shown in str(info.value)


def test_embedding_defaults_are_keras_uniform_and_no_mask():
    tn.set_seed(3)
    layer = Embedding(1000, 8)
    layer.build((None, 2))
    table = layer.embeddings.value
    assert table.shape == (1000, 8) and table.dtype == np.float32
    assert -0.05 <= table.min() < -0.04 and 0.04 < table.max() <= 0.05
    assert Embedding(5, 2, mask_zero=True).supports_masking  # tests/layers/test_masking.py


def test_embedding_trains_in_a_model_and_saves(tmp_path):
    tn.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 20, (64, 6))
    y = (x.sum(axis=1) % 2).astype(np.int64)
    model = tn.Sequential([tn.Input((6,)), Embedding(20, 4), Flatten(), Dense(2)])
    model.compile(optimizer="adam", loss=tn.losses.SparseCategoricalCrossentropy(
        from_logits=True))
    before = model.get_weights()[0].copy()
    model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    assert not np.array_equal(model.get_weights()[0], before)
    path = str(tmp_path / "m.safetensors")
    model.save(path)
    again = tn.load_model(path)
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("case, make", [
    ("normalization_fixed", lambda: Normalization(mean=[1.0, 2.0, 3.0],
                                                  variance=[4.0, 0.0, 0.25])),
    ("normalization_invert", lambda: Normalization(mean=[1.0, 2.0, 3.0],
                                                   variance=[4.0, 0.0, 0.25], invert=True)),
    ("normalization_adapt", lambda: Normalization()),
    ("normalization_axes", lambda: Normalization(axis=(1, 2))),
    ("normalization_none", lambda: Normalization(axis=None)),
])
def test_normalization_matches_keras(case, make):
    layer = make()
    if f"{case}/weights" in REFS:
        layer.adapt(_adapt_data(case))
        weights = layer.get_weights()
        assert len(weights) == int(REFS[f"{case}/weights"]) == 3
        assert [p.name for p in layer.parameters()] == ["mean", "variance", "count"]
        for i, w in enumerate(weights):
            np.testing.assert_allclose(w, REFS[f"{case}/w{i}"], rtol=1e-6, atol=1e-7)
    else:
        layer.build((None, *REFS[f"{case}/x"].shape[1:]))
        assert layer.get_weights() == []
    y = np.asarray(layer(REFS[f"{case}/x"]))
    np.testing.assert_allclose(y, REFS[f"{case}/y"], rtol=1e-6, atol=1e-6)
    dx = np.asarray(layer.backward(REFS[f"{case}/g"]))
    np.testing.assert_allclose(dx, REFS[f"{case}/dx"], rtol=1e-6, atol=1e-6)


def _adapt_data(case):
    """Data with the statistics Keras adapted to (the references store its weights, not
    the generator's data): two samples per kept position, at mean - std and mean + std."""
    mean = REFS[f"{case}/w0"].astype(np.float64)
    std = np.sqrt(REFS[f"{case}/w1"].astype(np.float64))
    data = np.stack([mean - std, mean + std])
    if case == "normalization_none":  # one statistic: the same two values in every column
        return np.repeat(data[:, None], 3, axis=1)
    return data[..., None] if case == "normalization_axes" else data


def test_adapt_by_batches_merges_as_keras():
    rng = np.random.default_rng(1)
    data = (rng.standard_normal((50, 3)) * [1.0, 5.0, 0.1] + [0.0, 10.0, -2.0]).astype(
        np.float32).astype(np.float64)  # float32 values, as the layer reads them
    batches = [data[:20], data[20:45], data[45:]]
    layer = Normalization()
    layer.adapt(batches)
    mean, var, n = batches[0].mean(0), batches[0].var(0), 20
    for b in batches[1:]:  # Keras's lack-of-fit merge, in float64
        n += len(b)
        wn = len(b) / n
        wo = 1.0 - wn
        merged = mean * wo + b.mean(0) * wn
        var = (var + (mean - merged) ** 2) * wo + (b.var(0) + (b.mean(0) - merged) ** 2) * wn
        mean = merged
    np.testing.assert_array_equal(layer.get_weights()[0], mean.astype(np.float32))
    np.testing.assert_array_equal(layer.get_weights()[1], var.astype(np.float32))
    np.testing.assert_allclose(layer.get_weights()[0], data.mean(0), rtol=1e-6)


def test_normalization_by_hand_and_in_a_saved_model(tmp_path):
    layer = Normalization(mean=2.0, variance=4.0)
    x = np.array([[0.0, 2.0, 6.0]], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(layer(x)), [[-1.0, 0.0, 2.0]])
    tn.set_seed(0)
    norm = Normalization()
    data = np.random.default_rng(2).standard_normal((40, 5)).astype(np.float32) * 4 + 3
    norm.adapt(data)
    model = tn.Sequential([tn.Input((5,)), norm, Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(data, data[:, :1], epochs=1, batch_size=8, verbose=0)
    np.testing.assert_array_equal(norm.get_weights()[0], data.astype(np.float64).mean(0)
                                  .astype(np.float32))  # training leaves them alone
    path = str(tmp_path / "n.safetensors")
    model.save(path)
    again = tn.load_model(path)
    np.testing.assert_array_equal(again.predict(data, verbose=0), model.predict(data, verbose=0))
