"""AMSGrad (``Adam(amsgrad=True)``, ``AdamW(amsgrad=True)``): hand-computed steps, a float64
reference, the velocity_hat slot, serial/parallel and thread determinism, saving, Keras
3.15.1 values, errors."""

import math
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.optimizers import Adam, AdamW, schedules
from tests.optimizers.common import (assert_follows_reference, contract_tests, keras_tests,
                                     make_param, params, run_scalar, train)



def amsgrad_reference(w, grads, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                      weight_decay=None):
    """Keras's Adam with amsgrad=True in float64: the weights after each step."""
    lr = learning_rate
    w, m, v, v_hat, out = np.array(w, np.float64), 0.0, 0.0, 0.0, []
    for t, g in enumerate(grads, start=1):
        g = np.asarray(g, np.float64)
        if weight_decay is not None:
            w = w - w * weight_decay * lr
        alpha = lr * math.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
        m = m + (g - m) * (1 - beta_1)
        v = v + (g * g - v) * (1 - beta_2)
        v_hat = np.maximum(v_hat, v)
        w = w - m * alpha / (np.sqrt(v_hat) + epsilon)
        out.append(w)
    return out


def test_defaults_and_config():
    for cls in (Adam, AdamW):
        assert cls().amsgrad is False
        opt = cls(amsgrad=True)
        cfg = opt.get_config()
        assert cfg["amsgrad"] is True
        assert cls.from_config(cfg).amsgrad is True
        assert tn.optimizers.get(tn.optimizers.serialize(opt)).amsgrad is True


def test_adamw_steps_by_hand():
    # lr=0.1, weight_decay=0.5, b1=0.9, b2=0.5 (v shrinks), g = 1, 0.1:
    # t=1: w = 1*0.95 = 0.95; m = 0.1; v = v_hat = 0.5; alpha = 0.1*sqrt(0.5)/0.1
    #      w1 = 0.95 - 0.1*alpha/(sqrt(0.5) + 1e-7) = 0.8500000141
    # t=2: w = w1*0.95; m = 0.1; v = 0.5 + (0.01 - 0.5)*0.5 = 0.255; v_hat = max(0.5, 0.255)
    #      alpha = 0.1*sqrt(0.75)/0.19 = 0.4558028441
    #      w2 = w1*0.95 - 0.1*alpha/(sqrt(0.5) + 1e-7) = 0.7430397662
    #      (without AMSGrad the step divides by sqrt(0.255): 0.7172376181)
    expected = [e[0] for e in amsgrad_reference([1.0], [[1.0], [0.1]], learning_rate=0.1,
                                                 beta_2=0.5, weight_decay=0.5)]
    np.testing.assert_allclose(expected, [0.8500000141, 0.7430397662], rtol=1e-9)
    ours = run_scalar(AdamW(0.1, weight_decay=0.5, beta_2=0.5, amsgrad=True), [1.0, 0.1])
    plain = run_scalar(AdamW(0.1, weight_decay=0.5, beta_2=0.5), [1.0, 0.1])
    np.testing.assert_allclose(ours, expected, rtol=2e-6)
    np.testing.assert_allclose(plain[1], 0.7172376181, rtol=2e-6)


def test_velocity_hat_is_the_running_max_of_velocity():
    opt = Adam(0.01, beta_2=0.5, amsgrad=True)
    p = make_param(np.zeros(6))
    rng = np.random.default_rng(0)
    seen = []
    for scale in (2.0, 0.1, 0.1, 1.0, 3.0, 0.01):
        p.grad = (rng.standard_normal(6) * scale).astype(np.float32)
        opt.apply([p])
        state = opt.get_state()
        seen.append(state["dense/kernel/velocity"])
        assert state["dense/kernel/velocity_hat"].tobytes() == np.max(seen, axis=0).tobytes()


@pytest.mark.parametrize("cls, kwargs", [
    (Adam, dict(learning_rate=0.01)),
    (Adam, dict(learning_rate=0.05, beta_1=0.5, beta_2=0.75, epsilon=1e-3)),
    (AdamW, dict(learning_rate=0.01, weight_decay=0.2, beta_2=0.9)),
])
def test_float64_reference_over_eight_steps(cls, kwargs):
    assert_follows_reference(lambda **kw: cls(amsgrad=True, **kw), kwargs, amsgrad_reference,
                             seed=7, size=33)


def test_state_and_count_params():
    ps = params(((3, 4), (2,)))
    opt = AdamW(amsgrad=True)
    train(opt, ps, 2)
    assert sorted(opt.get_state()) == [
        "iterations", "layer0/kernel/momentum", "layer0/kernel/velocity",
        "layer0/kernel/velocity_hat", "layer1/bias/momentum", "layer1/bias/velocity",
        "layer1/bias/velocity_hat"]
    assert opt.count_params() == 3 * 14 + 2


def test_nan_gradient_poisons_velocity_hat_as_keras():
    # torch.maximum (Keras on PyTorch) propagates NaN into velocity_hat
    opt = Adam(0.1, amsgrad=True)
    p = make_param([1.0, 1.0])
    p.grad = np.array([np.nan, 1.0], np.float32)
    opt.apply([p])
    assert np.isnan(opt.get_state()["dense/kernel/velocity_hat"][0])
    assert np.isfinite(opt.get_state()["dense/kernel/velocity_hat"][1])


MAKERS = {
    "adam": lambda: Adam(0.01, amsgrad=True),
    "adam-clipvalue-decay": lambda: Adam(0.01, beta_2=0.5, amsgrad=True, clipvalue=0.3,
                                         weight_decay=0.1),
    "adamw-clipnorm": lambda: AdamW(0.01, amsgrad=True, clipnorm=0.5),
    "adamw-schedule-global-clipnorm": lambda: AdamW(
        schedules.CosineDecay(0.01, decay_steps=5), amsgrad=True, global_clipnorm=2.0),
}


(test_serial_parallel_and_threads_bitwise, test_state_round_trip_continues_bitwise,
 test_save_load_continue_bitwise) = contract_tests(
    MAKERS, resume=["adam", "adamw-schedule-global-clipnorm"])
test_matches_keras, test_keras_cases_present = keras_tests(
    ["Adam", "AdamW"], ["adam_amsgrad", "adam_amsgrad_betas", "adam_amsgrad_schedule",
                        "adam_amsgrad_weight_decay", "adamw_amsgrad", "adamw_amsgrad_schedule"])


@pytest.mark.parametrize("cls", [Adam, AdamW])
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_bad_amsgrad(cls, value):
    with pytest.raises(TypeError, match=re.escape(
            f"{cls.__name__}: amsgrad must be a bool, got {value!r}")):
        cls(amsgrad=value)
