"""Central finite-difference checks of every normalization backward (input and parameters)."""

from __future__ import annotations

import numpy as np
import pytest

from tinynet.layers.regularization.normalization import (
    BatchNormalization, GroupNormalization, InstanceNormalization, LayerNormalization,
    group_norm_backward_core, group_norm_forward_core)
from tinynet.testing import check_gradients


def _prepare(layer, shape, seed):
    """Builds ``layer`` and gives every parameter a nontrivial value; returns an input."""
    rng = np.random.default_rng(seed)
    layer.build((None, *shape[1:]))
    for p in layer.parameters():
        if p.name == "gamma":
            p.assign(rng.uniform(0.5, 1.5, p.shape) * rng.choice([-1.0, 1.0], p.shape))
        elif p.name == "beta":
            p.assign(rng.standard_normal(p.shape))
        elif p.name == "moving_mean":
            p.assign(rng.uniform(-1, 1, p.shape))
        elif p.name == "moving_variance":
            p.assign(rng.uniform(0.5, 3, p.shape))
    return rng.standard_normal(shape) * 1.5 + 0.5


def _check(layer, shape, training, seed=0):
    x = _prepare(layer, shape, seed)
    names = {p.name for p in layer.parameters() if p.trainable}
    worst = check_gradients(layer, x=x, training=training, seed=seed, max_checks=48)
    assert worst <= 1.0
    # every trainable parameter got a gradient of its own shape
    for p in layer.parameters():
        if p.name in names:
            assert p.grad is not None and np.shape(p.grad) == p.value.shape, p.name


CASES = [
    ("gn_g1", lambda: GroupNormalization(groups=1), (2, 3, 4)),
    ("gn_g2", lambda: GroupNormalization(groups=2), (2, 2, 2, 4)),
    ("gn_g3_rank2", lambda: GroupNormalization(groups=3), (3, 6)),
    ("gn_minus1", lambda: GroupNormalization(groups=-1), (1, 4, 3)),
    ("gn_rank5", lambda: GroupNormalization(groups=2, epsilon=1e-2), (1, 2, 2, 2, 4)),
    ("gn_no_center", lambda: GroupNormalization(groups=2, center=False), (2, 3, 4)),
    ("in", lambda: InstanceNormalization(), (2, 5, 3)),
    ("in_rank4", lambda: InstanceNormalization(scale=False), (1, 3, 2, 2)),
    ("ln_last", lambda: LayerNormalization(), (3, 5)),
    ("ln_rank3", lambda: LayerNormalization(), (2, 3, 4)),
    ("ln_tuple", lambda: LayerNormalization(axis=(1, 2, 3)), (2, 2, 3, 2)),
    ("ln_middle", lambda: LayerNormalization(axis=1), (2, 4, 3)),
    ("ln_no_scale", lambda: LayerNormalization(axis=(-2, -1), scale=False), (2, 3, 3)),
    ("bn_rank2", lambda: BatchNormalization(), (6, 3)),
    ("bn_rank4", lambda: BatchNormalization(momentum=0.9), (2, 2, 3, 3)),
    ("bn_batch1", lambda: BatchNormalization(), (1, 4, 3)),
    ("bn_no_center", lambda: BatchNormalization(center=False), (3, 2, 4)),
]


@pytest.mark.parametrize("training", [True, False], ids=["training", "inference"])
@pytest.mark.parametrize("make,shape", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_layer_backward_matches_finite_differences(make, shape, training):
    _check(make(), shape, training)


def test_frozen_batch_norm_input_gradient():
    layer = BatchNormalization(trainable=False)
    x = _prepare(layer, (3, 2, 4), seed=1)
    assert check_gradients(layer, x=x, training=True, seed=1) <= 1.0


def test_core_backward_matches_finite_difference_seed_case():
    """The seed's test: [1, 3, 4], 2 groups, asymmetric gamma/beta/upstream, h = 1e-2."""
    shape = (1, 3, 4)
    base = (np.sin(np.arange(12) * 0.7) * 2.0 + 0.3).astype(np.float32).reshape(shape)
    gamma = np.array([1.3, 0.7, -0.4, 1.1], np.float32)
    beta = np.array([0.2, -0.1, 0.5, 0.0], np.float32)
    g = (((np.arange(12) * 5 % 7) - 3.0) * 0.25).astype(np.float32).reshape(shape)
    eps, groups, h = 1e-5, 2, 1e-2

    _, xn, inv_std = group_norm_forward_core(base, groups, gamma, beta, eps)
    dx, dgamma, dbeta = group_norm_backward_core(g, xn, inv_std, groups, gamma)

    def loss(x, gm=gamma, bt=beta):
        out, _, _ = group_norm_forward_core(x, groups, gm, bt, eps)
        return float(np.sum(np.asarray(out, np.float64) * g))

    def fd(arr, f):
        num = np.zeros(arr.size)
        for i in range(arr.size):
            up, dn = arr.copy().ravel(), arr.copy().ravel()
            up[i] += h
            dn[i] -= h
            num[i] = (f(up.reshape(arr.shape)) - f(dn.reshape(arr.shape))) / (2 * h)
        return num

    np.testing.assert_allclose(np.asarray(dx).ravel(), fd(base, loss), rtol=0, atol=5e-3)
    np.testing.assert_allclose(np.asarray(dgamma), fd(gamma, lambda gm: loss(base, gm=gm)),
                               rtol=0, atol=5e-3)
    np.testing.assert_allclose(np.asarray(dbeta), fd(beta, lambda bt: loss(base, bt=bt)),
                               rtol=0, atol=5e-3)
