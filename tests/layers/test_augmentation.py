"""The augmentation layers (RandomFlip, RandomCrop, RandomTranslation, RandomRotation,
RandomZoom, RandomContrast): values and input gradients against Keras 3.15.1 on PyTorch
for the parameters Keras drew, finite-difference gradients, inference, seeded draws
(reproducible, thread-independent, resumed bitwise after save and load), configs and
argument errors.

The Keras values come from ``tests/data/keras/generate_augmentation.py``
(``keras_augmentation_refs.npz``); Keras itself is never imported here.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet import saving, tuning
from tinynet.layers import Dense, Flatten, Input
from tinynet.layers.augmentation import (RandomContrast, RandomCrop, RandomFlip,
                                         RandomRotation, RandomTranslation, RandomZoom)
from tinynet.layers.augmentation.random_rotation import rotation_matrix
from tinynet.ops.arrays import affine

REFS_PATH = os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                         "keras_augmentation_refs.npz")
with np.load(REFS_PATH) as _data:
    REFS = {k: _data[k] for k in _data.files}
CASES = json.loads(str(REFS["cases"]))
CLASSES = {c.__name__: c for c in (RandomContrast, RandomCrop, RandomFlip, RandomRotation,
                                   RandomTranslation, RandomZoom)}
AFFINE_MODES = [(f, i) for f in affine.FILL_MODES for i in affine.INTERPOLATIONS]


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _case(name):
    cls, kwargs, training = json.loads(str(REFS[f"{name}/spec"]))
    prefix = f"{name}/params/"
    params = {k[len(prefix):]: REFS[k] for k in REFS if k.startswith(prefix)}
    return CLASSES[cls](**kwargs), params, training


def _out_atol(name, x):
    """1e-6, or 4 ulp of the data's magnitude for RandomContrast: Keras's per-channel mean
    is a float32 sum in PyTorch's order, tinynet's is rounded from float64, and the two
    means differ by an ulp (an ulp of 128 is 1.5e-5 on [0, 255] pixels)."""
    if name.startswith("contrast"):
        return max(1e-6, 4 * float(np.spacing(np.float32(np.abs(x).max()))))
    return 1e-6


def test_refs_are_keras_3_15_1_on_torch():
    assert str(REFS["keras_version"]) == "3.15.1" and str(REFS["backend"]) == "torch"
    kinds = {json.loads(str(REFS[f"{n}/spec"]))[0] for n in CASES}
    assert kinds == set(CLASSES)
    for layer in ("translation", "rotation", "zoom"):
        for fill, interp in AFFINE_MODES:
            assert f"{layer}_{fill}_{interp}" in CASES


# -- against Keras ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_values_and_input_gradients_match_keras(name):
    layer, params, training = _case(name)
    x, g = REFS[f"{name}/x"], REFS[f"{name}/g"]
    if training:
        y = layer._apply(x, params).numpy()
    else:  # RandomCrop at inference: Keras's fixed window (see the generator's docstring)
        y = layer(x).numpy()
        assert layer.transformation == {"h_start": int(params["h_start"]),
                                        "w_start": int(params["w_start"])}
    np.testing.assert_allclose(y, REFS[f"{name}/out"], rtol=1e-5, atol=_out_atol(name, x))
    dx = layer.backward(g).numpy()
    assert dx.dtype == np.float32 and dx.shape == x.shape
    np.testing.assert_allclose(dx, REFS[f"{name}/dx"], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith(("translation", "zoom",
                                                                     "flip", "crop_random",
                                                                     "crop_equal"))])
def test_translation_zoom_flip_crop_outputs_are_keras_bits(name):
    """With the same parameters these compute Keras's float32 operations in its order."""
    layer, params, _ = _case(name)
    assert np.array_equal(layer._apply(REFS[f"{name}/x"], params).numpy(),
                          REFS[f"{name}/out"])


@pytest.mark.parametrize("name", [n for n in CASES if n.startswith("rotation")])
def test_rotation_from_the_angle_alone(name):
    """Keras's matrix gives Keras's bits (the sampler and coordinates are the same); the
    matrix tinynet computes from the angle is within an ulp of Keras's (PyTorch's float32
    sin/cos are not always correctly rounded), so the output within 1e-5."""
    layer, params, _ = _case(name)
    x = REFS[f"{name}/x"]
    assert np.array_equal(layer._apply(x, params).numpy(), REFS[f"{name}/out"])
    keras_matrix = params["rotation_matrix"][:, :6]
    assert np.all(params["rotation_matrix"][:, 6:] == 0)
    mine = rotation_matrix(params["angle"], x.shape[1], x.shape[2])
    np.testing.assert_allclose(mine, keras_matrix, rtol=0,
                               atol=float(np.spacing(np.float32(np.abs(keras_matrix).max()))))
    y = layer._apply(x, {"angle": params["angle"]}).numpy()
    np.testing.assert_allclose(y, REFS[f"{name}/out"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_config_has_keras_keys_and_values(name):
    layer, _, _ = _case(name)
    keras_config = json.loads(str(REFS[f"{name}/config"]))
    for key in ("dtype", "name"):  # tinynet has no dtype policies; Keras numbers names
        keras_config.pop(key)
    mine = json.loads(json.dumps(layer.get_config()))
    mine.pop("name")
    assert mine == keras_config


# -- finite differences ----------------------------------------------------------------------
def _fd_check(layer, x, params, delta=1e-2, rtol=1e-3, atol=1e-4):
    """Central differences of ``sum(out * g)`` (float64 sums) against ``backward``, at
    every input entry, the parameters fixed."""
    g = _x(layer._apply(x, params).shape, seed=7)
    layer._apply(x, params)
    dx = layer.backward(g).numpy().astype(np.float64)

    def loss(v):
        return float(np.sum(layer._apply(v, params).numpy().astype(np.float64) * g))

    flat = x.reshape(-1)
    numeric = np.empty(flat.size)
    for i in range(flat.size):
        keep = flat[i]
        flat[i] = keep + delta
        up = loss(x)
        flat[i] = keep - delta
        down = loss(x)
        flat[i] = keep
        numeric[i] = (up - down) / (2 * delta)
    np.testing.assert_allclose(dx.reshape(-1), numeric, rtol=rtol, atol=atol)


@pytest.mark.parametrize("fill_mode,interpolation", AFFINE_MODES)
def test_affine_gradients_by_finite_differences(fill_mode, interpolation):
    x = _x((2, 5, 6, 2), seed=1)
    kw = dict(fill_mode=fill_mode, interpolation=interpolation, fill_value=0.7)
    _fd_check(RandomTranslation(0.5, 0.5, **kw), x,
              {"translations": np.array([[1.3, -2.6], [-3.7, 0.45]], np.float32)})
    _fd_check(RandomRotation(0.5, **kw), x, {"angle": np.array([33.0, -151.0], np.float32)})
    _fd_check(RandomZoom(0.5, (0.2, 0.9), **kw), x,
              {"height_zoom": np.array([0.63, 1.41], np.float32),
               "width_zoom": np.array([1.77, 0.52], np.float32)})


@pytest.mark.parametrize("mode", ["horizontal", "vertical", "horizontal_and_vertical"])
def test_flip_gradients_by_finite_differences(mode):
    _fd_check(RandomFlip(mode), _x((3, 4, 5, 2)), {"flips": np.array([True, False, True])})


@pytest.mark.parametrize("shape,size,start", [((2, 7, 6, 2), (4, 3), (2, 1)),
                                               ((2, 4, 5, 2), (6, 7), (0, 0)),
                                               ((2, 5, 9, 2), (7, 6), (0, 2))])
def test_crop_gradients_by_finite_differences(shape, size, start):
    _fd_check(RandomCrop(*size), _x(shape), {"h_start": start[0], "w_start": start[1]})


def test_contrast_gradients_by_finite_differences():
    x = _x((3, 4, 5, 2), seed=3)
    layer = RandomContrast((0.5, 0.8), value_range=(-1.2, 1.5))
    params = {"contrast_factor": np.array([0.6, 1.7, 1.25], np.float32)}
    z = layer._apply(x, params).numpy()
    assert np.any(z == np.float32(-1.2)) and np.any(z == np.float32(1.5))  # clip active
    _fd_check(layer, x, params, delta=1e-3, atol=2e-3)


def test_contrast_mean_is_per_image_and_channel():
    x = _x((2, 3, 4, 3)) + 10.0
    layer = RandomContrast(0.5, value_range=(-100, 100))
    y = layer._apply(x, {"contrast_factor": [2.0, 0.5]}).numpy()
    mean = x.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(y.mean(axis=(1, 2), keepdims=True), mean, rtol=1e-5)
    np.testing.assert_allclose(y[0] - mean[0], 2.0 * (x[0] - mean[0]), rtol=1e-4, atol=1e-5)


# -- inference ---------------------------------------------------------------------------------
IDENTITY_LAYERS = [lambda: RandomFlip(), lambda: RandomTranslation(0.3, 0.3),
                   lambda: RandomRotation(0.4), lambda: RandomZoom(0.5),
                   lambda: RandomContrast(0.5)]


@pytest.mark.parametrize("make", IDENTITY_LAYERS)
def test_identity_at_inference(make):
    layer = make()
    x = _x((2, 5, 4, 3)) * 50 + 100
    y = layer(x)
    assert np.array_equal(y.numpy(), x) and layer.transformation is None
    g = _x(x.shape, seed=1)
    assert np.array_equal(layer.backward(g).numpy(), g)
    assert layer._rng is None  # inference draws nothing


def test_crop_inference_is_kerass_fixed_window_and_shape():
    layer = RandomCrop(4, 3)
    x = _x((2, 8, 8, 1))
    y = layer(x).numpy()
    # Keras: crop_height = min(8, int(8 * 4 / 3)) = 8, crop_width = int(8 * 3 / 4) = 6
    assert layer.transformation == {"h_start": 0, "w_start": 1}
    assert np.array_equal(y, x[:, 0:4, 1:4])
    assert layer.output_shape((None, 8, 8, 1)) == (None, 4, 3, 1) and layer._rng is None


def test_crop_training_one_window_per_batch_within_bounds():
    layer = RandomCrop(3, 2, seed=4)
    x = _x((5, 6, 7, 1))
    starts = set()
    for _ in range(30):
        y = layer(x, training=True).numpy()
        h, w = layer.transformation["h_start"], layer.transformation["w_start"]
        assert 0 <= h <= 3 and 0 <= w <= 5
        assert np.array_equal(y, x[:, h:h + 3, w:w + 2])
        starts.add((h, w))
    assert len(starts) > 5


def test_flip_modes():
    x = _x((2, 3, 4, 1))
    flips = {"flips": np.array([True, False])}
    h = RandomFlip("horizontal")._apply(x, flips).numpy()
    v = RandomFlip("vertical")._apply(x, flips).numpy()
    hv = RandomFlip()._apply(x, flips).numpy()
    assert np.array_equal(h[0], x[0, :, ::-1]) and np.array_equal(h[1], x[1])
    assert np.array_equal(v[0], x[0, ::-1]) and np.array_equal(v[1], x[1])
    assert np.array_equal(hv[0], x[0, ::-1, ::-1]) and np.array_equal(hv[1], x[1])


def test_fill_modes_on_a_row():
    """Keras's documented patterns, on a shift of 3 pixels to the right of ``a b c d``."""
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4, 1)
    expect = {"reflect": [3, 2, 1, 1], "wrap": [2, 3, 4, 1], "nearest": [1, 1, 1, 1],
              "constant": [9, 9, 9, 1]}
    for mode, row in expect.items():
        layer = RandomTranslation(0.0, 1.0, fill_mode=mode, fill_value=9.0)
        y = layer._apply(x, {"translations": [[3.0, 0.0]]}).numpy()
        assert y.reshape(-1).tolist() == row, mode


# -- draws -------------------------------------------------------------------------------------
ALL_LAYERS = {
    "flip": lambda seed=None: RandomFlip(seed=seed),
    "crop": lambda seed=None: RandomCrop(5, 4, seed=seed),
    "translation": lambda seed=None: RandomTranslation(0.3, (-0.2, 0.4), seed=seed),
    "rotation": lambda seed=None: RandomRotation(0.25, fill_mode="constant", seed=seed),
    "zoom": lambda seed=None: RandomZoom(0.4, 0.2, interpolation="nearest", seed=seed),
    "contrast": lambda seed=None: RandomContrast((0.3, 0.6), value_range=(-2, 2), seed=seed),
}


@pytest.mark.parametrize("kind", sorted(ALL_LAYERS))
def test_same_seed_same_draws_and_successive_calls_differ(kind):
    x = _x((4, 7, 6, 2))
    a, b = ALL_LAYERS[kind](seed=5), ALL_LAYERS[kind](seed=5)
    ya = [a(x, training=True).numpy() for _ in range(3)]
    yb = [b(x, training=True).numpy() for _ in range(3)]
    assert all(np.array_equal(p, q) for p, q in zip(ya, yb))
    assert not np.array_equal(ya[0], ya[1]) or not np.array_equal(ya[1], ya[2])
    other = ALL_LAYERS[kind](seed=6)
    assert any(not np.array_equal(other(x, training=True).numpy(), y) for y in ya)


@pytest.mark.parametrize("kind", sorted(ALL_LAYERS))
def test_global_seed_streams(kind):
    x = _x((4, 7, 6, 2))

    def run():
        tn.set_seed(31)
        layer = ALL_LAYERS[kind]()
        return [layer(x, training=True).numpy() for _ in range(2)]

    first, second = run(), run()
    assert all(np.array_equal(p, q) for p, q in zip(first, second))


@pytest.mark.parametrize("kind", sorted(ALL_LAYERS))
def test_draws_and_gradients_independent_of_threads(kind):
    x = _x((6, 9, 8, 3))
    g = None
    results = []
    before = tuning.get_num_threads()
    try:
        for threads in (1, min(2, tuning.max_threads())):
            tuning.set_num_threads(threads)
            layer = ALL_LAYERS[kind](seed=12)
            y = layer(x, training=True).numpy()
            g = _x(y.shape, seed=3) if g is None else g
            results.append((y, layer.backward(g).numpy(), layer(x, training=True).numpy()))
    finally:
        tuning.set_num_threads(before)
    for p, q in zip(*results):
        assert np.array_equal(p, q)


def _augmented_model():
    return tn.Sequential([
        Input((8, 8, 2)),
        RandomFlip(seed=1),
        RandomTranslation(0.2, 0.1, seed=2),
        RandomRotation(0.1, fill_mode="nearest", seed=3),
        RandomZoom(0.2, interpolation="nearest", seed=4),
        RandomContrast(0.3, value_range=(-4, 4), seed=5),
        RandomCrop(6, 6, seed=6),
        Flatten(),
        Dense(3),
    ])


def _compiled():
    model = _augmented_model()
    model.compile(optimizer="adam",
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _registered():
    """``load_model`` rebuilds the classes of ``tinynet.layers.__all__``; until that lists
    these layers, they are registered as custom ones (a no-op once they are built-ins)."""
    from tinynet.layers import registry

    for cls in CLASSES.values():
        if cls.__name__ not in tn.layers.__all__:
            registry.register_layer(cls)


def test_save_load_and_continue_draws_the_same(tmp_path):
    _registered()
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((12, 8, 8, 2)).astype(np.float32), rng.integers(0, 3, 12)
    tn.set_seed(3)
    straight = _compiled()
    h_straight = straight.fit(x, y, batch_size=4, epochs=3, verbose=0)
    tn.set_seed(3)
    first = _compiled()
    h1 = first.fit(x, y, batch_size=4, epochs=2, verbose=0)
    path = tmp_path / "augmented.safetensors"
    saving.save_model(first, path)
    tn.set_seed(999)  # the global stream must not matter after loading
    resumed = tn.load_model(path)
    assert [type(l).__name__ for l in resumed.layers[:6]] == [
        "RandomFlip", "RandomTranslation", "RandomRotation", "RandomZoom", "RandomContrast",
        "RandomCrop"]
    h2 = resumed.fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert h1.history["loss"] + h2.history["loss"] == h_straight.history["loss"]
    for a, b in zip(straight.parameters(), resumed.parameters()):
        assert np.array_equal(a.value, b.value)
    for a, b in zip(straight.layers[:6], resumed.layers[:6]):
        assert a.rng.bit_generator.state == b.rng.bit_generator.state
    np.testing.assert_array_equal(straight.predict(x, verbose=0), resumed.predict(x, verbose=0))


def test_rng_setter_checks_type():
    layer = RandomZoom(0.2)
    layer.rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match=re.escape(
            "RandomZoom 'random_zoom': rng must be a numpy.random.Generator, got int")):
        layer.rng = 3


# -- shapes, config, errors ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", sorted(ALL_LAYERS))
def test_output_shape_config_round_trip_and_summary(kind):
    layer = ALL_LAYERS[kind](seed=2)
    expect = (None, 5, 4, 3) if kind == "crop" else (None, 9, 8, 3)
    assert layer.output_shape((None, 9, 8, 3)) == expect
    for training in (False, True):
        assert layer(_x((2, 9, 8, 3)), training=training).shape == (2, *expect[1:])
    config = layer.get_config()
    assert json.loads(json.dumps(config)) == config
    assert type(layer).from_config(config).get_config() == config
    model = tn.Sequential([Input((9, 8, 3)), layer])
    rows = []
    model.summary(print_fn=rows.append)
    assert f"({type(layer).__name__})" in rows[0] and layer.count_params() == 0


def test_keras_defaults():
    assert RandomFlip().mode == "horizontal_and_vertical"
    for layer in (RandomTranslation(0.1, 0.1), RandomRotation(0.1), RandomZoom(0.1)):
        assert (layer.fill_mode, layer.interpolation, layer.fill_value, layer.seed) == (
            "reflect", "bilinear", 0.0, None)
    assert RandomZoom(0.1).width_factor is None
    contrast = RandomContrast(0.2)
    assert contrast.value_range == [0, 255] and contrast.factor == (0.0, 0.2)
    assert RandomRotation(-0.2).factor == (-0.2, 0.2)
    assert RandomRotation((0.3, -0.1)).factor == (-0.1, 0.3)
    assert RandomContrast((0.4, 0.1)).factor == (0.1, 0.4)
    assert (RandomTranslation(0.2, (0.3, -0.1)).width_lower,
            RandomTranslation(0.2, (0.3, -0.1)).width_upper) == (-0.1, 0.3)


@pytest.mark.parametrize("make,exc,message", [
    (lambda: RandomFlip("diagonal"), ValueError,
     "RandomFlip: mode must be 'horizontal', 'vertical' or 'horizontal_and_vertical', "
     "got 'diagonal'"),
    (lambda: RandomCrop(0, 3), ValueError, "RandomCrop: height must be a positive int, got 0"),
    (lambda: RandomCrop(3, 2.5), TypeError,
     "RandomCrop: width must be a positive int, got 2.5"),
    (lambda: RandomRotation(1.5), ValueError,
     "RandomRotation: factor must be a number or a tuple of 2 numbers in [-1, 1], got 1.5"),
    (lambda: RandomRotation((0.1, 0.2, 0.3)), ValueError, "got (0.1, 0.2, 0.3)"),
    (lambda: RandomRotation("0.2"), TypeError, "got '0.2'"),
    (lambda: RandomRotation(float("nan")), ValueError, "got nan"),
    (lambda: RandomZoom(-1.0), ValueError,
     "RandomZoom: height_factor must be a number or a tuple of 2 numbers in (-1, 1], got -1.0"),
    (lambda: RandomZoom(0.2, (0.1, -1.0)), ValueError, "width_factor"),
    (lambda: RandomTranslation(0.1, None), TypeError,
     "RandomTranslation: width_factor must be a number or a tuple of 2 numbers in [-1, 1], "
     "got None"),
    (lambda: RandomTranslation(0.1, 0.1, fill_mode="mirror"), ValueError,
     "RandomTranslation: fill_mode must be 'reflect', 'wrap', 'constant' or 'nearest', "
     "got 'mirror'"),
    (lambda: RandomZoom(0.1, interpolation="bicubic"), ValueError,
     "RandomZoom: interpolation must be 'nearest' or 'bilinear', got 'bicubic'"),
    (lambda: RandomRotation(0.1, fill_value="0"), TypeError,
     "RandomRotation: fill_value must be a finite number, got '0'"),
    (lambda: RandomContrast(-0.1), ValueError,
     "RandomContrast: factor must be a number or a tuple of 2 numbers in [0, 1], got -0.1"),
    (lambda: RandomContrast(0.1, value_range=(1, 0)), ValueError,
     "RandomContrast: value_range must be a tuple of 2 finite numbers (low, high) with "
     "low < high, got (1, 0)"),
    (lambda: RandomContrast(0.1, value_range=255), TypeError, "got 255"),
    (lambda: RandomFlip(seed=-1), ValueError, "RandomFlip: seed must be None or a "
                                              "non-negative int, got -1"),
    (lambda: RandomFlip(data_format="channels_first"), ValueError,
     "RandomFlip: data_format must be None or 'channels_last'"),
])
def test_bad_arguments(make, exc, message):
    with pytest.raises(exc, match=re.escape(message)):
        make()


def test_bad_inputs_and_backward_errors():
    layer = RandomRotation(0.2)
    with pytest.raises(ValueError, match=re.escape(
            "RandomRotation 'random_rotation': input must have rank 4 [batch, height, width, "
            "channels], got shape (None, 3, 4)")):
        layer(_x((2, 3, 4)), training=True)
    with pytest.raises(RuntimeError, match="backward called before forward"):
        RandomZoom(0.1).backward(_x((1, 2, 2, 1)))
    layer(_x((2, 3, 4, 1)), training=True)
    with pytest.raises(ValueError, match=re.escape("grad_output must have shape (2, 3, 4, 1)")):
        layer.backward(_x((2, 3, 4, 2)))
    with pytest.raises(ValueError, match=re.escape(
            "RandomTranslation: the transformation's 'translations' holds 1 values for a "
            "batch of 2")):
        RandomTranslation(0.1, 0.1)._apply(_x((2, 3, 3, 1)), {"translations": [[1.0, 0.0]]})
    with pytest.raises(ValueError, match=re.escape("window start (5, 0) is outside")):
        RandomCrop(2, 2)._apply(_x((1, 4, 4, 1)), {"h_start": 5, "w_start": 0})
