"""Hostile and broken files: every one is refused with ValueError, nothing is imported or
executed, and a failed load of a small lying file allocates little memory.

The files are built by hand (``struct`` + ``json``), not with safetensors, so they can lie
in ways a safetensors writer never would.
"""

import builtins
import gzip
import importlib
import json
import struct
import sys
import tracemalloc

import numpy as np
import pytest

import tinynet as tn
from tinynet import saving
from tinynet.datasets import load_idx
from tinynet.layers import Dense, Input

MB = 1 << 20


# -- building files by hand ---------------------------------------------------------------------
def _safetensors(tensors: dict, metadata: dict | None, *, header_len: int | None = None,
                 offsets: dict | None = None, data: bytes | None = None) -> bytes:
    """A safetensors file: ``tensors`` maps name -> (dtype, shape, data bytes); ``offsets``
    and ``data`` replace the computed data_offsets and the data section."""
    header, blobs, pos = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        span = (offsets or {}).get(name, [pos, pos + len(blob)])
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": span}
        pos += len(blob)
        blobs.append(blob)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    n = len(text) if header_len is None else header_len
    return struct.pack("<Q", n) + text + (b"".join(blobs) if data is None else data)


def _raw_header(text: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(text)) + text + data


def _model() -> tn.Sequential:
    return tn.Sequential([Input((4,)), Dense(3)])


def _weights(kernel=None, bias=None) -> dict:
    k = np.arange(12, dtype=np.float32).reshape(4, 3) / 8 if kernel is None else kernel
    b = np.array([0.5, -1.0, 2.0], np.float32) if bias is None else bias
    return {"dense/kernel": ("F32", list(k.shape), k.tobytes()),
            "dense/bias": ("F32", list(b.shape), b.tobytes())}


def _config(**edits) -> dict:
    config = _model().get_config()
    config.update(edits)
    return config


def _meta(config=None, compile_config=None, state=None, **entries) -> dict:
    meta = {"format": "tinynet", "format_version": "1", "kind": "model",
            "model_config": json.dumps(_config() if config is None else config),
            "compile_config": json.dumps(compile_config),
            "training_state": json.dumps(state if state is not None else
                                         {"optimizer_iterations": None, "shuffle_rng": None,
                                          "layer_rngs": {}})}
    meta.update(entries)
    return meta


def _with_layer(**dense_config) -> dict:
    config = _config()
    config["layers"][1]["config"].update(dense_config)
    return config


_SGD = {"optimizer": {"class_name": "SGD", "config": {}}, "loss": None, "metrics": []}
_STATE0 = {"optimizer_iterations": 0, "shuffle_rng": None, "layer_rngs": {}}
_DEEP = "[" * 100_000 + "]" * 100_000


def _valid() -> bytes:
    return _safetensors(_weights(), _meta())


# name -> (file bytes, message regex); each is refused by load_model and load_weights
HOSTILE = {
    "zero_length": (b"", r"is empty \(0 bytes\)"),
    "three_bytes": (b"\x01\x02\x03", "shorter than the 8-byte header length"),
    "length_only": (struct.pack("<Q", 0), r"not valid JSON"),
    "random_bytes": (np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
                     "not a safetensors file or is corrupt"),
    "random_after_small_length": (struct.pack("<Q", 64) + bytes(range(64)) * 4,
                                  "not valid JSON"),
    "truncated_header": (_valid()[:40], "truncated"),
    "truncated_data": (_valid()[:-5], "truncated"),
    "header_length_past_eof": (_safetensors(_weights(), _meta(), header_len=10_000),
                               "but only .* follow"),
    "header_length_over_cap": (_safetensors(_weights(), _meta(), header_len=2**62),
                               "more than the 104857600-byte limit"),
    "header_length_max_u64": (_safetensors(_weights(), _meta(), header_len=2**64 - 1),
                              "more than the 104857600-byte limit"),
    "offsets_past_eof": (_safetensors(_weights(), _meta(),
                                      offsets={"dense/bias": [48, 10**12]}),
                         "does not fit its data_offsets"),
    "data_past_eof": (_safetensors(
        {"dense/kernel": ("F32", [10**6, 3], b"\0" * 48)}, _meta(),
        offsets={"dense/kernel": [0, 12 * 10**6]}), "the header describes 12000000 bytes"),
    "offsets_reversed": (_safetensors(_weights(), _meta(), offsets={"dense/bias": [60, 48]}),
                         "does not fit its data_offsets"),
    "offsets_overlap": (_safetensors(_weights(), _meta(), offsets={"dense/bias": [40, 52]},
                                     data=bytes(52)), "not a valid safetensors file"),
    "offsets_not_ints": (_safetensors(_weights(), _meta(), offsets={"dense/bias": [48, 60.0]}),
                         "has no valid data_offsets"),
    "offsets_huge_ints": (_safetensors(_weights(), _meta(),
                                       offsets={"dense/bias": [48, 10**40]}),
                          "does not fit its data_offsets"),
    "shape_lies_about_size": (_safetensors(
        {**_weights(), "dense/bias": ("F32", [10**9, 10**9], b"\0" * 12)}, _meta()),
        "does not fit its data_offsets"),
    "negative_shape": (_safetensors({**_weights(), "dense/bias": ("F32", [-3], b"\0" * 12)},
                                    _meta()), "does not fit its data_offsets"),
    "unknown_dtype": (_safetensors({**_weights(), "dense/bias": ("XYZ", [3], b"\0" * 12)},
                                   _meta()), "has dtype 'XYZ', which NumPy cannot read"),
    "bf16_weights": (_safetensors({**_weights(), "dense/bias": ("BF16", [3], b"\0" * 6)},
                                  _meta()), "has dtype 'BF16', which NumPy cannot read"),
    "f64_weights": (_safetensors({**_weights(), "dense/bias": ("F64", [3], b"\0" * 24)},
                                 _meta()), "has dtype float64, expected float32"),
    "i32_weights": (_safetensors({**_weights(), "dense/kernel": ("I32", [4, 3], b"\0" * 48)},
                                 _meta()), "has dtype int32, expected float32"),
    "shape_not_config": (_safetensors(_weights(kernel=np.zeros((3, 4), np.float32)), _meta()),
                         r"'dense/kernel' has shape \(3, 4\), expected \(4, 3\)"),
    "extra_tensor": (_safetensors({**_weights(), "evil": ("F32", [1], b"\0" * 4)}, _meta()),
                     r"tensors the model does not: \['evil'\]"),
    "nested_header": (_raw_header(b'{"x": ' + _DEEP.encode() + b"}"), "nested"),
    "header_not_object": (_raw_header(b"[1, 2, 3]"), "header is not a JSON object"),
    "header_not_utf8": (_raw_header(b"\xff\xfe\xfd\xfc" * 4), "not valid JSON"),
    "header_huge_int": (_raw_header(b'{"x": ' + b"9" * 5000 + b"}"), "not valid JSON"),
    "metadata_not_strings": (_safetensors(_weights(), {"format": {"a": "tinynet"}}),
                             "not a valid safetensors file"),
    "metadata_is_list": (_safetensors(_weights(), ["tinynet"]), "not a valid safetensors file"),
    "no_metadata": (_safetensors(_weights(), None), "not a tinynet file"),
    "foreign_metadata": (_safetensors(_weights(), {"format": "pt"}), "not a tinynet file"),
    "future_version": (_safetensors(_weights(), _meta(format_version="2")),
                       r"has format_version 2, newer than this tinynet reads \(1\)"),
    "far_future_version": (_safetensors(_weights(), _meta(format_version="999999999")),
                           "has format_version 999999999"),
    "version_not_int": (_safetensors(_weights(), _meta(format_version="1.0")),
                        "invalid format_version '1.0'"),
    "version_huge": (_safetensors(_weights(), _meta(format_version="9" * 5000)),
                     "invalid format_version"),
    "bad_kind": (_safetensors(_weights(), _meta(kind="pickle")), "'kind' must be"),
}

# refused by load_model (load_weights does not read the config)
HOSTILE_MODEL = {
    **{f"class_{name}": (
        _safetensors(_weights(), _meta(_config(layers=[
            {"class_name": "Input", "config": {"shape": [4]}},
            {"class_name": name, "config": {"units": 3}}]))),
        "unknown layer class")
       for name in ("os.system", "tinynet.layers.Dense", "__import__", "builtins.eval",
                    "antigravity.fly", "subprocess.Popen", "Layer", "Dense.__init__", "",
                    "dense")},
    # a model is a layer: its config is checked like the outer one
    "nested_model_without_name": (_safetensors(_weights(), _meta(_config(layers=[
        {"class_name": "Input", "config": {"shape": [4]}},
        {"class_name": "Sequential", "config": {"units": 3}}]))),
        "'name' must be a non-empty string"),
    "nested_model_config": (_safetensors(_weights(), _meta(model_config=_DEEP)), "nested"),
    "nested_compile_config": (_safetensors(_weights(), {**_meta(), "compile_config": _DEEP}),
                              "nested"),
    "nested_training_state": (_safetensors(_weights(), _meta(training_state=_DEEP)), "nested"),
    "nested_layer_config": (_safetensors(_weights(), _meta(model_config=(
        '{"name": "m", "layers": [{"class_name": "Dense", "config": {"units": '
        + "[" * 70 + "]" * 70 + '}}], "build_input_shape": [null, 4]}'))), "nested"),
    "config_is_list": (_safetensors(_weights(), _meta([_config()])),
                       "expected a JSON object, got list"),
    "layers_is_dict": (_safetensors(_weights(), _meta(_config(layers={"a": 1}))),
                       "'layers' must be a list"),
    "layer_entry_is_list": (_safetensors(_weights(), _meta(_config(layers=[[1, 2]]))),
                            "layer 0 must be a JSON object"),
    "layer_config_is_list": (_safetensors(_weights(), _meta(_config(layers=[
        {"class_name": "Dense", "config": [3]}]))), "has no 'config' object"),
    "units_huge_int": (_safetensors(_weights(), _meta(_with_layer(units=10**30))),
                       "model_config: layer 'dense' .* more than the 1048591 the file allows"),
    "units_is_string": (_safetensors(_weights(), _meta(_with_layer(units="3"))),
                        "cannot rebuild the model"),
    "unexpected_kwarg": (_safetensors(_weights(), _meta(_with_layer(__class__="os"))),
                         "cannot rebuild the model"),
    "input_shape_huge": (_safetensors(_weights(), _meta(_config(
        layers=[{"class_name": "Dense", "config": {"units": 3}}],
        build_input_shape=[None, 10**30]))), "more than the 1048591 the file allows"),
    "build_shape_wrong_type": (_safetensors(_weights(), _meta(_config(build_input_shape={}))),
                               "'build_input_shape' must be null"),
    "compile_config_is_list": (_safetensors(_weights(), _meta(compile_config=[1])),
                               "invalid compile_config"),
    "optimizer_class_dotted": (_safetensors(_weights(), _meta(compile_config={
        **_SGD, "optimizer": {"class_name": "os.system", "config": {}}}, state=_STATE0)),
        "Unknown optimizer 'os.system'"),
    "learning_rate_huge_int": (_safetensors(_weights(), _meta(compile_config={
        **_SGD, "optimizer": {"class_name": "SGD", "config": {"learning_rate": 10**400}}},
        state=_STATE0)), "invalid compile_config"),
    "loss_class_dotted": (_safetensors(_weights(), _meta(compile_config={
        **_SGD, "loss": {"class_name": "builtins.eval", "config": {}}}, state=_STATE0)),
        "Unknown loss 'builtins.eval'"),
    "training_state_is_list": (_safetensors(_weights(), _meta(training_state="[1]")),
                               "invalid training_state"),
    "iterations_huge_int": (_safetensors(_weights(), _meta(compile_config=_SGD, state={
        **_STATE0, "optimizer_iterations": 2**70})), "below 2\\*\\*63"),
    "iterations_float": (_safetensors(_weights(), _meta(compile_config=_SGD, state={
        **_STATE0, "optimizer_iterations": 1.5})), "'optimizer_iterations' must be"),
    "rng_class_dotted": (_safetensors(_weights(), _meta(compile_config=_SGD, state={
        **_STATE0, "shuffle_rng": {"bit_generator": "os.system", "state": {}}})),
        "must name one of PCG64"),
    "missing_entry": (_safetensors(_weights(), {k: v for k, v in _meta().items()
                                                if k != "model_config"}),
                      "'model_config' is missing"),
    "weights_file": (_safetensors(_weights(), {"format": "tinynet", "format_version": "1",
                                                "kind": "weights"}), "holds weights only"),
    # 3000 x 3000 weights asked of a file that holds 15: refused before allocating them
    "config_asks_for_huge_weights": (_safetensors(_weights(), _meta(_config(
        layers=[{"class_name": "Dense", "config": {"units": 3000}}],
        build_input_shape=[None, 3000]))), "more than the .* the file allows"),
}


def _write(tmp_path, data: bytes, name: str = "hostile.safetensors"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _load_weights(path):
    model = _model()
    before = model.get_weights()
    try:
        model.load_weights(path)
    finally:  # a refused file changes nothing
        assert all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))


def test_handmade_valid_file_loads(tmp_path):
    path = _write(tmp_path, _valid())
    model = tn.load_model(path)
    x = np.ones((2, 4), np.float32)
    expected = x @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 8) + [0.5, -1.0, 2.0]
    assert np.array_equal(model.predict(x, verbose=0), expected.astype(np.float32))
    other = _model()
    other.load_weights(path)
    assert all(np.array_equal(a, b) for a, b in zip(model.get_weights(), other.get_weights()))


@pytest.mark.parametrize("loader", [tn.load_model, saving.load_model, _load_weights],
                         ids=["tn.load_model", "saving.load_model", "load_weights"])
@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_file_is_refused(tmp_path, case, loader):
    data, message = HOSTILE[case]
    with pytest.raises(ValueError, match=message):
        loader(_write(tmp_path, data))


@pytest.mark.parametrize("case", sorted(HOSTILE_MODEL))
def test_hostile_model_file_is_refused(tmp_path, case):
    data, message = HOSTILE_MODEL[case]
    with pytest.raises(ValueError, match=message):
        tn.load_model(_write(tmp_path, data))


@pytest.mark.parametrize("case", ["header_length_past_eof", "header_length_over_cap",
                                  "offsets_past_eof", "data_past_eof", "offsets_reversed",
                                  "offsets_huge_ints", "shape_lies_about_size",
                                  "negative_shape", "unknown_dtype", "bf16_weights",
                                  "nested_header", "truncated_data"])
def test_lies_are_caught_before_safetensors_sees_the_file(tmp_path, monkeypatch, case):
    import safetensors.numpy

    def refuse(*args, **kwargs):
        raise AssertionError("the file reached safetensors")
    monkeypatch.setattr(safetensors.numpy, "load", refuse)
    data, message = HOSTILE[case]
    with pytest.raises(ValueError, match=message):
        tn.load_model(_write(tmp_path, data))


def test_nothing_is_imported_or_executed(tmp_path, monkeypatch):
    tn.load_model(_write(tmp_path, _valid(), "warm.safetensors"))  # imports what loading needs
    cases = [(name in HOSTILE, _write(tmp_path, data, f"{i}.safetensors")) for i, (name, (data, _))
             in enumerate([*HOSTILE.items(), *HOSTILE_MODEL.items()])]
    before = set(sys.modules)
    real_import = builtins.__import__

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        known = set(sys.modules)
        module = real_import(name, globals, locals, fromlist, level)
        new = set(sys.modules) - known
        if new:
            raise AssertionError(f"loading a hostile file imported {sorted(new)}")
        return module

    def no_import_module(name, package=None):
        raise AssertionError(f"loading a hostile file called import_module({name!r})")
    monkeypatch.setattr(builtins, "__import__", guarded_import)
    monkeypatch.setattr(importlib, "import_module", no_import_module)
    for bad_weights, path in cases:
        with pytest.raises(ValueError):
            tn.load_model(path)
        if bad_weights:
            with pytest.raises(ValueError):
                _load_weights(path)
    monkeypatch.undo()
    assert set(sys.modules) == before
    assert "antigravity" not in sys.modules and "subprocess.Popen" not in sys.modules


def _peak_during_failed_load(fn, path) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(ValueError):
            fn(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("case", ["header_length_over_cap", "header_length_past_eof",
                                  "offsets_past_eof", "data_past_eof", "shape_lies_about_size",
                                  "config_asks_for_huge_weights", "input_shape_huge",
                                  "units_huge_int", "random_bytes"])
def test_failed_load_of_lying_file_allocates_little(tmp_path, case):
    data = {**HOSTILE, **HOSTILE_MODEL}[case][0]
    path = _write(tmp_path, data)
    peak = _peak_during_failed_load(tn.load_model, path)
    assert peak < 10 * MB + 4 * len(data), (case, peak)


def test_lying_config_at_scale_allocates_little(tmp_path):
    # Dense(20000) on 20000 inputs would be 1.6 GB of float32 weights from a 1 KB file
    data = _safetensors(_weights(), _meta(_config(
        layers=[{"class_name": "Dense", "config": {"units": 20_000}}],
        build_input_shape=[None, 20_000])))
    peak = _peak_during_failed_load(tn.load_model, _write(tmp_path, data))
    assert peak < 10 * MB + 4 * len(data)


def test_model_bigger_than_its_file_is_refused_but_slack_keeps_messages(tmp_path):
    # a missing tensor is reported as missing (within the slack), not as a budget failure
    weights = _weights()
    del weights["dense/bias"]
    with pytest.raises(ValueError, match="tensor 'dense/bias' is missing from the file"):
        tn.load_model(_write(tmp_path, _safetensors(weights, _meta())))


def test_refused_load_leaves_layer_classes_untouched(tmp_path):
    with pytest.raises(ValueError):
        tn.load_model(_write(tmp_path, HOSTILE_MODEL["config_asks_for_huge_weights"][0]))
    model = tn.load_model(_write(tmp_path, _valid(), "ok.safetensors"))
    assert all("add_weight" not in vars(layer) for layer in model.layers)
    assert "add_weight" not in vars(Dense)


# -- IDX files ----------------------------------------------------------------------------------
def _idx(magic: int, dims, payload: bytes = b"") -> bytes:
    return struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in dims) + payload


def _labels(tmp_path, n: int = 2):
    path = tmp_path / "labels"
    path.write_bytes(_idx(0x801, (n,), bytes(n)))
    return path


IDX_HOSTILE = {
    "zero_length": (b"", "too short"),
    "random_bytes": (np.random.default_rng(3).integers(0, 256, 1024, dtype=np.uint8).tobytes(),
                     "bad magic number"),
    "truncated_header": (_idx(0x803, (2, 2, 2))[:9], "is truncated"),
    "billion_images_in_1kb": (_idx(0x803, (10**9, 28, 28), bytes(1000)),
                              "the header claims 784000000000 bytes"),
    "max_dims": (_idx(0x803, (2**32 - 1,) * 3, bytes(1000)), "is truncated|more than deflate can expand"),
    "zero_dim": (_idx(0x803, (0, 28, 28)), "must all be positive"),
    "labels_magic_for_images": (_idx(0x801, (2,), bytes(2)), "bad magic number"),
    "float_idx": (_idx(0x0D03, (1, 1, 1), bytes(4)), "bad magic number 0x00000d03"),
    "trailing_data": (_idx(0x803, (2, 1, 1), bytes(3)), "has data after"),
}


@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gzip"])
@pytest.mark.parametrize("case", sorted(IDX_HOSTILE))
def test_hostile_idx_is_refused(tmp_path, case, compress):
    data, message = IDX_HOSTILE[case]
    images = tmp_path / "images"
    images.write_bytes(gzip.compress(data) if compress else data)
    with pytest.raises(ValueError, match=message):
        load_idx(images, _labels(tmp_path))


@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gzip"])
def test_lying_idx_header_fails_fast_without_allocating(tmp_path, compress):
    data = _idx(0x803, (10**9, 28, 28), bytes(1000))
    images = tmp_path / "images"
    images.write_bytes(gzip.compress(data) if compress else data)
    peak = _peak_during_failed_load(lambda p: load_idx(p, _labels(tmp_path)), images)
    assert peak < 10 * MB + 4 * len(data)


def test_truncated_and_corrupt_gzip_idx(tmp_path):
    packed = gzip.compress(_idx(0x803, (4, 8, 8), bytes(range(256))))
    labels = _labels(tmp_path, 4)
    for data in (packed[:len(packed) // 2], packed[:12] + b"\xff" * (len(packed) - 12),
                 b"\x1f\x8b" + bytes(100)):
        images = tmp_path / "images.gz"
        images.write_bytes(data)
        with pytest.raises(ValueError, match="not a valid gzip stream or is truncated"):
            load_idx(images, labels)
