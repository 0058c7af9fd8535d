"""The Embedding table gradient (``tinynet.ops.arrays.embedding.table_grad``): each id's
rows of the output gradient added in input order, bit for bit ``np.add.at``'s result."""

from __future__ import annotations

import numpy as np

import tinynet as tn
from tinynet.layers import Embedding
from tinynet.ops.arrays.embedding import table_grad


def test_hand_derived_sums():
    ids = np.array([[2, 0], [2, 2]])
    g = np.array([[[1.0, -1.0], [0.5, 0.25]], [[2.0, 3.0], [-4.0, 0.5]]], dtype=np.float32)
    got = table_grad(ids, g, 4)
    want = np.array([[0.5, 0.25], [0.0, 0.0], [-1.0, 2.5], [0.0, 0.0]], dtype=np.float32)
    assert got.dtype == np.float32 and got.shape == (4, 2)
    np.testing.assert_array_equal(got, want)


def test_same_bits_as_add_at_in_input_order():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, (16, 30))  # many repeats: the order of the adds shows
    g = (rng.standard_normal((16, 30, 8)) * 10.0 ** rng.integers(-4, 5, (16, 30, 1)))
    g = g.astype(np.float32)
    want = np.zeros((50, 8), dtype=np.float32)
    np.add.at(want, ids.reshape(-1), g.reshape(-1, 8))
    assert np.array_equal(table_grad(ids, g, 50).view(np.int32), want.view(np.int32))


def test_float64_reference_and_the_layer():
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 7, (3, 5)).astype(np.int32)
    g = rng.standard_normal((3, 5, 4)).astype(np.float32)
    ref = np.zeros((7, 4))
    for n, i in enumerate(ids.reshape(-1)):
        ref[i] += g.reshape(-1, 4)[n]
    np.testing.assert_allclose(table_grad(ids, g, 7), ref, rtol=1e-6, atol=1e-6)
    tn.set_seed(0)
    layer = Embedding(7, 4)
    layer(ids)
    layer.backward(g)
    np.testing.assert_array_equal(layer.embeddings.grad, table_grad(ids, g, 7))
