"""Dropout and SpatialDropout2D."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet import tuning
from tinynet.layers import Dropout, SpatialDropout2D
from tinynet.testing import check_gradients


@pytest.fixture(autouse=True)
def _restore_state():
    tuning.reset()
    yield
    tuning.reset()


def _x(shape, seed=0):
    """Inputs with no zeros, so dropped entries are exactly the zeros of the output."""
    rng = np.random.default_rng(seed)
    return (rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)).astype(np.float32)


# ---------------------------------------------------------------------------------------
# contract
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer,shape", [
    (Dropout(0.3), (4, 5)), (Dropout(0.5, noise_shape=(None, 1, 3)), (2, 4, 3)),
    (SpatialDropout2D(0.4), (2, 3, 3, 4)),
])
@pytest.mark.parametrize("training", [False, True])
def test_output_shape_and_params(layer, shape, training):
    y = layer(_x(shape), training=training)
    assert layer.output_shape(shape) == y.shape == shape
    assert layer.output_shape((None, *shape[1:])) == (None, *shape[1:])
    assert layer.count_params() == 0 and y.dtype == np.float32


def test_config_round_trip():
    layer = Dropout(0.25, seed=7, noise_shape=(None, 1, 4), name="drop", input_shape=(3, 4))
    cfg = layer.get_config()
    assert cfg == {"name": "drop", "trainable": True, "input_shape": [3, 4], "rate": 0.25,
                   "seed": 7, "noise_shape": [None, 1, 4]}
    clone = Dropout.from_config(cfg)
    assert clone.get_config() == cfg and clone.noise_shape == (None, 1, 4)
    assert Dropout(0.5).get_config() == {"name": "dropout", "trainable": True, "rate": 0.5,
                                         "seed": None, "noise_shape": None}
    sd = SpatialDropout2D(0.1, seed=3)
    cfg = sd.get_config()
    assert cfg == {"name": "spatial_dropout2d", "trainable": True, "rate": 0.1, "seed": 3}
    assert SpatialDropout2D.from_config(cfg).get_config() == cfg


def test_seed_and_noise_shape_are_keyword_only():
    with pytest.raises(TypeError):
        Dropout(0.5, None)  # Keras order would be noise_shape; here everything is keyword-only
    with pytest.raises(TypeError):
        SpatialDropout2D(0.5, 3)


# ---------------------------------------------------------------------------------------
# inference and rate 0: identity (zero-copy)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("layer,training", [
    (Dropout(0.5), False), (SpatialDropout2D(0.5), False), (Dropout(0.0), True),
    (SpatialDropout2D(0), True),
])
def test_identity(layer, training):
    x = _x((2, 3, 3, 4))
    y = layer(x, training=training)
    assert np.shares_memory(y.numpy(), x)
    g = _x((2, 3, 3, 4), seed=1)
    gx = layer.backward(g)
    assert np.shares_memory(gx.numpy(), g)
    assert layer.mask is None


def test_rate_zero_draws_nothing():
    layer = Dropout(0.0, seed=1)
    state = layer.rng.bit_generator.state
    layer(_x((3, 4)), training=True)
    assert layer.rng.bit_generator.state == state


@pytest.mark.parametrize("layer", [Dropout(0.4), SpatialDropout2D(0.4)])
def test_gradcheck_inference_mode(layer):
    check_gradients(layer, (2, 3, 2, 3), training=False)


# ---------------------------------------------------------------------------------------
# training: values, mask, backward
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("rate", [0.1, 0.3, 0.5, 0.9])
def test_training_values_and_exact_backward(rate):
    x = _x((8, 33))
    layer = Dropout(rate, seed=11)
    y = layer(x, training=True).numpy()
    kept = y != 0
    scale = np.float32(1.0 / (1.0 - rate))
    np.testing.assert_array_equal(y[kept], x[kept] * scale)
    assert 0 < kept.sum() < kept.size
    mask = kept.astype(np.float32) * scale
    np.testing.assert_array_equal(layer.mask, mask)
    g = _x((8, 33), seed=2)
    gx = layer.backward(g).numpy()
    assert np.array_equal(gx, mask * g)
    assert np.array_equal(gx, g * mask * np.float32(1.0))


def test_mean_preserved_and_keep_fraction():
    x = np.ones((64, 4096), np.float32)
    y = Dropout(0.3, seed=0)(x, training=True).numpy()
    assert abs((y != 0).mean() - 0.7) < 0.01
    assert abs(y.mean() - 1.0) < 0.015


def test_same_seed_same_mask_and_successive_calls_differ():
    x = _x((6, 50))
    a, b = Dropout(0.5, seed=3), Dropout(0.5, seed=3)
    ya, yb = a(x, training=True).numpy(), b(x, training=True).numpy()
    assert np.array_equal(ya, yb)
    assert not np.array_equal(ya, a(x, training=True).numpy())
    assert not np.array_equal(ya, Dropout(0.5, seed=4)(x, training=True).numpy())


def test_set_seed_reproducible_and_layers_independent():
    x = _x((6, 50))

    def run():
        tn.set_seed(123)
        d1, d2 = Dropout(0.5), Dropout(0.5)
        return d1(x, training=True).numpy(), d2(x, training=True).numpy()

    first, second = run(), run()
    assert np.array_equal(first[0], second[0]) and np.array_equal(first[1], second[1])
    assert not np.array_equal(first[0], first[1])  # distinct global streams


def test_mask_independent_of_threads_and_gates():
    x = _x((32, 300))
    results = []
    for threads, gate in ((1, 2**62), (tuning.max_threads(), 0)):
        tuning.set_num_threads(threads)
        with tuning.override(elementwise_parallel_min_elems=gate):
            results.append(Dropout(0.5, seed=9)(x, training=True).numpy())
    assert np.array_equal(results[0], results[1])


def test_rng_property_state_round_trip():
    layer = Dropout(0.5, seed=21)
    assert isinstance(layer.rng, np.random.Generator)
    assert layer.rng is layer.rng
    x = _x((4, 40))
    layer(x, training=True)
    state = layer.rng.bit_generator.state
    y1 = layer(x, training=True).numpy()
    other = Dropout(0.5)
    other.rng.bit_generator.state = state
    assert np.array_equal(other(x, training=True).numpy(), y1)
    other.rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match=re.escape(
            "Dropout 'dropout': rng must be a numpy.random.Generator, got int")):
        other.rng = 3


def test_noise_shape_broadcasts():
    x = _x((5, 7, 6))
    layer = Dropout(0.5, seed=1, noise_shape=(None, 1, 6))
    y = layer(x, training=True).numpy()
    assert layer.mask.shape == (5, 1, 6)
    kept = y != 0
    assert (kept == kept[:, :1, :]).all()
    g = _x((5, 7, 6), seed=3)
    assert np.array_equal(layer.backward(g).numpy(), g * layer.mask)


def test_spatial_dropout_one_draw_per_sample_and_channel():
    x = _x((6, 4, 5, 8))
    layer = SpatialDropout2D(0.5, seed=2)
    y = layer(x, training=True).numpy()
    assert layer.mask.shape == (6, 1, 1, 8)
    kept = y != 0
    assert (kept == kept[:, :1, :1, :]).all()
    assert 0 < kept[:, 0, 0, :].sum() < 48
    scale = np.float32(2.0)
    np.testing.assert_array_equal(y[kept], x[kept] * scale)
    g = _x((6, 4, 5, 8), seed=4)
    assert np.array_equal(layer.backward(g).numpy(), layer.mask * g)


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [Dropout, SpatialDropout2D])
@pytest.mark.parametrize("rate,exc", [
    (1.0, ValueError), (1, ValueError), (-0.1, ValueError), (1.5, ValueError),
    (math.nan, ValueError), ("0.5", TypeError), (None, TypeError), (True, TypeError),
    ([0.5], TypeError),
])
def test_bad_rate(cls, rate, exc):
    with pytest.raises(exc, match=re.escape(f"{cls.__name__}: rate must be a float in [0, 1), got {rate!r}")):
        cls(rate)


@pytest.mark.parametrize("cls", [Dropout, SpatialDropout2D])
@pytest.mark.parametrize("seed,exc", [(-1, ValueError), (1.5, TypeError), ("1", TypeError),
                                      (True, TypeError)])
def test_bad_seed(cls, seed, exc):
    with pytest.raises(exc, match=re.escape(
            f"{cls.__name__}: seed must be None or a non-negative int, got {seed!r}")):
        cls(0.5, seed=seed)


@pytest.mark.parametrize("noise_shape,exc", [((2, 0), ValueError), ((2, 1.0), TypeError),
                                             (3, TypeError)])
def test_bad_noise_shape(noise_shape, exc):
    with pytest.raises(exc, match=re.escape(
            f"Dropout: noise_shape must be a tuple of positive ints or None entries (batch axis "
            f"included), got {noise_shape!r}")):
        Dropout(0.5, noise_shape=noise_shape)


def test_noise_shape_incompatible_with_input():
    layer = Dropout(0.5, noise_shape=(None, 2))
    msg = ("Dropout 'dropout': noise_shape (None, 2) does not broadcast to input shape "
           "{} (same rank, each entry None, 1 or the input's size)")
    with pytest.raises(ValueError, match=re.escape(msg.format((4, 3)))):
        layer.forward(np.zeros((4, 3), np.float32), training=True)
    with pytest.raises(ValueError, match=re.escape(msg.format((None, 2, 2)))):
        layer.build((None, 2, 2))


def test_spatial_dropout_wrong_rank():
    layer = SpatialDropout2D(0.5)
    msg = ("SpatialDropout2D 'spatial_dropout2d': input must have rank 4 "
           "(batch, rows, cols, channels), got shape {}")
    with pytest.raises(ValueError, match=re.escape(msg.format((2, 3, 4)))):
        layer.forward(np.zeros((2, 3, 4), np.float32), training=True)
    with pytest.raises(ValueError, match=re.escape(msg.format((None, 3)))):
        layer.output_shape((None, 3))


def test_backward_errors():
    with pytest.raises(RuntimeError, match="backward called before forward"):
        Dropout(0.5).backward(np.zeros((1, 1), np.float32))
    layer = Dropout(0.5)
    layer(np.zeros((2, 3), np.float32), training=True)
    with pytest.raises(ValueError, match=re.escape(
            "Dropout 'dropout': grad_output must have shape (2, 3) (the last output's shape), "
            "got (3, 2)")):
        layer.backward(np.zeros((3, 2), np.float32))
