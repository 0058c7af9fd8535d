"""Every normalization layer and both group-norm cores against the float64 NumPy reference.

Forward, input gradient and gamma/beta gradients, training and inference, ranks 2 to 5, every
valid group count, batch 1 included.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import norm_reference as R
from tinynet.layers.regularization.normalization import (
    BatchNormalization, GroupNormalization, InstanceNormalization, LayerNormalization,
    group_norm_backward_core, group_norm_forward_core)

RTOL, ATOL = 1e-4, 1e-5


def _close(got, ref, what: str, scale: float = 0.0) -> None:
    """float32 result vs float64 reference; ``atol`` relative to ``max(1, |ref|, scale)``."""
    got = np.asarray(got)
    assert got.dtype == np.float32, f"{what}: dtype {got.dtype}"
    assert got.shape == np.shape(ref), f"{what}: shape {got.shape} != {np.shape(ref)}"
    scale = max(1.0, scale, float(np.max(np.abs(ref))) if np.size(ref) else 0.0)
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=RTOL, atol=ATOL * scale,
                               err_msg=what)


def _data(shape, seed: int, pshape=None):
    """Input with per-channel offsets and scales, an upstream gradient, gamma and beta."""
    rng = np.random.default_rng(seed)
    c = shape[-1]
    x = (rng.standard_normal(shape) * rng.uniform(0.5, 3.0, c) + rng.uniform(-4, 4, c))
    g = rng.standard_normal(shape)
    pshape = (c,) if pshape is None else pshape
    gamma = rng.uniform(0.5, 2.0, pshape) * rng.choice([-1.0, 1.0], pshape)
    beta = rng.standard_normal(pshape)
    return [a.astype(np.float32) for a in (x, g, gamma, beta)]


def _params(layer) -> dict:
    return {p.name: p for p in layer.parameters()}


def _set_affine(layer, gamma, beta) -> tuple:
    """Assigns gamma/beta where the layer has them; returns what the reference should use."""
    p = _params(layer)
    if "gamma" in p:
        p["gamma"].assign(gamma)
    if "beta" in p:
        p["beta"].assign(beta)
    return (gamma if "gamma" in p else None), (beta if "beta" in p else None)


def _check_param_grads(layer, dgamma, dbeta, what: str) -> None:
    p = _params(layer)
    if "gamma" in p:
        _close(p["gamma"].grad, dgamma, f"{what} dgamma")
    if "beta" in p:
        _close(p["beta"].grad, dbeta, f"{what} dbeta")


def _divisors(c: int) -> list[int]:
    return [d for d in range(1, c + 1) if c % d == 0]


GN_SHAPES = [(3, 12), (1, 5, 6), (2, 3, 4, 8), (2, 2, 3, 2, 4), (2, 5, 1), (1, 7, 3)]
GN_CASES = [(s, g) for s in GN_SHAPES for g in _divisors(s[-1])]


def _case_id(shape, extra) -> str:
    return "x".join(map(str, shape)) + f"-{extra}"


# -- cores ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", GN_CASES, ids=[_case_id(*c) for c in GN_CASES])
def test_cores_match_reference(shape, groups):
    x, g, gamma, beta = _data(shape, seed=len(shape) * 100 + groups)
    eps = 1e-5 if groups % 2 else 1e-3
    out, xn, inv_std = group_norm_forward_core(x, groups, gamma, beta, eps)
    r_out, r_xn, r_inv = R.group_norm_forward(x, groups, gamma, beta, eps)
    _close(out, r_out, "output")
    _close(xn, r_xn, "x_normalized")
    _close(inv_std, r_inv, "inv_std")

    dx, dgamma, dbeta = group_norm_backward_core(g, xn, inv_std, groups, gamma)
    r_dx, r_dgamma, r_dbeta = R.group_norm_backward(g, x, groups, gamma, eps)
    _close(dx, r_dx, "grad_input", R.grad_term_scale(g, gamma, r_inv))
    _close(dgamma, r_dgamma, "grad_gamma")
    _close(dbeta, r_dbeta, "grad_beta")


def test_cores_accept_non_contiguous_float32_inputs():
    x, g, gamma, beta = _data((2, 3, 4, 6), seed=7)
    ref = group_norm_forward_core(x, 3, gamma, beta, 1e-3)
    x_view = np.asfortranarray(x)
    gamma_view = np.repeat(gamma, 2)[::2]
    assert not x_view.flags.c_contiguous and not gamma_view.flags.c_contiguous
    got = group_norm_forward_core(x_view, 3, gamma_view, beta, 1e-3)
    for a, b in zip(got, ref):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    grads = group_norm_backward_core(np.asfortranarray(g), np.asfortranarray(np.asarray(ref[1])),
                                     ref[2], 3, gamma_view)
    for a, b in zip(grads, group_norm_backward_core(g, ref[1], ref[2], 3, gamma)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# -- group / instance norm layers ----------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", GN_CASES, ids=[_case_id(*c) for c in GN_CASES])
def test_group_normalization_matches_reference(shape, groups):
    x, g, gamma, beta = _data(shape, seed=len(shape) * 1000 + groups)
    layer = GroupNormalization(groups=groups)
    layer.build((None, *shape[1:]))
    gamma_r, beta_r = _set_affine(layer, gamma, beta)
    for training in (True, False):
        out = layer(x, training=training)
        r_out, _, r_inv = R.group_norm_forward(x, groups, gamma_r, beta_r, 1e-3)
        _close(out, r_out, f"training={training} output")
        dx = layer.backward(g)
        r_dx, r_dgamma, r_dbeta = R.group_norm_backward(g, x, groups, gamma_r, 1e-3)
        _close(dx, r_dx, f"training={training} dx", R.grad_term_scale(g, gamma_r, r_inv))
        _check_param_grads(layer, r_dgamma, r_dbeta, f"training={training}")


@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 6), (1, 3, 2, 4)])
def test_group_normalization_minus_one_is_one_group_per_channel(shape):
    x, g, gamma, beta = _data(shape, seed=3)
    layer = GroupNormalization(groups=-1, epsilon=1e-4)
    layer.build((None, *shape[1:]))
    _set_affine(layer, gamma, beta)
    r_out, _, r_inv = R.group_norm_forward(x, shape[-1], gamma, beta, 1e-4)
    _close(layer(x, training=True), r_out, "output")
    r_dx, r_dgamma, r_dbeta = R.group_norm_backward(g, x, shape[-1], gamma, 1e-4)
    _close(layer.backward(g), r_dx, "dx", R.grad_term_scale(g, gamma, r_inv))
    _check_param_grads(layer, r_dgamma, r_dbeta, "groups=-1")


IN_CASES = [((3, 4), {}), ((2, 6, 3), {}), ((1, 4, 5, 4), {}), ((2, 3, 2, 2, 5), {}),
            ((2, 5, 3), {"center": False}), ((1, 3, 3, 2), {"scale": False, "epsilon": 1e-5})]


@pytest.mark.parametrize("shape,kwargs", IN_CASES, ids=[_case_id(*c) for c in IN_CASES])
def test_instance_normalization_matches_reference(shape, kwargs):
    x, g, gamma, beta = _data(shape, seed=11 + len(shape))
    eps = kwargs.get("epsilon", 1e-3)
    layer = InstanceNormalization(**kwargs)
    layer.build((None, *shape[1:]))
    gamma_r, beta_r = _set_affine(layer, gamma, beta)
    for training in (True, False):
        r_out, _, r_inv = R.instance_norm_forward(x, gamma_r, beta_r, eps)
        _close(layer(x, training=training), r_out, f"training={training} output")
        r_dx, r_dgamma, r_dbeta = R.instance_norm_backward(g, x, gamma_r, eps)
        _close(layer.backward(g), r_dx, f"training={training} dx",
               R.grad_term_scale(g, gamma_r, r_inv))
        _check_param_grads(layer, r_dgamma, r_dbeta, f"training={training}")


@pytest.mark.parametrize("kwargs", [{"center": False}, {"scale": False},
                                    {"center": False, "scale": False}])
def test_group_normalization_without_center_or_scale(kwargs):
    shape = (2, 3, 6)
    x, g, gamma, beta = _data(shape, seed=5)
    layer = GroupNormalization(groups=3, **kwargs)
    layer.build((None, *shape[1:]))
    gamma_r, beta_r = _set_affine(layer, gamma, beta)
    r_out, _, r_inv = R.group_norm_forward(x, 3, gamma_r, beta_r)
    _close(layer(x, training=True), r_out, "output")
    r_dx, r_dgamma, r_dbeta = R.group_norm_backward(g, x, 3, gamma_r)
    _close(layer.backward(g), r_dx, "dx", R.grad_term_scale(g, gamma_r, r_inv))
    _check_param_grads(layer, r_dgamma, r_dbeta, str(kwargs))


# -- batch norm ----------------------------------------------------------------------------------
BN_CASES = [((6, 5), {}), ((3, 4, 3), {"momentum": 0.9}), ((1, 3, 3, 4), {}),
            ((2, 2, 3, 2, 3), {"epsilon": 1e-5}), ((4, 2, 3), {"center": False}),
            ((3, 3, 2), {"scale": False, "momentum": 0.0}), ((5, 2), {"momentum": 1.0})]


@pytest.mark.parametrize("shape,kwargs", BN_CASES, ids=[_case_id(*c) for c in BN_CASES])
def test_batch_normalization_training_matches_reference(shape, kwargs):
    x, g, gamma, beta = _data(shape, seed=21 + len(shape))
    eps, momentum = kwargs.get("epsilon", 1e-3), kwargs.get("momentum", 0.99)
    layer = BatchNormalization(**kwargs)
    layer.build((None, *shape[1:]))
    gamma_r, beta_r = _set_affine(layer, gamma, beta)
    p = _params(layer)
    mm0 = np.linspace(-1, 1, shape[-1]).astype(np.float32)
    mv0 = np.linspace(0.5, 2, shape[-1]).astype(np.float32)
    p["moving_mean"].assign(mm0)
    p["moving_variance"].assign(mv0)

    out = layer(x, training=True)
    r_out, b_mean, b_var = R.batch_norm_train_forward(x, gamma_r, beta_r, eps)
    _close(out, r_out, "output")
    r_mm, r_mv = R.batch_norm_moving_update(mm0, mv0, b_mean, b_var, momentum)
    _close(p["moving_mean"].value, r_mm, "moving_mean")
    _close(p["moving_variance"].value, r_mv, "moving_variance")

    r_dx, r_dgamma, r_dbeta = R.batch_norm_train_backward(g, x, gamma_r, eps)
    _close(layer.backward(g), r_dx, "dx", R.grad_term_scale(g, gamma_r, 1 / np.sqrt(b_var + eps)))
    _check_param_grads(layer, r_dgamma, r_dbeta, "training")


@pytest.mark.parametrize("shape,kwargs", BN_CASES, ids=[_case_id(*c) for c in BN_CASES])
def test_batch_normalization_inference_matches_reference(shape, kwargs):
    x, g, gamma, beta = _data(shape, seed=31 + len(shape))
    eps = kwargs.get("epsilon", 1e-3)
    layer = BatchNormalization(**kwargs)
    layer.build((None, *shape[1:]))
    gamma_r, beta_r = _set_affine(layer, gamma, beta)
    p = _params(layer)
    rng = np.random.default_rng(5)
    mm = rng.uniform(-3, 3, shape[-1]).astype(np.float32)
    mv = rng.uniform(0.2, 5, shape[-1]).astype(np.float32)
    p["moving_mean"].assign(mm)
    p["moving_variance"].assign(mv)

    out = layer(x, training=False)
    _close(out, R.batch_norm_infer_forward(x, mm, mv, gamma_r, beta_r, eps), "output")
    np.testing.assert_array_equal(p["moving_mean"].value, mm)
    np.testing.assert_array_equal(p["moving_variance"].value, mv)
    r_dx, r_dgamma, r_dbeta = R.batch_norm_infer_backward(g, x, mm, mv, gamma_r, eps)
    _close(layer.backward(g), r_dx, "dx")
    _check_param_grads(layer, r_dgamma, r_dbeta, "inference")


def test_batch_normalization_backward_follows_the_last_forward():
    shape = (4, 3, 5)
    x, g, gamma, beta = _data(shape, seed=41)
    layer = BatchNormalization(momentum=0.5)
    layer.build((None, *shape[1:]))
    _set_affine(layer, gamma, beta)
    layer(x, training=True)
    p = _params(layer)
    mm, mv = p["moving_mean"].value.copy(), p["moving_variance"].value.copy()
    layer(x, training=False)  # the last forward is inference: backward is its derivative
    r_dx, r_dgamma, r_dbeta = R.batch_norm_infer_backward(g, x, mm, mv, gamma)
    _close(layer.backward(g), r_dx, "dx")
    _check_param_grads(layer, r_dgamma, r_dbeta, "inference after training")
    layer(x, training=True)
    r_dx, r_dgamma, r_dbeta = R.batch_norm_train_backward(g, x, gamma)
    _close(layer.backward(g), r_dx, "dx")
    _check_param_grads(layer, r_dgamma, r_dbeta, "training after inference")


def test_frozen_batch_normalization_is_inference_even_when_training():
    shape = (4, 3, 5)
    x, g, gamma, beta = _data(shape, seed=43)
    layer = BatchNormalization()
    layer.build((None, *shape[1:]))
    _set_affine(layer, gamma, beta)
    p = _params(layer)
    p["moving_mean"].assign(np.full(5, 0.5, np.float32))
    p["moving_variance"].assign(np.full(5, 2.0, np.float32))
    layer.trainable = False
    out = layer(x, training=True)
    _close(out, R.batch_norm_infer_forward(x, [0.5] * 5, [2.0] * 5, gamma, beta), "output")
    assert p["moving_mean"].value.tolist() == [0.5] * 5
    assert p["moving_variance"].value.tolist() == [2.0] * 5
    r_dx, _, _ = R.batch_norm_infer_backward(g, x, [0.5] * 5, [2.0] * 5, gamma)
    _close(layer.backward(g), r_dx, "dx")


@pytest.mark.parametrize("cls,kwargs", [(BatchNormalization, {}),
                                        (GroupNormalization, {"groups": 2})])
def test_positive_last_axis_equals_minus_one(cls, kwargs):
    shape = (2, 3, 2, 4)
    x, g, gamma, beta = _data(shape, seed=51)
    outs = []
    for axis in (-1, 3):
        layer = cls(axis=axis, **kwargs)
        layer.build((None, *shape[1:]))
        _set_affine(layer, gamma, beta)
        outs.append((np.asarray(layer(x, training=True)).copy(),
                     np.asarray(layer.backward(g)).copy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-6, atol=1e-6)


def test_batch_normalization_channel_axis_one():
    # Keras: `axis` picks the feature axis; statistics run over every other axis
    shape = (3, 4, 2, 5)
    x, g, _, _ = _data(shape, seed=53)
    rng = np.random.default_rng(0)
    gamma = rng.uniform(0.5, 2, 4).astype(np.float32)
    beta = rng.standard_normal(4).astype(np.float32)
    layer = BatchNormalization(axis=1)
    layer.build((None, *shape[1:]))
    _set_affine(layer, gamma, beta)
    r_out, _, _ = R.batch_norm_train_forward(x, gamma, beta, axis=1)
    _close(layer(x, training=True), r_out, "output")
    r_dx, r_dgamma, r_dbeta = R.batch_norm_train_backward(g, x, gamma, axis=1)
    _close(layer.backward(g), r_dx, "dx")
    _check_param_grads(layer, r_dgamma, r_dbeta, "axis=1")


# -- layer norm ----------------------------------------------------------------------------------
LN_CASES = [((5, 8), -1, {}), ((1, 6), -1, {}), ((2, 3, 6), -1, {}), ((2, 3, 4, 5), -1, {}),
            ((1, 2, 3, 2, 4), -1, {}), ((2, 3, 4, 5), (1, 2, 3), {}), ((2, 3, 6), (-2, -1), {}),
            ((2, 3, 6), 1, {}), ((2, 3, 4, 5), (1, 3), {}), ((3, 4, 6), -1, {"center": False}),
            ((3, 4, 6), (1, 2), {"scale": False, "epsilon": 1e-5}),
            ((2, 7), -1, {"center": False, "scale": False})]


@pytest.mark.parametrize("shape,axis,kwargs", LN_CASES,
                         ids=[_case_id(s, f"{a}-{k}") for s, a, k in LN_CASES])
def test_layer_normalization_matches_reference(shape, axis, kwargs):
    pshape = R.layer_norm_param_shape(shape, axis)
    x, g, gamma, beta = _data(shape, seed=61 + len(shape), pshape=pshape)
    eps = kwargs.get("epsilon", 1e-3)
    layer = LayerNormalization(axis=axis, **kwargs)
    layer.build((None, *shape[1:]))
    for p in layer.parameters():
        assert p.value.shape == pshape, f"{p.name} shape {p.value.shape} != {pshape}"
    gamma_r, beta_r = _set_affine(layer, gamma, beta)
    for training in (True, False):
        _close(layer(x, training=training), R.layer_norm_forward(x, axis, gamma_r, beta_r, eps),
               f"training={training} output")
        r_dx, r_dgamma, r_dbeta = R.layer_norm_backward(g, x, axis, gamma_r, eps)
        _close(layer.backward(g), r_dx, f"training={training} dx",
               R.grad_term_scale(g, gamma_r, R.layer_norm_inv_std(x, axis, eps)))
        _check_param_grads(layer, r_dgamma, r_dbeta, f"training={training}")


# -- many statistics blocks ----------------------------------------------------------------------
# rows_per_block(C) = 16384 // C positions per block: these shapes span several blocks, with a
# mean that dwarfs the spread. float32 accumulation is allowed (DESIGN §3.4), hence rtol 1e-3.
def _close_loose(got, ref, what, scale=0.0):
    got = np.asarray(got)
    scale = max(1.0, scale, float(np.max(np.abs(ref))))
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=1e-3, atol=1e-4 * scale,
                               err_msg=what)


def _offset_data(shape, seed, offset=1000.0):
    x, g, gamma, beta = _data(shape, seed)
    return x + np.float32(offset), g, gamma, beta


def test_group_norm_core_across_blocks():
    x, g, gamma, beta = _offset_data((2, 5000, 8), seed=71)  # 3 blocks of 2048 positions
    out, xn, inv_std = group_norm_forward_core(x, 2, gamma, beta, 1e-3)
    r_out, _, r_inv = R.group_norm_forward(x, 2, gamma, beta, 1e-3)
    _close_loose(out, r_out, "output")
    _close_loose(inv_std, r_inv, "inv_std")
    dx, dgamma, dbeta = group_norm_backward_core(g, xn, inv_std, 2, gamma)
    r_dx, r_dgamma, r_dbeta = R.group_norm_backward(g, x, 2, gamma, 1e-3)
    _close_loose(dx, r_dx, "dx", R.grad_term_scale(g, gamma, r_inv))
    _close_loose(dgamma, r_dgamma, "dgamma")
    _close_loose(dbeta, r_dbeta, "dbeta")


def test_instance_and_batch_norm_across_blocks():
    x, g, gamma, beta = _offset_data((1, 7000, 5), seed=73)  # 3 blocks of 3276 positions
    layer = InstanceNormalization()
    layer.build((None, *x.shape[1:]))
    _set_affine(layer, gamma, beta)
    r_out, _, r_inv = R.instance_norm_forward(x, gamma, beta)
    _close_loose(layer(x, training=True), r_out, "IN output")
    _close_loose(layer.backward(g), R.instance_norm_backward(g, x, gamma)[0], "IN dx",
                 R.grad_term_scale(g, gamma, r_inv))

    x2, g2 = x.reshape(7000, 5), g.reshape(7000, 5)
    bn = BatchNormalization()
    bn.build((None, 5))
    _set_affine(bn, gamma, beta)
    r_out, b_mean, b_var = R.batch_norm_train_forward(x2, gamma, beta)
    _close_loose(bn(x2, training=True), r_out, "BN output")
    r_mm, r_mv = R.batch_norm_moving_update(np.zeros(5), np.ones(5), b_mean, b_var)
    p = _params(bn)
    _close_loose(p["moving_mean"].value, r_mm, "moving_mean")
    _close_loose(p["moving_variance"].value, r_mv, "moving_variance")
    r_dx, r_dgamma, r_dbeta = R.batch_norm_train_backward(g2, x2, gamma)
    _close_loose(bn.backward(g2), r_dx, "BN dx", R.grad_term_scale(g2, gamma, 1 / np.sqrt(b_var)))
    _close_loose(p["gamma"].grad, r_dgamma, "BN dgamma")
    _close_loose(p["beta"].grad, r_dbeta, "BN dbeta")


def test_layer_norm_across_blocks():
    shape = (2, 3, 20000)
    x, g, gamma, beta = _offset_data(shape, seed=75)
    ln = LayerNormalization(axis=(1, 2))
    ln.build((None, *shape[1:]))
    gamma2 = np.resize(gamma, shape[1:]).astype(np.float32)
    _set_affine(ln, gamma2, np.resize(beta, shape[1:]))
    _close_loose(ln(x), R.layer_norm_forward(x, (1, 2), gamma2, np.resize(beta, shape[1:])),
                 "output")
    r_dx, r_dgamma, r_dbeta = R.layer_norm_backward(g, x, (1, 2), gamma2)
    _close_loose(ln.backward(g), r_dx, "dx",
                 R.grad_term_scale(g, gamma2, R.layer_norm_inv_std(x, (1, 2))))
    _close_loose(_params(ln)["gamma"].grad, r_dgamma, "dgamma")
    _close_loose(_params(ln)["beta"].grad, r_dbeta, "dbeta")


# The register (wide-row) path: C dividing 64 packs 64 // C positions per 64-float row;
# positions short of a whole row are leftovers; C = 128 is one position per two-quad row;
# other C take the spans. Each shape below
# hits one edge; garbage allocated between the calls would show up if any lane were read
# before it was written.
@pytest.mark.parametrize("shape,groups", [
    ((2, 3, 8), 2),          # 3 positions: no whole wide row (8 per row), leftovers only
    ((2, 9, 8), 4),          # one whole row and one leftover position
    ((3, 1, 1, 1), 1),       # C = 1: 64 positions per row, one position
    ((2, 130, 1), 1),        # C = 1: two rows and two leftovers
    ((2, 4, 5, 32), 4),      # 20 positions: 10 rows of 2
    ((2, 5, 7, 64), 16),     # one wide row per position
    ((1, 70, 64), 64),       # one group per channel
    ((2, 5, 7, 128), 8),     # C = 128: two quads per row
    ((1, 300, 128), 128),    # C = 128, one group per channel, three position blocks
    ((2, 3, 3, 48), 6),      # C = 48: neither (the span path), for comparison
    ((2, 3, 5, 256), 4),     # C = 256: the span path
])
def test_wide_row_geometry_matches_reference(shape, groups):
    x, g, gamma, beta = _data(shape, 7)
    results = []
    for _ in range(2):
        np.full(1 << 16, np.nan, np.float32)  # leave garbage in freed memory
        out, xn, inv = group_norm_forward_core(x, groups, gamma, beta, 1e-3)
        dx, dgamma, dbeta = group_norm_backward_core(g, xn, inv, groups, gamma)
        results.append([out, xn, inv, dx, dgamma, dbeta])
    for a, b in zip(*results):
        assert a.tobytes() == b.tobytes()
    ref_out, ref_xn, ref_inv = R.group_norm_forward(x, groups, gamma, beta)
    ref_dx, ref_dgamma, ref_dbeta = R.group_norm_backward(g, x, groups, gamma)
    out, xn, inv, dx, dgamma, dbeta = results[0]
    _close(out, ref_out, "output")
    _close(xn, ref_xn, "x_normalized")
    _close(inv, ref_inv, "inv_std")
    _close(dx, ref_dx, "dx", scale=float(np.max(np.abs(ref_inv))))
    _close(dgamma, ref_dgamma, "dgamma")
    _close(dbeta, ref_dbeta, "dbeta")


@pytest.mark.parametrize("affine_only", [False, True])
@pytest.mark.parametrize("rows,features",
                         [(7, 32), (9, 64), (5, 48), (3, 256), (5, 24), (6, 40), (3, 20)])
def test_layer_norm_row_kernels_give_the_general_loops_bits(rows, features, affine_only):
    """Rows of 32 and 64 features run on registers, other multiples of 8 in row pairs:
    each must give, byte for byte, what the one-row-at-a-time loop gives (the forward's
    shifted sums per row, the backward's dots, dx and the parameter lanes), with the
    statistics as variables and as constants (``affine_only``: ``dx = inv_std * g *
    gamma``, a separately compiled variant of the register kernels)."""
    from tinynet.ops.arrays import normalization as core
    from tinynet.kernels.normalization.folds import shifted_segment_sums
    from tinynet.kernels.normalization.rows_registers import one_row

    x, g, gamma, beta = _data((rows, 1, features), 41)
    x = x + np.float32(100.0)
    out, _, mean, _var, inv = core.gn_forward(x, 1, gamma, beta, 1e-3, want_xn=False)
    dx, dgamma, dbeta = core.gn_backward(g, x, inv, 1, gamma, mean=mean,
                                         affine_only=affine_only)
    xf, gf = x.reshape(-1), g.reshape(-1)
    acc = np.zeros((2, features), dtype=np.float32)
    vb = np.empty(features, dtype=np.float32)
    want = np.empty_like(xf)
    n = np.float64(features)
    for r in range(rows):
        row = slice(r * features, (r + 1) * features)
        s1, s2 = shifted_segment_sums(xf, row.start, row.stop, xf[row.start])
        m = np.float64(s1) / n
        var = max(np.float64(s2) / n - m * m, 0.0)
        assert mean[r] == np.float32(np.float64(xf[row.start]) + m)
        assert inv[r] == np.float32(1.0 / np.sqrt(var + 1e-3))
        one_row(True, affine_only, gf[row], xf[row], want[row], mean[r], inv[r], gamma, acc,
                vb, n)
    if affine_only:  # the row's terms vanish: inv_std * (g * gamma - (0 + xn * 0))
        xn = (x.reshape(rows, features) - mean[:, None]) * inv[:, None]
        plain = inv[:, None] * (g.reshape(rows, features) * gamma - (np.float32(0.0)
                                                                  + xn * np.float32(0.0)))
        assert dx.reshape(-1).tobytes() == plain.astype(np.float32).reshape(-1).tobytes()
    assert dx.reshape(-1).tobytes() == want.tobytes()
    assert dbeta.tobytes() == acc[0].tobytes() and dgamma.tobytes() == acc[1].tobytes()


@pytest.mark.parametrize("features", [32, 64, 48, 256, 40, 20])
@pytest.mark.parametrize("threads", [1, 2])
def test_layer_norm_block_statistics_give_each_rows_bits(features, threads):
    """The forward takes a block's shifted sums first, then the statistics of all its rows
    in one loop; rows whose float32 sums overflow make their block take the float64
    fallback row by row. Over several blocks and two tasks (the second starting on an odd
    row for 48 features; finite blocks, one with an overflowing row, an odd last row),
    every row's mean, variance and inv_std must be the one-row formula's bits (the
    fallback's float64 sums for the overflowing rows), serial and on 2 threads."""
    from tinynet import tuning
    from tinynet.ops.arrays import normalization as core
    from tinynet.kernels.normalization.folds import shifted_segment_sums

    chunk = 16384 // features  # rows per task (Plan.spc)
    step = 2 * max(2048 // (2 * features), 1)  # rows per statistics block
    rows = chunk + 3 * step + 5  # a second task of three blocks and five rows
    x, _, gamma, beta = _data((rows, 1, features), 43)
    x = x + np.float32(7.0)
    bad = chunk + step + 1
    x[bad, 0, ::2] = np.float32(3e19)  # this row's float32 squares overflow
    x[bad, 0, 1::2] = np.float32(-3e19)
    before = tuning.get_num_threads()
    tuning.set_num_threads(threads)
    try:
        with tuning.override(ln_parallel_min_elems=0 if threads > 1 else 1 << 40):
            out, _, mean, var, inv = core.gn_forward(x, 1, gamma, beta, 1e-3,
                                                     want_xn=False,
                                                     gate="ln_parallel_min_elems")
    finally:
        tuning.set_num_threads(before)
    xf = x.reshape(-1)
    n = np.float64(features)
    for r in range(rows):
        row = xf[r * features:(r + 1) * features]
        s1, s2 = shifted_segment_sums(xf, r * features, (r + 1) * features, xf[r * features])
        if not (np.isfinite(s1) and np.isfinite(s2)):
            assert r == bad
            d = row.astype(np.float64) - np.float64(row[0])
            s1 = s2 = np.float64(0.0)
            for v in d:  # the fallback's order: element by element in float64
                s1 += v
                s2 += v * v
        m = np.float64(s1) / n
        v = max(np.float64(s2) / n - m * m, 0.0)
        with np.errstate(over="ignore"):  # the overflowing row's variance is inf in float32
            assert var[r] == np.float32(v), r
        assert mean[r] == np.float32(np.float64(row[0]) + m), r
        assert inv[r] == np.float32(1.0 / np.sqrt(v + 1e-3)), r
    assert np.isfinite(out).all()


@pytest.mark.parametrize("threads", [1, 2])
def test_group_statistics_fall_back_alone_with_each_groups_bits(threads):
    """Each group's statistics come from its merged block sums; a group whose float32
    squares overflow takes the float64 fallback. The other groups of its sample and the
    other samples keep the bits they have without the overflow, and the overflowing group
    gets its float64 statistics, serial and on 2 threads."""
    from tinynet import tuning
    from tinynet.ops.arrays import normalization as core

    shape, groups = (3, 700, 64), 16  # three position blocks a sample, 4 channels a group
    x, _, gamma, beta = _data(shape, 47)
    huge = x.copy()
    huge[1, :, 12:16] = np.float32(1e19)  # sample 1, group 3: squares of 2e19 overflow
    huge[1, 1::2, 12:16] = np.float32(-1e19)

    def stats(a):
        with tuning.override(gn_row_parallel_min_elems=0 if threads > 1 else 1 << 40):
            _, _, mean, var, inv = core.gn_forward(a, groups, gamma, beta, 1e-3,
                                                   want_xn=False)
        return np.stack([mean, var, inv]).reshape(3, shape[0], groups)

    before = tuning.get_num_threads()
    tuning.set_num_threads(threads)
    try:
        plain, fallen = stats(x), stats(huge)
    finally:
        tuning.set_num_threads(before)
    kept = np.ones((shape[0], groups), dtype=bool)
    kept[1, 3] = False
    assert fallen[:, kept].tobytes() == plain[:, kept].tobytes()
    assert np.isclose(fallen[0, 1, 3], 0.0, atol=1e12)  # mean of +-1e19 (rows alternate)
    assert np.isclose(fallen[1, 1, 3], 1e38, rtol=1e-6)
    assert np.isclose(fallen[2, 1, 3], 1e-19, rtol=1e-6)
