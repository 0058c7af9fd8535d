"""Small Keras layers and the lower-case merge functions (issue 45 item 4): values against
Keras 3.15.1 (goldens below, from ``KERAS_BACKEND=jax`` on the inputs of :func:`inp`),
finite-difference gradients, ``output_shape``, the summary row, the config round trip,
symbolic use in a functional model, and the constructor errors."""

from __future__ import annotations

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet.testing import check_gradients


def inp(shape: tuple, k: int = 0) -> np.ndarray:
    """Deterministic inputs (the same in the Keras script that made the goldens)."""
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + k) * 1.5).reshape(shape).astype(np.float32)


# Keras 3.15.1 outputs (rounded to 7 decimals), made by:
#   a=inp((2,3,4)); b=inp((2,5,4),1); c=inp((2,3,6),2); v=inp((2,4),3); w=inp((2,4),4)
#   x4=inp((2,2,3,4),5); keras.layers.Dot(axes=2)([a,b]) ... (see each test)
KERAS = {
    'dot_axes2': [[[3.0158455, -4.1019211, 4.7139983, -4.7813473, 4.2961869], [-1.5649761, 2.869312, -3.8420837, 4.370882, -4.3946018], [-0.0667345, -1.3051385, 2.5261958, -3.455338, 3.9851975]], [[3.7300653, -3.91382, 3.6453121, -2.9555688, 1.9242939], [-2.974556, 3.7200072, -4.0355921, 3.8848422, -3.2851787], [1.8753209, -3.0963278, 3.9595375, -4.3652015, 4.2664433]]],
    'dot_axes11_norm': [[[0.5617077, 0.9367053, 0.8755825, 0.3947203, -0.2681584, -0.8006836], [0.664615, 0.0618484, -0.5772585, -0.943846, -0.8602956, -0.379454], [0.234286, -0.4080186, -0.866112, -0.9122183, -0.5262995, 0.0995017], [0.0240139, -0.5876088, -0.9301718, -0.8293505, -0.3371532, 0.3063985]], [[-0.012452, -0.616039, -0.9368923, -0.8106947, -0.3027156, 0.3407491], [-0.2960118, -0.8078991, -0.9455626, -0.6310271, -0.0215567, 0.5924712], [-0.9973387, -0.7270431, -0.1109995, 0.5615612, 0.9618106, 0.9136998], [-0.3447273, 0.3030452, 0.8160428, 0.940923, 0.6198885, 0.0150263]]],
    'dot_2d': [[2.9857693], [2.7435026]],
    'dot_2d_norm': [[0.6224272], [0.589994]],
    'dot_fn': [[[3.0158455, -4.1019211, 4.7139983, -4.7813473, 4.2961869], [-1.5649761, 2.869312, -3.8420837, 4.370882, -4.3946018], [-0.0667345, -1.3051385, 2.5261958, -3.455338, 3.9851975]], [[3.7300653, -3.91382, 3.6453121, -2.9555688, 1.9242939], [-2.974556, 3.7200072, -4.0355921, 3.8848422, -3.2851787], [1.8753209, -3.0963278, 3.9595375, -4.3652015, 4.2664433]]],
    'permute': [[[0.0, 0.5024822, -0.9469], [0.9663265, -0.5261748, 0.0252209], [1.4781746, -1.3073636, 0.9854799], [1.294814, -1.4736789, 1.4822524]], [[1.2818984, -1.4687666, 1.485911], [0.4786475, -0.9272057, 1.2686203], [-0.5497187, 0.0504346, 0.4546775], [-1.3195436, 1.0043546, -0.5731071]]],
    'permute3': [[[[-1.4383864, 1.497815, -1.3841631], [1.1105639, -0.708633, 0.2248158]], [[-0.8260283, 1.1977307, -1.4310288], [1.4989641, -1.3936861, 1.1273601]], [[0.1748238, 0.3343349, -0.8048594], [1.1823781, -1.4232668, 1.4996893]], [[1.0934535, -0.6863039, 0.1998481], [0.3097012, -0.7834629, 1.1666912]]], [[[0.28498, -0.7618449, 1.1506746], [-1.4065377, 1.4998678, -1.4198803]], [[-0.7307618, 0.24972, 0.2601782], [-0.7400115, 1.1343325, -1.3975754]], [[-1.4028149, 1.1438377, -0.7526839], [0.2745536, 0.2353029, -0.7179689]], [[-1.4151022, 1.4999906, -1.4115471], [1.1599919, -0.7743933, 0.2993096]]]],
    'repeat': [[[0.21168, -0.7947542, -1.4274031, -1.3887221], [0.21168, -0.7947542, -1.4274031, -1.3887221], [0.21168, -0.7947542, -1.4274031, -1.3887221]], [[-0.6969033, 0.32268, 1.1905018, 1.498412], [-0.6969033, 0.32268, 1.1905018, 1.498412], [-0.6969033, 0.32268, 1.1905018, 1.498412]]],
    'unit': [[[0.0, 0.4412804, 0.6750197, 0.5912868], [0.2392697, -0.2505516, -0.6225345, -0.7017298], [-0.4696206, 0.0125084, 0.4887546, 0.7351319]], [[0.6478075, 0.2418846, -0.2778004, -0.6668315], [-0.731803, -0.4619739, 0.0251287, 0.5004129], [0.7122341, 0.6080813, 0.2179383, -0.2747045]]],
    'unit12': [[[0.0, 0.2652591, 0.4057627, 0.3554298], [0.1379327, -0.1444363, -0.3588747, -0.4045287], [-0.2599265, 0.0069232, 0.2705168, 0.4068821]], [[0.3655632, 0.1364975, -0.1567651, -0.3762986], [-0.418853, -0.2644143, 0.0143826, 0.2864151], [0.4237421, 0.3617766, 0.1296619, -0.1634348]]],
    'actreg_loss': 3.6493509,
    'concat_fn': [[[0.0, 0.9663265, 1.4781746, 1.294814], [0.5024822, -0.5261748, -1.3073636, -1.4736789], [-0.9469, 0.0252209, 0.9854799, 1.4822524], [1.2622064, 1.4874972, 1.0131948, 0.062371], [-0.9177868, -1.4662951, -1.325182, -0.560815], [0.467312, 1.2756549, 1.4840374, 0.9944538], [0.0371631, -0.937606, -1.4714043, -1.3131783], [-0.5373439, 0.4912117, 1.2887428, 1.480158]], [[1.2818984, 0.4786475, -0.5497187, -1.3195436], [-1.4687666, -0.9272057, 0.0504346, 1.0043546], [1.485911, 1.2686203, 0.4546775, -0.5731071], [0.9754317, 0.0119448, -0.95716, -1.4760975], [-1.3008033, -0.5137209, 0.5149724, 1.3014661], [1.47586, 0.9561339, -0.013277, -0.9764435], [-1.4803734, -1.2880605, -0.4899527, 0.5385875], [1.3138217, 1.4711449, 0.9365657, -0.0384949]]],
    'avg_fn': [[-0.4617619, -1.1473196, -1.2932749, -0.8309829], [0.0221334, 0.86484, 1.3007989, 1.1249716]]
}

A, B, C = inp((2, 3, 4)), inp((2, 5, 4), 1), inp((2, 3, 6), 2)
V, W, X4 = inp((2, 4), 3), inp((2, 4), 4), inp((2, 2, 3, 4), 5)

# name -> (factory, inputs, Keras golden key)
DETERMINISTIC = {
    "dot_axes2": (lambda: L.Dot(axes=2), [A, B]),
    "dot_axes11_norm": (lambda: L.Dot(axes=(1, 1), normalize=True), [A, C]),
    "dot_2d": (lambda: L.Dot(axes=1), [V, W]),
    "dot_2d_norm": (lambda: L.Dot(axes=-1, normalize=True), [V, W]),
    "permute": (lambda: L.Permute((2, 1)), A),
    "permute3": (lambda: L.Permute((3, 1, 2)), X4),
    "repeat": (lambda: L.RepeatVector(3), V),
    "unit": (lambda: L.UnitNormalization(), A),
    "unit12": (lambda: L.UnitNormalization(axis=(1, 2)), A),
}


def _shape(x):
    return [(None, *a.shape[1:]) for a in x] if isinstance(x, list) else (None, *x.shape[1:])


@pytest.mark.parametrize("key", sorted(DETERMINISTIC))
def test_values_match_keras_and_gradients_check(key):
    make, x = DETERMINISTIC[key]
    layer = make()
    y = np.asarray(layer(x))
    np.testing.assert_allclose(y, np.asarray(KERAS[key], dtype=np.float32), rtol=1e-5,
                               atol=1e-5)
    assert tuple(layer.output_shape(_shape(x))) == (None, *y.shape[1:])
    assert check_gradients(make(), x=x, seed=3) <= 1.0
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config


@pytest.mark.parametrize("key", sorted(DETERMINISTIC))
def test_symbolic_use_summary_row_and_predict(key):
    make, x = DETERMINISTIC[key]
    layer = make()
    xs = x if isinstance(x, list) else [x]
    inputs = [tn.Input(a.shape[1:]) for a in xs]
    out = layer(inputs if isinstance(x, list) else inputs[0])
    model = tn.Model(inputs if isinstance(x, list) else inputs[0], out)
    np.testing.assert_allclose(model.predict(x, verbose=0), np.asarray(KERAS[key]),
                               rtol=1e-5, atol=1e-5)
    rows = []
    model.summary(print_fn=rows.append)
    text = "\n".join(rows)
    shown = "(" + ", ".join("None" if d is None else str(d) for d in out.shape) + ")"
    assert f"({type(layer).__name__})" in text and shown in text, text


def test_dot_with_unknown_sizes_and_bad_axes():
    assert L.Dot(axes=2).output_shape([(None, None, 4), (None, 5, 4)]) == (None, None, 5)
    assert L.Dot(axes=1).output_shape([(None, 4), (None, 4)]) == (None, 1)
    with pytest.raises(ValueError, match=r"Dot 'dot.*': the inputs' sizes along the dot "
                                         r"axes differ: 4 .* != 3"):
        L.Dot(axes=2)([A, inp((2, 4, 3))])
    with pytest.raises(ValueError, match=r"axis 0 is not a non-batch axis"):
        L.Dot(axes=0)([V, W])
    with pytest.raises(ValueError, match=r"exactly 2 inputs"):
        L.Dot(axes=1)([V, W, V])


def test_activity_regularization_loss_matches_keras_and_its_gradient():
    layer = L.ActivityRegularization(l1=0.1, l2=0.2)
    y = layer(A)
    np.testing.assert_array_equal(np.asarray(y), A)
    (loss,) = layer.losses
    np.testing.assert_allclose(float(np.asarray(loss)), KERAS["actreg_loss"], rtol=1e-6)
    # backward: the output's gradient plus the added loss's (as in training; tinynet
    # takes d|x|/dx = 1 at 0)
    g = inp(A.shape, 7)
    layer(A)
    dx = np.asarray(layer.backward(g))
    np.testing.assert_allclose(dx, g + (0.1 * np.where(A >= 0, 1, -1) + 0.4 * A) / 2, rtol=1e-5, atol=1e-6)
    assert L.ActivityRegularization().get_config() == {
        "name": "activity_regularization", "trainable": True, "l1": 0.0, "l2": 0.0}
    assert L.ActivityRegularization(0.0, 0.0)(A) is not None
    assert L.ActivityRegularization().losses == []


def test_activity_regularization_joins_the_training_loss():
    tn.set_seed(0)
    x, y = inp((8, 4)), inp((8, 2), 1)
    inputs = tn.Input((4,))
    dense = L.Dense(2)
    model = tn.Model(inputs, L.ActivityRegularization(l2=0.5)(dense(inputs)))
    model.compile(optimizer="sgd", loss="mse")
    pred = model.predict(x, verbose=0)
    mse = float(np.mean((pred - y) ** 2))
    penalty = 0.5 * float(np.sum(pred.astype(np.float64) ** 2)) / 8
    assert model.evaluate(x, y, verbose=0) == pytest.approx(mse + penalty, rel=1e-5)


def test_identity():
    layer = L.Identity()
    np.testing.assert_array_equal(np.asarray(layer(A)), A)
    assert check_gradients(L.Identity(), x=A) <= 1.0
    assert layer.output_shape((None, None, 4)) == (None, None, 4)
    assert L.Identity.from_config(layer.get_config()).get_config() == layer.get_config()


@pytest.mark.parametrize("make", [lambda: L.GaussianNoise(0.3, seed=4),
                                  lambda: L.GaussianDropout(0.3, seed=4)])
def test_gaussian_layers_are_the_identity_at_inference_and_seeded(make):
    layer = make()
    np.testing.assert_array_equal(np.asarray(layer(A)), A)
    assert check_gradients(make(), x=A) <= 1.0  # the identity at inference
    one, two = make(), make()
    y1, y2 = np.asarray(one(A, training=True)), np.asarray(two(A, training=True))
    np.testing.assert_array_equal(y1, y2)  # same seed, same noise
    assert not np.array_equal(y1, A)
    assert not np.array_equal(np.asarray(one(A, training=True)), y1)  # a new draw per call
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config
    assert layer.output_shape((None, 3, 4)) == (None, 3, 4)


def test_gaussian_noise_training_output_and_gradient():
    layer = L.GaussianNoise(0.5, seed=1)
    x = np.zeros((400, 50), np.float32)
    noise = np.asarray(layer(x, training=True))
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 0.5) < 0.01
    g = inp(x.shape, 2)
    np.testing.assert_array_equal(np.asarray(layer.backward(g)), g)


def test_gaussian_dropout_training_output_and_gradient():
    layer = L.GaussianDropout(0.2, seed=1)
    x = np.ones((400, 50), np.float32)
    y = np.asarray(layer(x, training=True))
    assert abs(y.mean() - 1) < 0.01 and abs(y.std() - 0.5) < 0.01  # sqrt(.2 / .8) = 0.5
    g = inp(x.shape, 2)
    np.testing.assert_allclose(np.asarray(layer.backward(g)), g * y, rtol=1e-6)


def test_gaussian_layers_in_fit_use_training_noise():
    tn.set_seed(0)
    x, y = inp((16, 4)), inp((16, 2), 1)
    model = tn.Sequential([tn.Input((4,)), L.GaussianNoise(0.1), L.GaussianDropout(0.1),
                           L.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    np.testing.assert_array_equal(model.predict(x, verbose=0), model.predict(x, verbose=0))


MERGE_FUNCTIONS = {
    "add": (lambda xs: L.add(xs), lambda a, b: a + b),
    "subtract": (lambda xs: L.subtract(xs), lambda a, b: a - b),
    "multiply": (lambda xs: L.multiply(xs), lambda a, b: a * b),
    "average": (lambda xs: L.average(xs), lambda a, b: (a + b) / 2),
    "maximum": (lambda xs: L.maximum(xs), np.maximum),
    "minimum": (lambda xs: L.minimum(xs), np.minimum),
    "concatenate": (lambda xs: L.concatenate(xs, axis=1),
                    lambda a, b: np.concatenate([a, b], axis=1)),
    "dot": (lambda xs: L.dot(xs, axes=1), lambda a, b: np.sum(a * b, 1, keepdims=True)),
}


@pytest.mark.parametrize("name", sorted(MERGE_FUNCTIONS))
def test_merge_functions_on_arrays_and_symbolic_tensors(name):
    fn, expected = MERGE_FUNCTIONS[name]
    want = expected(V, W)
    np.testing.assert_allclose(np.asarray(fn([V, W])), want, rtol=1e-6, atol=1e-6)
    i1, i2 = tn.Input((4,)), tn.Input((4,))
    model = tn.Model([i1, i2], fn([i1, i2]))
    np.testing.assert_allclose(model.predict([V, W], verbose=0), want, rtol=1e-6, atol=1e-6)
    assert type(model.layers[-1]).__name__.lower() == name


def test_merge_functions_match_keras():
    np.testing.assert_allclose(np.asarray(L.dot([A, B], axes=-1)), KERAS["dot_fn"], atol=1e-5)
    np.testing.assert_allclose(np.asarray(L.concatenate([A, B], axis=1)), KERAS["concat_fn"],
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(L.average([V, W])), KERAS["avg_fn"], atol=1e-6)
    named = L.add([tn.Input((4,)), tn.Input((4,))], name="the_sum")
    assert named.shape == (None, 4)
    with pytest.raises(TypeError, match=r"add: inputs must be a list of tensors"):
        L.add(V)


@pytest.mark.parametrize("make, error, message", [
    (lambda: L.Dot(axes="1"), TypeError, r"Dot: axes must be an int or a tuple of two ints, "
                                         r"got '1'"),
    (lambda: L.Dot(axes=(1, 2, 3)), ValueError, r"Dot: axes .* got \(1, 2, 3\)"),
    (lambda: L.Dot(axes=1, normalize="yes"), TypeError, r"Dot: normalize must be a bool"),
    (lambda: L.Permute((1, 3)), ValueError, r"Permute: dims must be .* got \(1, 3\)"),
    (lambda: L.Permute(2), TypeError, r"Permute: dims must be .* got 2"),
    (lambda: L.RepeatVector(0), ValueError, r"RepeatVector: n must be a positive int, got 0"),
    (lambda: L.RepeatVector(2.0), TypeError, r"RepeatVector: n must be a positive int"),
    (lambda: L.UnitNormalization(axis="x"), TypeError, r"UnitNormalization: axis must be"),
    (lambda: L.ActivityRegularization(l1=-1.0), ValueError,
     r"ActivityRegularization: l1 must be a non-negative finite float, got -1.0"),
    (lambda: L.ActivityRegularization(l2="a"), TypeError, r"ActivityRegularization: l2 must"),
    (lambda: L.GaussianNoise(1.5), ValueError,
     r"GaussianNoise: stddev must be a float in \[0, 1\], got 1.5"),
    (lambda: L.GaussianNoise(0.1, seed=-1), ValueError, r"GaussianNoise: seed must be"),
    (lambda: L.GaussianDropout(1.0), ValueError,
     r"GaussianDropout: rate must be a float in \[0, 1\), got 1.0"),
    (lambda: L.GaussianDropout(None), TypeError, r"GaussianDropout: rate must be a float"),
])
def test_bad_constructor_arguments(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_bad_input_ranks_name_the_layer():
    with pytest.raises(ValueError, match=r"Permute 'permute.*': input must have rank 3"):
        L.Permute((2, 1))(V)
    with pytest.raises(ValueError, match=r"RepeatVector 'repeat_vector.*': input must have "
                                         r"rank 2"):
        L.RepeatVector(2)(A)
    with pytest.raises(ValueError, match=r"UnitNormalization 'unit_normalization.*': axis 3"):
        L.UnitNormalization(axis=3)(A)


def test_export_refuses_them_by_name(tmp_path):
    model = tn.Sequential([tn.Input((3, 4)), L.Permute((2, 1)), L.GaussianNoise(0.1)])
    with pytest.raises(ValueError, match=r"'permute' \(Permute\), 'gaussian_noise' "
                                         r"\(GaussianNoise\) have no ONNX export"):
        model.export(tmp_path / "m.onnx")


def test_save_and_load_keep_the_seed_and_predictions(tmp_path):
    inputs = tn.Input((3, 4))
    h = L.GaussianNoise(0.1, seed=3)(L.Permute((2, 1))(inputs))
    h = L.Dense(2)(L.Flatten()(L.UnitNormalization()(h)))
    out = L.dot([L.RepeatVector(2)(h), L.RepeatVector(2)(h)], axes=2)
    model = tn.Model(inputs, out)
    model.save(tmp_path / "m.safetensors")
    again = tn.load_model(tmp_path / "m.safetensors")
    np.testing.assert_array_equal(again.predict(A, verbose=0), model.predict(A, verbose=0))
    assert again.get_layer("gaussian_noise").seed == 3
