"""Adam: Keras 3 defaults, hand-computed steps, amsgrad, torch parity, errors."""

import math
import re

import numpy as np
import pytest

from tinynet.optimizers import Adam
from tests.optimizers.common import make_param, run_scalar, run_tinynet, run_torch

G = [1.0, 0.5, -1.0]  # gradients of steps 1, 2, 3; w starts at 1.0


def test_defaults_and_config():
    opt = Adam()
    assert (opt.learning_rate, opt.beta_1, opt.beta_2, opt.epsilon, opt.amsgrad, opt.name) == (
        0.001, 0.9, 0.999, 1e-7, False, "adam")
    cfg = opt.get_config()
    assert cfg == {"name": "adam", "learning_rate": 0.001, "weight_decay": None,
                   "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                   "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7, "amsgrad": False}
    assert Adam.from_config(cfg).get_config() == cfg


def test_steps_by_hand():
    # Keras 3: alpha = lr*sqrt(1-b2^t)/(1-b1^t); m += (g-m)(1-b1); v += (g^2-v)(1-b2);
    # w -= m*alpha/(sqrt(v)+eps), with lr=0.1, b1=0.9, b2=0.999, eps=1e-7.
    # t=1: alpha = 0.1*sqrt(0.001)/0.1 = 0.0316227766; m = 0.1; v = 0.001
    #      w1 = 1 - 0.1*0.0316227766/(0.0316227766+1e-7) = 0.9000003162
    # t=2: alpha = 0.1*sqrt(1-0.999^2)/(1-0.9^2) = 0.0235316725; m = 0.1+(0.5-0.1)*0.1 = 0.14
    #      v = 0.001+(0.25-0.001)*0.001 = 0.001249
    #      w2 = w1 - 0.14*alpha/(sqrt(v)+eps) = 0.8067826161
    # t=3: alpha = 0.0202010597; m = 0.14+(-1-0.14)*0.1 = 0.026; v = 0.002247751
    #      w3 = w2 - 0.026*alpha/(sqrt(v)+eps) = 0.7957043323
    w, m, v, expected = 1.0, 0.0, 0.0, []
    for t, g in enumerate(G, start=1):
        alpha = 0.1 * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        m += (g - m) * 0.1
        v += (g * g - v) * 0.001
        w -= m * alpha / (math.sqrt(v) + 1e-7)
        expected.append(w)
    np.testing.assert_allclose(expected, [0.9000003162, 0.8067826161, 0.7957043323], rtol=1e-9)
    np.testing.assert_allclose(run_scalar(Adam(0.1), G), expected, rtol=2e-6)


def test_amsgrad_keeps_the_max_velocity():
    # beta_2 = 0.5 so v shrinks: g = 1, 0.1 -> v1 = 0.5, v2 = 0.25 + 0.005 = 0.255
    # amsgrad divides step 2 by sqrt(max(0.5, 0.255)) instead of sqrt(0.255).
    lr, b1, b2, eps = 0.1, 0.9, 0.5, 1e-7
    w1 = 1.0 - 0.1 * (lr * math.sqrt(0.5) / 0.1) / (math.sqrt(0.5) + eps)
    alpha2 = lr * math.sqrt(1 - 0.25) / (1 - 0.81)
    m2 = 0.1 + (0.1 - 0.1) * 0.1
    w2_ams = w1 - m2 * alpha2 / (math.sqrt(0.5) + eps)
    w2_plain = w1 - m2 * alpha2 / (math.sqrt(0.255) + eps)
    got_ams = run_scalar(Adam(lr, beta_1=b1, beta_2=b2, amsgrad=True), [1.0, 0.1])
    got_plain = run_scalar(Adam(lr, beta_1=b1, beta_2=b2), [1.0, 0.1])
    np.testing.assert_allclose(got_ams, [w1, w2_ams], rtol=2e-6)
    np.testing.assert_allclose(got_plain, [w1, w2_plain], rtol=2e-6)


def test_count_params():
    p = make_param(np.zeros(10))
    p.grad = np.ones(10, np.float32)
    opt, ams = Adam(), Adam(amsgrad=True)
    assert opt.count_params() == 0
    opt.apply([p])
    ams.apply([p])
    assert opt.count_params() == 2 * 10 + 2
    assert ams.count_params() == 3 * 10 + 2


def test_torch_parity():
    torch = pytest.importorskip("torch")
    # torch: w -= lr/bc1 * m / (sqrt(v)/sqrt(bc2) + eps_torch); Keras's epsilon is
    # "epsilon hat" = eps_torch*sqrt(bc2). With gradients >> eps the two agree closely.
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal(23).astype(np.float32)
    grads = [rng.standard_normal(23).astype(np.float32) for _ in range(6)]
    ours = run_tinynet(Adam(0.01, epsilon=1e-8), w0, grads)
    ref = run_torch(lambda ps: torch.optim.Adam(ps, lr=0.01, eps=1e-8), w0, grads)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_torch_parity_amsgrad():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal(11).astype(np.float32)
    grads = [rng.standard_normal(11).astype(np.float32) * s for s in (2.0, 0.1, 0.1, 1.0)]
    ours = run_tinynet(Adam(0.01, beta_2=0.9, epsilon=1e-8, amsgrad=True), w0, grads)
    ref = run_torch(lambda ps: torch.optim.Adam(ps, lr=0.01, betas=(0.9, 0.9), eps=1e-8,
                                                amsgrad=True), w0, grads)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(beta_1=1.0), ValueError, "Adam: beta_1 must be a float in [0, 1), got 1.0"),
    (dict(beta_2=-0.5), ValueError, "Adam: beta_2 must be a float in [0, 1), got -0.5"),
    (dict(epsilon=-1), ValueError, "Adam: epsilon must be a non-negative float, got -1"),
    (dict(amsgrad=1), TypeError, "Adam: amsgrad must be a bool, got 1"),
    (dict(learning_rate=float("nan")), ValueError,
     "Adam: learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule, got nan"),
    (dict(weight_decay=-0.1), ValueError,
     "Adam: weight_decay must be None or a non-negative float, got -0.1"),
])
def test_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        Adam(**kwargs)
