"""Hand-derived values for the normalization layers and cores (DESIGN §3.4, the seed's tests)."""

from __future__ import annotations

import numpy as np
import pytest

from tinynet.layers.regularization.normalization import (
    BatchNormalization, GroupNormalization, InstanceNormalization, LayerNormalization,
    group_norm_backward_core, group_norm_forward_core)


def _f32(values, shape=None) -> np.ndarray:
    a = np.asarray(values, dtype=np.float32)
    return a if shape is None else a.reshape(shape)


def _params(layer) -> dict:
    return {p.name: p for p in layer.parameters()}


# -- group-norm core -------------------------------------------------------------------------
def test_core_two_groups_of_different_scale():
    # position 0 = [1, 2, 10, 20], position 1 = [3, 4, 30, 40]; group 0 sees {1, 2, 3, 4}
    # (mean 2.5, var 1.25), group 1 sees {10, 20, 30, 40} (mean 25, var 125)
    x = _f32([1, 2, 10, 20, 3, 4, 30, 40], (1, 2, 4))
    gamma, beta = np.ones(4, np.float32), np.zeros(4, np.float32)
    out, xn, inv_std = group_norm_forward_core(x, 2, gamma, beta, 1e-5)

    assert np.asarray(inv_std).shape == (2,)
    for arr in (out, xn, inv_std):
        assert np.asarray(arr).dtype == np.float32
    inv0 = 1.0 / np.sqrt(1.25 + 1e-5)
    inv1 = 1.0 / np.sqrt(125.0 + 1e-5)
    np.testing.assert_allclose(np.asarray(inv_std), [inv0, inv1], rtol=0, atol=1e-6)
    want = np.array([-1.5 * inv0, -0.5 * inv0, -15.0 * inv1, -5.0 * inv1,
                     0.5 * inv0, 1.5 * inv0, 5.0 * inv1, 15.0 * inv1]).reshape(1, 2, 4)
    np.testing.assert_allclose(np.asarray(out), want, rtol=0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(xn), want, rtol=0, atol=1e-5)


def test_core_affine_is_applied_per_channel():
    x = _f32([1, 2, 10, 20, 3, 4, 30, 40], (1, 2, 4))
    gamma = _f32([2.0, -1.0, 0.5, 3.0])
    beta = _f32([0.25, 1.0, -2.0, 0.0])
    out, xn, _ = group_norm_forward_core(x, 2, gamma, beta, 1e-5)
    np.testing.assert_allclose(np.asarray(out), np.asarray(xn) * gamma + beta, rtol=0, atol=1e-6)


@pytest.mark.parametrize("via", ["core", "layer"])
def test_variance_survives_a_large_mean_group_norm(via):
    x = _f32([1e6 + 1, 1e6 + 2, 1e6 + 3, 1e6 + 4], (1, 4, 1))
    if via == "core":
        out, _, _ = group_norm_forward_core(x, 1, _f32([1.0]), _f32([0.0]), 1e-5)
    else:
        out = GroupNormalization(groups=1, epsilon=1e-5)(x, training=True)
    inv = 1.0 / np.sqrt(1.25)
    want = np.array([-1.5, -0.5, 0.5, 1.5]).reshape(1, 4, 1) * inv
    np.testing.assert_allclose(np.asarray(out), want, rtol=0, atol=2e-3)


def test_variance_survives_a_large_mean_batch_and_layer_norm():
    inv = 1.0 / np.sqrt(1.25)
    want = np.array([-1.5, -0.5, 0.5, 1.5]) * inv
    col = _f32([1e6 + 1, 1e6 + 2, 1e6 + 3, 1e6 + 4], (4, 1))
    bn = BatchNormalization(epsilon=1e-5)
    np.testing.assert_allclose(np.asarray(bn(col, training=True)).ravel(), want, atol=2e-3)
    ln = LayerNormalization(epsilon=1e-5)
    np.testing.assert_allclose(np.asarray(ln(col.reshape(1, 4))).ravel(), want, atol=2e-3)


def test_core_group_count_extremes():
    x = _f32([1, 2, 3, 4, 5, 6], (1, 3, 2))
    gamma, beta = np.ones(2, np.float32), np.zeros(2, np.float32)

    # 1 group: statistics over all 6 elements, mean 3.5, var 17.5 / 6
    one, _, inv1 = group_norm_forward_core(x, 1, gamma, beta, 0.0)
    var_all = 17.5 / 6.0
    np.testing.assert_allclose(np.asarray(one).ravel()[0], (1 - 3.5) / np.sqrt(var_all), atol=1e-5)
    np.testing.assert_allclose(np.asarray(one).ravel(),
                               (np.arange(1, 7) - 3.5) / np.sqrt(var_all), atol=1e-5)
    np.testing.assert_allclose(np.asarray(inv1), [1 / np.sqrt(var_all)], rtol=1e-6)

    # 2 groups of 1 channel: channel 0 is {1, 3, 5}, channel 1 is {2, 4, 6}; var 8/3 each
    two, _, inv2 = group_norm_forward_core(x, 2, gamma, beta, 0.0)
    var_ch = 8.0 / 3.0
    np.testing.assert_allclose(np.asarray(two).ravel()[0], (1 - 3) / np.sqrt(var_ch), atol=1e-5)
    np.testing.assert_allclose(
        np.asarray(two).reshape(3, 2),
        np.array([[-2, -2], [0, 0], [2, 2]]) / np.sqrt(var_ch), atol=1e-5)
    np.testing.assert_allclose(np.asarray(inv2), [1 / np.sqrt(var_ch)] * 2, rtol=1e-6)


def test_layers_group_count_extremes():
    x = _f32([1, 2, 3, 4, 5, 6], (1, 3, 2))
    eps = 1e-3
    want_one = (np.arange(1, 7) - 3.5) / np.sqrt(17.5 / 6.0 + eps)
    want_per_channel = np.array([[-2, -2], [0, 0], [2, 2]]) / np.sqrt(8.0 / 3.0 + eps)
    np.testing.assert_allclose(np.asarray(GroupNormalization(groups=1)(x)).ravel(), want_one,
                               atol=1e-5)
    for layer in (GroupNormalization(groups=2), GroupNormalization(groups=-1),
                  InstanceNormalization()):
        np.testing.assert_allclose(np.asarray(layer(x)).reshape(3, 2), want_per_channel,
                                   atol=1e-5)


def test_core_backward_hand_derived():
    # upstream gradient of ones with gamma constant within each group: the group's
    # mean-subtraction cancels it, so dx = 0; dbeta counts the positions; dgamma sums x_hat
    x = _f32([1, 2, 10, 20, 3, 4, 30, 40], (1, 2, 4))
    gamma, beta = _f32([1.5, 1.5, -2.0, -2.0]), np.zeros(4, np.float32)
    _, xn, inv_std = group_norm_forward_core(x, 2, gamma, beta, 1e-5)
    dx, dgamma, dbeta = group_norm_backward_core(np.ones_like(x), xn, inv_std, 2, gamma)
    assert np.asarray(dx).shape == x.shape
    assert np.asarray(dgamma).shape == (4,) and np.asarray(dbeta).shape == (4,)
    np.testing.assert_allclose(np.asarray(dx), 0.0, atol=1e-5)
    np.testing.assert_allclose(np.asarray(dbeta), [2, 2, 2, 2], atol=0)
    # per channel x_hat over 2 positions: channel 0 {-1.5, 0.5}, 1 {-0.5, 1.5} (times inv0), ...
    inv0 = 1.0 / np.sqrt(1.25 + 1e-5)
    inv1 = 1.0 / np.sqrt(125.0 + 1e-5)
    np.testing.assert_allclose(np.asarray(dgamma), [-inv0, inv0, -10 * inv1, 10 * inv1],
                               atol=1e-5)


# -- batch norm --------------------------------------------------------------------------------
def test_batch_norm_training_output():
    bn = BatchNormalization()
    out = np.asarray(bn(_f32([2, 4, 6, 8], (4, 1)), training=True))
    want = np.array([-3, -1, 1, 3]) / np.sqrt(5 + 1e-3)
    np.testing.assert_allclose(out.ravel(), want, rtol=0, atol=1e-6)


def test_batch_norm_moving_statistics_after_one_and_two_steps():
    bn = BatchNormalization()  # momentum 0.99, moving stats start at 0 and 1
    x = _f32([2, 4, 6, 8], (4, 1))  # batch mean 5, biased batch variance 5
    bn(x, training=True)
    p = _params(bn)
    np.testing.assert_allclose(p["moving_mean"].value, [0.0 * 0.99 + 5 * 0.01], rtol=1e-6)
    np.testing.assert_allclose(p["moving_variance"].value, [1.0 * 0.99 + 5 * 0.01], rtol=1e-6)
    bn(x, training=True)
    np.testing.assert_allclose(p["moving_mean"].value, [0.05 * 0.99 + 0.05], rtol=1e-6)
    np.testing.assert_allclose(p["moving_variance"].value, [1.04 * 0.99 + 0.05], rtol=1e-6)


def test_batch_norm_moving_statistics_custom_momentum_per_channel():
    bn = BatchNormalization(momentum=0.9)
    x = _f32([[1, 10], [3, 10], [5, 40]])  # channel 0: mean 3, var 8/3; channel 1: mean 20, var 200
    bn(x, training=True)
    p = _params(bn)
    np.testing.assert_allclose(p["moving_mean"].value, [0.3, 2.0], rtol=1e-6)
    np.testing.assert_allclose(p["moving_variance"].value, [0.9 + 0.8 / 3, 0.9 + 20.0], rtol=1e-6)


def test_batch_norm_inference_uses_moving_statistics():
    bn = BatchNormalization()
    x = _f32([2, 4, 6, 8], (4, 1))
    # before any training step: moving mean 0, moving variance 1
    np.testing.assert_allclose(np.asarray(bn(x, training=False)).ravel(),
                               [2, 4, 6, 8] / np.sqrt(1 + 1e-3), rtol=1e-6)
    p = _params(bn)
    p["moving_mean"].assign([2.0])
    p["moving_variance"].assign([4.0])
    p["gamma"].assign([3.0])
    p["beta"].assign([1.0])
    out = np.asarray(bn(x, training=False)).ravel()
    want = 3.0 * (np.array([2, 4, 6, 8]) - 2.0) / np.sqrt(4.0 + 1e-3) + 1.0
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    # inference leaves the moving statistics alone
    assert p["moving_mean"].value.tolist() == [2.0]
    assert p["moving_variance"].value.tolist() == [4.0]
    # and its backward is the affine map's derivative
    dx = np.asarray(bn.backward(_f32([1, -1, 2, 0.5], (4, 1)))).ravel()
    np.testing.assert_allclose(dx, 3.0 / np.sqrt(4.0 + 1e-3) * np.array([1, -1, 2, 0.5]),
                               rtol=1e-6)
    np.testing.assert_allclose(p["beta"].grad, [2.5], rtol=1e-6)
    xhat = (np.array([2, 4, 6, 8]) - 2.0) / np.sqrt(4.0 + 1e-3)
    np.testing.assert_allclose(p["gamma"].grad, [np.dot(xhat, [1, -1, 2, 0.5])], rtol=1e-5)


def test_frozen_batch_norm_runs_in_inference_mode():
    bn = BatchNormalization(trainable=False)
    x = _f32([2, 4, 6, 8], (4, 1))
    out = np.asarray(bn(x, training=True)).ravel()
    np.testing.assert_allclose(out, [2, 4, 6, 8] / np.sqrt(1 + 1e-3), rtol=1e-6)
    p = _params(bn)
    assert p["moving_mean"].value.tolist() == [0.0]
    assert p["moving_variance"].value.tolist() == [1.0]


def test_batch_norm_training_backward_hand_derived():
    bn = BatchNormalization()
    x = _f32([2, 4, 6, 8], (4, 1))
    bn(x, training=True)
    dx = np.asarray(bn.backward(np.ones((4, 1), np.float32)))
    p = _params(bn)
    np.testing.assert_allclose(dx, 0.0, atol=1e-6)
    np.testing.assert_allclose(p["beta"].grad, [4.0], rtol=1e-7)
    np.testing.assert_allclose(p["gamma"].grad, [0.0], atol=1e-6)
    # upstream = x_hat: dgamma = sum(x_hat^2) = 4 * var / (var + eps)
    xhat = np.array([-3, -1, 1, 3]) / np.sqrt(5 + 1e-3)
    bn(x, training=True)
    dx = np.asarray(bn.backward(_f32(xhat, (4, 1)))).ravel()
    np.testing.assert_allclose(p["gamma"].grad, [4 * 5 / (5 + 1e-3)], rtol=1e-6)
    # dx = inv * (x_hat - x_hat * mean(x_hat^2)) = inv * x_hat * eps / (var + eps)
    inv = 1 / np.sqrt(5 + 1e-3)
    np.testing.assert_allclose(dx, inv * xhat * 1e-3 / (5 + 1e-3), atol=1e-6)


# -- layer norm ----------------------------------------------------------------------------------
def test_layer_norm_rows():
    ln = LayerNormalization()
    out = np.asarray(ln(_f32([[1, 3, 5, 7], [2, -2, 0, 4]])))
    s = np.sqrt(5 + 1e-3)
    np.testing.assert_allclose(out, np.array([[-3, -1, 1, 3], [1, -3, -1, 3]]) / s,
                               rtol=0, atol=1e-6)
    # training flag does not matter for layer norm
    np.testing.assert_array_equal(np.asarray(ln(_f32([[1, 3, 5, 7], [2, -2, 0, 4]]),
                                                training=True)), out)


def test_layer_norm_over_several_axes_hand_derived():
    # one sample [1, 2, 2]: normalize over (1, 2): values {1, 3, 5, 7}
    ln = LayerNormalization(axis=(1, 2))
    out = np.asarray(ln(_f32([1, 3, 5, 7], (1, 2, 2))))
    np.testing.assert_allclose(out.ravel(), np.array([-3, -1, 1, 3]) / np.sqrt(5 + 1e-3),
                               atol=1e-6)
    assert _params(ln)["gamma"].value.shape == (2, 2)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 0, 4)])
def test_cores_on_empty_input(shape):
    # the seed returns zeros (inv_std shaped [batch * groups]) when there is nothing to do
    x = np.zeros(shape, np.float32)
    gamma, beta = np.ones(4, np.float32), np.zeros(4, np.float32)
    out, xn, inv_std = group_norm_forward_core(x, 2, gamma, beta, 1e-3)
    assert np.asarray(out).shape == shape and np.asarray(xn).shape == shape
    assert np.asarray(inv_std).shape == (shape[0] * 2,)
    assert not np.any(np.asarray(inv_std))
    dx, dgamma, dbeta = group_norm_backward_core(x, xn, inv_std, 2, gamma)
    assert np.asarray(dx).shape == shape
    assert np.asarray(dgamma).tolist() == [0.0] * 4 and np.asarray(dbeta).tolist() == [0.0] * 4
