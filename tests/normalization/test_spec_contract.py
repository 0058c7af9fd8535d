"""Layer contract: shapes, parameter counts and names, config round trip, Keras defaults."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tinynet.layers import Layer
from tinynet.layers.regularization.normalization import (
    BatchNormalization, GroupNormalization, InstanceNormalization, LayerNormalization, folds)
from tinynet.ops.arrays.reduction import DET_REDUCE_BLOCK
from tinynet.tensor import Tensor

# (id, factory, input shape, expected count_params, expected parameter names, gamma/beta shape)
CASES = [
    ("bn_rank2", lambda: BatchNormalization(), (4, 6), 24,
     ["gamma", "beta", "moving_mean", "moving_variance"], (6,)),
    ("bn_rank4", lambda: BatchNormalization(), (2, 3, 3, 5), 20,
     ["gamma", "beta", "moving_mean", "moving_variance"], (5,)),
    ("bn_no_center", lambda: BatchNormalization(center=False), (2, 3, 5), 15,
     ["gamma", "moving_mean", "moving_variance"], (5,)),
    ("bn_no_scale", lambda: BatchNormalization(scale=False), (2, 3, 5), 15,
     ["beta", "moving_mean", "moving_variance"], (5,)),
    ("bn_bare", lambda: BatchNormalization(center=False, scale=False), (2, 3, 5), 10,
     ["moving_mean", "moving_variance"], (5,)),
    ("gn", lambda: GroupNormalization(groups=4), (2, 5, 8), 16, ["gamma", "beta"], (8,)),
    ("gn_rank5", lambda: GroupNormalization(groups=2), (1, 2, 2, 2, 6), 12, ["gamma", "beta"],
     (6,)),
    ("gn_no_center", lambda: GroupNormalization(groups=2, center=False), (2, 5, 8), 8,
     ["gamma"], (8,)),
    ("gn_bare", lambda: GroupNormalization(groups=2, center=False, scale=False), (2, 5, 8), 0,
     [], (8,)),
    ("gn_minus1", lambda: GroupNormalization(groups=-1), (2, 5, 7), 14, ["gamma", "beta"], (7,)),
    ("in", lambda: InstanceNormalization(), (2, 4, 4, 3), 6, ["gamma", "beta"], (3,)),
    ("in_no_scale", lambda: InstanceNormalization(scale=False), (2, 4, 3), 3, ["beta"], (3,)),
    ("ln", lambda: LayerNormalization(), (3, 7), 14, ["gamma", "beta"], (7,)),
    ("ln_rank4_last", lambda: LayerNormalization(), (2, 3, 4, 5), 10, ["gamma", "beta"], (5,)),
    ("ln_hwc", lambda: LayerNormalization(axis=(1, 2, 3)), (2, 3, 4, 5), 120, ["gamma", "beta"],
     (3, 4, 5)),
    ("ln_neg_pair", lambda: LayerNormalization(axis=(-2, -1)), (2, 3, 4), 24, ["gamma", "beta"],
     (3, 4)),
    ("ln_middle", lambda: LayerNormalization(axis=1), (2, 3, 4), 6, ["gamma", "beta"], (3,)),
    ("ln_no_center", lambda: LayerNormalization(axis=[1, 2], center=False), (2, 3, 4), 12,
     ["gamma"], (3, 4)),
]
IDS = [c[0] for c in CASES]
ARGS = [c[1:] for c in CASES]


@pytest.mark.parametrize("make,shape,count,names,pshape", ARGS, ids=IDS)
def test_output_shape_matches_real_output(make, shape, count, names, pshape):
    layer = make()
    assert isinstance(layer, Layer)
    assert layer.output_shape((None, *shape[1:])) == (None, *shape[1:])
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    for training in (True, False):
        out = layer(x, training=training)
        assert isinstance(out, Tensor)
        assert np.asarray(out).dtype == np.float32
        assert np.asarray(out).shape == shape
        assert layer.output_shape(shape) == shape
        assert layer.output_shape((None, *shape[1:])) == (None, *shape[1:])
        dx = layer.backward(np.ones(shape, np.float32))
        assert isinstance(dx, Tensor) and np.asarray(dx).shape == shape
        assert np.asarray(dx).dtype == np.float32


@pytest.mark.parametrize("make,shape,count,names,pshape", ARGS, ids=IDS)
def test_parameters_and_counts(make, shape, count, names, pshape):
    layer = make()
    assert not layer.built
    layer.build((None, *shape[1:]))
    assert layer.built
    params = layer.parameters()
    assert [p.name for p in params] == names
    assert layer.count_params() == count
    c = shape[-1]
    for p in params:
        assert p.value.dtype == np.float32
        if p.name in ("gamma", "beta"):
            assert p.trainable
            assert p.value.shape == pshape, (p.name, p.value.shape)
        else:
            assert not p.trainable
            assert p.value.shape == (c,)
        init = {"gamma": 1.0, "beta": 0.0, "moving_mean": 0.0, "moving_variance": 1.0}[p.name]
        assert np.all(p.value == init), p.name
    # building on the first call gives the same parameters
    other = make()
    other(np.ones(shape, np.float32))
    assert [(p.name, p.value.shape) for p in other.parameters()] == \
        [(p.name, p.value.shape) for p in params]


@pytest.mark.parametrize("make,shape,count,names,pshape", ARGS, ids=IDS)
def test_config_round_trip(make, shape, count, names, pshape):
    layer = make()
    layer.build((None, *shape[1:]))
    rng = np.random.default_rng(1)
    for p in layer.parameters():
        p.assign(rng.uniform(0.5, 2.0, p.shape))
    config = layer.get_config()
    as_json = json.loads(json.dumps(config))  # JSON-able (tuples come back as lists)
    clone = type(layer).from_config(config)
    assert json.loads(json.dumps(clone.get_config())) == as_json
    clone = type(layer).from_config(as_json)
    assert json.loads(json.dumps(clone.get_config())) == as_json
    clone.build((None, *shape[1:]))
    clone.set_weights(layer.get_weights())
    x = rng.standard_normal(shape).astype(np.float32)
    for training in (False, True):
        np.testing.assert_array_equal(np.asarray(clone(x, training=training)),
                                      np.asarray(layer(x, training=training)))


@pytest.mark.parametrize("cls,expected", [
    (BatchNormalization, {"axis": -1, "momentum": 0.99, "epsilon": 1e-3, "center": True,
                          "scale": True}),
    (GroupNormalization, {"groups": 32, "axis": -1, "epsilon": 1e-3, "center": True,
                          "scale": True}),
    (InstanceNormalization, {"epsilon": 1e-3, "center": True, "scale": True}),
    (LayerNormalization, {"epsilon": 1e-3, "center": True, "scale": True}),
])
def test_keras_defaults_in_config(cls, expected):
    config = cls().get_config()
    for key, value in expected.items():
        assert config[key] == value, (key, config[key])
    if cls is LayerNormalization:
        assert config["axis"] in (-1, [-1], (-1,))


def test_config_carries_non_default_arguments():
    cases = [
        (BatchNormalization(momentum=0.9, epsilon=1e-5, center=False, name="bn_x"),
         {"momentum": 0.9, "epsilon": 1e-5, "center": False, "name": "bn_x"}),
        (GroupNormalization(groups=-1, epsilon=2e-3, scale=False),
         {"groups": -1, "epsilon": 2e-3, "scale": False}),
        (InstanceNormalization(epsilon=1e-4, trainable=False),
         {"epsilon": 1e-4, "trainable": False}),
    ]
    for layer, expected in cases:
        config = layer.get_config()
        for key, value in expected.items():
            assert config[key] == value, (type(layer).__name__, key, config[key])
    ln_config = LayerNormalization(axis=(1, 2, 3)).get_config()
    assert list(ln_config["axis"]) == [1, 2, 3]
    clone = LayerNormalization.from_config(ln_config)
    clone.build((None, 2, 3, 4))
    assert [p.value.shape for p in clone.parameters()] == [(2, 3, 4), (2, 3, 4)]


@pytest.mark.parametrize("cls,name", [(BatchNormalization, "batch_normalization"),
                                      (GroupNormalization, "group_normalization"),
                                      (InstanceNormalization, "instance_normalization"),
                                      (LayerNormalization, "layer_normalization")])
def test_default_layer_names(cls, name):
    assert cls().name == name


@pytest.mark.parametrize("cls", [BatchNormalization, GroupNormalization,
                                 InstanceNormalization, LayerNormalization])
def test_frozen_layer_has_no_trainable_parameters(cls):
    kwargs = {"groups": 2} if cls is GroupNormalization else {}
    layer = cls(trainable=False, **kwargs)
    layer.build((None, 3, 4))
    assert layer.parameters() and not any(p.trainable for p in layer.parameters())
    layer.trainable = True
    want = {"gamma": True, "beta": True, "moving_mean": False, "moving_variance": False}
    assert {p.name: p.trainable for p in layer.parameters()} == \
        {p.name: want[p.name] for p in layer.parameters()}


@pytest.mark.parametrize("cls", [BatchNormalization, GroupNormalization,
                                 InstanceNormalization, LayerNormalization])
def test_accepts_tensors_lists_and_float64_and_leaves_input_alone(cls):
    kwargs = {"groups": 2} if cls is GroupNormalization else {}
    x = np.random.default_rng(2).standard_normal((3, 2, 4))
    x_saved = x.copy()
    ref = np.asarray(cls(**kwargs)(x.astype(np.float32), training=True)).copy()
    for variant in (x, Tensor(x), x.tolist()):
        np.testing.assert_array_equal(np.asarray(cls(**kwargs)(variant, training=True)), ref)
    g = np.ones((3, 2, 4))
    layer = cls(**kwargs)
    layer(x, training=True)
    layer.backward(g)
    np.testing.assert_array_equal(x, x_saved)
    np.testing.assert_array_equal(g, 1.0)


def test_unknown_batch_size_output_shape_before_build():
    for layer in (BatchNormalization(), GroupNormalization(groups=2), InstanceNormalization(),
                  LayerNormalization(axis=(1, 2))):
        assert layer.output_shape((None, 5, 6, 4)) == (None, 5, 6, 4)
        assert layer.output_shape((7, 5, 6, 4)) == (7, 5, 6, 4)


@pytest.mark.parametrize("channels", [1, 3, 64, 100, 16383, 16384, 16385, 50000])
def test_rows_per_block_formula(channels):
    assert folds.rows_per_block(channels) == max(DET_REDUCE_BLOCK // channels, 1)
