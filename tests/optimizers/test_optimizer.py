"""Shared optimizer machinery: clipping, weight-decay exclusion, learning rate, state,
lookup, serial/parallel and thread-count determinism."""

import json
import re
import warnings

import numpy as np
import pytest

from tinynet import optimizers
from tinynet.optimizers import SGD, Adagrad, Adam, AdamW, Optimizer, RMSprop
from tests.optimizers.common import (assert_serial_parallel_threads_bitwise,
                                     assert_state_round_trip_bitwise, make_param)
from tests.optimizers.common import params as _params, train as _train

ALL = [
    (SGD, dict(learning_rate=0.05)),
    (SGD, dict(learning_rate=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    (Adam, dict(learning_rate=0.01)),
    (Adam, dict(learning_rate=0.01, amsgrad=True, clipnorm=0.5)),
    (AdamW, dict(learning_rate=0.01, global_clipnorm=2.0)),
    (RMSprop, dict(learning_rate=0.01)),
    (RMSprop, dict(learning_rate=0.01, momentum=0.5, centered=True, clipvalue=0.3)),
    (Adagrad, dict(learning_rate=0.05, weight_decay=0.1)),
]
IDS = [f"{c.__name__}-{i}" for i, (c, _) in enumerate(ALL)]


# -- clipping ----------------------------------------------------------------------------
def test_clipnorm_per_parameter():
    # g = [3, 4] has norm 5 -> scaled by 1/5 to norm 1: [0.6, 0.8]; SGD lr=1 subtracts it.
    # the second parameter's gradient [0.3, 0.4] (norm 0.5 < 1) is untouched.
    a, b = make_param([0.0, 0.0], "kernel"), make_param([1.0, 1.0], "bias", "dense/bias")
    a.grad, b.grad = np.array([3.0, 4.0], np.float32), np.array([0.3, 0.4], np.float32)
    SGD(1.0, clipnorm=1.0).apply([a, b])
    np.testing.assert_allclose(a.value, [-0.6, -0.8], rtol=1e-6)
    np.testing.assert_array_equal(b.value, np.float32(1.0) - np.array([0.3, 0.4], np.float32))


def test_global_clipnorm():
    # gradients [3] and [4]: global norm 5, clip 2.5 -> both scaled by 0.5: [1.5], [2.0]
    a, b = make_param([0.0], "kernel"), make_param([0.0], "bias", "dense/bias")
    a.grad, b.grad = np.array([3.0], np.float32), np.array([4.0], np.float32)
    SGD(1.0, global_clipnorm=2.5).apply([a, b])
    np.testing.assert_allclose([a.value[0], b.value[0]], [-1.5, -2.0], rtol=1e-6)
    # below the threshold nothing changes (scale exactly 1)
    a.grad, b.grad = np.array([0.3], np.float32), np.array([0.4], np.float32)
    before = a.value.copy()
    SGD(1.0, global_clipnorm=2.5).apply([a, b])
    np.testing.assert_array_equal(a.value, before - np.float32(0.3))


def test_clipvalue():
    p = make_param([0.0, 0.0, 0.0])
    p.grad = np.array([-3.0, 0.2, 5.0], np.float32)
    SGD(1.0, clipvalue=1.0).apply([p])
    np.testing.assert_allclose(p.value, [1.0, -0.2, -1.0], rtol=1e-6)


def test_clip_arguments_are_exclusive():
    msg = ("Adam: only one of clipnorm, clipvalue and global_clipnorm can be set, "
           "got clipnorm=1.0, clipvalue=None, global_clipnorm=2.0")
    with pytest.raises(ValueError, match=re.escape(msg)):
        Adam(clipnorm=1.0, global_clipnorm=2.0)
    with pytest.raises(ValueError, match=re.escape(
            "SGD: global_clipnorm must be None or a positive float, got -1")):
        SGD(global_clipnorm=-1)
    with pytest.raises(ValueError, match=re.escape(
            "RMSprop: clipvalue must be None or a positive float, got 0")):
        RMSprop(clipvalue=0)


# -- weight decay exclusion --------------------------------------------------------------
def test_exclude_by_name_regex_and_by_parameter():
    # SGD lr=0.1, wd=0.5, zero gradient: a decayed weight is multiplied by 0.95
    kernel = make_param([1.0], "kernel", "dense/kernel")
    bias = make_param([1.0], "bias", "dense/bias")
    gamma = make_param([1.0], "gamma", "bn/gamma")
    params = [kernel, bias, gamma]
    for p in params:
        p.grad = np.zeros(1, np.float32)
    opt = SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bia", "^gam"])  # substring and regex
    opt.apply(params)
    assert [float(p.value[0]) for p in params] == [np.float32(0.95), 1.0, 1.0]
    opt2 = SGD(0.1, weight_decay=0.5)
    opt2.exclude_from_weight_decay(var_list=[kernel])
    opt2.apply(params)
    assert float(kernel.value[0]) == np.float32(0.95)       # unchanged by opt2
    assert float(bias.value[0]) == np.float32(0.95)


def test_exclusion_matches_the_name_not_the_path():
    p = make_param([1.0], "kernel", "dense_bias_layer/kernel")
    p.grad = np.zeros(1, np.float32)
    opt = SGD(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    opt.apply([p])
    assert float(p.value[0]) == np.float32(0.95)


def test_exclusion_survives_config_round_trip():
    opt = AdamW()
    opt.exclude_from_weight_decay(var_names=["bias", "gamma"])
    cfg = json.loads(json.dumps(opt.get_config()))
    assert cfg["exclude_from_weight_decay"] == ["bias", "gamma"]
    again = optimizers.get({"class_name": "AdamW", "config": cfg})
    assert again._exclude_names == ["bias", "gamma"]


# -- learning rate and iterations ------------------------------------------------------------
def test_learning_rate_is_writable_and_used_next_step():
    opt = SGD(0.1)
    assert opt.learning_rate == 0.1
    out = []
    p = make_param([1.0])
    for lr in (0.1, 0.5):
        opt.learning_rate = lr
        p.grad = np.ones(1, np.float32)
        opt.apply([p])
        out.append(float(p.value[0]))
    np.testing.assert_allclose(out, [0.9, 0.4], rtol=1e-6)
    assert opt.get_config()["learning_rate"] == 0.5
    with pytest.raises(ValueError, match=re.escape(
            "SGD: learning_rate must be a non-negative float no larger than float32's largest (3.4028235e+38) or a callable schedule, got -1")):
        opt.learning_rate = -1


def test_schedule_gets_the_iteration_count():
    seen = []

    def schedule(step):
        seen.append(step)
        return 0.1 / (1 + step)

    opt = SGD(schedule)
    p = make_param([1.0])
    for _ in range(3):
        p.grad = np.ones(1, np.float32)
        opt.apply([p])
    assert seen == [0, 1, 2] and opt.iterations == 3
    np.testing.assert_allclose(p.value, [1 - 0.1 - 0.05 - 0.1 / 3], rtol=1e-6)
    assert opt.learning_rate == pytest.approx(0.025)
    assert opt.count_params() == 1   # iterations only: a schedule is not a variable


def test_iterations_and_empty_apply():
    opt = Adam()
    opt.apply([])
    assert opt.iterations == 0 and not opt.built and opt.count_params() == 0
    params = _params()
    _train(opt, params, 2)
    assert opt.iterations == 2 and opt.built


# -- apply edge cases -----------------------------------------------------------------------
def test_missing_gradients_are_skipped_with_a_warning():
    a, b = make_param([1.0], "kernel"), make_param([1.0], "bias", "dense/bias")
    a.grad = np.ones(1, np.float32)
    with pytest.warns(UserWarning, match=re.escape("gradients do not exist for ['dense/bias']")):
        SGD(0.1).apply([a, b])
    assert float(b.value[0]) == 1.0
    a.grad = None
    with pytest.raises(ValueError, match=re.escape(
            "SGD: no gradients provided for any parameter (dense/kernel, dense/bias)")):
        SGD(0.1).apply([a, b])


def test_bad_gradient_shape_changes_nothing():
    a, b = make_param([1.0, 2.0], "kernel"), make_param([1.0], "bias", "dense/bias")
    a.grad, b.grad = np.ones(2, np.float32), np.ones(3, np.float32)
    opt = Adam()
    with pytest.raises(ValueError, match=re.escape(
            "Adam: gradient of dense/bias has shape (3,), expected (1,) (the parameter's shape)")):
        opt.apply([a, b])
    assert a.value.tolist() == [1.0, 2.0] and opt.iterations == 0 and not opt.built


def test_non_trainable_parameters_are_ignored():
    p = make_param([1.0])
    p.trainable = False
    p.grad = np.ones(1, np.float32)
    opt = SGD(0.1)
    opt.apply([p])
    assert float(p.value[0]) == 1.0 and opt.iterations == 0


def test_apply_rejects_non_parameters():
    with pytest.raises(TypeError, match=re.escape(
            "SGD: apply expects Parameter objects, got ndarray")):
        SGD().apply([np.zeros(3)])


@pytest.mark.parametrize("cls, kwargs, expected", [
    (SGD, {}, 2), (SGD, dict(momentum=0.9), 14 + 2), (Adam, {}, 28 + 2),
    (AdamW, dict(amsgrad=True), 42 + 2), (RMSprop, {}, 14 + 2),
    (RMSprop, dict(momentum=0.1, centered=True), 42 + 2), (Adagrad, {}, 14 + 2)])
def test_count_params(cls, kwargs, expected):
    opt = cls(**kwargs)
    params = _params(((3, 4), (2,)))
    assert opt.count_params() == 0
    _train(opt, params, 1)
    assert opt.count_params() == expected


# -- lookup -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, cls", [("sgd", SGD), ("adam", Adam), ("adamw", AdamW),
                                       ("rmsprop", RMSprop), ("adagrad", Adagrad),
                                       ("SGD", SGD), ("Adam", Adam), ("RMSprop", RMSprop)])
def test_get_by_name(name, cls):
    opt = optimizers.get(name)
    assert type(opt) is cls
    assert opt.get_config() == cls().get_config()


def test_get_passthrough_dict_and_errors():
    opt = Adam(0.05)
    assert optimizers.get(opt) is opt
    again = optimizers.get(optimizers.serialize(opt))
    assert type(again) is Adam and again.get_config() == opt.get_config()
    with pytest.raises(ValueError, match=re.escape(
            "Unknown optimizer 'adadelta'; valid names: adagrad, adam, adamax, adamw, lion, "
            "nadam, rmsprop, sgd (or the class names SGD, Adam, AdamW, Nadam, Adamax, Lion, "
            "RMSprop, Adagrad)")):
        optimizers.get("adadelta")
    with pytest.raises(TypeError, match=re.escape(
            "optimizers.get: expected an Optimizer instance, a name or a config dict, "
            "got int: 3")):
        optimizers.get(3)
    with pytest.raises(TypeError, match=re.escape("Optimizer.from_config: call it on a concrete")):
        Optimizer.from_config({})


def test_configs_are_json_and_round_trip():
    for cls, kwargs in ALL:
        opt = cls(**kwargs)
        cfg = json.loads(json.dumps(opt.get_config()))
        assert cls.from_config(cfg).get_config() == opt.get_config()


# -- state ----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls, kwargs", ALL, ids=IDS)
def test_state_round_trip_continues_bitwise(cls, kwargs):
    assert_state_round_trip_bitwise(lambda: cls(**kwargs))


def test_state_keys_and_copies():
    params = _params()
    opt = Adam()
    _train(opt, params, 1)
    state = opt.get_state()
    assert sorted(state) == ["iterations", "layer0/kernel/momentum", "layer0/kernel/velocity",
                             "layer1/bias/momentum", "layer1/bias/velocity"]
    assert state["iterations"].dtype == np.int64 and int(state["iterations"]) == 1
    state["layer0/kernel/momentum"][...] = 99.0
    assert not np.any(opt.get_state()["layer0/kernel/momentum"] == 99.0)


def test_set_state_errors_leave_the_optimizer_untouched():
    params = _params()
    opt = Adam()
    _train(opt, params, 2)
    state = opt.get_state()
    fresh = Adam()
    bad = dict(state)
    del bad["layer1/bias/velocity"]
    with pytest.raises(ValueError, match=re.escape(
            "Adam: optimizer state has no entry 'layer1/bias/velocity'")):
        fresh.set_state(bad, params)
    bad = dict(state, **{"layer1/bias/velocity": np.zeros(5, np.float32)})
    with pytest.raises(ValueError, match=re.escape(
            "Adam: optimizer state 'layer1/bias/velocity' has shape (5,), expected (3,)")):
        fresh.set_state(bad, params)
    with pytest.raises(ValueError, match=re.escape(
            "Adam: optimizer state entries match no parameter: ['layer1/bias/velocity_hat']")):
        fresh.set_state(dict(state, **{"layer1/bias/velocity_hat": np.zeros(3)}), params)
    with pytest.raises(ValueError, match=re.escape(
            "Adam: optimizer state has no 'iterations' entry")):
        fresh.set_state({}, params)
    assert fresh.iterations == 0 and not fresh.built


def test_set_state_of_an_unbuilt_optimizer():
    params = _params()
    opt = Adam()
    state = opt.get_state()
    assert list(state) == ["iterations"]
    other = Adam()
    _train(other, params, 1)
    other.set_state(state, params)
    assert other.iterations == 0 and not other.built and other.count_params() == 0


# -- determinism: gates and threads ---------------------------------------------------------
@pytest.mark.parametrize("cls, kwargs", ALL, ids=IDS)
def test_serial_parallel_and_threads_bitwise(cls, kwargs):
    assert_serial_parallel_threads_bitwise(lambda: cls(**kwargs))


def test_no_warnings_on_a_normal_step():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _train(Adam(), _params(), 2)
