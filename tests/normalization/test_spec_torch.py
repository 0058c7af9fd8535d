"""Parity with ``torch.nn.functional`` (forward, input gradient, gamma/beta gradients).

PyTorch is channels-first, so inputs are permuted ``[N, *S, C] -> [N, C, *S]`` and back.
Keras momentum 0.99 is PyTorch momentum 0.01. PyTorch updates ``running_var`` with the
*unbiased* batch variance while tinynet (like Keras) uses the biased one, so the expected
moving variance is derived from torch's by swapping that term.

The loss is always formed on torch's own (channels-first) output with a contiguous upstream
gradient: torch 2.13 CPU ``instance_norm`` with batch 1 returns wrong input/gamma/beta
gradients when the gradient reaching it is non-contiguous (e.g. the permute of a
channels-last array), while ``group_norm`` and the batch >= 2 path are fine.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from tests.helpers import norm_reference as R  # noqa: E402
from tinynet.layers.regularization.normalization import (  # noqa: E402
    BatchNormalization, GroupNormalization, InstanceNormalization, LayerNormalization,
    group_norm_backward_core, group_norm_forward_core)

RTOL, ATOL = 1e-4, 1e-5


def _close(got, want, what: str, scale: float = 0.0) -> None:
    """``atol`` relative to ``max(1, |want|, scale)`` (``scale``: see ``grad_term_scale``)."""
    got = np.asarray(got, dtype=np.float64)
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = max(1.0, scale, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL * scale, err_msg=what)


def _cf(t):
    """channels-last -> channels-first"""
    return t.permute(0, t.ndim - 1, *range(1, t.ndim - 1))


def _cl(t):
    """channels-first -> channels-last"""
    return t.permute(0, *range(2, t.ndim), 1)


def _data(shape, seed, pshape=None):
    rng = np.random.default_rng(seed)
    c = shape[-1]
    x = rng.standard_normal(shape) * rng.uniform(0.5, 2.5, c) + rng.uniform(-3, 3, c)
    g = rng.standard_normal(shape)
    pshape = (c,) if pshape is None else pshape
    gamma = rng.uniform(0.5, 2.0, pshape) * rng.choice([-1.0, 1.0], pshape)
    beta = rng.standard_normal(pshape)
    return [a.astype(np.float32) for a in (x, g, gamma, beta)]


def _leaves(*arrays):
    return [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]


def _params(layer) -> dict:
    return {p.name: p for p in layer.parameters()}


def _torch_grads(fn, x, g, gamma, beta, channels_first=True):
    """Runs ``fn(x, gamma, beta)`` in float64 autograd; returns channels-last results.

    With ``channels_first`` ``fn`` takes and returns channels-first tensors (the input is
    permuted for it); otherwise it works on the channels-last layout directly.
    """
    xt, gt, bt = _leaves(x, gamma, beta)
    upstream = torch.tensor(g, dtype=torch.float64)
    if channels_first:
        out = fn(_cf(xt), gt, bt)
        (out * _cf(upstream).contiguous()).sum().backward()
        out = _cl(out)
    else:
        out = fn(xt, gt, bt)
        (out * upstream).sum().backward()
    return out, xt.grad, gt.grad, bt.grad


def _check_layer(layer, x, g, gamma, beta, fn, training=True, what="", channels_first=True,
                 inv_std=1.0):
    if not layer.built:
        layer.build((None, *x.shape[1:]))
    p = _params(layer)
    p["gamma"].assign(gamma)
    p["beta"].assign(beta)
    out = layer(x, training=training)
    dx = layer.backward(g)
    t_out, t_dx, t_dgamma, t_dbeta = _torch_grads(fn, x, g, gamma, beta, channels_first)
    _close(out, t_out, f"{what} output")
    _close(dx, t_dx, f"{what} dx", R.grad_term_scale(g, gamma, inv_std))
    _close(p["gamma"].grad, t_dgamma, f"{what} dgamma")
    _close(p["beta"].grad, t_dbeta, f"{what} dbeta")


GN_CASES = [((2, 6, 12), 1), ((2, 6, 12), 3), ((2, 6, 12), 12), ((1, 4, 5, 8), 4),
            ((3, 2, 3, 2, 6), 2), ((4, 10), 5)]


@pytest.mark.parametrize("shape,groups", GN_CASES)
def test_group_norm_layer_matches_torch(shape, groups):
    x, g, gamma, beta = _data(shape, seed=groups + 7 * len(shape))
    _check_layer(GroupNormalization(groups=groups, epsilon=1e-5), x, g, gamma, beta,
                 lambda t, w, b: F.group_norm(t, groups, w, b, 1e-5),
                 inv_std=R.group_norm_forward(x, groups, epsilon=1e-5)[2])


@pytest.mark.parametrize("shape,groups", GN_CASES)
def test_group_norm_cores_match_torch(shape, groups):
    x, g, gamma, beta = _data(shape, seed=groups + 11 * len(shape))
    out, xn, inv_std = group_norm_forward_core(x, groups, gamma, beta, 1e-3)
    dx, dgamma, dbeta = group_norm_backward_core(g, xn, inv_std, groups, gamma)
    t_out, t_dx, t_dgamma, t_dbeta = _torch_grads(
        lambda t, w, b: F.group_norm(t, groups, w, b, 1e-3), x, g, gamma, beta)
    _close(out, t_out, "output")
    _close(dx, t_dx, "dx", R.grad_term_scale(g, gamma, inv_std))
    _close(dgamma, t_dgamma, "dgamma")
    _close(dbeta, t_dbeta, "dbeta")


@pytest.mark.parametrize("shape", [(2, 7, 3), (1, 4, 5, 6), (2, 3, 2, 2, 4)])
def test_instance_norm_matches_torch(shape):
    x, g, gamma, beta = _data(shape, seed=len(shape))
    fn = lambda t, w, b: F.instance_norm(t, weight=w, bias=b, eps=1e-3)  # noqa: E731
    inv_std = R.instance_norm_forward(x)[2]
    _check_layer(InstanceNormalization(), x, g, gamma, beta, fn, inv_std=inv_std)
    _check_layer(GroupNormalization(groups=-1), x, g, gamma, beta, fn, what="groups=-1",
                 inv_std=inv_std)


@pytest.mark.parametrize("shape", [(8, 5), (3, 4, 6), (1, 5, 5, 3), (2, 3, 2, 2, 4)])
def test_batch_norm_training_matches_torch_incl_running_stats(shape):
    x, g, gamma, beta = _data(shape, seed=3 * len(shape))
    c = shape[-1]
    layer = BatchNormalization()
    running_mean = torch.zeros(c, dtype=torch.float64)
    running_var = torch.ones(c, dtype=torch.float64)
    _check_layer(layer, x, g, gamma, beta,
                 lambda t, w, b: F.batch_norm(t, running_mean, running_var, w, b,
                                              training=True, momentum=0.01, eps=1e-3),
                 inv_std=1 / np.sqrt(R.batch_norm_train_forward(x)[2] + 1e-3))
    # _check_layer ran torch once, as the layer ran one training step
    p = _params(layer)
    _close(p["moving_mean"].value, running_mean, "moving_mean")
    x64 = torch.tensor(x, dtype=torch.float64).reshape(-1, c)
    biased_minus_unbiased = x64.var(dim=0, unbiased=False) - x64.var(dim=0, unbiased=True)
    _close(p["moving_variance"].value, running_var + 0.01 * biased_minus_unbiased,
           "moving_variance")


@pytest.mark.parametrize("shape", [(8, 5), (3, 4, 6), (1, 5, 5, 3), (2, 3, 2, 2, 4)])
def test_batch_norm_eval_matches_torch(shape):
    x, g, gamma, beta = _data(shape, seed=5 * len(shape))
    c = shape[-1]
    rng = np.random.default_rng(1)
    mm = rng.uniform(-2, 2, c).astype(np.float32)
    mv = rng.uniform(0.3, 4, c).astype(np.float32)
    layer = BatchNormalization(epsilon=1e-4)
    layer.build((None, *shape[1:]))
    _params(layer)["moving_mean"].assign(mm)
    _params(layer)["moving_variance"].assign(mv)
    rm, rv = torch.tensor(mm, dtype=torch.float64), torch.tensor(mv, dtype=torch.float64)
    _check_layer(layer, x, g, gamma, beta,
                 lambda t, w, b: F.batch_norm(t, rm, rv, w, b, training=False,
                                              momentum=0.01, eps=1e-4),
                 training=False)
    np.testing.assert_array_equal(_params(layer)["moving_mean"].value, mm)
    np.testing.assert_array_equal(_params(layer)["moving_variance"].value, mv)


LN_CASES = [((4, 9), -1), ((2, 5, 6), -1), ((2, 3, 4, 5), -1), ((2, 5, 6), (1, 2)),
            ((2, 3, 4, 5), (1, 2, 3)), ((1, 3, 4, 5), (-2, -1))]


@pytest.mark.parametrize("shape,axis", LN_CASES)
def test_layer_norm_matches_torch(shape, axis):
    axes = (axis,) if isinstance(axis, int) else axis
    norm_shape = tuple(shape[a] for a in axes)  # trailing axes: torch's normalized_shape
    x, g, gamma, beta = _data(shape, seed=len(shape) + len(axes), pshape=norm_shape)
    _check_layer(LayerNormalization(axis=axis), x, g, gamma, beta,
                 lambda t, w, b: F.layer_norm(t, norm_shape, w, b, 1e-3), channels_first=False,
                 inv_std=R.layer_norm_inv_std(x, axis))
