"""Property-based tests (hypothesis) over random layer configurations and shapes.

* ``output_shape`` equals the real output shape, for the concrete input shape and with
  the batch axis unknown (``None``);
* ``backward`` matches central finite differences (``tinynet.testing.check_gradients``);
  inputs to ReLU-like activations and max pooling keep away from the kinks by
  construction (no value near 0, window values at least 0.1 apart);
* group, instance and layer normalization outputs are invariant to ``a * x + b`` with
  ``a > 0`` (epsilon is tiny next to the groups' variances, which are bounded below);
* every gate at 0 (parallel kernels) and at 2**62 (serial kernels) give the same bits;
* random invalid arguments raise only ``ValueError`` or ``TypeError`` (``KeyError`` for
  unknown tuning gate names).

Example counts are bounded so the file runs in seconds (``TINYNET_PROPERTY_SCALE=n``
multiplies them for a longer search); hypothesis keeps no database.
"""

from __future__ import annotations

import inspect
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import tinynet as tn
from tinynet import activations, callbacks, datasets, losses, metrics, optimizers, tuning
from tinynet.layers import (ELU, Activation, AveragePooling2D, BatchNormalization, Conv2D,
                            Dense, Dropout, Flatten, GlobalAveragePooling2D,
                            GlobalMaxPooling2D, GroupNormalization, Input,
                            InstanceNormalization, LayerNormalization, LeakyReLU,
                            MaxPooling2D, ReLU, Reshape, Sigmoid, Softmax, SpatialDropout2D,
                            Tanh)
from tinynet.testing import check_gradients

# TINYNET_PROPERTY_SCALE=20 runs 20 times the examples (a longer local search).
SCALE = max(int(os.environ.get("TINYNET_PROPERTY_SCALE", "1")), 1)
SETTINGS = settings(max_examples=25 * SCALE, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SMOOTH = ("linear", "sigmoid", "tanh", "gelu", "silu", "softmax", "elu")


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _normal(seed: int, shape: tuple, scale: float = 1.0) -> np.ndarray:
    return (_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def _away_from_zero(seed: int, shape: tuple) -> np.ndarray:
    """Values with |x| in [0.2, 2]: no finite-difference probe crosses a kink at 0."""
    rng = _rng(seed)
    return (rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.2, 2.0, size=shape)).astype(
        np.float32)


def _distinct(seed: int, shape: tuple) -> np.ndarray:
    """A permutation of ``0.1 * k``: any two values differ by at least 0.1."""
    n = int(np.prod(shape))
    return (_rng(seed).permutation(n) * 0.1 - 0.05 * n).astype(np.float32).reshape(shape)


# -- strategies ------------------------------------------------------------------------------
seeds = st.integers(0, 2**31 - 1)
small = st.integers(1, 4)


@st.composite
def conv_cases(draw):
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (1, 1) if max(strides) > 1 else (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["valid", "same"]))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7)),
             draw(st.integers(1, 3)))
    if padding == "valid":
        assume(all(shape[1 + i] >= (kernel[i] - 1) * dilation[i] + 1 for i in (0, 1)))
    layer = Conv2D(draw(st.integers(1, 3)), kernel, strides, padding,
                   activation=draw(st.sampled_from([None, "relu", "tanh"])),
                   dilation_rate=dilation, use_bias=draw(st.booleans()), seed=0)
    return layer, shape


@st.composite
def pool_cases(draw):
    cls = draw(st.sampled_from([MaxPooling2D, AveragePooling2D]))
    pool = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    strides = draw(st.one_of(st.none(), st.tuples(st.integers(1, 3), st.integers(1, 3))))
    padding = draw(st.sampled_from(["valid", "same"]))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 7)), draw(st.integers(1, 7)),
             draw(st.integers(1, 3)))
    if padding == "valid":
        assume(shape[1] >= pool[0] and shape[2] >= pool[1])
    return cls(pool, strides, padding), shape


@st.composite
def norm_cases(draw):
    """A normalization layer and an input shape it accepts."""
    rank = draw(st.integers(2, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    kind = draw(st.sampled_from(["bn", "gn", "in", "ln"]))
    if kind == "bn":
        axis = draw(st.integers(1, rank - 1))
        return BatchNormalization(axis=draw(st.sampled_from([axis, axis - rank]))), shape
    if kind == "gn":
        c = shape[-1]
        groups = draw(st.sampled_from([g for g in range(1, c + 1) if c % g == 0] + [-1]))
        return GroupNormalization(groups), shape
    if kind == "in":
        return InstanceNormalization(), shape
    axes = draw(st.lists(st.integers(1, rank - 1), min_size=1, max_size=rank - 1, unique=True))
    axis = axes[0] if len(axes) == 1 else tuple(axes)
    return LayerNormalization(axis=axis), shape


@st.composite
def reshape_cases(draw):
    dims = tuple(draw(st.lists(small, min_size=1, max_size=3)))
    size = math.prod(dims)
    target = list(reversed(dims)) if draw(st.booleans()) else [size]
    if draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return Reshape(tuple(target)), (draw(st.integers(1, 3)), *dims)


@st.composite
def elementwise_cases(draw):
    rank = draw(st.integers(1, 4))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(rank))
    kind = draw(st.sampled_from(["activation", "relu", "leaky", "elu", "sigmoid", "tanh",
                                 "softmax", "dropout", "flatten"]))
    if kind == "activation":
        layer = Activation(draw(st.sampled_from(activations.names())))
    elif kind == "relu":
        layer = ReLU(max_value=draw(st.one_of(st.none(), st.floats(0.5, 3))),
                     negative_slope=draw(st.floats(0, 1)), threshold=draw(st.floats(0, 0.1)))
    elif kind == "leaky":
        layer = LeakyReLU(draw(st.floats(0, 1)))
    elif kind == "elu":
        layer = ELU(draw(st.floats(0.1, 2)))
    elif kind == "sigmoid":
        layer = Sigmoid()
    elif kind == "tanh":
        layer = Tanh()
    elif kind == "softmax":
        layer = Softmax(axis=draw(st.integers(-rank, rank - 1)))
    elif kind == "dropout":
        layer = Dropout(draw(st.floats(0, 0.9)), seed=draw(seeds))
    else:
        layer = Flatten()
    return layer, shape


def _check_shapes(layer, shape, training=False):
    """output_shape for the concrete shape and with the batch axis unknown."""
    y = np.asarray(layer(_normal(0, shape), training=training))
    assert layer.output_shape(shape) == y.shape
    assert layer.output_shape((None, *shape[1:])) == (None, *y.shape[1:])


# ============================================================================================
# output_shape
# ============================================================================================
@SETTINGS
@given(units=small, dims=st.lists(small, min_size=2, max_size=4),
       act=st.sampled_from([None, *activations.names()]), use_bias=st.booleans())
def test_dense_output_shape(units, dims, act, use_bias):
    _check_shapes(Dense(units, act, use_bias=use_bias, seed=0), tuple(dims))


@SETTINGS
@given(conv_cases())
def test_conv2d_output_shape(case):
    _check_shapes(*case)


@SETTINGS
@given(pool_cases())
def test_pooling_output_shape(case):
    _check_shapes(*case)


@SETTINGS
@given(cls=st.sampled_from([GlobalAveragePooling2D, GlobalMaxPooling2D]),
       keepdims=st.booleans(), shape=st.tuples(small, small, small, small))
def test_global_pooling_output_shape(cls, keepdims, shape):
    _check_shapes(cls(keepdims=keepdims), shape)


@SETTINGS
@given(reshape_cases())
def test_reshape_output_shape(case):
    _check_shapes(*case)


@SETTINGS
@given(elementwise_cases(), st.booleans())
def test_elementwise_output_shape(case, training):
    _check_shapes(*case, training=training)


@SETTINGS
@given(rate=st.floats(0, 0.9), shape=st.tuples(small, small, small, small),
       training=st.booleans())
def test_spatial_dropout_output_shape(rate, shape, training):
    _check_shapes(SpatialDropout2D(rate, seed=0), shape, training)


@SETTINGS
@given(norm_cases(), st.booleans())
def test_normalization_output_shape(case, training):
    _check_shapes(*case, training=training)


@SETTINGS
@given(dims=st.lists(small, min_size=1, max_size=3), units=small)
def test_sequential_output_shape(dims, units):
    model = tn.Sequential([Input(tuple(dims)), Flatten(), Dense(units)])
    out = model.predict(_normal(0, (2, *dims)), verbose=0)
    assert model.output_shape == (None, *out.shape[1:])


def _min_group_variance(x: np.ndarray, layer) -> float:
    """The smallest variance over the groups a (built) normalization layer normalizes."""
    if isinstance(layer, LayerNormalization):
        axes = layer._axes
        return float(np.min(np.var(x.astype(np.float64), axis=axes)))
    if isinstance(layer, BatchNormalization):
        axes = tuple(a for a in range(x.ndim) if a != layer._axis)
        return float(np.min(np.var(x.astype(np.float64), axis=axes)))
    groups = layer._num_groups
    rows = x.astype(np.float64).reshape(x.shape[0], -1, groups, x.shape[-1] // groups)
    return float(np.min(np.var(rows, axis=(1, 3))))


# ============================================================================================
# finite-difference gradients
# ============================================================================================
GRAD = settings(SETTINGS, max_examples=15 * SCALE)


@GRAD
@given(units=small, dims=st.lists(st.integers(1, 3), min_size=2, max_size=3),
       act=st.sampled_from(SMOOTH), use_bias=st.booleans(), seed=seeds)
def test_dense_gradients(units, dims, act, use_bias, seed):
    layer = Dense(units, act, use_bias=use_bias, seed=seed % 1000)
    check_gradients(layer, x=_normal(seed, tuple(dims)), seed=seed % 1000)


@GRAD
@given(conv_cases(), seeds)
def test_conv2d_gradients(case, seed):
    layer, shape = case
    if layer.activation is not None and layer.activation.name == "relu":
        layer = Conv2D.from_config({**layer.get_config(), "activation": "tanh"})
    check_gradients(layer, x=_normal(seed, shape), seed=seed % 1000)


@GRAD
@given(pool_cases(), seeds)
def test_pooling_gradients(case, seed):
    layer, shape = case
    check_gradients(layer, x=_distinct(seed, shape), seed=seed % 1000)


@GRAD
@given(cls=st.sampled_from([GlobalAveragePooling2D, GlobalMaxPooling2D]),
       shape=st.tuples(st.integers(1, 2), small, small, st.integers(1, 3)), seed=seeds)
def test_global_pooling_gradients(cls, shape, seed):
    check_gradients(cls(), x=_distinct(seed, shape), seed=seed % 1000)


@GRAD
@given(kind=st.sampled_from(["relu", "leaky", "elu", "sigmoid", "tanh", "softmax", "gelu",
                             "silu"]),
       shape=st.tuples(st.integers(1, 3), st.integers(1, 4)), seed=seeds)
def test_activation_gradients(kind, shape, seed):
    layer = {"relu": lambda: ReLU(), "leaky": lambda: LeakyReLU(0.2), "elu": lambda: ELU(),
             "sigmoid": Sigmoid, "tanh": Tanh, "softmax": Softmax,
             "gelu": lambda: Activation("gelu"), "silu": lambda: Activation("silu")}[kind]()
    check_gradients(layer, x=_away_from_zero(seed, shape), seed=seed % 1000)


@GRAD
@given(norm_cases(), seeds)
def test_normalization_gradients(case, seed):
    layer, shape = case
    # shift the data: the shifted-sum statistics must not disturb the gradient
    x = _normal(seed, shape, 2.0) + np.float32(3.0)
    layer.build((None, *shape[1:]))
    # a group of near-equal values is steeply curved at the finite-difference step
    assume(_min_group_variance(x, layer) > 0.5)
    # atol: the float32 lane sums of the statistics carry ~n * 6e-8 relative error, which
    # moves the loss by up to ~4e-5 between probes: ~2e-3 in the quotient by 2 * delta
    check_gradients(layer, x=x, training=True, seed=seed % 1000, atol=5e-3)


# ============================================================================================
# scale and shift invariance of GN / IN / LN
# ============================================================================================
@st.composite
def invariant_cases(draw):
    rank = draw(st.integers(2, 4))
    shape = (draw(st.integers(1, 3)),) + tuple(draw(st.integers(1, 4)) for _ in range(rank - 1))
    kind = draw(st.sampled_from(["gn", "in", "ln"]))
    eps = 1e-7
    if kind == "gn":
        c = shape[-1]
        layer = GroupNormalization(draw(st.sampled_from([g for g in range(1, c + 1)
                                                         if c % g == 0])), epsilon=eps)
    elif kind == "in":
        layer = InstanceNormalization(epsilon=eps)
    else:
        axes = draw(st.lists(st.integers(1, rank - 1), min_size=1, max_size=rank - 1,
                             unique=True))
        layer = LayerNormalization(axis=tuple(axes), epsilon=eps)
    return layer, shape


@SETTINGS
@given(case=invariant_cases(), seed=seeds, scale=st.floats(0.25, 4.0),
       shift=st.floats(-20.0, 20.0), spread=st.floats(1.0, 10.0))
def test_normalization_scale_shift_invariance(case, seed, scale, shift, spread):
    layer, shape = case
    x = _normal(seed, shape, spread)
    layer.build((None, *shape[1:]))
    rng = _rng(seed + 1)
    for p in layer.parameters():
        p.assign(rng.uniform(0.5, 2.0, p.shape))
    var = _min_group_variance(x, layer)
    assume(var > 0.05 * spread ** 2)  # a group of near-equal values is all epsilon
    y = np.asarray(layer(x)).astype(np.float64)
    x2 = (x.astype(np.float64) * scale + shift).astype(np.float32)
    y2 = np.asarray(layer(x2)).astype(np.float64)
    np.testing.assert_allclose(y2, y, rtol=1e-4, atol=2e-4)


# ============================================================================================
# serial and parallel paths agree bitwise
# ============================================================================================
def _pass(make, x, g, training):
    """Output, input gradient and parameter gradients of a fresh layer (fixed weights)."""
    layer = make()
    layer.build((None, *x.shape[1:]))
    rng = _rng(7)
    for p in layer.parameters():
        p.assign(rng.uniform(0.5, 1.5, p.shape) if "variance" in p.name
                 else rng.standard_normal(p.shape))
    out = np.array(layer(x, training=training), copy=True)
    dx = np.array(layer.backward(g), copy=True)
    results = [out, dx] + [np.array(p.grad, copy=True) for p in layer.parameters()
                           if p.grad is not None]
    results += [p.value.copy() for p in layer.parameters() if not p.trainable]
    return results


def _both_ways(fn):
    try:
        with tuning.override(**dict.fromkeys(tuning.gates(), 2**62)):
            serial = fn()
        with tuning.override(**dict.fromkeys(tuning.gates(), 0)):
            parallel = fn()
    finally:
        tuning.reset()
    assert len(serial) == len(parallel)
    for a, b in zip(serial, parallel):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


@st.composite
def any_layer_cases(draw):
    kind = draw(st.sampled_from(["dense", "conv", "pool", "global", "norm", "act", "dropout"]))
    if kind == "dense":
        dims = tuple(draw(st.lists(st.integers(1, 6), min_size=2, max_size=3)))
        return (lambda u=draw(small), a=draw(st.sampled_from(SMOOTH)):
                Dense(u, a, seed=0)), dims
    if kind == "conv":
        layer, shape = draw(conv_cases())
        config = layer.get_config()
        return (lambda: Conv2D.from_config(config)), shape
    if kind == "pool":
        layer, shape = draw(pool_cases())
        config = layer.get_config()
        return (lambda: type(layer).from_config(config)), shape
    if kind == "global":
        cls = draw(st.sampled_from([GlobalAveragePooling2D, GlobalMaxPooling2D]))
        return cls, (draw(small), draw(small), draw(small), draw(small))
    if kind == "norm":
        layer, shape = draw(norm_cases())
        config = layer.get_config()
        return (lambda: type(layer).from_config(config)), shape
    if kind == "dropout":
        rate = draw(st.floats(0, 0.9))
        return (lambda: Dropout(rate, seed=3)), tuple(draw(st.lists(small, min_size=2,
                                                                    max_size=4)))
    layer, shape = draw(elementwise_cases())
    config = layer.get_config()
    return (lambda: type(layer).from_config(config)), shape


@SETTINGS
@given(case=any_layer_cases(), seed=seeds, training=st.booleans())
def test_serial_and_parallel_agree_bitwise(case, seed, training):
    make, shape = case
    x = _normal(seed, shape, 3.0) + np.float32(5.0)
    y_shape = np.asarray(make()(x)).shape
    g = _normal(seed + 1, y_shape)
    _both_ways(lambda: _pass(make, x, g, training))


@SETTINGS
@given(name=st.sampled_from(["sgd", "adam", "adamw", "rmsprop", "adagrad"]),
       shape=st.lists(st.integers(1, 9), min_size=1, max_size=3), seed=seeds)
def test_optimizer_step_serial_and_parallel_agree_bitwise(name, shape, seed):
    from tinynet.layers import Parameter

    def step():
        p = Parameter(_normal(seed, tuple(shape)), "kernel")
        p.grad = _normal(seed + 1, tuple(shape))
        opt = optimizers.get(name)
        for _ in range(2):
            opt.apply([p])
        return [p.value]

    _both_ways(step)


# ============================================================================================
# random invalid arguments raise only the documented exception types
# ============================================================================================
anything = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 5), st.integers(-10**400, 10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
    st.lists(st.integers(-2, 4), max_size=4), st.tuples(st.integers(-2, 4), st.integers(-2, 4)),
    st.lists(st.floats(), max_size=3).map(tuple), st.just(object()),
    st.sampled_from([np.float64("nan"), np.int64(-1), np.float32("inf"), np.bool_(True), (),
                     b"bytes", 1 + 2j, [None], {"a": 1}]))

# constructor -> the other required arguments (valid), so the drawn one is the bad one
REQUIRED = {
    Dense: {"units": 2}, Conv2D: {"filters": 2, "kernel_size": 3}, MaxPooling2D: {},
    AveragePooling2D: {}, GlobalAveragePooling2D: {}, GlobalMaxPooling2D: {}, Flatten: {},
    Reshape: {"target_shape": (2,)}, Activation: {"activation": "relu"}, ReLU: {},
    LeakyReLU: {}, ELU: {}, Sigmoid: {}, Tanh: {}, Softmax: {}, Dropout: {"rate": 0.5},
    SpatialDropout2D: {"rate": 0.5}, BatchNormalization: {}, GroupNormalization: {},
    InstanceNormalization: {}, LayerNormalization: {}, Input: {"shape": (2,)},
    tn.Sequential: {}, losses.MeanSquaredError: {}, losses.MeanAbsoluteError: {},
    losses.BinaryCrossentropy: {}, losses.CategoricalCrossentropy: {},
    losses.SparseCategoricalCrossentropy: {}, metrics.BinaryAccuracy: {},
    optimizers.SGD: {}, optimizers.Adam: {}, optimizers.AdamW: {}, optimizers.RMSprop: {},
    optimizers.Adagrad: {}, callbacks.EarlyStopping: {},
    callbacks.LearningRateScheduler: {"schedule": lambda epoch: 0.1},
    callbacks.ModelCheckpoint: {"filepath": "m.safetensors"},
}
ARGS = [(cls, name) for cls in REQUIRED
        for name, p in inspect.signature(cls).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
LAYER_KWARGS = ("name", "trainable", "input_shape")
ARGS += [(cls, name) for cls in REQUIRED
         if isinstance(cls, type) and issubclass(cls, tn.layers.Layer) and cls is not Input
         for name in LAYER_KWARGS if (cls, name) not in ARGS]


def _quietly(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@pytest.mark.parametrize("cls, arg", ARGS, ids=[f"{c.__name__}-{a}" for c, a in ARGS])
@SETTINGS
@given(value=anything)
def test_constructor_rejects_only_with_value_or_type_error(cls, arg, value):
    try:
        _quietly(lambda: cls(**{**REQUIRED[cls], arg: value}))
    except (ValueError, TypeError):
        pass


@SETTINGS
@given(name=st.one_of(st.text(max_size=30), st.sampled_from(sorted(tuning.defaults()))),
       value=anything)
def test_tuning_rejects_only_with_documented_errors(name, value):
    try:
        try:
            tuning.get(name)
        except KeyError:
            assert name not in tuning.defaults()
        try:
            tuning.set(**{name: value})
        except KeyError:
            assert name not in tuning.defaults()
        except (ValueError, TypeError):
            pass
        try:
            tuning.set_num_threads(value)
        except (ValueError, TypeError):
            pass
    finally:
        tuning.reset()


@SETTINGS
@given(value=anything)
def test_seed_and_datasets_reject_only_with_value_or_type_error(value):
    from tinynet import random as tn_random

    saved = tn_random._seed, tn_random._counter
    try:
        for call in (lambda: tn.set_seed(value), lambda: tn.Tensor(value),
                     lambda: datasets.load_idx(value, value)):
            try:
                _quietly(call)
            except (ValueError, TypeError, OSError):  # OSError: a str naming no file
                pass
    finally:
        tn_random._seed, tn_random._counter = saved  # a valid seed must not leak out
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not (
            0 < value < 1 or (isinstance(value, int) and 1 <= value < 1797)):
        try:
            datasets.load_digits(test_size=value)
        except (ValueError, TypeError):
            pass


FIT_ARGS = ["batch_size", "epochs", "verbose", "callbacks", "validation_split",
            "validation_data", "shuffle"]


@pytest.mark.parametrize("arg", FIT_ARGS)
@SETTINGS
@given(value=anything)
def test_fit_rejects_only_with_value_or_type_error(arg, value):
    model = tn.Sequential([Input((3,)), Dense(2)])
    model.compile("sgd", "mse")
    kwargs = {"verbose": 0, "epochs": 1, arg: value}
    if arg == "epochs" and isinstance(value, int) and value > 3:
        return  # a valid (long) run
    try:
        _quietly(lambda: model.fit(np.zeros((4, 3)), np.zeros((4, 2)), **kwargs))
    except (ValueError, TypeError):
        pass


@SETTINGS
@given(x=anything, y=anything, method=st.sampled_from(["fit", "evaluate", "predict",
                                                        "train_on_batch"]))
def test_model_data_rejects_only_with_value_or_type_error(x, y, method):
    model = tn.Sequential([Input((2,)), Dense(2)])
    model.compile("sgd", "mse")
    call = {"fit": lambda: model.fit(x, y, verbose=0),
            "evaluate": lambda: model.evaluate(x, y, verbose=0),
            "predict": lambda: model.predict(x, verbose=0),
            "train_on_batch": lambda: model.train_on_batch(x, y)}[method]
    try:
        _quietly(call)
    except (ValueError, TypeError):
        pass


@SETTINGS
@given(rank=st.integers(0, 5), dims=st.lists(st.integers(0, 3), min_size=5, max_size=5),
       dtype=st.sampled_from(["float32", "float64", "int8", "bool", "complex64", "U2"]),
       which=st.sampled_from(range(7)))
def test_layer_call_on_random_arrays_raises_only_value_or_type_error(rank, dims, dtype, which):
    x = np.ones(tuple(dims[:rank]), dtype=dtype)
    layer = [Dense(2), Conv2D(2, 2), MaxPooling2D(), GroupNormalization(1),
             LayerNormalization(), BatchNormalization(), Reshape((-1,))][which]
    try:
        _quietly(lambda: layer(x, training=True))
    except (ValueError, TypeError):
        pass


@SETTINGS
@given(shape_t=st.lists(st.integers(0, 3), max_size=3), shape_p=st.lists(st.integers(0, 3),
                                                                         max_size=3),
       loss=st.sampled_from(["mse", "mae", "binary_crossentropy", "categorical_crossentropy",
                             "sparse_categorical_crossentropy"]), fill=st.floats())
def test_losses_reject_only_with_value_or_type_error(shape_t, shape_p, loss, fill):
    fn = losses.get(loss)
    try:
        _quietly(lambda: fn.value_and_grad(np.full(shape_t, fill), np.full(shape_p, 0.5)))
    except (ValueError, TypeError):
        pass
