"""Adamax: Keras 3 defaults, hand-computed steps, a float64 reference, serial/parallel and
thread determinism, saving, Keras 3.15.1 values, errors."""

import json
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.optimizers import Adamax, schedules
from tests.optimizers.common import (assert_follows_reference, contract_tests, keras_tests,
                                     make_param, params, run_scalar, train)

G = [1.0, 0.5, -1.0]  # gradients of steps 1, 2, 3; w starts at 1.0


def adamax_reference(w, grads, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                     weight_decay=None):
    """Keras's Adamax in float64: the weights after each step."""
    lr = learning_rate
    w, m, u, out = np.array(w, np.float64), 0.0, 0.0, []
    for t, g in enumerate(grads, start=1):
        g = np.asarray(g, np.float64)
        if weight_decay is not None:
            w = w - w * weight_decay * lr
        m = m + (g - m) * (1 - beta_1)
        u = np.maximum(beta_2 * u, np.abs(g))
        w = w - lr * m / ((1 - beta_1 ** t) * (u + epsilon))
        out.append(w)
    return out


def test_defaults_and_config():
    opt = Adamax()
    assert (opt.learning_rate, opt.beta_1, opt.beta_2, opt.epsilon, opt.name) == (
        0.001, 0.9, 0.999, 1e-7, "adamax")
    cfg = opt.get_config()
    assert cfg == {"name": "adamax", "learning_rate": 0.001, "weight_decay": None,
                   "clipnorm": None, "global_clipnorm": None, "clipvalue": None,
                   "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7}
    assert Adamax.from_config(json.loads(json.dumps(cfg))).get_config() == cfg
    assert type(tn.optimizers.get("adamax")) is Adamax
    assert type(tn.optimizers.get("Adamax")) is Adamax


def test_steps_by_hand():
    # Keras 3, lr=0.1, b1=0.9, b2=0.999, eps=1e-7: m += (g-m)*0.1; u = max(0.999*u, |g|);
    # w -= lr*m / ((1 - 0.9^t) * (u + eps))
    # t=1: m = 0.1,   u = 1      w1 = 1  - 0.01/(0.1*1.0000001)          = 0.9000000100
    # t=2: m = 0.14,  u = 0.999  w2 = w1 - 0.014/(0.19*0.9990001)        = 0.8262420489
    # t=3: m = 0.026, u = 1      w3 = w2 - 0.0026/(0.271*1.0000001)      = 0.8166479539
    expected = [e[0] for e in adamax_reference([1.0], [[g] for g in G], learning_rate=0.1)]
    np.testing.assert_allclose(expected, [0.9000000100, 0.8262420489, 0.8166479539],
                               rtol=1e-9)
    np.testing.assert_allclose(run_scalar(Adamax(0.1), G), expected, rtol=2e-6)


def test_norm_slot_is_the_decayed_max():
    # u = max(beta_2 * u, |g|): a large gradient is remembered, decaying by beta_2 a step
    opt = Adamax(0.1, beta_2=0.5)
    p = make_param([0.0, 0.0])
    norms = []
    for g in ([4.0, -1.0], [1.0, -3.0], [0.5, 1.0]):
        p.grad = np.array(g, np.float32)
        opt.apply([p])
        norms.append(opt.get_state()["dense/kernel/norm"].tolist())
    assert norms == [[4.0, 1.0], [2.0, 3.0], [1.0, 1.5]]


@pytest.mark.parametrize("kwargs", [dict(learning_rate=0.01),
                                    dict(learning_rate=0.05, beta_1=0.5, beta_2=1.0,
                                         epsilon=1e-3),
                                    dict(learning_rate=0.01, weight_decay=0.2)])
def test_float64_reference_over_eight_steps(kwargs):
    assert_follows_reference(Adamax, kwargs, adamax_reference, seed=5, size=29)


def test_state_and_count_params():
    ps = params(((3, 4), (2,)))
    opt = Adamax()
    train(opt, ps, 2)
    assert sorted(opt.get_state()) == ["iterations", "layer0/kernel/momentum",
                                       "layer0/kernel/norm", "layer1/bias/momentum",
                                       "layer1/bias/norm"]
    assert opt.count_params() == 2 * 14 + 2


def test_nan_gradient_poisons_the_norm_as_keras():
    # torch.maximum (Keras on PyTorch) propagates NaN: the norm slot becomes NaN too
    opt = Adamax(0.1)
    p = make_param([1.0, 1.0])
    p.grad = np.array([np.nan, 1.0], np.float32)
    opt.apply([p])
    assert np.isnan(p.value[0]) and np.isnan(opt.get_state()["dense/kernel/norm"][0])
    assert np.isfinite(p.value[1])


MAKERS = {
    "plain": lambda: Adamax(0.01),
    "clipnorm-decay": lambda: Adamax(0.01, clipnorm=0.5, weight_decay=0.1),
    "clipvalue": lambda: Adamax(0.01, beta_2=0.5, clipvalue=0.3),
    "schedule-global-clipnorm": lambda: Adamax(
        schedules.CosineDecay(0.01, decay_steps=5), global_clipnorm=2.0),
}


(test_serial_parallel_and_threads_bitwise, test_state_round_trip_continues_bitwise,
 test_save_load_continue_bitwise) = contract_tests(
    MAKERS, resume=["plain", "schedule-global-clipnorm"])
test_matches_keras, test_keras_cases_present = keras_tests(
    ["Adamax"], ["adamax", "adamax_betas", "adamax_schedule", "adamax_weight_decay"])


@pytest.mark.parametrize("kwargs, exc, msg", [
    (dict(beta_1=1.0), ValueError, "Adamax: beta_1 must be a float in [0, 1), got 1.0"),
    (dict(beta_1=None), TypeError, "Adamax: beta_1 must be a float in [0, 1), got None"),
    (dict(beta_2=1.5), ValueError, "Adamax: beta_2 must be a float in [0, 1], got 1.5"),
    (dict(beta_2=-0.1), ValueError, "Adamax: beta_2 must be a float in [0, 1], got -0.1"),
    (dict(epsilon=-1e-7), ValueError, "Adamax: epsilon must be a non-negative float, got -1e-07"),
    (dict(learning_rate="fast"), TypeError,
     "Adamax: learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule, got 'fast'"),
    (dict(clipnorm=0.0), ValueError, "Adamax: clipnorm must be None or a positive float, got 0.0"),
])
def test_bad_arguments(kwargs, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        Adamax(**kwargs)
