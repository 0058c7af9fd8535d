"""Errors that point to the fix (issue 43): unknown keywords name the public class and the
closest valid names (:mod:`tinynet.keywords`), labels that fit another loss name it before
the first forward pass, and file errors name the user's path. The exact messages are cases
of the bad-input matrix (``test_bad_inputs.py``); these tests cover the mechanism: every
public class, user subclasses, and what must not change."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pickle
import pkgutil
import warnings

import numpy as np
import pytest

import tinynet as tn
from tinynet import callbacks, keywords, losses, saving
from tinynet.keywords import KeywordChecked, class_keywords, suggestions, unexpected_keywords
from tinynet.layers import Dense, GroupNormalization, Input, Layer
from tinynet.utils import to_categorical

_SKIP_MODULES = ("tinynet.kernels", "tinynet.tools", "tinynet.tuning", "tinynet.warmup")


def _public_classes() -> list[type]:
    found: list[type] = []
    for info in pkgutil.walk_packages(tn.__path__, "tinynet."):
        if info.name.startswith(_SKIP_MODULES) or info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if (inspect.isclass(obj) and issubclass(obj, KeywordChecked)
                    and obj is not KeywordChecked and obj not in found):
                found.append(obj)
    return found


CLASSES = _public_classes()


def _call(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


def test_the_sweep_finds_every_kind_of_public_class():
    names = {cls.__name__ for cls in CLASSES}
    for expected in ("Dense", "GroupNormalization", "MaxPooling2D", "AveragePooling1D",
                     "Sequential", "Model", "Adam", "Nadam", "CategoricalCrossentropy",
                     "Precision", "EarlyStopping", "ExponentialDecay"):
        assert expected in names
    assert len(CLASSES) > 100


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_unknown_keyword_names_the_class_called(cls):
    """Whatever ``__init__`` refuses the keyword (the class's, a base's, a mixin's or
    ``object``'s), the message names the class the user called."""
    try:
        _call(lambda: cls(zz_not_an_argument=1))
    except TypeError as exc:
        if "zz_not_an_argument" in str(exc):
            assert str(exc).startswith(
                f"{cls.__name__} got an unexpected keyword argument 'zz_not_an_argument'"), exc
    except Exception:  # noqa: BLE001 - a class whose **kwargs are the user's
        pass


# classes that check their keywords themselves: tn.Model's depend on its use (functional:
# inputs, outputs, name; subclassed: name, trainable, dtype)
SELF_CHECKED = {"Model"}


_LISTED = [c for c in CLASSES if c.__name__ not in SELF_CHECKED]


@pytest.mark.parametrize("cls", _LISTED, ids=[c.__name__ for c in _LISTED])
def test_every_listed_keyword_is_accepted(cls):
    """The valid names a message lists (and suggests) are all accepted: none is a base's
    argument that the class fixes itself (``InstanceNormalization`` and ``groups``)."""
    for name in class_keywords(cls):
        try:
            _call(lambda: cls(**{name: object()}))
        except TypeError as exc:
            assert "unexpected keyword" not in str(exc), (name, exc)
            assert "multiple values" not in str(exc), (name, exc)
        except Exception:  # noqa: BLE001 - the value is refused, not the keyword
            pass


def test_model_checks_its_keywords_for_each_use():
    inp = tn.Input((3,))
    out = tn.layers.Dense(2)(inp)
    with pytest.raises(TypeError, match="^Model got an unexpected keyword argument 'nmae'; "
                                        "did you mean 'name'\\?$"):
        tn.Model(inp, out, nmae="m")

    class Sub(tn.Model):
        def call(self, inputs):
            return inputs

    with pytest.raises(TypeError, match="^Sub got an unexpected keyword argument 'trainabel'; "
                                        "did you mean 'trainable'\\?$"):
        Sub(trainabel=False)
    assert Sub(name="s", trainable=False).name == "s"


def test_valid_keywords_follow_the_kwargs_chain():
    assert class_keywords(GroupNormalization) == [
        "groups", "axis", "epsilon", "center", "scale", *class_keywords(Layer)]
    assert "name" in class_keywords(tn.layers.Concatenate)
    assert "groups" not in class_keywords(tn.layers.InstanceNormalization)


def test_signatures_are_unchanged():
    """The check wraps ``__init__`` and the methods without hiding their signatures."""
    params = inspect.signature(Dense).parameters
    assert list(params)[:2] == ["units", "activation"]
    assert params["use_bias"].default is True
    assert list(inspect.signature(tn.Sequential.fit).parameters)[:4] == [
        "self", "x", "y", "batch_size"]
    assert list(inspect.signature(tn.Input).parameters) == [
        "shape", "dtype", "name", "batch_size", "batch_shape", "sparse"]


def test_valid_calls_are_untouched():
    layer = Dense(3, activation="relu", use_bias=False, name="d")
    assert layer.name == "d" and layer.activation is not None and not layer.use_bias
    clone = pickle.loads(pickle.dumps(layer))
    assert clone.name == "d"
    assert Dense.from_config(layer.get_config()).get_config() == layer.get_config()


def test_positional_errors_stay_pythons():
    with pytest.raises(TypeError, match="positional argument"):
        Dense(3, "relu", True)


def test_a_user_layer_gets_the_check_for_free():
    class Scale(Layer):
        def __init__(self, factor: float = 2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def forward(self, x, training=False):
            return tn.Tensor(np.asarray(x) * self.factor)

    assert Scale(3.0, name="s").name == "s"
    with pytest.raises(TypeError) as info:
        Scale(factr=3.0, nmae="s")
    assert str(info.value) == ("Scale got unexpected keyword arguments 'factr' (did you mean "
                               "'factor'?), 'nmae' (did you mean 'name'?)")


def test_a_subclass_without_init_is_named():
    class MyDense(Dense):
        pass

    with pytest.raises(TypeError, match="^MyDense got an unexpected keyword argument 'unit'; "
                                        "did you mean 'units'\\?$"):
        MyDense(unit=3)


def test_kwargs_a_class_keeps_are_not_refused():
    class Tagged(Layer):
        def __init__(self, **tags):
            super().__init__()
            self.tags = tags

    assert Tagged(colour="red").tags == {"colour": "red"}
    assert callbacks.LambdaCallback(note="kept").note == "kept"  # Keras: extra attributes


def test_an_inner_constructors_error_is_kept():
    """A typo inside a user's constructor names the class it was passed to."""
    class Block(Layer):
        def __init__(self, units: int = 2, **kwargs):
            super().__init__(**kwargs)
            self.dense = Dense(units, activaton="relu")

    with pytest.raises(TypeError, match="^Dense got an unexpected keyword argument "
                                        "'activaton'; did you mean 'activation'\\?$"):
        Block(3)


def test_other_type_errors_pass_through():
    """Only Python's refusal of an unknown keyword is rewritten: a validation error of a
    class that keeps its extra keywords stays as it is."""
    with pytest.raises(TypeError, match="^LambdaCallback: on_epoch_end must be callable"):
        callbacks.LambdaCallback(on_epoch_end=3, note="kept")
    with pytest.raises(TypeError, match="^Dense: units must be a positive int"):
        Dense("3", activation="relu")


def test_methods_name_the_instances_class():
    class MySequential(tn.Sequential):
        pass

    model = MySequential([Input((2,)), Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(TypeError, match="^MySequential.fit got an unexpected keyword argument "
                                        "'epoch'; did you mean 'epochs'\\?$"):
        model.fit(np.zeros((2, 2)), np.zeros((2, 1)), epoch=1)


def test_message_formats():
    valid = ["units", "activation", "use_bias", "name"]
    assert str(unexpected_keywords("Dense", ["unit"], valid)) == (
        "Dense got an unexpected keyword argument 'unit'; did you mean 'units'?")
    assert str(unexpected_keywords("Dense", ["zzz"], valid)) == (
        "Dense got an unexpected keyword argument 'zzz'; valid keyword arguments: units, "
        "activation, use_bias, name")
    assert str(unexpected_keywords("Dense", ["unit", "zzz"], valid)) == (
        "Dense got unexpected keyword arguments 'unit' (did you mean 'units'?), 'zzz'; valid "
        "keyword arguments: units, activation, use_bias, name")
    assert str(unexpected_keywords("Thing", ["x"], [])) == (
        "Thing got an unexpected keyword argument 'x'; valid keyword arguments: none")


@pytest.mark.parametrize("key, valid, expected", [
    ("group", ["groups", "axis"], ["groups"]),
    ("Units", ["units"], ["units"]),
    ("lr", ["learning_rate", "name"], ["learning_rate"]),
    ("pool", ["pool_size", "strides", "padding"], ["pool_size"]),
    ("shape", ["target_shape", "name", "input_shape"], ["target_shape", "input_shape"]),
    ("epoch", ["epochs", "initial_epoch"], ["epochs"]),
    ("beta1", ["beta_1", "beta_2"], ["beta_1"]),
    ("validation", ["validation_split", "validation_data", "validation_freq", "shuffle"],
     ["validation_split", "validation_data", "validation_freq"]),
    ("amsgrad", ["learning_rate", "beta_1", "epsilon"], []),
    ("lr", ["rate"], []),  # an alias only when its target is valid
])
def test_suggestions(key, valid, expected):
    assert suggestions(key, valid) == expected


def test_keywords_module_is_on_the_lowest_floor():
    tree = ast.parse(inspect.getsource(keywords))
    imported = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names]
    imported += [node.module or "" for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported if name.startswith("tinynet")]


# -- labels that fit another loss ------------------------------------------------------------
LABELS = np.array([0, 1, 2, 1])


@pytest.mark.parametrize("loss, y, pred_shape", [
    (losses.SparseCategoricalCrossentropy(), LABELS, (4, 3)),
    (losses.SparseCategoricalCrossentropy(), LABELS[:, None], (4, 3)),
    (losses.SparseCategoricalCrossentropy(), np.zeros((4, 5, 5)), (4, 5, 5, 3)),
    (losses.CategoricalCrossentropy(), to_categorical(LABELS, 3), (4, 3)),
    (losses.CategoricalCrossentropy(), np.full((4, 3), 1 / 3), (4, 3)),  # soft labels
    (losses.CategoricalFocalCrossentropy(), to_categorical(LABELS, 3), (4, 3)),
    (losses.BinaryCrossentropy(), LABELS % 2, (4, 1)),
    (losses.BinaryCrossentropy(), (LABELS % 2)[:, None], (4, 1)),
    (losses.BinaryCrossentropy(), np.full((4, 3), 0.25), (4, 3)),  # multi-label
    (losses.BinaryFocalCrossentropy(), LABELS % 2, (4, 1)),
    (losses.MeanSquaredError(), np.zeros(4), (4, 1)),
    (losses.Hinge(), np.array([-1, 1, 1, -1]), (4, 1)),
])
def test_matching_labels_pass_the_check(loss, y, pred_shape):
    loss.check_targets(y, pred_shape)


@pytest.mark.parametrize("loss, y, pred_shape, hint", [
    (losses.SparseCategoricalCrossentropy(), to_categorical(LABELS, 3), (4, 3),
     "use CategoricalCrossentropy"),
    (losses.CategoricalCrossentropy(), LABELS, (4, 3), "use SparseCategoricalCrossentropy"),
    (losses.BinaryCrossentropy(), LABELS, (4, 3), "use SparseCategoricalCrossentropy"),
    (losses.BinaryCrossentropy(), LABELS, (4, 1), "use SparseCategoricalCrossentropy"),
    (losses.BinaryCrossentropy(), to_categorical(LABELS % 2, 2), (4, 1),
     "use CategoricalCrossentropy"),
    (losses.BinaryFocalCrossentropy(), LABELS, (4, 3), "use SparseCategoricalCrossentropy"),
    (losses.CategoricalCrossentropy(), (LABELS % 2)[:, None], (4, 1), "use BinaryCrossentropy"),
])
def test_mismatched_labels_name_the_loss_that_fits(loss, y, pred_shape, hint):
    with pytest.raises(ValueError, match=hint):
        loss.check_targets(y, pred_shape)


def test_a_custom_loss_is_not_checked_ahead():
    class Anything(losses.Loss):
        def _compute(self, y_true, y_pred, need_grad):
            return 0.0, np.zeros_like(y_pred) if need_grad else None

    Anything().check_targets(np.zeros((4, 7)), (4, 3))


def test_the_mismatch_fails_before_any_forward_pass(monkeypatch):
    model = tn.Sequential([Input((4,)), Dense(3, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")

    def forward(*args, **kwargs):
        raise AssertionError("the forward pass ran")

    monkeypatch.setattr(model, "_run_forward", forward)
    with pytest.raises(ValueError, match="^Sequential.fit: SparseCategoricalCrossentropy: "
                                         "y_true shape \\(4, 3\\) matches"):
        model.fit(np.zeros((4, 4)), to_categorical(LABELS, 3), verbose=0)


# -- files -----------------------------------------------------------------------------------
SUFFIX_NAMES = ["m.safetensors", "m.h5", "m.keras", "m.weights.h5", "m", "m.safetensors.bak",
                "ckpt_{epoch}", "dir/m.safetensors", "m.SAFETENSORS"]


@pytest.mark.parametrize("name", SUFFIX_NAMES)
def test_save_and_model_checkpoint_accept_the_same_names(tmp_path, name):
    def accepted(fn) -> bool:
        try:
            fn()
        except ValueError as exc:
            assert "must end in .safetensors" in str(exc)
            return False
        except ImportError:  # a Keras name, accepted, without h5py installed
            return True
        return True

    model = tn.Sequential([Input((2,)), Dense(1)])
    target = str(tmp_path / name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    by_save = accepted(lambda: model.save(target))
    assert accepted(lambda: callbacks.ModelCheckpoint(target)) == by_save
    assert by_save == name.endswith((".safetensors", ".keras"))
    by_weights = accepted(lambda: model.save_weights(target))
    assert accepted(lambda: callbacks.ModelCheckpoint(target, save_weights_only=True)) \
        == by_weights
    assert by_weights == name.endswith((".safetensors", ".weights.h5"))


def test_save_into_a_missing_folder_names_it_and_leaves_nothing(tmp_path):
    model = tn.Sequential([Input((2,)), Dense(1)])
    target = str(tmp_path / "missing" / "m.safetensors")
    with pytest.raises(FileNotFoundError) as info:
        model.save(target)
    assert str(info.value) == (f"[Errno 2] save_model: cannot write {target!r}: the folder "
                               f"{os.path.dirname(target)!r} does not exist")
    assert ".tmp" not in str(info.value)
    assert os.listdir(tmp_path) == []


def test_save_over_a_folder_names_the_target(tmp_path):
    model = tn.Sequential([Input((2,)), Dense(1)])
    target = tmp_path / "m.safetensors"
    target.mkdir()
    with pytest.raises(OSError) as info:
        model.save(target)
    assert f"save_model: cannot write {str(target)!r}" in str(info.value)
    assert ".tmp" not in str(info.value)
    assert os.listdir(tmp_path) == ["m.safetensors"]


def test_load_without_the_suffix_suggests_it(tmp_path):
    model = tn.Sequential([Input((2,)), Dense(1)])
    model.save(tmp_path / "m.safetensors")
    stem = str(tmp_path / "m")
    with pytest.raises(FileNotFoundError) as info:
        tn.load_model(stem)
    assert str(info.value).endswith(f"No such file or directory; did you mean "
                                    f"{stem + '.safetensors'!r}?")


def test_files_written_under_other_names_still_load(tmp_path):
    """Earlier tinynet versions wrote safetensors under any name: loading reads the
    contents, whatever the suffix."""
    model = tn.Sequential([Input((2,)), Dense(1)])
    model.save(tmp_path / "m.safetensors")
    os.rename(tmp_path / "m.safetensors", tmp_path / "m.h5")
    loaded = tn.load_model(tmp_path / "m.h5")
    np.testing.assert_array_equal(loaded.get_weights()[0], model.get_weights()[0])
    saving.load_weights(model, tmp_path / "m.h5")
