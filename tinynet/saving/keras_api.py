"""Keras 3 files: ``.keras`` archives and ``.weights.h5`` weights, written and read.

``save_model``/``load_model``/``save_weights``/``load_weights`` come here for those
suffixes (h5py, the ``keras`` extra, is needed only then). The model's config is Keras's
(``keras_config``), the weights and optimizer variables are in Keras's HDF5 layout
(``keras_weights``), and the archive is read in memory with every size capped
(``keras_archive``): nothing is extracted, nothing is imported or run.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from tinynet.saving.config import build_model, check_model_config, compile_config, compile_model
from tinynet.saving.files import WEIGHT_SLACK, _named, atomic_write, loads
from tinynet.saving.keras_archive import (KERAS_VERSION, H5Reader, read_archive,
                                          require_h5py, write_archive, write_h5)
from tinynet.saving.keras_compile import keras_compile_config, tinynet_compile_config
from tinynet.saving.keras_config import check_writable, keras_model_entry, tinynet_model_config
from tinynet.saving.keras_assets import (asset_members, named_vars, read_vocabularies,
                                         set_vocabularies)
from tinynet.saving.keras_weights import (node_arrays, optimizer_arrays, read_layers,
                                          read_optimizer)


def _weights_h5(model: Any, owner: str) -> bytes:
    groups = node_arrays(model)
    if getattr(model, "compiled", False):
        groups.append(("optimizer", model.optimizer.name, optimizer_arrays(model, owner)))
    return write_h5(groups, owner, named_vars(model))


def save_keras(model: Any, path: str, owner: str) -> None:
    """Writes ``model`` as a Keras 3 ``.keras`` archive (atomically)."""
    check_writable(model, owner)
    require_h5py(owner)
    entry = keras_model_entry(model)
    tn_compile = compile_config(model)
    entry["compile_config"] = None if tn_compile is None else keras_compile_config(tn_compile)
    metadata = {"keras_version": KERAS_VERSION,
                "date_saved": datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%d@%H:%M:%S")}
    payload = write_archive(json.dumps(entry).encode(), _weights_h5(model, owner),
                            json.dumps(metadata).encode(), asset_members(model, owner))
    atomic_write(path, payload, owner)


def save_keras_weights(model: Any, path: str, owner: str) -> None:
    """Writes the weights (and a compiled model's optimizer variables, as Keras does) in
    Keras's ``.weights.h5`` layout (atomically)."""
    check_writable(model, owner)
    require_h5py(owner)
    atomic_write(path, _weights_h5(model, owner), owner)


def _where(owner: str, path: str) -> str:
    return f"{owner}: {path!r}"


def _read_blob(path: str, owner: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise _named(exc, path, "read", owner) from None


def load_keras_weights(model: Any, path: str, owner: str) -> None:
    """Loads a Keras ``.weights.h5`` file into the built ``model`` (optimizer variables in
    the file are ignored, as tinynet's ``load_weights`` ignores them)."""
    require_h5py(owner)
    where = _where(owner, path)
    with H5Reader(_read_blob(path, owner), where, owner) as reader:
        pairs = read_layers(model, reader)
    for param, array in pairs:
        param.assign(array)


def load_keras(path: str, custom_objects: dict, compile: bool, owner: str) -> Any:
    """Rebuilds the model a ``.keras`` archive describes (Keras 3, any backend)."""
    from tinynet.custom_objects import custom_object_scope
    from tinynet.saving.config import layer_classes

    where = _where(owner, path)  # h5py is needed from the weights on (H5Reader)
    try:
        members = read_archive(path, where)
    except OSError as exc:
        raise _named(exc, path, "read", owner) from None
    entry = loads(members["config.json"], "config.json", where)
    weights = members["model.weights.h5"]
    with custom_object_scope(custom_objects):
        config = tinynet_model_config(entry, where, layer_classes(custom_objects))
        config = check_model_config(config, where, custom_objects)
        model = build_model(config, where, len(weights) // 4 + WEIGHT_SLACK, custom_objects)
        compiled = tinynet_compile_config(entry.get("compile_config"), where) if compile \
            else None
        if compiled is not None:
            compile_model(model, compiled, where)
    vocabularies = read_vocabularies(model, members, where)
    with H5Reader(weights, where, owner) as reader:
        pairs = read_layers(model, reader)
        apply_optimizer = read_optimizer(model, reader, owner) if compiled is not None \
            else None
        set_vocabularies(vocabularies, reader, where)
    for param, array in pairs:
        param.assign(array)
    if apply_optimizer is not None:
        apply_optimizer()
    return model


