"""SGD: Keras 3 defaults, hand-computed steps, torch parity, errors."""

import re

import numpy as np
import pytest

from tinynet.optimizers import SGD
from tests.optimizers.common import make_param, run_scalar, run_tinynet, run_torch

G = [1.0, 0.5, -1.0]  # gradients of steps 1, 2, 3; w starts at 1.0


def test_defaults_and_config():
    opt = SGD()
    assert (opt.learning_rate, opt.momentum, opt.nesterov, opt.name) == (0.01, 0.0, False, "SGD")
    assert opt.weight_decay is None and opt.clipnorm is None and opt.global_clipnorm is None
    cfg = opt.get_config()
    assert cfg == {"name": "SGD", "learning_rate": 0.01, "weight_decay": None, "clipnorm": None,
                   "global_clipnorm": None, "clipvalue": None, "momentum": 0.0,
                   "nesterov": False}
    again = SGD.from_config(cfg)
    assert again.get_config() == cfg


def test_plain_steps_by_hand():
    # w -= lr * g with lr = 0.1
    # w1 = 1.0  - 0.1*1.0  = 0.9
    # w2 = 0.9  - 0.1*0.5  = 0.85
    # w3 = 0.85 - 0.1*-1.0 = 0.95
    np.testing.assert_allclose(run_scalar(SGD(0.1), G), [0.9, 0.85, 0.95], rtol=1e-6)


def test_momentum_steps_by_hand():
    # m = 0.9*m - 0.1*g; w += m
    # m1 = -0.1                       w1 = 0.9
    # m2 = 0.9*-0.1 - 0.05 = -0.14    w2 = 0.76
    # m3 = 0.9*-0.14 + 0.1 = -0.026   w3 = 0.734
    np.testing.assert_allclose(run_scalar(SGD(0.1, momentum=0.9), G), [0.9, 0.76, 0.734],
                               rtol=1e-6)


def test_nesterov_steps_by_hand():
    # m = 0.9*m - 0.1*g; w += 0.9*m - 0.1*g
    # m1 = -0.1     w1 = 1    + (-0.09  - 0.1 ) = 0.81
    # m2 = -0.14    w2 = 0.81 + (-0.126 - 0.05) = 0.634
    # m3 = -0.026   w3 = 0.634 + (-0.0234 + 0.1) = 0.7106
    np.testing.assert_allclose(run_scalar(SGD(0.1, momentum=0.9, nesterov=True), G),
                               [0.81, 0.634, 0.7106], rtol=1e-6)


def test_weight_decay_steps_by_hand():
    # decoupled, before the step: w -= w*0.5*0.1 (factor 0.95), then w -= 0.1*g
    # w1 = 1.0*0.95    - 0.1  = 0.85
    # w2 = 0.85*0.95   - 0.05 = 0.7575
    # w3 = 0.7575*0.95 + 0.1  = 0.819625
    np.testing.assert_allclose(run_scalar(SGD(0.1, weight_decay=0.5), G),
                               [0.85, 0.7575, 0.819625], rtol=1e-6)


def test_count_params():
    p = make_param(np.zeros((3, 4)))
    p.grad = np.ones((3, 4), np.float32)
    plain, mom = SGD(), SGD(momentum=0.5)
    assert plain.count_params() == 0 and mom.count_params() == 0
    plain.apply([p])
    mom.apply([p])
    assert plain.count_params() == 2            # iterations + learning_rate
    assert mom.count_params() == 12 + 2         # one momentum slot per weight


@pytest.mark.parametrize("nesterov", [False, True])
def test_torch_parity_momentum(nesterov):
    torch = pytest.importorskip("torch")
    # torch: b = mu*b + g; w -= lr*b. Keras: m = mu*m - lr*g; w += m.
    # With a constant lr, m == -lr*b, so both follow the same trajectory.
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(17).astype(np.float32)
    grads = [rng.standard_normal(17).astype(np.float32) for _ in range(5)]
    ours = run_tinynet(SGD(0.05, momentum=0.8, nesterov=nesterov), w0, grads)
    ref = run_torch(lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.8, nesterov=nesterov),
                    w0, grads)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_torch_parity_plain():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal(9).astype(np.float32)
    grads = [rng.standard_normal(9).astype(np.float32) for _ in range(3)]
    ours = run_tinynet(SGD(0.1), w0, grads)
    ref = run_torch(lambda ps: torch.optim.SGD(ps, lr=0.1), w0, grads)
    # torch folds -lr into one fused multiply-add; agreement is to float32 rounding
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(momentum=1.5), ValueError, "SGD: momentum must be a float in [0, 1], got 1.5"),
    (dict(momentum=-0.1), ValueError, "SGD: momentum must be a float in [0, 1], got -0.1"),
    (dict(momentum="high"), TypeError, "SGD: momentum must be a float in [0, 1], got 'high'"),
    (dict(nesterov="yes"), TypeError, "SGD: nesterov must be a bool, got 'yes'"),
    (dict(learning_rate=-0.1), ValueError,
     "SGD: learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule, got -0.1"),
    (dict(learning_rate="fast"), TypeError,
     "SGD: learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule, got 'fast'"),
])
def test_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        SGD(**kwargs)
