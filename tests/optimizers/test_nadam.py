"""Nadam: Keras 3 defaults, hand-computed steps, a float64 reference, the u_product state,
serial/parallel and thread determinism, saving, Keras 3.15.1 values, errors."""

import json
import math
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.optimizers import Nadam, schedules
from tests.optimizers.common import (assert_follows_reference, contract_tests, keras_tests,
                                     params, run_scalar, train)

G = [1.0, 0.5, -1.0]  # gradients of steps 1, 2, 3; w starts at 1.0


def nadam_reference(w, grads, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                    weight_decay=None):
    """Keras's Nadam in float64 (u_product kept in float64 too): the weights after each step."""
    lr = learning_rate
    w, m, v, u_product, out = np.array(w, np.float64), 0.0, 0.0, 1.0, []
    for t, g in enumerate(grads, start=1):
        g = np.asarray(g, np.float64)
        if weight_decay is not None:
            w = w - w * weight_decay * lr
        u_t = beta_1 * (1 - 0.5 * 0.96 ** t)
        u_next = beta_1 * (1 - 0.5 * 0.96 ** (t + 1))
        u_product *= u_t
        m = m + (g - m) * (1 - beta_1)
        v = v + (g * g - v) * (1 - beta_2)
        m_hat = u_next * m / (1 - u_product * u_next) + (1 - u_t) * g / (1 - u_product)
        v_hat = v / (1 - beta_2 ** t)
        w = w - m_hat * lr / (np.sqrt(v_hat) + epsilon)
        out.append(w)
    return out


def test_defaults_and_config():
    opt = Nadam()
    assert (opt.learning_rate, opt.beta_1, opt.beta_2, opt.epsilon, opt.name) == (
        0.001, 0.9, 0.999, 1e-7, "nadam")
    cfg = opt.get_config()
    assert cfg == {"name": "nadam", "learning_rate": 0.001, "weight_decay": None,
                   "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                   "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
    assert Nadam.from_config(json.loads(json.dumps(cfg))).get_config() == cfg
    assert type(tn.optimizers.get("nadam")) is Nadam
    assert type(tn.optimizers.get("Nadam")) is Nadam
    assert tn.optimizers.get(tn.optimizers.serialize(Nadam(0.5))).get_config()[
        "learning_rate"] == 0.5


def test_steps_by_hand():
    # Keras 3, lr=0.1, b1=0.9, b2=0.999, eps=1e-7; u(s) = 0.9*(1 - 0.5*0.96^s):
    # t=1: u1 = 0.468, u2 = 0.48528, u_product = 0.468, u_product*u2 = 0.22711104
    #      m = 0.1, v = 0.001, v_hat = 0.001/(1-0.999) = 1
    #      m_hat = 0.48528*0.1/(1-0.22711104) + (1-0.468)*1/(1-0.468) = 1.0627878033
    #      w1 = 1 - 0.1*1.0627878033/(1+1e-7) = 0.8937212303
    expected = nadam_reference([1.0], [[g] for g in G], learning_rate=0.1)
    np.testing.assert_allclose([e[0] for e in expected],
                               [0.8937212303, 0.8415630588, 0.9048296777], rtol=1e-9)
    np.testing.assert_allclose(run_scalar(Nadam(0.1), G), [e[0] for e in expected], rtol=2e-6)


@pytest.mark.parametrize("kwargs", [dict(learning_rate=0.01),
                                    dict(learning_rate=0.05, beta_1=0.5, beta_2=0.75,
                                         epsilon=1e-3),
                                    dict(learning_rate=0.01, weight_decay=0.2)])
def test_float64_reference_over_eight_steps(kwargs):
    assert_follows_reference(Nadam, kwargs, nadam_reference, seed=4)


def test_u_product_is_optimizer_state():
    # Keras keeps u(1)*...*u(t) in a float32 variable: one more scalar than Adam's state
    ps = params(((3, 4), (2,)))
    opt = Nadam()
    assert opt.count_params() == 0
    state = opt.get_state()
    assert sorted(state) == ["iterations", "u_product"] and state["u_product"] == 1.0
    train(opt, ps, 3)
    expected = np.float32(1.0)
    for t in (1, 2, 3):
        expected = np.float32(float(expected) * 0.9 * (1 - 0.5 * 0.96 ** t))
    state = opt.get_state()
    assert state["u_product"].dtype == np.float32 and state["u_product"].shape == ()
    assert state["u_product"] == expected
    assert sorted(state) == ["iterations", "layer0/kernel/momentum", "layer0/kernel/velocity",
                             "layer1/bias/momentum", "layer1/bias/velocity", "u_product"]
    assert opt.count_params() == 2 * 14 + 3   # slots, iterations, learning_rate, u_product


def test_set_state_checks_u_product():
    ps = params()
    opt = Nadam()
    train(opt, ps, 2)
    state = opt.get_state()
    fresh = Nadam()
    bad = dict(state)
    del bad["u_product"]
    with pytest.raises(ValueError, match=re.escape(
            "Nadam: optimizer state has no entry 'u_product'")):
        fresh.set_state(bad, ps)
    with pytest.raises(ValueError, match=re.escape(
            "Nadam: optimizer state 'u_product' must be one float, got array([1., 2.]")):
        fresh.set_state(dict(state, u_product=np.array([1.0, 2.0])), ps)
    assert fresh.iterations == 0 and not fresh.built
    assert fresh.get_state()["u_product"] == 1.0
    # an unbuilt state without it starts the product afresh; Adam has no such entry
    fresh.set_state({"iterations": np.int64(0)}, ps)
    assert fresh.get_state()["u_product"] == 1.0
    with pytest.raises(ValueError, match=re.escape(
            "Adam: optimizer state entries match no parameter: ['u_product']")):
        tn.optimizers.Adam().set_state(state, ps)


MAKERS = {
    "plain": lambda: Nadam(0.01),
    "clipnorm-decay": lambda: Nadam(0.01, clipnorm=0.5, weight_decay=0.1),
    "clipvalue": lambda: Nadam(0.01, beta_1=0.5, clipvalue=0.3),
    "schedule-global-clipnorm": lambda: Nadam(
        schedules.ExponentialDecay(0.01, decay_steps=2, decay_rate=0.5), global_clipnorm=2.0),
}


(test_serial_parallel_and_threads_bitwise, test_state_round_trip_continues_bitwise,
 test_save_load_continue_bitwise) = contract_tests(
    MAKERS, resume=["plain", "schedule-global-clipnorm"])
test_matches_keras, test_keras_cases_present = keras_tests(
    ["Nadam"], ["nadam", "nadam_betas", "nadam_schedule", "nadam_weight_decay"])


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(beta_1=1.0), ValueError, "Nadam: beta_1 must be a float in [0, 1), got 1.0"),
    (dict(beta_1="0.9"), TypeError, "Nadam: beta_1 must be a float in [0, 1), got '0.9'"),
    (dict(beta_2=-0.5), ValueError, "Nadam: beta_2 must be a float in [0, 1), got -0.5"),
    (dict(beta_2=1.0), ValueError, "Nadam: beta_2 must be a float in [0, 1), got 1.0"),
    (dict(epsilon=-1), ValueError, "Nadam: epsilon must be a non-negative float, got -1"),
    (dict(epsilon=math.nan), ValueError, "Nadam: epsilon must be a non-negative float, got nan"),
    (dict(learning_rate=-0.1), ValueError,
     "Nadam: learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule, got -0.1"),
    (dict(weight_decay=-0.1), ValueError,
     "Nadam: weight_decay must be None or a non-negative float, got -0.1"),
    (dict(amsgrad=True), TypeError, "unexpected keyword argument 'amsgrad'"),
])
def test_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        Nadam(**kwargs)
