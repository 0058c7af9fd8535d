"""The loader's budgets and limits (issue 49): what a file makes ``load_model`` allocate
is counted before it is allocated (weights, fixed statistics, buffers, trial batches);
layer count and model nesting are capped; building and loading n layers is O(n) and no
walker recurses per layer; every malformed training state or optimizer setting is a
``ValueError`` naming the file and the field; a killed save's temporary file goes at the
next save or load of its path; saves are byte-reproducible."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
import tracemalloc

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet.saving import config as saving_config
from tinynet.saving import files

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMPTY_STATE = {"optimizer_iterations": None, "shuffle_rng": None, "layer_rngs": {}}


def _file(path, layers, tensors=None, state=None, compile_config=None, **config) -> str:
    """A model file written by hand: a Sequential of ``layers`` (class name, config)."""
    model_config = {"class_name": "Sequential", "config": {
        "name": "s", "trainable": True, "build_input_shape": None,
        "layers": [{"class_name": c, "config": cfg} for c, cfg in layers], **config}}
    meta = {"format": "tinynet", "format_version": "1", "kind": "model",
            "model_config": json.dumps(model_config),
            "compile_config": json.dumps(compile_config),
            "training_state": json.dumps(EMPTY_STATE if state is None else state)}
    return _write(path, meta, tensors or {})


def _write(path, meta: dict, tensors: dict) -> str:
    header, blobs, pos = {"__metadata__": meta}, [], 0
    for name, arr in tensors.items():
        blob = np.ascontiguousarray(arr, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(np.shape(arr)),
                        "data_offsets": [pos, pos + len(blob)]}
        pos += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return str(path)


def _refused_small(path, *fragments) -> None:
    """``load_model(path)`` raises a ValueError naming the file and ``fragments``, with a
    small peak of traced memory (nothing big was allocated before the refusal)."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as info:
            tn.load_model(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    for fragment in (repr(str(path)), *fragments):
        assert fragment in message, (fragment, message)
    assert peak < 40 * (1 << 20), peak


# -- budgets: everything a file makes the loader allocate ---------------------------------
def test_fixed_statistics_are_counted_before_they_are_allocated(tmp_path):
    """Finding 1: a 448-byte file asked for 3.2 GB of broadcast statistics."""
    path = _file(tmp_path / "norm.safetensors", [
        ("InputLayer", {"batch_shape": [None, 20000, 20000], "name": "input"}),
        ("Normalization", {"axis": [1, 2], "mean": 0.5, "variance": 2.0,
                           "name": "normalization"})])
    assert os.path.getsize(path) < 1000
    _refused_small(path, "model_config: layer 'normalization' (Normalization)",
                   "400000000 values for its fixed mean", "more than the 1048576 the file "
                   "allows", "WEIGHT_SLACK", "refused before allocating")


def test_fixed_statistics_within_the_budget_load(tmp_path):
    model = tn.Sequential([tn.Input((30, 30)), L.Normalization(axis=[1, 2], mean=0.5,
                                                               variance=2.0)])
    model.save(tmp_path / "ok.safetensors")
    loaded = tn.load_model(tmp_path / "ok.safetensors")
    x = np.ones((2, 30, 30), np.float32)
    assert np.array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_normalization_buffers_are_counted(tmp_path):
    path = _file(tmp_path / "ln.safetensors", [
        ("InputLayer", {"batch_shape": [None, 3000, 3000], "name": "input"}),
        ("LayerNormalization", {"axis": [1, 2], "scale": False, "center": False,
                                "name": "layer_normalization"})])
    _refused_small(path, "model_config: layer 'layer_normalization' (LayerNormalization)",
                   "a buffer of ones", "refused before allocating")


@tn.saving.register_keras_serializable(package="h49")
class Twice(L.Layer):
    def call(self, x):
        return x * 2.0


def test_a_call_layers_trial_batch_is_bounded(tmp_path):
    path = _file(tmp_path / "trial.safetensors", [
        ("InputLayer", {"batch_shape": [None, 100000, 1000], "name": "input"}),
        ("Twice", {"name": "twice"})])
    _refused_small(path, "model_config: layer 'twice' (Twice)", "a trial batch",
                   "SCRATCH_VALUES", "refused before allocating")


def test_built_shapes_are_bounded_through_the_weights(tmp_path):
    path = _file(tmp_path / "wide.safetensors", [
        ("InputLayer", {"batch_shape": [None, 10**12], "name": "input"}),
        ("Dense", {"units": 10**6, "name": "dense"})])
    _refused_small(path, "model_config: layer 'dense' (Dense)", "weight 'kernel'",
                   "refused before allocating")


# -- limits on layers and nesting ----------------------------------------------------------
def test_layer_count_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(saving_config, "MAX_LAYERS", 50)
    path = _file(tmp_path / "many.safetensors", [
        ("InputLayer", {"batch_shape": [None, 2], "name": "input"}),
        *[("Activation", {"activation": "relu", "name": f"a{i}"}) for i in range(50)]])
    _refused_small(path, "invalid model_config", "more than 50 layers", "MAX_LAYERS")


def test_layer_calls_count_toward_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(saving_config, "MAX_LAYERS", 50)
    x = inp = tn.Input((2,))
    shared = L.Activation("relu")
    for _ in range(60):
        x = shared(x)
    tn.Model(inp, x).save(tmp_path / "calls.safetensors")
    _refused_small(tmp_path / "calls.safetensors", "more than 50 layer calls", "MAX_LAYERS")


def test_the_documented_limits_are_the_code_s():
    text = open(os.path.join(ROOT, "docs", "saving.md")).read()
    assert f"{files.MAX_LAYERS:,}" in text and f"{files.MAX_NESTING} " in text
    assert saving_config.MAX_LAYERS == files.MAX_LAYERS == 100_000
    assert saving_config.MAX_NESTING == files.MAX_NESTING == 16


def test_nesting_limit(tmp_path):
    model = tn.Sequential([tn.Input((2,)), L.Dense(2)], name="m0")
    for depth in range(1, files.MAX_NESTING + 1):
        model = tn.Sequential([tn.Input((2,)), model], name=f"m{depth}")
    model.save(tmp_path / "deep.safetensors")
    _refused_small(tmp_path / "deep.safetensors", "models are nested more than 16 deep",
                   "MAX_NESTING")
    inner = model.layers[0]  # one level less: at the limit, it loads
    inner.save(tmp_path / "ok.safetensors")
    x = np.ones((1, 2), np.float32)
    assert np.array_equal(tn.load_model(tmp_path / "ok.safetensors").predict(x, verbose=0),
                          inner.predict(x, verbose=0))


# -- O(n), no recursion per layer --------------------------------------------------------------
def test_20000_layer_sequential_saves_and_loads(tmp_path):
    """Finding 2: 20,000 Activation layers took over 30 s to load (a quadratic add)."""
    start = time.perf_counter()
    model = tn.Sequential([tn.Input((3,))] + [L.Activation("relu") for _ in range(20000)])
    model.save(tmp_path / "long.safetensors")
    loaded = tn.load_model(tmp_path / "long.safetensors")
    assert len(loaded.layers) == 20000 and loaded.layers[-1].name == "activation_19999"
    print(f"20,000 layers built, saved and loaded in {time.perf_counter() - start:.1f} s")


def test_3000_layer_sequential_through_the_api():
    layers = [L.Dense(2) if i % 100 == 0 else L.Activation("relu") for i in range(3000)]
    model = tn.Sequential([tn.Input((2,))] + layers)
    assert [l.name for l in model.layers[:3]] == ["dense", "activation", "activation_1"]
    assert model.layers[-1].name == "activation_2969"
    with pytest.raises(ValueError, match="already in the model"):
        model.add(layers[5])
    with pytest.raises(ValueError, match="'dense_3' is already the name of a layer"):
        model.add(L.Dense(2, name="dense_3"))
    model.layers[1].name = "renamed"  # a rename is seen by the next add
    model.add(L.Activation("relu"))
    assert model.layers[-1].name == "activation"  # free again
    with pytest.raises(ValueError, match="'renamed' is already the name"):
        model.add(L.Activation("relu", name="renamed"))
    model.add(L.Activation("relu"))
    assert model.layers[-1].name == "activation_2970"
    model.pop()
    assert model.predict(np.ones((2, 2), np.float32), verbose=0).shape == (2, 2)


def _recursion_headroom(frames: int):
    """A recursion limit ``frames`` above the current depth: a walker recursing per layer
    fails at once."""
    import contextlib
    import inspect

    @contextlib.contextmanager
    def limit():
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(len(inspect.stack(0)) + frames)
        try:
            yield
        finally:
            sys.setrecursionlimit(old)
    return limit()


def test_1500_layer_functional_chain_builds_saves_and_loads(tmp_path):
    """Finding 2: a functional chain of 1,200 layers raised RecursionError from a file
    (1,000 through the API)."""
    x = inp = tn.Input((3,))
    with _recursion_headroom(150):
        for i in range(1500):
            x = (L.Dense(3) if i % 300 == 0 else L.Activation("relu"))(x)
        model = tn.Model(inp, x)
        model.summary(print_fn=lambda text: None)
        model.save(tmp_path / "chain.safetensors")
        loaded = tn.load_model(tmp_path / "chain.safetensors")
        again = tn.models.model_from_json(model.to_json())
        clone = tn.models.clone_model(model)
    assert len(loaded.layers) == len(again.layers) == len(clone.layers) == 1501
    data = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    assert np.array_equal(loaded.predict(data, verbose=0), model.predict(data, verbose=0))
    loaded.compile(optimizer="sgd", loss="mse")
    loaded.fit(data, data, epochs=1, verbose=0)


def test_a_config_in_reverse_order_reconnects_in_linear_time(tmp_path):
    x = inp = tn.Input((2,))
    for _ in range(3000):
        x = L.Activation("relu")(x)
    model = tn.Model(inp, x)
    meta = {"format": "tinynet", "format_version": "1", "kind": "model",
            "compile_config": "null", "training_state": json.dumps(EMPTY_STATE)}
    config = model.get_config()
    config["layers"] = config["layers"][::-1]  # every layer before what it consumes
    meta["model_config"] = json.dumps({"class_name": "Model", "config": config})
    start = time.perf_counter()
    loaded = tn.load_model(_write(tmp_path / "reversed.safetensors", meta, {}))
    assert len(loaded.layers) == 3001
    assert time.perf_counter() - start < 60  # one pass per layer took minutes


# -- finding 3: ValueError, naming the file and the field, at the source ---------------------
def _fitted_file(tmp_path):
    tn.set_seed(1)
    model = tn.Sequential([tn.Input((3,)), L.Dense(4), L.Dropout(0.5), L.Dense(2)])
    optimizer = tn.optimizers.AdamW(learning_rate=0.01)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    model.compile(optimizer=optimizer, loss="mse")
    x = np.ones((8, 3), np.float32)
    model.fit(x, x[:, :2], epochs=1, batch_size=4, verbose=0)
    path = tmp_path / "fitted.safetensors"
    model.save(path)
    return path


def _edited(path, out, key, edit) -> str:
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    value = json.loads(header["__metadata__"][key])
    edit(value)
    header["__metadata__"][key] = json.dumps(value)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(out, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)) + text + data[8 + n:])
    return str(out)


MT_KEY = {"dtype": "uint32", "data": ["1"]}
STATE_CASES = {
    "pcg-state-40-digits": (lambda s: s["shuffle_rng"]["state"].update(state="9" * 40),
                            "training_state: shuffle_rng: invalid random generator state: "
                            "PCG64.state.state must be a decimal string of an integer in "
                            "[0, 2**128)"),
    "pcg-negative": (lambda s: s["shuffle_rng"]["state"].update(inc="-3"),
                     "PCG64.state.inc must be a decimal string"),
    "uinteger-huge": (lambda s: s["shuffle_rng"].update(uinteger=str(2**32)),
                      "PCG64.uinteger must be a decimal string of an integer in [0, 2**32)"),
    "entry-is-object": (lambda s: s["shuffle_rng"].update(state={"a": "1"}),
                        "PCG64.state must be an object with the keys ['inc', 'state'], got "
                        "['a']"),
    "layer-rng-40-digits": (lambda s: s["layer_rngs"]["dropout"]["state"].update(
        state="9" * 40), "training_state: layer_rngs['dropout']: invalid random generator"),
    "mt19937-one-element-key": (lambda s: s.update(shuffle_rng={
        "bit_generator": "MT19937", "state": {"key": MT_KEY, "pos": "0"}}),
        "MT19937.state.key must be {'dtype': 'uint32', 'data': [624 decimal strings]}"),
    "mt19937-huge-key": (lambda s: s.update(shuffle_rng={
        "bit_generator": "MT19937", "state": {"key": {"dtype": "uint32",
                                                      "data": ["9" * 40] * 624}, "pos": "0"}}),
        "MT19937.state.key.data[0] must be a decimal string of an integer in [0, 2**32)"),
    "philox-short-counter": (lambda s: s.update(shuffle_rng={
        "bit_generator": "Philox", "state": {"counter": {"dtype": "uint64", "data": ["1"]},
                                             "key": {"dtype": "uint64", "data": ["1", "2"]}},
        "buffer": {"dtype": "uint64", "data": ["0"] * 4}, "buffer_pos": "4",
        "has_uint32": "0", "uinteger": "0"}), "Philox.state.counter must be"),
    "sfc64-short-state": (lambda s: s.update(shuffle_rng={
        "bit_generator": "SFC64", "state": {"state": {"dtype": "uint64", "data": ["1"]}},
        "has_uint32": "0", "uinteger": "0"}), "SFC64.state.state must be"),
}


@pytest.mark.parametrize("case", sorted(STATE_CASES))
def test_malformed_generator_states_are_value_errors(tmp_path, case):
    edit, message = STATE_CASES[case]
    path = _edited(_fitted_file(tmp_path), tmp_path / "bad.safetensors", "training_state",
                   edit)
    with pytest.raises(ValueError) as info:
        tn.load_model(path)
    assert repr(path) in str(info.value) and message in str(info.value), str(info.value)


@pytest.mark.parametrize("names, message", [
    (["("], "AdamW: exclude_from_weight_decay var_names must be regular expressions"),
    ({"a": 1}, "exclude_from_weight_decay must be a list of names, got dict")])
def test_a_bad_weight_decay_exclusion_in_a_file_is_a_value_error(tmp_path, names, message):
    path = _edited(_fitted_file(tmp_path), tmp_path / "bad.safetensors", "compile_config",
                   lambda c: c["optimizer"]["config"].update(exclude_from_weight_decay=names))
    with pytest.raises(ValueError) as info:
        tn.load_model(path)
    assert repr(path) in str(info.value) and "invalid compile_config" in str(info.value)
    assert message in str(info.value)


def test_weight_decay_exclusions_match_each_on_its_own():
    optimizer = tn.optimizers.AdamW()
    optimizer.exclude_from_weight_decay(var_names=["(a)\\1", "(b)\\1"])  # no renumbering
    assert not optimizer._use_weight_decay(tn.layers.Parameter(np.zeros(1), "xbb", True))
    assert optimizer._use_weight_decay(tn.layers.Parameter(np.zeros(1), "ab", True))


def test_the_generator_states_a_fit_writes_still_load_bitwise(tmp_path):
    path = _fitted_file(tmp_path)
    model = tn.load_model(path)
    model.save(tmp_path / "again.safetensors")
    assert open(path, "rb").read() == open(tmp_path / "again.safetensors", "rb").read()


# -- finding 5: what a killed save leaves, the next save or load removes --------------------
def test_stale_temporary_files_of_the_target_are_removed(tmp_path):
    model = tn.Sequential([tn.Input((2,)), L.Dense(1)])
    target = tmp_path / "m.safetensors"
    stale = tmp_path / ".m.safetensors.0123456789ab.tmp"
    others = [".m.safetensors.0123456789ab.tmp.keep", ".n.safetensors.0123456789ab.tmp",
              ".m.safetensors.0123456789AB.tmp", ".m.safetensors.0123.tmp",
              "m.safetensors.0123456789ab.tmp", ".xm.safetensors.0123456789ab.tmp"]
    for name in others:
        (tmp_path / name).write_bytes(b"not ours")
    for action in (lambda: model.save(target), lambda: tn.load_model(target),
                   lambda: model.load_weights(target)):
        stale.write_bytes(b"half a file")
        action()
        assert not stale.exists()
        assert sorted(os.listdir(tmp_path)) == sorted(others + ["m.safetensors"])


def test_a_running_saves_temporary_file_is_left_alone(tmp_path):
    import fcntl

    model = tn.Sequential([tn.Input((2,)), L.Dense(1)])
    live = tmp_path / ".m.safetensors.00000000beef.tmp"
    with open(live, "wb") as fh:  # another save, still writing: it holds the lock
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        model.save(tmp_path / "m.safetensors")
        tn.load_model(tmp_path / "m.safetensors")
        assert live.exists()
    model.save(tmp_path / "m.safetensors")  # its save was killed: now it is stale
    assert sorted(os.listdir(tmp_path)) == ["m.safetensors"]


def test_a_save_killed_mid_write_leaves_a_temp_that_the_next_load_removes(tmp_path):
    target = tmp_path / "big.safetensors"
    tn.Sequential([tn.Input((2,)), L.Dense(1)]).save(target)
    before = target.read_bytes()
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {ROOT!r})
        import tinynet as tn
        from tinynet.saving import files

        def slow(file, payload):
            file.write(payload[:len(payload) // 2])
            file.flush()
            print("writing", flush=True)
            time.sleep(60)
        files._write = slow
        tn.Sequential([tn.Input((2,)), tn.layers.Dense(1000)]).save({str(target)!r})
    """)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    temps = [n for n in os.listdir(tmp_path) if n != "big.safetensors"]
    assert len(temps) == 1 and temps[0].startswith(".big.safetensors.")
    assert target.read_bytes() == before  # the target is the previous file, whole
    tn.load_model(target)
    assert os.listdir(tmp_path) == ["big.safetensors"]


# -- finding 13: byte-reproducible saves; an empty path ------------------------------------
def test_saves_are_byte_reproducible(tmp_path):
    path = _fitted_file(tmp_path)
    model = tn.load_model(path)
    for i in range(3):
        model.save(tmp_path / f"copy{i}.safetensors")
    copies = {open(tmp_path / f"copy{i}.safetensors", "rb").read() for i in range(3)}
    assert copies == {open(path, "rb").read()}
    data = copies.pop()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    assert list(header)[0] == "__metadata__"
    assert list(header["__metadata__"]) == sorted(header["__metadata__"])
    from safetensors.numpy import load_file  # any safetensors reader still reads it

    assert sorted(load_file(path)) == sorted(k for k in header if k != "__metadata__")


def test_a_save_in_another_process_writes_the_same_bytes(tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {ROOT!r})
        import tinynet as tn
        tn.set_seed(7)
        model = tn.Sequential([tn.Input((3,)), tn.layers.Dense(2), tn.layers.Dropout(0.1)])
        model.compile(optimizer="adam", loss="mse", metrics=["mae"])
        model.save(sys.argv[1])
    """)
    for name in ("a", "b"):
        subprocess.run([sys.executable, "-c", script, str(tmp_path / f"{name}.safetensors")],
                       check=True)
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()


@pytest.mark.parametrize("call", ["save", "save_weights", "export", "load_model"])
def test_an_empty_path_is_a_value_error_naming_it(tmp_path, monkeypatch, call):
    monkeypatch.chdir(tmp_path)
    model = tn.Sequential([tn.Input((2,)), L.Dense(1)])
    run = {"save": lambda: model.save(""), "save_weights": lambda: model.save_weights(""),
           "export": lambda: model.export(""), "load_model": lambda: tn.load_model("")}[call]
    with pytest.raises(ValueError, match=r"path must name a file, got an empty string ''"):
        run()
    assert os.listdir(tmp_path) == [] and not any(
        n.endswith(".tmp") for n in os.listdir(tmp_path.parent))
