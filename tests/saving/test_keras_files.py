"""Keras 3 files without Keras: the archive and HDF5 layout tinynet writes, tinynet's own
round trips through ``.keras`` and ``.weights.h5``, Keras-written files read back
(tests/data/keras, written by Keras 3.15.1), hostile archives, and h5py missing."""

import io
import json
import os
import re
import sys
import zipfile

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import (Add, BatchNormalization, Conv2D, Dense, Flatten,
                            GlobalAveragePooling2D, Input, InstanceNormalization, Lambda,
                            MaxPooling2D)

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "keras")


def _cnn() -> tn.Sequential:
    return tn.Sequential([Input((6, 6, 1)), Conv2D(3, 3, activation="relu"),
                          BatchNormalization(), MaxPooling2D(2), Flatten(), Dense(4)])


def _residual() -> tn.Model:
    inputs = Input((6, 6, 2))
    h = Conv2D(2, 3, padding="same", activation="relu")(inputs)
    h = Conv2D(2, 3, padding="same")(h)
    return tn.Model(inputs, Dense(3)(GlobalAveragePooling2D()(Add()([inputs, h]))))


def _nested() -> tn.Model:
    inner = tn.Sequential([Dense(5, activation="relu"), Dense(3)], name="inner")
    inputs = Input((4,))
    return tn.Model(inputs, Dense(2)(inner(inputs)))


INPUT_SHAPES = {"_cnn": (6, 6, 1), "_residual": (6, 6, 2), "_nested": (4,)}
CLASSES = {"_cnn": 4, "_residual": 3, "_nested": 2}


def _data(build):
    x = np.random.default_rng(3).random((12,) + INPUT_SHAPES[build.__name__])
    return x.astype(np.float32), np.arange(12) % CLASSES[build.__name__]


def _trained(build, optimizer="adam"):
    tn.set_seed(0)
    model = build()
    model.compile(optimizer=optimizer,
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    x, y = _data(build)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    return model, x, y


@pytest.fixture
def h5py():
    return pytest.importorskip("h5py")


def _members(path) -> dict:
    with zipfile.ZipFile(path) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def _h5_items(data: bytes, h5py) -> dict:
    items = {}

    def visit(name, obj):  # returns None: visititems stops at the first other value
        items[name] = tuple(obj.shape) if hasattr(obj, "shape") else dict(obj.attrs)

    with h5py.File(io.BytesIO(data), "r") as file:
        file.visititems(visit)
    return items


def test_archive_layout_is_keras(tmp_path, h5py):
    model, _, _ = _trained(_cnn)
    model.save(tmp_path / "m.keras")
    members = _members(tmp_path / "m.keras")
    assert list(members) == ["metadata.json", "config.json", "model.weights.h5"]
    assert json.loads(members["metadata.json"])["keras_version"] == "3.15.1"
    config = json.loads(members["config.json"])
    assert (config["module"], config["class_name"]) == ("keras", "Sequential")
    assert config["build_config"] == {"input_shape": [None, 6, 6, 1]}
    conv = config["config"]["layers"][1]
    assert (conv["module"], conv["class_name"], conv["registered_name"]) == (
        "keras.layers", "Conv2D", None)
    assert "seed" not in conv["config"]
    assert conv["config"]["dtype"]["class_name"] == "DTypePolicy"
    compiled = config["compile_config"]
    assert compiled["optimizer"]["module"] == "keras.optimizers"
    assert compiled["optimizer"]["class_name"] == "Adam"
    assert compiled["loss"]["class_name"] == "SparseCategoricalCrossentropy"
    assert compiled["metrics"] == ["accuracy"]
    items = _h5_items(members["model.weights.h5"], h5py)
    assert items["vars"] == {"name": "sequential"}
    assert items["layers/conv2d/vars/0"] == (3, 3, 1, 3)
    assert items["layers/batch_normalization/vars/3"] == (3,)
    assert items["layers/dense/vars/0"] == (12, 4)
    assert "layers/flatten/vars" in items and "layers/input_layer/vars" not in items
    # iterations, learning rate, then momentum and velocity weight by weight
    optimizer = [items[f"optimizer/vars/{i}"] for i in range(2 + 2 * 6)]
    assert optimizer[:6] == [(), (), (3, 3, 1, 3), (3, 3, 1, 3), (3,), (3,)]
    assert optimizer[-2:] == [(4,), (4,)]
    assert f"optimizer/vars/{2 + 2 * 6}" not in items


def test_functional_layout_names_layers_by_class(tmp_path, h5py):
    model = _nested()
    model.save(tmp_path / "m.keras")
    members = _members(tmp_path / "m.keras")
    config = json.loads(members["config.json"])
    assert (config["class_name"], config["registered_name"]) == ("Functional", "Functional")
    assert config["config"]["input_layers"] == ["input_layer", 0, 0]
    node = config["config"]["layers"][1]["inbound_nodes"][0]
    assert node["args"][0]["config"]["keras_history"] == ["input_layer", 0, 0]
    assert node["args"][0]["config"]["shape"] == [None, 4]
    items = _h5_items(members["model.weights.h5"], h5py)
    assert items["layers/sequential/layers/dense/vars/0"] == (4, 5)
    assert items["layers/sequential/layers/dense_1/vars/0"] == (5, 3)
    assert items["layers/dense/vars/0"] == (3, 2)
    assert "layers/input_layer/vars" in items


@pytest.mark.parametrize("build", [_cnn, _residual, _nested], ids=["cnn", "residual", "nested"])
@pytest.mark.parametrize("optimizer", [
    lambda: "adam", lambda: tn.optimizers.SGD(0.05, momentum=0.9),
    lambda: tn.optimizers.RMSprop(momentum=0.5, centered=True),
    lambda: tn.optimizers.AdamW(amsgrad=True)], ids=["adam", "sgd", "rmsprop", "adamw"])
def test_round_trip_keeps_predictions_state_and_training(tmp_path, h5py, build, optimizer):
    model, x, y = _trained(build, optimizer())
    model.save(tmp_path / "m.keras")
    loaded = tn.models.load_model(tmp_path / "m.keras")
    assert type(loaded) is type(model)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert type(loaded.optimizer) is type(model.optimizer)
    assert loaded.optimizer.iterations == model.optimizer.iterations == 3
    original, restored = model.optimizer.get_state(), loaded.optimizer.get_state()
    assert sorted(original) == sorted(restored)
    for key in original:
        np.testing.assert_array_equal(original[key], restored[key], err_msg=key)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    loaded.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_uncompiled_model_and_compile_false(tmp_path, h5py):
    model = _nested()
    model.save(tmp_path / "m.keras")
    assert json.loads(_members(tmp_path / "m.keras")["config.json"])["compile_config"] is None
    loaded = tn.models.load_model(tmp_path / "m.keras")
    assert not loaded.compiled
    compiled, x, _ = _trained(_cnn)
    compiled.save(tmp_path / "c.keras")
    bare = tn.models.load_model(tmp_path / "c.keras", compile=False)
    assert not bare.compiled
    np.testing.assert_array_equal(bare.predict(x, verbose=0), compiled.predict(x, verbose=0))


def test_weights_h5_both_ways(tmp_path, h5py):
    model, x, _ = _trained(_residual)
    model.save_weights(tmp_path / "w.weights.h5")
    with h5py.File(tmp_path / "w.weights.h5", "r") as file:
        assert file["layers/conv2d/vars/0"].shape == (3, 3, 2, 2)
        assert file["optimizer/vars/0"][()] == 3
    tn.set_seed(1)
    other = _residual()
    other.load_weights(tmp_path / "w.weights.h5")
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))


def test_checkpoint_writes_keras_files(tmp_path, h5py):
    model, x, y = _trained(_cnn)
    model.fit(x, y, epochs=1, verbose=0, callbacks=[
        tn.callbacks.ModelCheckpoint(str(tmp_path / "m.keras"), monitor="loss"),
        tn.callbacks.ModelCheckpoint(str(tmp_path / "w.weights.h5"), monitor="loss",
                                     save_weights_only=True)])
    loaded = tn.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert os.path.getsize(tmp_path / "w.weights.h5") > 0


def test_tinynet_only_layers_are_refused_by_name(tmp_path, h5py):
    inputs = Input((4, 4, 2))
    model = tn.Model(inputs, Lambda(tn.ops.tanh, name="fn")(
        InstanceNormalization(name="inorm")(inputs)))
    with pytest.raises(ValueError) as info:
        model.save(tmp_path / "m.keras")
    assert str(info.value) == (
        "save_model: a Keras .keras file cannot hold these tinynet layers: 'inorm' "
        "(InstanceNormalization: Keras 3 has no InstanceNormalization layer), 'fn' (Lambda: "
        "a Lambda layer's function would have to travel as code); save as .safetensors "
        "(model.save('m.safetensors'), which keeps every tinynet layer and resumes training "
        "bitwise) or export for inference with model.export('m.onnx', format='onnx')")
    assert not os.path.exists(tmp_path / "m.keras")


def test_keras_written_cnn_reads_and_trains(h5py):
    refs = np.load(os.path.join(DATA, "keras_cnn_refs.npz"))
    model = tn.models.load_model(os.path.join(DATA, "keras_cnn.keras"))
    assert [type(layer).__name__ for layer in model.layers] == [
        "Conv2D", "GroupNormalization", "MaxPooling2D", "Conv2D", "BatchNormalization",
        "MaxPooling2D", "Flatten", "Dense", "Dense"]
    np.testing.assert_allclose(model.predict(refs["x"], verbose=0), refs["predictions"],
                               atol=1e-5)
    assert model.optimizer.iterations == 2
    assert model.loss.from_logits
    state = model.optimizer.get_state()
    assert np.abs(state["dense_1/kernel/momentum"]).max() > 0
    history = model.fit(refs["x"], refs["y"], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_keras_written_unknown_layer_and_lambda_are_refused(h5py):
    path = os.path.join(DATA, "keras_unknown_layer.keras")
    with pytest.raises(ValueError, match="layer 'alpha' has class 'AlphaDropout', which "
                                         "tinynet does not have"):
        tn.models.load_model(path)
    with pytest.raises(ValueError, match="layer 'double' is a Lambda layer, whose function "
                                         "the file holds as Python bytecode; tinynet never "
                                         "runs code from a file"):
        tn.models.load_model(os.path.join(DATA, "keras_lambda.keras"))


# -- hostile archives ------------------------------------------------------------------------
def _rewrite(source, target, replace: dict) -> None:
    members = _members(source)
    members.update(replace)
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


@pytest.fixture
def saved(tmp_path, h5py):
    model, _, _ = _trained(_cnn)
    model.save(tmp_path / "m.keras")
    return tmp_path / "m.keras"


def test_truncated_archive(saved, tmp_path):
    data = saved.read_bytes()
    (tmp_path / "t.keras").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"is not a \.keras archive: not a zip file, or "
                                         r"truncated"):
        tn.models.load_model(tmp_path / "t.keras")


def test_path_traversal_member_is_refused_and_nothing_written(saved, tmp_path):
    _rewrite(saved, tmp_path / "evil.keras", {"../escaped.txt": b"x"})
    with pytest.raises(ValueError, match=r"archive member '\.\./escaped\.txt' has a path "
                                         r"outside the archive"):
        tn.models.load_model(tmp_path / "evil.keras")
    assert not os.path.exists(tmp_path.parent / "escaped.txt")
    assert sorted(os.listdir(tmp_path)) == ["evil.keras", "m.keras"]


def test_member_over_its_budget_is_refused(saved, monkeypatch):
    from tinynet.saving import keras_archive

    monkeypatch.setattr(keras_archive, "MAX_JSON_BYTES", 100)
    with pytest.raises(ValueError, match=r"archive member 'config.json' declares \d+ bytes, "
                                         r"more than the 100-byte limit"):
        tn.models.load_model(saved)


def test_zip_bomb_member_lying_about_its_size(saved, tmp_path):
    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        members = _members(saved)
        archive.writestr("metadata.json", members["metadata.json"])
        archive.writestr("config.json", members["config.json"])
        archive.writestr("model.weights.h5", b"\0" * 5_000_000)
    data = bytearray(bomb.read_bytes())
    # declare 1000 bytes for the h5 member in its local header and the central directory
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = 0
        while (start := data.find(signature, start)) >= 0:
            name_at = start + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at:name_at + 16] == b"model.weights.h5":
                data[start + offset:start + offset + 4] = (1000).to_bytes(4, "little")
            start += 4
    bomb.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"archive member 'model.weights.h5' (inflates to more "
                                         r"than its declared 1000 bytes|cannot be read)"):
        tn.models.load_model(bomb)


def test_dataset_of_the_wrong_shape_is_refused(saved, tmp_path, h5py):
    buffer = io.BytesIO()
    with h5py.File(io.BytesIO(_members(saved)["model.weights.h5"]), "r") as source, \
            h5py.File(buffer, "w") as target:
        for key in source:
            source.copy(source[key], target, name=key)
        del target["layers/dense/vars/0"]
        target["layers/dense/vars"].create_dataset("0", shape=(1000, 1000), dtype="f4")
    _rewrite(saved, tmp_path / "big.keras", {"model.weights.h5": buffer.getvalue()})
    with pytest.raises(ValueError, match=r"dataset 'layers/dense/vars/0' has shape "
                                         r"\(1000, 1000\), expected \(12, 4\)"):
        tn.models.load_model(tmp_path / "big.keras")


def test_missing_member_and_not_hdf5(saved, tmp_path):
    members = _members(saved)
    with zipfile.ZipFile(tmp_path / "no_config.keras", "w") as archive:
        archive.writestr("model.weights.h5", members["model.weights.h5"])
    with pytest.raises(ValueError, match="is not a Keras model archive: it has no "
                                         "'config.json'"):
        tn.models.load_model(tmp_path / "no_config.keras")
    _rewrite(saved, tmp_path / "junk.keras", {"model.weights.h5": b"not hdf5"})
    with pytest.raises(ValueError, match="the weights are not a valid HDF5 file"):
        tn.models.load_model(tmp_path / "junk.keras")


# -- without h5py ----------------------------------------------------------------------------
def test_without_h5py_keras_paths_say_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)  # import h5py now raises ImportError
    model = _cnn()
    with pytest.raises(ImportError, match=r"save_model: reading and writing Keras files "
                                          r"\(\.keras, \.weights\.h5\) needs h5py; install it "
                                          r"with pip install 'tinynet\[keras\]'"):
        model.save(tmp_path / "m.keras")
    assert not os.path.exists(tmp_path / "m.keras")
    model.save(tmp_path / "m.safetensors")  # the default format needs nothing extra
    x = np.ones((2, 6, 6, 1), np.float32)
    np.testing.assert_array_equal(tn.models.load_model(tmp_path / "m.safetensors")
                                  .predict(x, verbose=0), model.predict(x, verbose=0))


# -- Keras settings tinynet lacks ------------------------------------------------------------
def _edit_config(source, target, edit) -> None:
    members = _members(source)
    config = json.loads(members["config.json"])
    edit(config)
    _rewrite(source, target, {"config.json": json.dumps(config).encode()})


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["config"]["layers"][1]["config"].update(groups=2),
     "layer 'conv2d' (Conv2D) has groups=2, which tinynet's Conv2D does not support"),
    (lambda c: c["config"]["layers"][1]["config"].update(kernel_constraint={"class_name": "NonNeg"}),
     "layer 'conv2d' (Conv2D) has kernel_constraint={'class_name': 'NonNeg'}, which "
     "tinynet's Conv2D does not support"),
    (lambda c: c["config"]["layers"][1]["config"]["dtype"]["config"].update(
        name="mixed_float16"),
     "layer 'conv2d' has dtype policy 'mixed_float16'; tinynet computes in float32 only"),
    (lambda c: c["compile_config"]["optimizer"]["config"].update(use_ema=True),
     "the optimizer uses use_ema=True, which tinynet does not support"),
    (lambda c: c["config"]["layers"][1].update(class_name="Frobnicate"),
     "layer 'conv2d' has class 'Frobnicate', which tinynet does not have"),
], ids=["groups", "constraint", "mixed-precision", "ema", "unknown-class"])
def test_keras_settings_tinynet_lacks_are_refused_by_name(saved, tmp_path, edit, message):
    _edit_config(saved, tmp_path / "edited.keras", edit)
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.models.load_model(tmp_path / "edited.keras")


def test_neutral_keras_settings_are_accepted(saved, tmp_path):
    def edit(config):
        conv = config["config"]["layers"][1]["config"]
        conv.update(groups=1, data_format="channels_last", kernel_constraint=None,
                    bias_initializer={"module": "keras.initializers", "class_name": "Zeros",
                                      "config": {}, "registered_name": None},
                    kernel_initializer={"module": "keras.initializers",
                                        "class_name": "HeNormal",
                                        "config": {"seed": None}, "registered_name": None})
    _edit_config(saved, tmp_path / "edited.keras", edit)
    model = tn.models.load_model(tmp_path / "edited.keras")
    assert model.layers[0].get_config()["kernel_initializer"] == "he_normal"


def test_dict_inputs_are_refused(tmp_path, h5py):
    inputs = {"a": Input((3,), name="a"), "b": Input((3,), name="b")}
    model = tn.Model(inputs, Dense(2)(Add()([inputs["a"], inputs["b"]])), name="dicts")
    with pytest.raises(ValueError, match="save_model: model 'dicts' takes or gives a dict of "
                                         "tensors, which tinynet does not write to a .keras "
                                         "file"):
        model.save(tmp_path / "m.keras")


# -- recurrent layers and wrappers: Keras's weights tree -------------------------------------
def _recurrent() -> tn.Model:
    from tinynet.layers import GRU, LSTM, Bidirectional, Embedding, SimpleRNN, TimeDistributed

    inputs = Input((5,), dtype="int64")
    x = LSTM(3, return_sequences=True)(Embedding(10, 4)(inputs))
    x = GRU(3, reset_after=False, return_sequences=True)(x)
    x = Bidirectional(SimpleRNN(2, return_sequences=True), merge_mode="sum")(x)
    x = TimeDistributed(Dense(2))(x)
    return tn.Model(inputs, Dense(3)(Bidirectional(GRU(2))(x)))


def _recurrent_data():
    x = np.random.default_rng(4).integers(1, 10, (12, 5)).astype(np.int64)
    return x, np.arange(12) % 3


def _trained_recurrent(optimizer="adam"):
    tn.set_seed(0)
    model = _recurrent()
    model.compile(optimizer=optimizer,
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _recurrent_data()
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    return model, x, y


def test_recurrent_layout_is_keras(tmp_path, h5py):
    # the paths, shapes and vars names of the same model saved by Keras 3.15.1
    model, _, _ = _trained_recurrent()
    model.save(tmp_path / "m.keras")
    items = _h5_items(_members(tmp_path / "m.keras")["model.weights.h5"], h5py)
    assert items["layers/lstm/vars"] == {"name": "lstm"}
    assert "layers/lstm/vars/0" not in items
    assert items["layers/lstm/cell/vars"] == {"name": "lstm_cell"}
    assert [items[f"layers/lstm/cell/vars/{i}"] for i in range(3)] == [(4, 12), (3, 12), (12,)]
    assert [items[f"layers/gru/cell/vars/{i}"] for i in range(3)] == [(3, 9), (3, 9), (9,)]
    for side in ("forward_layer", "backward_layer"):
        assert items[f"layers/bidirectional/{side}/cell/vars"] == {"name": "simple_rnn_cell"}
        assert items[f"layers/bidirectional/{side}/cell/vars/1"] == (2, 2)
        assert items[f"layers/bidirectional_1/{side}/cell/vars/2"] == (2, 6)  # reset_after
    assert items["layers/bidirectional/forward_layer/vars"] == {"name": "forward_simple_rnn"}
    assert items["layers/bidirectional/vars"] == {"name": "bidirectional"}
    assert items["layers/time_distributed/layer/vars"] == {"name": "dense"}
    assert items["layers/time_distributed/layer/vars/0"] == (2, 2)
    assert "layers/time_distributed/vars/0" not in items
    # Adam's slots weight by weight in the model's order: embedding, lstm's kernel, ...
    shapes = [items[f"optimizer/vars/{i}"] for i in range(2, 10)]
    assert shapes == [(10, 4), (10, 4), (4, 12), (4, 12), (3, 12), (3, 12), (12,), (12,)]
    assert items["optimizer/vars/16"] == (3, 2)  # the forward SimpleRNN's kernel


@pytest.mark.parametrize("optimizer", [
    lambda: "adam", lambda: tn.optimizers.RMSprop(momentum=0.5, centered=True)],
    ids=["adam", "rmsprop"])
def test_recurrent_round_trip_keeps_predictions_state_and_training(tmp_path, h5py, optimizer):
    model, x, y = _trained_recurrent(optimizer())
    model.save(tmp_path / "m.keras")
    loaded = tn.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    original, restored = model.optimizer.get_state(), loaded.optimizer.get_state()
    assert sorted(original) == sorted(restored)
    for key in original:
        np.testing.assert_array_equal(original[key], restored[key], err_msg=key)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    loaded.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    for a, b in zip(model.get_weights(), loaded.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_recurrent_weights_h5_both_ways(tmp_path, h5py):
    model, x, _ = _trained_recurrent()
    model.save_weights(tmp_path / "w.weights.h5")
    with h5py.File(tmp_path / "w.weights.h5", "r") as file:
        assert file["layers/bidirectional_1/backward_layer/cell/vars/0"].shape == (2, 6)
    tn.set_seed(1)
    other = _recurrent()
    other.load_weights(tmp_path / "w.weights.h5")
    np.testing.assert_array_equal(other.predict(x, verbose=0), model.predict(x, verbose=0))


def test_recurrent_weights_in_the_wrong_place_are_refused(tmp_path, h5py):
    model, _, _ = _trained_recurrent()
    model.save_weights(tmp_path / "w.weights.h5")
    with h5py.File(tmp_path / "w.weights.h5", "a") as file:
        file.move("layers/lstm/cell/vars/0", "layers/lstm/vars/0")
    with pytest.raises(ValueError, match=r"'lstm' \(layers/lstm\) has 1 variables in the "
                                         r"file, expected 0"):
        _recurrent().load_weights(tmp_path / "w.weights.h5")


# -- vocabulary layers: assets, both ways (fixtures: generate_keras_vocabulary.py) -----------
VOCAB_REFS = os.path.join(DATA, "keras_vocabulary_refs.npz")


def test_keras_written_vocabularies_read_predict_and_train(h5py):
    refs = np.load(VOCAB_REFS)
    model = tn.models.load_model(os.path.join(DATA, "keras_vocabulary.keras"))
    ids, hot, tfidf = (model.get_layer(n) for n in ("ids", "integer_lookup", "tfidf"))
    assert ids.get_vocabulary() == [-1, 13, 9, 3, 7, 40, 5, 11]
    assert hot.get_vocabulary() == [-1, 3, 5, 40]
    assert tfidf.vocabulary_size() == 8
    np.testing.assert_allclose(model.predict(refs["x"], verbose=0), refs["keras_predictions"],
                               atol=1e-5)
    ids.adapt(np.array([1, 2]))  # learned (an asset), so it can adapt again, as in Keras
    assert ids.get_vocabulary() == [-1, 2, 1]
    with pytest.raises(ValueError, match="cannot adapt a layer given a vocabulary"):
        hot.adapt(np.array([1, 2]))
    model = tn.models.load_model(os.path.join(DATA, "keras_vocabulary.keras"))
    history = model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


def test_tinynet_written_vocabularies_are_what_keras_read(tmp_path, h5py):
    # tinynet_vocabulary.keras was written by tinynet (generate_keras_vocabulary.py) and
    # read by Keras 3.15.1 with TensorFlow: its predictions and one epoch's loss are in the
    # refs. tinynet still writes that file (same members, config, vocabularies, weights).
    refs = np.load(VOCAB_REFS)
    model = tn.models.load_model(os.path.join(DATA, "keras_vocabulary.keras"))
    model.fit(refs["x"], refs["y"], batch_size=8, epochs=1, shuffle=False, verbose=0)
    model.save(tmp_path / "m.keras")
    ours, checked_in = _members(tmp_path / "m.keras"), _members(
        os.path.join(DATA, "tinynet_vocabulary.keras"))
    assert sorted(ours) == sorted(checked_in) == [
        "assets/layers/integer_lookup/vocabulary.txt",
        "assets/layers/integer_lookup_2/vocabulary.txt", "config.json", "metadata.json",
        "model.weights.h5"]
    assert ours["assets/layers/integer_lookup/vocabulary.txt"] == b"-1\n13\n9\n3\n7\n40\n5\n11"
    for name in ours:
        if name.startswith("assets/") or name == "config.json":
            assert ours[name] == checked_in[name], name
    config = json.loads(ours["config.json"])["config"]["layers"][1]["config"]
    assert (config["vocabulary"], config["vocabulary_size"]) == (None, 8)
    assert "has_input_vocabulary" not in config
    items, expected = (_h5_items(m["model.weights.h5"], h5py) for m in (ours, checked_in))
    assert items == expected
    assert items["layers/integer_lookup_2/vars/idf_weights"] == (8,)
    with h5py.File(io.BytesIO(ours["model.weights.h5"]), "r") as a, \
            h5py.File(io.BytesIO(checked_in["model.weights.h5"]), "r") as b:
        for key, shape in items.items():
            if isinstance(shape, tuple):
                np.testing.assert_allclose(a[key][()], b[key][()], atol=1e-6, err_msg=key)
    loaded = tn.models.load_model(tmp_path / "m.keras")
    np.testing.assert_allclose(loaded.predict(refs["x"], verbose=0), refs["back_predictions"],
                               atol=1e-5)
    assert np.isfinite(refs["back_loss"])


def _vocab_archive(tmp_path, replace=None, drop=(), edit=None):
    source = os.path.join(DATA, "keras_vocabulary.keras")
    members = _members(source)
    for name in drop:
        del members[name]
    members.update(replace or {})
    if edit is not None:
        config = json.loads(members["config.json"])
        edit(config["config"]["layers"][1]["config"])
        members["config.json"] = json.dumps(config).encode()
    target = tmp_path / "vocab.keras"
    with zipfile.ZipFile(target, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return target


IDS_ASSET = "assets/layers/integer_lookup/vocabulary.txt"


@pytest.mark.parametrize("change, message", [
    (dict(replace={IDS_ASSET: b"-1\n13\n\xff\xfe\n3"}),
     f"vocabulary {IDS_ASSET!r} is not UTF-8 text"),
    (dict(replace={IDS_ASSET: b"-1\n13\nnine\n3\n7\n40\n5\n11"}),
     f"vocabulary {IDS_ASSET!r} line 3 is 'nine', not an integer (IntegerLookup 'ids')"),
    (dict(replace={IDS_ASSET: b"-1\n13\n13\n3\n7\n40\n5\n11"}),
     "layer 'ids' (IntegerLookup): the file's vocabulary does not fit it: IntegerLookup "
     "'ids': set_vocabulary: vocabulary has repeated tokens [13]"),
    (dict(replace={IDS_ASSET: b"-1\n13\n9"}),
     f"vocabulary {IDS_ASSET!r} has 3 tokens, but layer 'ids''s config says "
     f"vocabulary_size=8"),
    (dict(drop=[IDS_ASSET]),
     f"layer 'ids' (IntegerLookup) has no vocabulary in its config and the archive has no "
     f"{IDS_ASSET!r}"),
    (dict(edit=lambda c: c.update(vocabulary_size=2 ** 40)),
     "layer 'ids' (IntegerLookup) has vocabulary_size=1099511627776, more than the 4194304 "
     "tokens a file may give a layer; refused before allocating"),
    (dict(edit=lambda c: c.update(vocabulary_size="8")),
     "layer 'ids' (IntegerLookup) has vocabulary_size='8'; expected a non-negative int"),
    (dict(edit=lambda c: c.update(max_tokens=2 ** 40, pad_to_max_tokens=True)),
     "layer 'ids' (IntegerLookup) has max_tokens=1099511627776, more than the 4194304 tokens"),
    (dict(replace={"assets/../../escaped/vocabulary.txt": b"1"}),
     "archive member 'assets/../../escaped/vocabulary.txt' has a path outside the archive"),
], ids=["not-utf8", "not-int", "repeated", "size-mismatch", "missing", "size-over-budget",
        "size-not-int", "padded-over-budget", "traversal"])
def test_bad_vocabulary_assets_are_refused_by_name(tmp_path, h5py, change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.models.load_model(_vocab_archive(tmp_path, **change))
    assert sorted(os.listdir(tmp_path)) == ["vocab.keras"]
    assert not os.path.exists(tmp_path.parent / "escaped")


def test_vocabulary_assets_over_their_budgets(tmp_path, h5py, monkeypatch):
    from tinynet.saving import keras_archive, keras_config

    path = _vocab_archive(tmp_path)
    monkeypatch.setattr(keras_archive, "MAX_ASSET_BYTES", 30)
    with pytest.raises(ValueError, match=r"the archive's vocabulary assets declare more than "
                                         r"the 30-byte limit \(at 'assets/layers/integer_lookup"
                                         r"_2/vocabulary.txt'\); refused before reading them"):
        tn.models.load_model(path)
    monkeypatch.undo()
    monkeypatch.setattr(keras_config, "MAX_VOCABULARY", 5)
    with pytest.raises(ValueError, match="layer 'ids' .IntegerLookup. has vocabulary_size=8, "
                                         "more than the 5 tokens"):
        tn.models.load_model(path)
    # without the config's size, the asset's own line count is checked before it is split
    monkeypatch.setattr(keras_config, "MAX_VOCABULARY", 10)
    long = "\n".join(str(v) for v in range(-1, 11)).encode()
    path = _vocab_archive(tmp_path, edit=lambda c: c.update(vocabulary_size=None),
                          replace={IDS_ASSET: long})
    with pytest.raises(ValueError, match=re.escape(
            f"vocabulary {IDS_ASSET!r} has 12 lines, more than the 10 tokens a file may give "
            f"a layer; refused before building it")):
        tn.models.load_model(path)


def test_learned_vocabulary_asset_and_line_breaks(tmp_path, h5py):
    from tinynet.layers import IntegerLookup, StringLookup
    from tinynet.saving.keras_assets import _check_token

    inputs = Input((2,))
    lookup = IntegerLookup(name="years")
    lookup.adapt(np.array([2020, 2021, 2021]))
    model = tn.Model(inputs, Dense(1)(lookup(inputs)))
    model.save(tmp_path / "m.keras")
    assert _members(tmp_path / "m.keras")[
        "assets/layers/integer_lookup/vocabulary.txt"] == b"-1\n2021\n2020"
    assert tn.models.load_model(tmp_path / "m.keras").get_layer("years").get_vocabulary() == [
        -1, 2021, 2020]
    # Keras reads one token a line (str.splitlines): a token with a line break cannot travel
    words = StringLookup(name="words")
    for token in ("a\nb", "a\rb", "a\u2028b"):
        with pytest.raises(ValueError, match=r"save_model: layer 'words' has the token .* with "
                                             r"a line break, which Keras's one-token-a-line "
                                             r"vocabulary file cannot hold"):
            _check_token(token, words, "save_model")


def test_keras_functional_mask_op_is_read_as_the_automatic_mask(tmp_path, h5py):
    # Keras's functional config holds an Embedding(mask_zero)'s mask as a NotEqual op layer
    # on the embedding's input, passed on as mask=; tinynet's file, edited to hold it too
    from tinynet.layers import LSTM, Embedding

    inputs = Input((5,), dtype="int64")
    model = tn.Model(inputs, Dense(2)(LSTM(3)(Embedding(10, 4, mask_zero=True)(inputs))))
    model.save(tmp_path / "m.keras")
    x = np.random.default_rng(0).integers(1, 10, (4, 5))

    def edit(config, mask_zero=True):
        layers = config["config"]["layers"]
        tensor = layers[1]["inbound_nodes"][0]["args"][0]
        layers[1]["config"]["mask_zero"] = mask_zero
        layers.insert(2, {"module": "keras.src.ops.numpy", "class_name": "NotEqual",
                          "config": {"name": "not_equal"}, "registered_name": "NotEqual",
                          "name": "not_equal",
                          "inbound_nodes": [{"args": [tensor, 0], "kwargs": {}}]})
        mask = {"class_name": "__keras_tensor__",
                "config": {"shape": [None, 5], "dtype": "bool",
                           "keras_history": ["not_equal", 0, 0]}}
        layers[3]["inbound_nodes"][0]["kwargs"] = {"training": False, "mask": mask}

    _edit_config(tmp_path / "m.keras", tmp_path / "k.keras", edit)
    loaded = tn.models.load_model(tmp_path / "k.keras")
    assert [type(layer).__name__ for layer in loaded.layers] == [
        "InputLayer", "Embedding", "LSTM", "Dense"]
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    # a NotEqual that is not an Embedding(mask_zero=True)'s mask stays an unknown layer
    _edit_config(tmp_path / "m.keras", tmp_path / "k2.keras", lambda c: edit(c, False))
    with pytest.raises(ValueError, match="layer 'not_equal' has class 'NotEqual', which "
                                         "tinynet does not have"):
        tn.models.load_model(tmp_path / "k2.keras")


def test_weight_paths_table_places_sublayers_where_keras_keeps_them(tmp_path, h5py,
                                                                    monkeypatch):
    # a layer holding layers (as MultiHeadAttention holds query_dense, ...) is one entry
    # of WEIGHT_PATHS: its weights go under the attributes, and they load back
    from tinynet import custom_objects as objects
    from tinynet import ops
    from tinynet.layers import Layer, TextVectorization
    from tinynet.layers import registry as layer_registry
    from tinynet.saving import keras_weights

    # private registries, dropped after the test (as tests/saving/test_custom_objects.py)
    monkeypatch.setattr(layer_registry, "_LAYERS", dict(layer_registry._layers()))
    monkeypatch.setattr(objects, "_GLOBAL", {})
    monkeypatch.setattr(objects, "_NAMES", {})

    @tn.saving.register_keras_serializable(package="H47")
    class Pair(Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.first = Dense(3)
            self.second = Dense(2)

        def call(self, x):
            return self.second(ops.tanh(self.first(x)))

    monkeypatch.setitem(keras_weights.WEIGHT_PATHS, "Pair", lambda layer: (
        [("", layer.name, [])] + keras_weights._under("first_dense", layer.first)
        + keras_weights._under("second_dense", layer.second)))
    inputs = Input((4,))
    tn.set_seed(0)
    model = tn.Model(inputs, Pair()(inputs))
    model.save(tmp_path / "m.keras")
    items = _h5_items(_members(tmp_path / "m.keras")["model.weights.h5"], h5py)
    assert items["layers/pair/vars"] == {"name": "pair"}
    assert "layers/pair/vars/0" not in items
    assert items["layers/pair/first_dense/vars/0"] == (4, 3)
    assert items["layers/pair/second_dense/vars/1"] == (2,)
    x = np.random.default_rng(0).random((3, 4)).astype(np.float32)
    loaded = tn.models.load_model(tmp_path / "m.keras")
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    # TextVectorization keeps Keras's StringLookup as _lookup_layer (no weights)
    assert keras_weights.layer_nodes(TextVectorization(name="tv")) == [
        ("", "tv", []), ("_lookup_layer", "string_lookup", [])]


# -- MultiHeadAttention in Keras's layout ----------------------------------------------------
def _encoder(**call):
    from tinynet.layers import MultiHeadAttention

    inputs = Input((5, 6))
    memory = Input((4, 3))
    out = MultiHeadAttention(2, 4, name="mha")(inputs, memory, memory, **call)
    return tn.Model([inputs, memory], out)


def test_multi_head_attention_layout_is_keras(tmp_path, h5py):
    model = _encoder(use_causal_mask=True)
    model.save(tmp_path / "m.keras")
    members = _members(tmp_path / "m.keras")
    entry = json.loads(members["config.json"])["config"]["layers"][2]
    assert entry["class_name"] == "MultiHeadAttention" and "call_options" not in entry["config"]
    assert entry["build_config"] == {"shapes_dict": {"query_shape": [None, 5, 6],
                                                     "value_shape": [None, 4, 3],
                                                     "key_shape": [None, 4, 3]}}
    node = entry["inbound_nodes"][0]
    assert [a["config"]["keras_history"] for a in node["args"]] == [
        ["input_layer", 0, 0], ["input_layer_1", 0, 0], ["input_layer_1", 0, 0]]
    assert node["kwargs"] == {"use_causal_mask": True}
    items = _h5_items(members["model.weights.h5"], h5py)
    assert {k: v for k, v in items.items() if k.startswith("layers/multi_head_attention/")} == {
        "layers/multi_head_attention/vars": {"name": "mha"},
        "layers/multi_head_attention/_dropout_layer": {}, "layers/multi_head_attention/_dropout_layer/vars": {"name": "dropout"},
        "layers/multi_head_attention/_softmax": {}, "layers/multi_head_attention/_softmax/vars": {"name": "softmax"},
        "layers/multi_head_attention/query_dense": {}, "layers/multi_head_attention/query_dense/vars": {"name": "query"},
        "layers/multi_head_attention/query_dense/vars/0": (6, 2, 4), "layers/multi_head_attention/query_dense/vars/1": (2, 4),
        "layers/multi_head_attention/key_dense": {}, "layers/multi_head_attention/key_dense/vars": {"name": "key"},
        "layers/multi_head_attention/key_dense/vars/0": (3, 2, 4), "layers/multi_head_attention/key_dense/vars/1": (2, 4),
        "layers/multi_head_attention/value_dense": {}, "layers/multi_head_attention/value_dense/vars": {"name": "value"},
        "layers/multi_head_attention/value_dense/vars/0": (3, 2, 4), "layers/multi_head_attention/value_dense/vars/1": (2, 4),
        "layers/multi_head_attention/output_dense": {},
        "layers/multi_head_attention/output_dense/vars": {"name": "attention_output"},
        "layers/multi_head_attention/output_dense/vars/0": (2, 4, 6), "layers/multi_head_attention/output_dense/vars/1": (6,)}
    loaded = tn.models.load_model(tmp_path / "m.keras")
    rng = np.random.default_rng(0)
    x = [rng.standard_normal((2, 5, 6)).astype(np.float32),
         rng.standard_normal((2, 4, 3)).astype(np.float32)]
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert loaded.get_layer("mha").get_config()["call_options"] == {"use_causal_mask": True}


def test_attention_layers_called_with_constant_masks_are_refused(tmp_path, h5py):
    from tinynet.layers import AdditiveAttention, Attention

    model = _encoder(attention_mask=np.ones((1, 5, 4), dtype=bool))
    with pytest.raises(ValueError, match=re.escape(
            "'mha' (MultiHeadAttention called with the constant attention_mask, which a "
            "Keras node holds only as a model input)")):
        model.save(tmp_path / "m.keras")
    inputs = Input((5, 6))
    ones = np.ones((2, 5), dtype=bool)
    for cls, name in ((Attention, "att"), (AdditiveAttention, "add")):
        model = tn.Model(inputs, cls(name=name)([inputs, inputs], mask=[None, ones]))
        with pytest.raises(ValueError, match=re.escape(
                f"'{name}' ({cls.__name__} called with a constant mask, which tinynet does "
                f"not write to a .keras file; give its inputs their own masks, e.g. from "
                f"Embedding(mask_zero=True))")):
            model.save(tmp_path / "a.keras")
    assert not os.path.exists(tmp_path / "m.keras") and not os.path.exists(tmp_path / "a.keras")


def _mha_node(config):
    return config["config"]["layers"][2]["inbound_nodes"][0]


@pytest.mark.parametrize("edit, message", [
    (lambda c: _mha_node(c)["kwargs"].update(attention_mask=_mha_node(c)["args"][0]),
     "layer 'mha' (MultiHeadAttention) is called with ['attention_mask'], which tinynet "
     "does not take from a .keras file"),
    (lambda c: _mha_node(c)["kwargs"].update(use_causal_mask="yes"),
     "layer 'mha' (MultiHeadAttention) has call arguments {'use_causal_mask': 'yes'}; "
     "expected True or False"),
    (lambda c: _mha_node(c)["kwargs"].update(value=_mha_node(c)["args"][1]),
     "layer 'mha' (MultiHeadAttention) is given its value twice"),
    (lambda c: _mha_node(c).update(args=[]),
     "layer 'mha' (MultiHeadAttention) has a node without its query"),
], ids=["attention-mask", "flag-type", "value-twice", "no-query"])
def test_keras_multi_head_attention_nodes_tinynet_lacks_are_refused(tmp_path, h5py, edit,
                                                                    message):
    _encoder().save(tmp_path / "m.keras")
    _edit_config(tmp_path / "m.keras", tmp_path / "edited.keras", edit)
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.models.load_model(tmp_path / "edited.keras")


def test_keras_multi_head_attention_value_and_key_as_keywords(tmp_path, h5py):
    model = _encoder(return_attention_scores=True)
    model.save(tmp_path / "m.keras")

    def edit(config):  # Keras's node of mha(query, value=..., key=...)
        node = _mha_node(config)
        query, value, key = node["args"]
        node.update(args=[query], kwargs={**node["kwargs"], "value": value, "key": key})

    _edit_config(tmp_path / "m.keras", tmp_path / "edited.keras", edit)
    loaded = tn.models.load_model(tmp_path / "edited.keras")
    rng = np.random.default_rng(1)
    x = [rng.standard_normal((2, 5, 6)).astype(np.float32),
         rng.standard_normal((2, 4, 3)).astype(np.float32)]
    for got, want in zip(loaded.predict(x, verbose=0), model.predict(x, verbose=0)):
        np.testing.assert_array_equal(got, want)
