"""RMSprop: Keras 3 defaults, hand-computed steps (plain, momentum, centered), torch parity."""

import math
import re

import numpy as np
import pytest

from tinynet.optimizers import RMSprop
from tests.optimizers.common import make_param, run_scalar, run_tinynet, run_torch

G = [1.0, 0.5, -1.0]


def test_defaults_and_config():
    opt = RMSprop()
    assert (opt.learning_rate, opt.rho, opt.momentum, opt.epsilon, opt.centered, opt.name) == (
        0.001, 0.9, 0.0, 1e-7, False, "rmsprop")
    cfg = opt.get_config()
    assert cfg == {"name": "rmsprop", "learning_rate": 0.001, "weight_decay": None,
                   "clipnorm": None, "global_clipnorm": None, "clipvalue": None, "rho": 0.9,
                   "momentum": 0.0, "epsilon": 1e-7, "centered": False}
    assert RMSprop.from_config(cfg).get_config() == cfg


def test_plain_steps_by_hand():
    # v = 0.9*v + 0.1*g^2; w -= 0.01*g/sqrt(v + 1e-7)
    # v1 = 0.1     w1 = 1 - 0.01/sqrt(0.1000001)         = 0.9683772392
    # v2 = 0.115   w2 = w1 - 0.005/sqrt(0.1150001)       = 0.9536330500
    # v3 = 0.2035  w3 = w2 + 0.01/sqrt(0.2035001)        = 0.9758005995
    np.testing.assert_allclose(run_scalar(RMSprop(0.01), G),
                               [0.9683772392, 0.9536330500, 0.9758005995], rtol=1e-6)


def test_momentum_steps_by_hand():
    # inc = 0.01*g/sqrt(v+eps); m = 0.5*m + inc; w -= m
    incs = [0.01 * 1.0 / math.sqrt(0.1 + 1e-7), 0.01 * 0.5 / math.sqrt(0.115 + 1e-7)]
    m1 = incs[0]
    m2 = 0.5 * m1 + incs[1]
    np.testing.assert_allclose(run_scalar(RMSprop(0.01, momentum=0.5), [1.0, 0.5]),
                               [1.0 - m1, 1.0 - m1 - m2], rtol=1e-6)


def test_centered_steps_by_hand():
    # a = 0.9*a + 0.1*g; denom = v - a^2 + eps
    # step 1: v = 0.1, a = 0.1, denom = 0.1 - 0.01 + 1e-7 = 0.0900001
    # step 2: v = 0.115, a = 0.09 + 0.05 = 0.14, denom = 0.115 - 0.0196 + 1e-7
    w1 = 1.0 - 0.01 * 1.0 / math.sqrt(0.0900001)
    w2 = w1 - 0.01 * 0.5 / math.sqrt(0.115 - 0.0196 + 1e-7)
    np.testing.assert_allclose(run_scalar(RMSprop(0.01, centered=True), [1.0, 0.5]), [w1, w2],
                               rtol=1e-6)


def test_count_params():
    p = make_param(np.zeros(6))
    p.grad = np.ones(6, np.float32)
    opts = [RMSprop(), RMSprop(momentum=0.9), RMSprop(momentum=0.9, centered=True)]
    for opt in opts:
        opt.apply([p])
    assert [o.count_params() for o in opts] == [6 + 2, 12 + 2, 18 + 2]


@pytest.mark.parametrize("momentum, centered", [(0.0, False), (0.7, False), (0.0, True),
                                                (0.7, True)])
def test_torch_parity(momentum, centered):
    torch = pytest.importorskip("torch")
    # torch adds eps outside the sqrt, Keras inside: with eps=0 the rules coincide
    # (torch alpha = Keras rho; torch momentum buffer * lr = Keras momentum slot).
    rng = np.random.default_rng(7)
    w0 = rng.standard_normal(13).astype(np.float32)
    grads = [rng.standard_normal(13).astype(np.float32) for _ in range(5)]
    ours = run_tinynet(RMSprop(0.01, rho=0.8, momentum=momentum, epsilon=0.0,
                               centered=centered), w0, grads)
    ref = run_torch(lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.8, eps=0.0,
                                                   momentum=momentum, centered=centered),
                    w0, grads)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(rho=1.0), ValueError, "RMSprop: rho must be a float in [0, 1), got 1.0"),
    (dict(momentum=2.0), ValueError, "RMSprop: momentum must be a float in [0, 1], got 2.0"),
    (dict(epsilon=-1e-7), ValueError, "RMSprop: epsilon must be a non-negative float, got -1e-07"),
    (dict(centered="no"), TypeError, "RMSprop: centered must be a bool, got 'no'"),
])
def test_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        RMSprop(**kwargs)
