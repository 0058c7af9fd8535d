"""AdamW: decoupled weight decay on top of Adam, exclusion, torch parity."""

import math
import re

import numpy as np
import pytest

from tinynet.optimizers import Adam, AdamW
from tests.optimizers.common import make_param, run_scalar, run_tinynet, run_torch


def test_defaults_and_config():
    opt = AdamW()
    assert (opt.learning_rate, opt.weight_decay, opt.beta_1, opt.beta_2, opt.epsilon,
            opt.amsgrad, opt.name) == (0.001, 0.004, 0.9, 0.999, 1e-7, False, "adamw")
    cfg = opt.get_config()
    assert cfg["weight_decay"] == 0.004 and cfg["name"] == "adamw"
    assert AdamW.from_config(cfg).get_config() == cfg


def test_steps_by_hand():
    # lr=0.1, wd=0.5: each step first w -= w*0.5*0.1 (w *= 0.95), then the Adam step.
    # t=1: w = 1*0.95 = 0.95; Adam step 0.1*0.0316227766/(0.0316227766+1e-7) = 0.0999996838
    #      w1 = 0.8500003162
    # t=2: w = w1*0.95; Adam step 0.14*0.0235316725/(sqrt(0.001249)+1e-7)
    w, m, v, expected = 1.0, 0.0, 0.0, []
    for t, g in enumerate([1.0, 0.5], start=1):
        w -= w * 0.5 * 0.1
        alpha = 0.1 * math.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        m += (g - m) * 0.1
        v += (g * g - v) * 0.001
        w -= m * alpha / (math.sqrt(v) + 1e-7)
        expected.append(w)
    np.testing.assert_allclose(expected[0], 0.8500003162, rtol=1e-9)
    np.testing.assert_allclose(run_scalar(AdamW(0.1, weight_decay=0.5), [1.0, 0.5]), expected,
                               rtol=2e-6)


def test_excluded_parameter_matches_adam_bitwise():
    kernel, bias = make_param([1.0, -2.0], "kernel"), make_param([0.5, 0.25], "bias")
    ref_bias = make_param([0.5, 0.25], "bias")
    opt, ref = AdamW(0.1, weight_decay=0.3), Adam(0.1)
    opt.exclude_from_weight_decay(var_names=["bias"])
    for g in ([1.0, 2.0], [-0.5, 0.5]):
        for p in (kernel, bias, ref_bias):
            p.grad = np.array(g, np.float32)
        opt.apply([kernel, bias])
        ref.apply([ref_bias])
    np.testing.assert_array_equal(bias.value, ref_bias.value)
    undecayed = run_tinynet(Adam(0.1), np.array([1.0, -2.0], np.float32),
                            [np.array([1.0, 2.0], np.float32), np.array([-0.5, 0.5], np.float32)])
    assert not np.array_equal(kernel.value, undecayed)   # the kernel did decay


def test_torch_parity():
    torch = pytest.importorskip("torch")
    # torch AdamW: w *= 1 - lr*wd, then Adam (epsilon placement as in test_adam).
    rng = np.random.default_rng(5)
    w0 = rng.standard_normal(19).astype(np.float32)
    grads = [rng.standard_normal(19).astype(np.float32) for _ in range(5)]
    ours = run_tinynet(AdamW(0.01, weight_decay=0.1, epsilon=1e-8), w0, grads)
    ref = run_torch(lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, eps=1e-8),
                    w0, grads)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_weight_decay_none_is_an_error():
    with pytest.raises(ValueError, match=re.escape(
            "AdamW: weight_decay must be a non-negative float, got None")):
        AdamW(weight_decay=None)
    with pytest.raises(ValueError, match=re.escape(
            "AdamW: weight_decay must be None or a non-negative float, got -1.0")):
        AdamW(weight_decay=-1.0)
