"""Bad arguments and bad inputs raise clear errors naming the argument and the value."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tinynet import tuning
from tinynet.layers.regularization.normalization import (
    BatchNormalization, GroupNormalization, InstanceNormalization, LayerNormalization)

NORM_GATES = ("gn_row_parallel_min_elems", "gn_param_grad_parallel_min_elems",
              "bn_parallel_min_elems", "ln_parallel_min_elems")

ALL_LAYERS = {
    "BatchNormalization": BatchNormalization,
    "GroupNormalization": lambda **kw: GroupNormalization(**{"groups": 2, **kw}),
    "InstanceNormalization": InstanceNormalization,
    "LayerNormalization": LayerNormalization,
}


def _make_and_call(make, shape=(2, 3, 4)):
    """Errors may surface at construction or at build: both count."""
    layer = make()
    layer(np.ones(shape, np.float32), training=True)
    return layer


# -- epsilon / momentum / center / scale ---------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ALL_LAYERS))
@pytest.mark.parametrize("eps,pattern", [(0.0, r"epsilon.*0"), (-1.0, r"epsilon.*-1"),
                                         (-1e-3, r"epsilon.*-0\.001"),
                                         (math.nan, r"epsilon.*nan"),
                                         (math.inf, r"epsilon.*inf"),
                                         (-math.inf, r"epsilon.*-inf")])
def test_bad_epsilon(name, eps, pattern):
    with pytest.raises(ValueError, match=re.compile(pattern, re.IGNORECASE)):
        _make_and_call(lambda: ALL_LAYERS[name](epsilon=eps))


@pytest.mark.parametrize("name", sorted(ALL_LAYERS))
def test_non_numeric_epsilon(name):
    with pytest.raises((TypeError, ValueError), match=r"epsilon.*abc"):
        _make_and_call(lambda: ALL_LAYERS[name](epsilon="abc"))


@pytest.mark.parametrize("momentum,pattern", [(-0.1, r"momentum.*-0\.1"), (1.5, r"momentum.*1\.5"),
                                              (math.nan, r"momentum.*nan"),
                                              (math.inf, r"momentum.*inf")])
def test_bad_momentum(momentum, pattern):
    with pytest.raises(ValueError, match=re.compile(pattern, re.IGNORECASE)):
        _make_and_call(lambda: BatchNormalization(momentum=momentum))


@pytest.mark.parametrize("momentum", [0.0, 1.0, 0.5])
def test_momentum_bounds_are_accepted(momentum):
    _make_and_call(lambda: BatchNormalization(momentum=momentum))


@pytest.mark.parametrize("name", sorted(ALL_LAYERS))
@pytest.mark.parametrize("arg", ["center", "scale"])
def test_non_bool_center_scale(name, arg):
    with pytest.raises(TypeError, match=rf"{arg}.*yes"):
        _make_and_call(lambda: ALL_LAYERS[name](**{arg: "yes"}))


# -- groups ------------------------------------------------------------------------------------
@pytest.mark.parametrize("groups,pattern", [(0, r"groups.*0"), (-2, r"groups.*-2"),
                                            (-7, r"groups.*-7")])
def test_bad_groups_value(groups, pattern):
    with pytest.raises(ValueError, match=pattern):
        _make_and_call(lambda: GroupNormalization(groups=groups))


@pytest.mark.parametrize("groups", [2.5, "2", None])
def test_bad_groups_type(groups):
    with pytest.raises((TypeError, ValueError), match=r"groups"):
        _make_and_call(lambda: GroupNormalization(groups=groups))


def test_channels_not_divisible_by_groups_exact_message():
    want = "GroupNormalization: channels (6) must be divisible by groups (4)"
    with pytest.raises(ValueError) as info:
        GroupNormalization(groups=4).build((None, 5, 6))
    assert str(info.value) == want
    with pytest.raises(ValueError) as info:
        GroupNormalization(groups=4)(np.ones((2, 5, 6), np.float32))
    assert str(info.value) == want


def test_default_groups_larger_than_channels():
    # default groups=32 with 4 channels: 4 % 32 != 0, both numbers named
    with pytest.raises(ValueError) as info:
        GroupNormalization().build((None, 3, 4))
    msg = str(info.value)
    assert "GroupNormalization" in msg and "(4)" in msg and "(32)" in msg, msg


# -- input rank / shape ------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ALL_LAYERS))
def test_rank_one_input(name):
    with pytest.raises(ValueError, match=r"(?i)rank|ndim|dimension|shape"):
        ALL_LAYERS[name]()(np.ones(4, np.float32))


@pytest.mark.parametrize("name", sorted(ALL_LAYERS))
def test_rank_one_build(name):
    with pytest.raises(ValueError, match=r"(?i)rank|ndim|dimension|shape"):
        ALL_LAYERS[name]().build((None,))


@pytest.mark.parametrize("name", sorted(ALL_LAYERS))
def test_input_incompatible_with_built_shape(name):
    layer = ALL_LAYERS[name]()
    layer(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError):
        layer(np.ones((2, 3, 6), np.float32))


@pytest.mark.parametrize("axis,pattern", [(3, r"axis.*3"), (-4, r"axis.*-4"),
                                          ((1, 1), r"axis.*1"), ((-1, 2), r"axis"),
                                          ((1, 5), r"axis.*5")])
def test_layer_norm_bad_axis(axis, pattern):
    with pytest.raises(ValueError, match=pattern):
        _make_and_call(lambda: LayerNormalization(axis=axis), shape=(2, 3, 4))


@pytest.mark.parametrize("axis", ["last", 1.0, None])
def test_layer_norm_axis_type(axis):
    with pytest.raises((TypeError, ValueError), match=r"axis"):
        _make_and_call(lambda: LayerNormalization(axis=axis))


@pytest.mark.parametrize("cls", [BatchNormalization, GroupNormalization])
def test_channel_axis_out_of_range(cls):
    kwargs = {"groups": 1} if cls is GroupNormalization else {}
    with pytest.raises(ValueError, match=r"axis.*5"):
        _make_and_call(lambda: cls(axis=5, **kwargs), shape=(2, 3, 4))


# -- backward before forward -------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(ALL_LAYERS))
@pytest.mark.parametrize("built", [False, True])
def test_backward_before_forward(name, built):
    layer = ALL_LAYERS[name](name="probe_norm")
    if built:
        layer.build((None, 3, 4))
    with pytest.raises(RuntimeError, match="probe_norm"):
        layer.backward(np.ones((2, 3, 4), np.float32))


# -- tuning gates ------------------------------------------------------------------------------
def test_unknown_gate_lists_valid_names():
    for call in (lambda: tuning.set(gn_row_parallel_min_elemz=0),
                 lambda: tuning.get("bogus_gate"),
                 lambda: tuning.override(bogus_gate=0).__enter__()):
        with pytest.raises(KeyError) as info:
            call()
        msg = str(info.value)
        for gate in NORM_GATES:
            assert gate in msg, msg


@pytest.mark.parametrize("gate", NORM_GATES)
def test_negative_gate_value(gate):
    before = tuning.get(gate)
    with pytest.raises(ValueError, match=rf"{gate}.*-1"):
        tuning.set(**{gate: -1})
    with pytest.raises(ValueError, match=rf"{gate}.*-5"):
        with tuning.override(**{gate: -5}):
            pass
    assert tuning.get(gate) == before


@pytest.mark.parametrize("value", [1.5, "10", None, True])
def test_non_int_gate_value(value):
    gate = "bn_parallel_min_elems"
    before = tuning.get(gate)
    with pytest.raises(TypeError, match=gate):
        tuning.set(**{gate: value})
    assert tuning.get(gate) == before


def test_set_num_threads_rejects_bad_values():
    with pytest.raises(ValueError, match="0"):
        tuning.set_num_threads(0)
    with pytest.raises(TypeError):
        tuning.set_num_threads(1.5)


@pytest.mark.parametrize("eps", [-1e-3, float("nan"), float("inf")])
def test_core_rejects_bad_epsilon(eps):
    from tinynet.layers.regularization.normalization import group_norm_forward_core

    x = np.ones((1, 2, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="epsilon must be a finite number >= 0"):
        group_norm_forward_core(x, 2, np.ones(4), np.zeros(4), eps)


def test_core_plans_are_reused_but_never_admit_bad_groups():
    # the cores keep one Plan per (shape, groups) seen; the cache must not let a group
    # count through that is equal to a valid one without being a valid int
    from tinynet.ops.arrays import normalization as core
    from tinynet.ops.arrays.normalization_plan import plan_of

    x = np.ones((2, 3, 4), dtype=np.float32)
    gamma, beta = np.ones(4, np.float32), np.zeros(4, np.float32)
    core.gn_forward(x, 1, gamma, beta, 1e-3)
    core.gn_forward(x, 4, gamma, beta, 1e-3)
    assert plan_of((2, 3, 4), 1, "w") is plan_of((2, 3, 4), 1, "w")
    for bad in (True, 1.0, 4.0):
        with pytest.raises(ValueError, match=rf"group_norm_forward_core: num_groups must be a "
                                             rf"positive int, got {bad!r}"):
            core.gn_forward(x, bad, gamma, beta, 1e-3)
    with pytest.raises(ValueError, match=r"channels \(4\) must be divisible by groups \(3\)"):
        core.gn_forward(x, 3, gamma, beta, 1e-3)
