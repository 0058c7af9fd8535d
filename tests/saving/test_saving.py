"""Saving and loading: round trips, bitwise resume, atomic writes, and hostile files."""

import json
import os
import re

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file, save, save_file

import tinynet as tn
from tinynet import saving
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Dropout, Flatten, Input, Layer,
                            SpatialDropout2D)


def _build(units: int = 3) -> tn.Sequential:
    return tn.Sequential([
        Input((4, 4, 1)),
        Conv2D(2, 3, padding="same", activation="relu"),
        BatchNormalization(),
        SpatialDropout2D(0.5),
        Flatten(),
        Dropout(0.3),
        Dense(units),
    ])


def _data():
    rng = np.random.default_rng(1)
    return rng.random((20, 4, 4, 1), dtype=np.float32), rng.integers(0, 3, 20)


def _compiled(optimizer="adam") -> tn.Sequential:
    model = _build()
    model.compile(optimizer=optimizer,
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def _trained(tmp_path, epochs: int = 1):
    tn.set_seed(3)
    model = _compiled()
    x, y = _data()
    model.fit(x, y, batch_size=8, epochs=epochs, verbose=0)
    path = tmp_path / "model.safetensors"
    saving.save_model(model, path)
    return model, path


def _same_weights(a, b) -> bool:
    wa, wb = a.get_weights(), b.get_weights()
    return len(wa) == len(wb) and all(
        x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
        for x, y in zip(wa, wb))


def _parts(path):
    with safe_open(str(path), framework="numpy") as f:
        metadata = dict(f.metadata())
    return metadata, load_file(str(path))


def _rewrite(path, out, *, metadata=None, tensors=None):
    meta, tens = _parts(path)
    if metadata is not None:
        meta = metadata(meta)
    if tensors is not None:
        tens = tensors(tens)
    save_file(tens, str(out), metadata=meta)
    return out


# -- round trips -------------------------------------------------------------------------------
def test_round_trip_weights_predictions_and_compile(tmp_path):
    model, path = _trained(tmp_path)
    loaded = tn.load_model(path)
    assert _same_weights(model, loaded)
    x, _ = _data()
    assert model.predict(x, verbose=0).tobytes() == loaded.predict(x, verbose=0).tobytes()
    assert loaded.get_config() == model.get_config()
    assert type(loaded.optimizer) is tn.optimizers.Adam
    assert loaded.optimizer.get_config() == model.optimizer.get_config()
    assert loaded.optimizer.iterations == model.optimizer.iterations == 3
    assert loaded.loss.get_config() == model.loss.get_config()
    assert loaded.metrics_names == ["loss", "accuracy"]
    state, loaded_state = model.optimizer.get_state(), loaded.optimizer.get_state()
    assert sorted(state) == sorted(loaded_state)
    assert all(np.array_equal(state[k], loaded_state[k]) for k in state)
    assert (model.shuffle_rng.bit_generator.state == loaded.shuffle_rng.bit_generator.state)
    for a, b in zip(model.layers, loaded.layers):
        if isinstance(a, Dropout):
            assert a.rng.bit_generator.state == b.rng.bit_generator.state


def test_file_layout_is_plain_safetensors(tmp_path):
    model, path = _trained(tmp_path)
    metadata, tensors = _parts(path)
    assert metadata["format"] == "tinynet"
    assert metadata["format_version"] == "1"
    assert metadata["kind"] == "model"
    config = json.loads(metadata["model_config"])
    assert config["class_name"] == "Sequential"
    assert [e["class_name"] for e in config["config"]["layers"]] == [
        "InputLayer", "Conv2D", "BatchNormalization", "SpatialDropout2D", "Flatten", "Dropout",
        "Dense"]
    compile_config = json.loads(metadata["compile_config"])
    assert compile_config["optimizer"]["class_name"] == "Adam"
    assert compile_config["metrics"] == ["accuracy"]
    state = json.loads(metadata["training_state"])
    assert state["optimizer_iterations"] == 3
    assert set(state["layer_rngs"]) == {"spatial_dropout2d", "dropout"}
    pcg = state["shuffle_rng"]["state"]["state"]
    assert isinstance(pcg, str) and int(pcg) == model.shuffle_rng.bit_generator.state["state"][
        "state"]
    weights = {f"{l.name}/{p.name}": p.value for l in model.layers for p in l.parameters()}
    assert "batch_normalization/moving_mean" in weights
    for key, value in weights.items():
        assert tensors[key].dtype == np.float32 and np.array_equal(tensors[key], value)
    slots = {k for k in tensors if k.startswith("optimizer/")}
    assert "optimizer/dense/kernel/momentum" in slots
    assert set(tensors) == set(weights) | slots


def test_file_opens_with_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import load_file as torch_load_file

    model, path = _trained(tmp_path)
    tensors = torch_load_file(str(path))
    kernel = model.layers[-1].parameters()[0].value
    assert tensors["dense/kernel"].dtype == torch.float32
    assert np.array_equal(tensors["dense/kernel"].numpy(), kernel)


@pytest.mark.parametrize("optimizer", ["adam", "sgd", "rmsprop"])
def test_resume_is_bitwise_identical_to_straight_training(tmp_path, optimizer):
    if optimizer == "sgd":
        optimizer = tn.optimizers.SGD(0.05, momentum=0.9)
    x, y = _data()
    tn.set_seed(11)
    straight = _compiled(optimizer)
    h_straight = straight.fit(x, y, batch_size=8, epochs=3, verbose=0)

    tn.set_seed(11)
    first = _compiled(optimizer if isinstance(optimizer, str) else tn.optimizers.SGD(
        0.05, momentum=0.9))
    h1 = first.fit(x, y, batch_size=8, epochs=2, verbose=0)
    path = tmp_path / "resume.safetensors"
    saving.save_model(first, path)
    tn.set_seed(999)  # the global stream must not matter after loading
    resumed = tn.load_model(path)
    h2 = resumed.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert _same_weights(straight, resumed)
    assert h1.history["loss"] + h2.history["loss"] == h_straight.history["loss"]
    assert resumed.optimizer.iterations == straight.optimizer.iterations


def test_unbuilt_and_uncompiled_models_round_trip(tmp_path):
    model = tn.Sequential([Dense(4), Dense(2)], name="lazy")
    path = tmp_path / "lazy.safetensors"
    saving.save_model(model, path)
    loaded = tn.load_model(path)
    assert loaded.name == "lazy" and not loaded.compiled
    assert [type(l).__name__ for l in loaded.layers] == ["Dense", "Dense"]
    assert load_file(str(path)) == {}

    tn.set_seed(0)
    built = tn.Sequential([Input((3,)), Dense(2)])
    saving.save_model(built, path)
    loaded = tn.load_model(path)
    assert not loaded.compiled and _same_weights(built, loaded)
    assert json.loads(_parts(path)[0]["compile_config"]) is None


def test_load_model_compile_false_skips_training_state(tmp_path):
    model, path = _trained(tmp_path)
    loaded = tn.load_model(path, compile=False)
    assert not loaded.compiled and _same_weights(model, loaded)


def test_function_metric_is_dropped_with_a_warning(tmp_path):
    def score(y_true, y_pred):
        return np.zeros(len(y_true))

    tn.set_seed(0)
    model = tn.Sequential([Input((3,)), Dense(2)])
    model.compile("sgd", "mse", metrics=["mae", score])
    path = tmp_path / "m.safetensors"
    saving.save_model(model, path)
    with pytest.warns(UserWarning, match="these metrics cannot be rebuilt"):
        loaded = tn.load_model(path)
    assert loaded.metrics_names == ["loss", "mae"]


def test_layer_named_optimizer(tmp_path):
    tn.set_seed(0)
    model = tn.Sequential([Input((3,)), Dense(2, name="optimizer")])
    model.compile("adam", "mse")
    x = np.ones((4, 3), np.float32)
    model.fit(x, np.zeros((4, 2), np.float32), verbose=0)
    path = tmp_path / "m.safetensors"
    saving.save_model(model, path)
    loaded = tn.load_model(path)
    assert _same_weights(model, loaded) and loaded.optimizer.iterations == 1


# -- weights only ------------------------------------------------------------------------------
def test_save_and_load_weights(tmp_path):
    tn.set_seed(0)
    model = _build()
    model.build()
    path = tmp_path / "w.safetensors"
    saving.save_weights(model, path)
    metadata, tensors = _parts(path)
    assert metadata == {"format": "tinynet", "format_version": "1", "kind": "weights"}
    assert not any(k.startswith("optimizer/") for k in tensors)
    other = _build()
    other.build()
    assert not _same_weights(model, other)
    saving.load_weights(other, path)
    assert _same_weights(model, other)
    with pytest.raises(ValueError, match="holds weights only"):
        tn.load_model(path)


def test_load_weights_from_full_file_ignores_optimizer(tmp_path):
    model, path = _trained(tmp_path)
    fresh = _build()
    fresh.build()
    saving.load_weights(fresh, path)
    assert _same_weights(model, fresh)


def test_load_weights_mismatch_leaves_model_untouched(tmp_path):
    tn.set_seed(0)
    model = _build(units=3)
    model.build()
    path = tmp_path / "w.safetensors"
    saving.save_weights(model, path)
    other = _build(units=5)
    other.build()
    before = other.get_weights()
    msg = "tensor 'dense/kernel' has shape (32, 3), expected (32, 5)"
    with pytest.raises(ValueError, match=re.escape(msg)):
        saving.load_weights(other, path)
    assert all(np.array_equal(a, b) for a, b in zip(before, other.get_weights()))


def test_load_weights_needs_a_built_model(tmp_path):
    model = tn.Sequential([Dense(2)])
    path = tmp_path / "w.safetensors"
    saving.save_weights(model, path)
    with pytest.raises(ValueError, match="is not built"):
        saving.load_weights(tn.Sequential([Dense(2)]), path)


# -- atomic writes -----------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["_write", "fsync", "replace"])
def test_failed_save_leaves_previous_file_byte_identical(tmp_path, monkeypatch, target):
    model, path = _trained(tmp_path)
    before = path.read_bytes()
    model.fit(*_data(), batch_size=8, epochs=1, verbose=0)

    def boom(*args, **kwargs):
        raise OSError("disk full")

    if target == "_write":
        def partial(file, payload):
            file.write(payload[:100])
            raise OSError("disk full")
        monkeypatch.setattr(saving.files, "_write", partial)
    else:
        monkeypatch.setattr(saving.files.os, target, boom)
    with pytest.raises(OSError, match="disk full"):
        saving.save_model(model, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["model.safetensors"]


def test_save_keeps_file_mode(tmp_path):
    model, path = _trained(tmp_path)
    os.chmod(path, 0o640)
    saving.save_model(model, path)
    assert os.stat(path).st_mode & 0o777 == 0o640


# -- hostile or broken files -------------------------------------------------------------------
def test_empty_and_short_files(tmp_path):
    empty = tmp_path / "empty.safetensors"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=r"is empty \(0 bytes\)"):
        tn.load_model(empty)
    short = tmp_path / "short.safetensors"
    short.write_bytes(b"\x01\x02")
    with pytest.raises(ValueError, match="shorter than the 8-byte header length"):
        tn.load_model(short)


@pytest.mark.parametrize("keep", [9, 40, 0.5, -1])
def test_truncated_files(tmp_path, keep):
    _, path = _trained(tmp_path)
    data = path.read_bytes()
    cut = int(len(data) * keep) if isinstance(keep, float) else keep
    bad = tmp_path / "cut.safetensors"
    bad.write_bytes(data[:cut])
    with pytest.raises(ValueError, match="truncated"):
        tn.load_model(bad)


def test_not_safetensors(tmp_path):
    bad = tmp_path / "text.safetensors"
    bad.write_bytes(b"hello, this is a plain text file, not safetensors at all")
    with pytest.raises(ValueError, match="not a safetensors file"):
        tn.load_model(bad)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes((20).to_bytes(8, "little") + b"[" * 20 + b"\x00" * 8)
    with pytest.raises(ValueError, match="not valid JSON"):
        tn.load_model(junk)


def test_lying_header_length_does_not_allocate(tmp_path):
    bad = tmp_path / "lie.safetensors"
    bad.write_bytes((2**63).to_bytes(8, "little") + b"{}")
    with pytest.raises(ValueError, match="more than the 104857600-byte limit"):
        tn.load_model(bad)
    bad.write_bytes((1000).to_bytes(8, "little") + b"{}")
    with pytest.raises(ValueError, match="header claims 1000 bytes but only 2 follow"):
        tn.load_model(bad)


def test_deeply_nested_json_is_refused(tmp_path):
    header = b'{"__metadata__": {"format": "tinynet"}, "x": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    bad = tmp_path / "deep.safetensors"
    bad.write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(ValueError, match="nested"):
        tn.load_model(bad)
    _, path = _trained(tmp_path)
    deep = "[" * 200 + "]" * 200
    out = _rewrite(path, tmp_path / "deep2.safetensors",
                   metadata=lambda m: {**m, "model_config": deep})
    with pytest.raises(ValueError, match="model_config is nested more than 64 levels deep"):
        tn.load_model(out)


def test_safetensors_without_tinynet_metadata(tmp_path):
    foreign = tmp_path / "foreign.safetensors"
    save_file({"w": np.zeros(3, np.float32)}, str(foreign))
    with pytest.raises(ValueError, match="not a tinynet file"):
        tn.load_model(foreign)
    with pytest.raises(ValueError, match="not a tinynet file"):
        saving.load_weights(tn.Sequential([Input((3,)), Dense(1)]), foreign)


def test_future_format_version(tmp_path):
    _, path = _trained(tmp_path)
    out = _rewrite(path, tmp_path / "v2.safetensors",
                   metadata=lambda m: {**m, "format_version": "2"})
    with pytest.raises(ValueError, match=re.escape(
            "has format_version 2, newer than this tinynet reads (1); upgrade tinynet")):
        tn.load_model(out)
    out = _rewrite(path, tmp_path / "v.safetensors",
                   metadata=lambda m: {**m, "format_version": "one"})
    with pytest.raises(ValueError, match="invalid format_version 'one'"):
        tn.load_model(out)


def _edit_config(path, out, edit):
    def change(meta):
        config = json.loads(meta["model_config"])
        edit(config["config"])  # the model's own config inside {"class_name", "config"}
        return {**meta, "model_config": json.dumps(config)}
    return _rewrite(path, out, metadata=change)


@pytest.mark.parametrize("class_name", ["Evil", "os.system", "tinynet.layers.Dense",
                                        "__import__", "Layer"])
def test_unknown_or_dotted_layer_class(tmp_path, class_name):
    _, path = _trained(tmp_path)

    def edit(config):
        config["layers"][-1]["class_name"] = class_name
    out = _edit_config(path, tmp_path / "bad.safetensors", edit)
    with pytest.raises(ValueError, match=re.escape(f"unknown layer class {class_name!r}")):
        tn.load_model(out)


@pytest.mark.parametrize("edit, message", [
    (lambda c: c.update(layers="Dense"), "'layers' must be a list"),
    (lambda c: c.update(name=3), "'name' must be a non-empty string"),
    (lambda c: c["layers"][-1].update(config=[1]), "layer 6 (Dense) has no 'config' object"),
    (lambda c: c["layers"][-1]["config"].update(units="3"), "cannot rebuild the model"),
    (lambda c: c["layers"][-1]["config"].update(bogus=1), "cannot rebuild the model"),
    (lambda c: c.update(build_input_shape="big"), "'build_input_shape' must be null"),
])
def test_bad_model_config(tmp_path, edit, message):
    _, path = _trained(tmp_path)
    out = _edit_config(path, tmp_path / "bad.safetensors", edit)
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.load_model(out)


@pytest.mark.parametrize("change, message", [
    (lambda t: t.pop("dense/bias"), "tensor 'dense/bias' is missing from the file"),
    (lambda t: t.update(extra=np.zeros(2, np.float32)),
     "the file has tensors the model does not: ['extra']"),
    (lambda t: t.update({"dense/bias": np.zeros(4, np.float32)}),
     "tensor 'dense/bias' has shape (4,), expected (3,)"),
    (lambda t: t.update({"dense/bias": np.zeros(3, np.float64)}),
     "tensor 'dense/bias' has dtype float64, expected float32"),
    (lambda t: t.pop("optimizer/dense/bias/momentum"),
     "optimizer state does not match the model"),
    (lambda t: t.update({"optimizer/dense/bias/momentum": np.zeros(3, np.float64)}),
     "tensor 'optimizer/dense/bias/momentum' has dtype float64, expected float32"),
])
def test_tensor_mismatches(tmp_path, change, message):
    _, path = _trained(tmp_path)

    def edit(tensors):
        change(tensors)
        return tensors
    out = _rewrite(path, tmp_path / "bad.safetensors", tensors=edit)
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.load_model(out)


@pytest.mark.parametrize("edit, message", [
    (lambda s: s.update(optimizer_iterations=-1), "'optimizer_iterations' must be a"),
    (lambda s: s["shuffle_rng"].update(bit_generator="Evil"), "must name one of PCG64"),
    (lambda s: s["shuffle_rng"]["state"].update(state="12ab"),
     "PCG64.state.state must be a decimal string"),
    (lambda s: s["layer_rngs"].update(dense=s["shuffle_rng"]), "no layer 'dense' with a random"),
    (lambda s: s.pop("layer_rngs"), "invalid training_state"),
])
def test_bad_training_state(tmp_path, edit, message):
    _, path = _trained(tmp_path)

    def change(meta):
        state = json.loads(meta["training_state"])
        edit(state)
        return {**meta, "training_state": json.dumps(state)}
    out = _rewrite(path, tmp_path / "bad.safetensors", metadata=change)
    with pytest.raises(ValueError, match=re.escape(message)):
        tn.load_model(out)


def test_bad_compile_config(tmp_path):
    _, path = _trained(tmp_path)

    def change(meta):
        config = json.loads(meta["compile_config"])
        config["optimizer"]["class_name"] = "Evil"
        return {**meta, "compile_config": json.dumps(config)}
    out = _rewrite(path, tmp_path / "bad.safetensors", metadata=change)
    with pytest.raises(ValueError, match="invalid compile_config: ValueError: Unknown optimizer"):
        tn.load_model(out)


def test_missing_metadata_entry(tmp_path):
    _, path = _trained(tmp_path)

    def change(meta):
        del meta["training_state"]
        return meta
    out = _rewrite(path, tmp_path / "bad.safetensors", metadata=change)
    with pytest.raises(ValueError, match="metadata entry 'training_state' is missing"):
        tn.load_model(out)


def test_corrupt_tensor_table_is_wrapped(tmp_path):
    payload = save({"w": np.zeros(4, np.float32)}, metadata={"format": "tinynet"})
    n = int.from_bytes(payload[:8], "little")
    header = payload[8:8 + n].replace(b'"F32"', b'"XYZ"')
    bad = tmp_path / "dtype.safetensors"
    bad.write_bytes(payload[:8] + header + payload[8 + n:])
    with pytest.raises(ValueError, match="not a valid safetensors file"):
        tn.load_model(bad)


# -- registry ----------------------------------------------------------------------------------
class Scale(Layer):
    """y = x * w (one weight per feature)."""

    def build(self, input_shape):
        self.w = self.add_weight("w", (input_shape[-1],), lambda s: np.full(s, 2.0, np.float32))
        super().build(input_shape)

    def forward(self, x, training=False):
        return tn.Tensor(np.asarray(x) * self.w.value)


@pytest.fixture
def registry(monkeypatch):
    """A private copy of the layer registry, dropped after the test."""
    from tinynet.layers import registry as layer_registry

    monkeypatch.setattr(layer_registry, "_LAYERS", dict(layer_registry._layers()))
    return layer_registry._LAYERS


def test_custom_layer_needs_registration(tmp_path, registry):
    model = tn.Sequential([Input((3,)), Scale()])
    path = tmp_path / "custom.safetensors"
    saving.save_model(model, path)  # as Keras: loading needs the class, saving does not
    with pytest.raises(ValueError, match="unknown layer class 'Scale' .*register_layer"):
        tn.load_model(path)
    saving.register_layer(Scale)
    saving.register_layer(Scale)  # idempotent
    model.layers[0].w.value[:] = [1, 2, 3]
    saving.save_model(model, path)
    loaded = tn.load_model(path)
    assert type(loaded.layers[0]) is Scale
    assert np.array_equal(loaded.layers[0].w.value, [1, 2, 3])


def test_register_layer_names_and_errors(registry):
    @saving.register_layer("MyShift")
    class Shift(Layer):
        pass

    assert registry["MyShift"] is Shift

    @saving.register_layer(name="MyShift2")
    class Shift2(Layer):
        pass

    assert registry["MyShift2"] is Shift2
    assert registry["Dense"] is Dense
    with pytest.raises(ValueError, match="'Dense' is already registered"):
        saving.register_layer("Dense")(Shift)
    with pytest.raises(ValueError, match="must be a plain identifier"):
        saving.register_layer("my.layer")(Shift)
    with pytest.raises(TypeError, match="expected a subclass of tinynet.layers.Layer"):
        saving.register_layer(int)


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="expected a tinynet model \\(Sequential or Model\\), got str"):
        saving.save_model("model", tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="path must be a str or os.PathLike, got int"):
        saving.save_model(tn.Sequential(), 3)
    with pytest.raises(FileNotFoundError):
        tn.load_model(tmp_path / "missing.safetensors")


def test_redefining_a_registered_class_replaces_it():
    """Re-running a notebook cell (same module and name) re-registers the new class."""
    from tinynet.saving import register_layer, registered_layers
    from tinynet.layers import Layer

    def define():
        class Redefined(Layer):
            pass
        Redefined.__qualname__ = "Redefined"
        return register_layer(Redefined)

    first, second = define(), define()
    assert first is not second and registered_layers()["Redefined"] is second


def test_load_model_compile_must_be_bool(tmp_path):
    import tinynet as tn

    with pytest.raises(TypeError, match="load_model: compile must be a bool, got 'yes'"):
        tn.load_model(tmp_path / "missing.safetensors", compile="yes")
