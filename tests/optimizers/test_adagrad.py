"""Adagrad: Keras 3 defaults, hand-computed steps, torch parity, errors."""

import re

import numpy as np
import pytest

from tinynet.optimizers import Adagrad
from tests.optimizers.common import make_param, run_scalar, run_tinynet, run_torch


def test_defaults_and_config():
    opt = Adagrad()
    assert (opt.learning_rate, opt.initial_accumulator_value, opt.epsilon, opt.name) == (
        0.001, 0.1, 1e-7, "adagrad")
    cfg = opt.get_config()
    assert cfg == {"name": "adagrad", "learning_rate": 0.001, "weight_decay": None,
                   "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                   "initial_accumulator_value": 0.1, "epsilon": 1e-7}
    assert Adagrad.from_config(cfg).get_config() == cfg


def test_steps_by_hand():
    # acc starts at 0.1; acc += g^2; w -= 0.1*g/sqrt(acc + 1e-7)
    # acc1 = 1.1   w1 = 1 - 0.1/sqrt(1.1000001)          = 0.9046537454
    # acc2 = 1.35  w2 = w1 - 0.05/sqrt(1.3500001)        = 0.8616205987
    # acc3 = 2.35  w3 = w2 + 0.1/sqrt(2.3500001)         = 0.9268534046
    np.testing.assert_allclose(run_scalar(Adagrad(0.1), [1.0, 0.5, -1.0]),
                               [0.9046537454, 0.8616205987, 0.9268534046], rtol=1e-6)


def test_initial_accumulator_value_fills_the_slot():
    p = make_param(np.zeros((2, 3)))
    p.grad = np.zeros((2, 3), np.float32)
    opt = Adagrad(initial_accumulator_value=0.25)
    opt.apply([p])
    state = opt.get_state()
    np.testing.assert_array_equal(state["dense/kernel/accumulator"], np.full((2, 3), 0.25))
    assert opt.count_params() == 6 + 2


def test_torch_parity():
    torch = pytest.importorskip("torch")
    # torch adds eps outside the sqrt, Keras inside: with eps=0 the rules coincide.
    rng = np.random.default_rng(11)
    w0 = rng.standard_normal(15).astype(np.float32)
    grads = [rng.standard_normal(15).astype(np.float32) for _ in range(5)]
    ours = run_tinynet(Adagrad(0.05, initial_accumulator_value=0.1, epsilon=0.0), w0, grads)
    ref = run_torch(lambda ps: torch.optim.Adagrad(ps, lr=0.05, initial_accumulator_value=0.1,
                                                   eps=0.0), w0, grads)
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(initial_accumulator_value=-0.1), ValueError,
     "Adagrad: initial_accumulator_value must be a non-negative float, got -0.1"),
    (dict(epsilon="small"), TypeError,
     "Adagrad: epsilon must be a non-negative float, got 'small'"),
    (dict(clipnorm=0.0), ValueError, "Adagrad: clipnorm must be None or a positive float, got 0.0"),
])
def test_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        Adagrad(**kwargs)
