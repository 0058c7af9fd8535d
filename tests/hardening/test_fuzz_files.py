"""Fuzzing ``load_model`` with mutated saved files: whatever a file holds, loading it
either succeeds or raises ``ValueError`` (naming the file), never another exception.

Four saved models (a Sequential CNN, a functional model with merges and fixed
statistics, a model nested in models, and a compiled, fitted model with optimizer slots,
a shuffling generator and a layer generator) are mutated with a fixed seed: JSON values
in the header's metadata (types swapped, huge and negative ints, floats, odd strings,
lists of the wrong length, deleted keys), tensor entries (dtype, shape, offsets, names)
and tensor bytes. A few hundred cases, a few seconds.
"""

from __future__ import annotations

import copy
import json
import random
import struct
import warnings

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L

SEED = 49
# the fitted model has the optimizer and generator states: more of its cases
CASES = {"sequential_cnn": 100, "functional_merge": 100, "nested": 100, "fitted": 200}


def _sequential_cnn() -> tn.Sequential:
    return tn.Sequential([
        tn.Input((6, 6, 1)), L.Conv2D(2, 3, activation="relu"), L.BatchNormalization(),
        L.MaxPooling2D(2), L.Flatten(), L.Dropout(0.5), L.Dense(3, activation="softmax")])


def _functional_merge() -> tn.Model:
    a, b = tn.Input((4,), name="a"), tn.Input((4,), name="b")
    na = L.Normalization(mean=0.5, variance=2.0)(a)
    x, y = L.Dense(3)(na), L.Dense(3)(b)
    merged = L.Concatenate()([L.Add()([x, y]), L.Multiply()([x, y])])
    return tn.Model([a, b], L.Dense(2)(merged), name="merge")


def _nested() -> tn.Sequential:
    inner_in = tn.Input((5,))
    inner = tn.Model(inner_in, L.Dense(4, activation="tanh")(inner_in), name="inner")
    block = tn.Sequential([L.Dense(4), L.LayerNormalization()], name="block")
    return tn.Sequential([tn.Input((5,)), inner, block, L.Dense(1)], name="outer")


def _fitted() -> tn.Sequential:
    tn.set_seed(3)
    model = tn.Sequential([tn.Input((4,)), L.Dense(6, activation="relu"), L.Dropout(0.3),
                           L.Dense(3)])
    optimizer = tn.optimizers.AdamW(learning_rate=0.01, weight_decay=0.01)
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    model.compile(optimizer=optimizer, loss="mse", metrics=["mae"])
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    model.fit(x, x[:, :3], epochs=2, batch_size=8, verbose=0)
    return model


MODELS = {"sequential_cnn": _sequential_cnn, "functional_merge": _functional_merge,
          "nested": _nested, "fitted": _fitted}


def _split(data: bytes) -> tuple[dict, bytes]:
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def _join(header: dict, body: bytes) -> bytes:
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + body


# -- mutations --------------------------------------------------------------------------
_ODD = [None, True, False, 0, 1, -1, 2, -(10**40), 10**40, 2**63, 2**64 + 1, 0.5, -1e308,
        1e308, float("nan"), float("inf"), "", "(", "[", "a/b", "..", "os.system", "1",
        "-1", "99999999999999999999999999999999999999999", "x" * 300, "\u0000", [], {},
        [1], ["1"], [None], [[]], {"a": "1"}, {"class_name": "Dense", "config": {}},
        {"dtype": "uint32", "data": ["1"]}, {"dtype": "uint64", "data": ["-1"]},
        {"dtype": "uint32", "data": ["9" * 40]}, "MT19937", "Philox", "SFC64", "PCG64DXSM"]


def _generator_states() -> list[dict]:
    """Each bit generator's state as a file holds it (ints as decimal strings, arrays as
    ``{"dtype", "data"}``): a file's generator may be swapped for another's, then mutated."""
    def encode(value):
        if isinstance(value, dict):
            return {k: v if k == "bit_generator" else encode(v) for k, v in value.items()}
        if isinstance(value, np.ndarray):
            return {"dtype": str(value.dtype), "data": [str(int(v)) for v in value]}
        return str(int(value))
    return [encode(getattr(np.random, name)(5).state)
            for name in ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")]


GENERATOR_STATES = _generator_states()


def _paths(value, prefix=()):
    """Every (path, value) inside a JSON value, containers included."""
    out = [(prefix, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _near(value, rng: random.Random):
    """A value of the same kind, but wrong: off by a little or a lot, of another length."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, -value - 1, value * 10**rng.randint(5, 40),
                           -(10**rng.randint(1, 40)), str(value), value + 0.5])
    if isinstance(value, float):
        return rng.choice([-value, value * 1e30, 0.0, 10**rng.randint(1, 40), str(value)])
    if isinstance(value, str):
        if value.lstrip("-").isdigit():  # a random generator's big integer
            return rng.choice([value + "0" * rng.randint(1, 40), "-" + value, value[:1],
                               value + "x", "9" * rng.randint(20, 70)])
        return rng.choice([value + "_x", value.upper(), value[:-1], "", value * 3,
                           value + "(", "[" + value, value + "\\"])
    if isinstance(value, list):
        if value and rng.random() < 0.5:
            return value[:rng.randrange(len(value))]
        return value + copy.deepcopy(value[:1]) * rng.randint(1, 3) if value else [0]
    if isinstance(value, dict):
        if value and rng.random() < 0.7:
            key = rng.choice(sorted(value, key=str))
            return {k: v for k, v in value.items() if k != key}
        return {**value, "unexpected": rng.choice(_ODD)}
    return rng.choice(_ODD)


def _set(root, path, value):
    if not path:
        return value
    target = root
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return root


def _mutate_json(text: str, rng: random.Random) -> str:
    value = json.loads(text)
    generators = [p for p, v in _paths(value) if isinstance(v, dict) and "bit_generator" in v]
    within = ()
    if generators and rng.random() < 0.5:  # a generator's state, maybe another's
        within = rng.choice(generators)
        if rng.random() < 0.5:
            value = _set(value, within, copy.deepcopy(rng.choice(GENERATOR_STATES)))
    arrays = [p for p, v in _paths(value, ()) if p[:len(within)] == within and within
              and isinstance(v, list) and p[-1] == "data"]
    if arrays and rng.random() < 0.5:  # a generator's array: too short, or a huge entry
        path = rng.choice(arrays)
        data = _paths(value, ())[[p for p, _ in _paths(value, ())].index(path)][1]
        if rng.random() < 0.5:
            data[:] = data[:rng.randrange(len(data))]
        elif data:
            data[rng.randrange(len(data))] = rng.choice(["9" * 40, "-1", "1.5", "x", ""])
        return json.dumps(value)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        target, base = value, within
        try:
            for key in within:
                target = target[key]
        except (KeyError, IndexError, TypeError):
            target = None
        if not isinstance(target, (dict, list)):  # an earlier mutation replaced it
            target, base = value, ()
        paths = _paths(target, base)
        lists = [(p, v) for p, v in paths if isinstance(v, list)]
        path, old = rng.choice(lists if lists and rng.random() < 0.4 else paths)
        new = rng.choice(_ODD) if rng.random() < 0.4 else _near(old, rng)
        if path and rng.random() < 0.1:  # delete the key or the item instead
            parent = value
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
        else:
            value = _set(value, path, copy.deepcopy(new))
    return json.dumps(value)


def _mutate(data: bytes, rng: random.Random) -> bytes:
    header, body = _split(data)
    meta = header["__metadata__"]
    tensors = sorted(k for k in header if k != "__metadata__")
    kind = rng.choices(["json", "meta", "tensor", "bytes"], weights=[6, 1, 2, 1])[0]
    if kind == "json":
        keys = [k for k in ("model_config", "compile_config", "training_state")
                if meta.get(k) not in (None, "null")]
        key = rng.choice(keys + ["training_state"] * ("compile_config" in keys))
        meta[key] = _mutate_json(meta[key], rng)
    elif kind == "meta":
        key = rng.choice(sorted(meta))
        if rng.random() < 0.3:
            del meta[key]
        else:
            meta[key] = rng.choice(["", "1", "2", "0", "model", "weights", "tinynet", "{}",
                                    "null", "[]", "\"x\"", "1e999"])
    elif kind == "tensor" and tensors:
        name = rng.choice(tensors)
        info = header[name]
        what = rng.choice(["dtype", "shape", "offsets", "rename", "delete", "swap"])
        if what == "dtype":
            info["dtype"] = rng.choice(["F64", "F16", "I32", "U8", "BOOL", "BF16", "F32", "x"])
        elif what == "shape":
            shape = info["shape"]
            info["shape"] = rng.choice([shape[::-1], shape + [1], shape[:-1], [0] + shape,
                                        [-1] + shape[1:], [10**20], ["1"], None])
        elif what == "offsets":
            begin, end = info["data_offsets"]
            info["data_offsets"] = rng.choice([[end, begin], [begin, end + 4], [begin - 4, end],
                                               [begin, 2**64], [begin], "0"])
        elif what == "rename":
            header[name + rng.choice(["_x", "/extra", ""]) + "_"] = header.pop(name)
        elif what == "delete":
            del header[name]
        elif len(tensors) > 1:  # two tensors trade their entries
            other = rng.choice([t for t in tensors if t != name])
            header[name], header[other] = header[other], header[name]
    else:  # tensor bytes: NaN, inf, huge values or truncation
        body = bytearray(body)
        if body and rng.random() < 0.8:
            for _ in range(rng.randint(1, 8)):
                i = rng.randrange(0, len(body) - 3) // 4 * 4
                body[i:i + 4] = rng.choice([b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f",
                                            b"\xff\xff\x7f\x7f", bytes(rng.randrange(256)
                                                                       for _ in range(4))])
        else:
            body = body[:rng.randrange(len(body) + 1)]
        body = bytes(body)
    return _join(header, body)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    files = {}
    for name, make in MODELS.items():
        path = folder / f"{name}.safetensors"
        make().save(path)
        files[name] = path.read_bytes()
    return files


def test_the_unmutated_files_load(saved, tmp_path):
    for name, data in saved.items():
        path = tmp_path / f"{name}.safetensors"
        path.write_bytes(data)
        tn.load_model(path)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_mutated_files_load_or_raise_value_error(saved, tmp_path, name):
    rng = random.Random(f"{SEED}-{name}")
    failures, refused = [], 0
    for case in range(CASES[name]):
        data = _mutate(saved[name], rng)
        path = tmp_path / f"{name}-{case}.safetensors"
        path.write_bytes(data)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tn.load_model(path)
        except ValueError as exc:
            refused += 1
            if str(path) not in str(exc):
                failures.append(f"case {case}: ValueError without the file name: {exc}")
            if "cannot load the file's content" in str(exc):  # the last safety net
                failures.append(f"case {case}: no check caught it at its source: {exc}")
        except BaseException as exc:  # noqa: BLE001 - any other type is the finding
            failures.append(f"case {case}: {type(exc).__name__}: {exc!s:.300}")
        path.unlink()
    assert not failures, "\n".join(failures[:20])
    assert refused > CASES[name] // 4  # the mutations do reach the checks
