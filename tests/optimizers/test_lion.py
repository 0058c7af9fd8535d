"""Lion: Keras 3 defaults, hand-computed steps, a float64 reference, serial/parallel and
thread determinism, saving, Keras 3.15.1 values, errors."""

import json
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.optimizers import Lion, schedules
from tests.optimizers.common import (assert_follows_reference, contract_tests, keras_tests,
                                     make_param, params, run_scalar, train)

G = [1.0, 0.5, -1.0]  # gradients of steps 1, 2, 3; w starts at 1.0


def lion_reference(w, grads, learning_rate=0.001, beta_1=0.9, beta_2=0.99, weight_decay=None,
                   momentum=False):
    """Keras's Lion in float64: the weights (or the momentum) after each step."""
    lr = learning_rate
    w, m, out = np.array(w, np.float64), 0.0, []
    for g in grads:
        g = np.asarray(g, np.float64)
        if weight_decay is not None:
            w = w - w * weight_decay * lr
        w = w - lr * np.sign(m * beta_1 + g * (1 - beta_1))
        m = m * beta_2 + g * (1 - beta_2)
        out.append(m if momentum else w)
    return out


def test_defaults_and_config():
    opt = Lion()
    assert (opt.learning_rate, opt.beta_1, opt.beta_2, opt.name) == (0.001, 0.9, 0.99, "lion")
    assert not hasattr(opt, "epsilon")
    cfg = opt.get_config()
    assert cfg == {"name": "lion", "learning_rate": 0.001, "weight_decay": None,
                   "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                   "beta_1": 0.9, "beta_2": 0.99}
    assert Lion.from_config(json.loads(json.dumps(cfg))).get_config() == cfg
    assert type(tn.optimizers.get("lion")) is Lion
    assert type(tn.optimizers.get("Lion")) is Lion


def test_steps_by_hand():
    # Keras 3, lr=0.1, b1=0.9, b2=0.99: w -= lr*sign(m*b1 + g*(1-b1)); m = m*b2 + g*(1-b2)
    # t=1: c = 0.1                      w1 = 0.9   m = 0.01
    # t=2: c = 0.009 + 0.05 = 0.059     w2 = 0.8   m = 0.0099 + 0.005 = 0.0149
    # t=3: c = 0.01341 - 0.1 < 0        w3 = 0.9   m = 0.014751 - 0.01 = 0.004751
    lr = np.float32(0.1)   # each step moves w by exactly lr (float32 arithmetic)
    w1 = np.float32(1.0) - lr
    assert run_scalar(Lion(0.1), G) == [w1, w1 - lr, w1 - lr + lr]
    opt = Lion(0.1)
    run_scalar(opt, G)
    np.testing.assert_allclose(opt.get_state()["dense/kernel/momentum"], [0.004751], rtol=1e-6)


def test_momentum_can_outvote_the_gradient():
    # g = 1, 1, -0.01: at t=3 c = 0.0199*0.9 - 0.001 = 0.01691 > 0, so w still decreases
    lr = np.float32(0.1)
    w1 = np.float32(1.0) - lr
    assert run_scalar(Lion(0.1), [1.0, 1.0, -0.01]) == [w1, w1 - lr, w1 - lr - lr]


def test_zero_direction_and_nan():
    # sign(0) = 0: no step. A NaN direction makes the weight NaN (NumPy's sign; Keras on
    # PyTorch would take sign(nan) = 0 and keep the weight, see docs/optimizers.md)
    p = make_param([1.0, 1.0])
    p.grad = np.array([0.0, np.nan], np.float32)
    opt = Lion(0.1)
    opt.apply([p])
    assert p.value[0] == 1.0 and np.isnan(p.value[1])


@pytest.mark.parametrize("kwargs", [dict(learning_rate=0.01),
                                    dict(learning_rate=0.05, beta_1=1.0, beta_2=0.0),
                                    dict(learning_rate=0.01, beta_1=0.3, weight_decay=0.2)])
def test_float64_reference_over_eight_steps(kwargs):
    opt, grads = assert_follows_reference(Lion, kwargs, lion_reference, seed=6, size=37)
    m_ref = lion_reference(np.zeros(37), grads, **kwargs, momentum=True)[-1]
    np.testing.assert_allclose(opt.get_state()["dense/kernel/momentum"], m_ref, rtol=2e-6,
                               atol=1e-8)


def test_state_and_count_params():
    ps = params(((3, 4), (2,)))
    opt = Lion()
    train(opt, ps, 2)
    assert sorted(opt.get_state()) == ["iterations", "layer0/kernel/momentum",
                                       "layer1/bias/momentum"]
    assert opt.count_params() == 14 + 2


MAKERS = {
    "plain": lambda: Lion(0.01),
    "clipnorm-decay": lambda: Lion(0.01, clipnorm=0.5, weight_decay=0.1),
    "clipvalue": lambda: Lion(0.01, beta_1=0.5, beta_2=0.9, clipvalue=0.3),
    "schedule-global-clipnorm": lambda: Lion(
        schedules.ExponentialDecay(0.01, decay_steps=2, decay_rate=0.5), global_clipnorm=2.0),
}


(test_serial_parallel_and_threads_bitwise, test_state_round_trip_continues_bitwise,
 test_save_load_continue_bitwise) = contract_tests(
    MAKERS, resume=["plain", "schedule-global-clipnorm"])
test_matches_keras, test_keras_cases_present = keras_tests(
    ["Lion"], ["lion", "lion_betas", "lion_schedule", "lion_weight_decay"])


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(beta_1=0.0), ValueError, "Lion: beta_1 must be a float in (0, 1], got 0.0"),
    (dict(beta_1=1.5), ValueError, "Lion: beta_1 must be a float in (0, 1], got 1.5"),
    (dict(beta_1="high"), TypeError, "Lion: beta_1 must be a float in (0, 1], got 'high'"),
    (dict(beta_2=1.01), ValueError, "Lion: beta_2 must be a float in [0, 1], got 1.01"),
    (dict(beta_2=float("inf")), ValueError, "Lion: beta_2 must be a float in [0, 1], got inf"),
    (dict(learning_rate=-1), ValueError,
     "Lion: learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule, got -1"),
    (dict(epsilon=1e-7), TypeError, "unexpected keyword argument 'epsilon'"),
])
def test_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        Lion(**kwargs)
