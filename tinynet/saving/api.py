"""``save_model``, ``save_weights``, ``load_weights`` and ``load_model``."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from tinynet.layers import registry
from tinynet.saving.config import (build_model, check_model_config, compile_config,
                                   compile_model, model_config)
from tinynet.saving.files import (FORMAT, FORMAT_VERSION, OPTIMIZER_PREFIX, WEIGHT_SLACK,
                                  atomic_write, check_suffix, check_tensor, fspath, loads,
                                  read_file, serialize)
from tinynet.custom_objects import check_custom_objects, custom_object_scope
from tinynet.saving.state import restore_training_state, training_state


def _check_model(model: Any, owner: str) -> None:
    if not isinstance(model, registry.model_classes()):
        raise TypeError(f"{owner}: expected a tinynet model (Sequential or Model), got "
                        f"{type(model).__name__}")

def _weight_names(model: Any, owner: str) -> list[tuple[str, Any]]:
    """``[(tensor name, Parameter), ...]`` in model order; names must be unique."""
    out, seen = [], set()
    for key, p in model.named_parameters():
        if key in seen:
            raise ValueError(f"{owner}: two weights share the name {key!r}")
        seen.add(key)
        out.append((key, p))
    return out

def _save(model: Any, path: Any, weights_only: bool, owner: str,
          extra: dict | None = None) -> None:
    _check_model(model, owner)
    path = fspath(path, owner)
    if owner in ("save_model", "save_weights"):
        check_suffix(path, owner, weights=weights_only)
        if path.endswith((".keras", ".weights.h5")):
            from tinynet.saving import keras_api

            write = keras_api.save_keras_weights if weights_only else keras_api.save_keras
            write(model, path, owner)
            return
    tensors = {key: np.require(p.value, dtype=np.float32, requirements="C")  # 0-d kept
               for key, p in _weight_names(model, owner)}
    metadata = {"format": FORMAT, "format_version": str(FORMAT_VERSION),
                "kind": "weights" if weights_only else "model"}
    if not weights_only:
        metadata["model_config"] = json.dumps(model_config(model, owner))
        metadata["compile_config"] = json.dumps(compile_config(model))
        metadata["training_state"] = json.dumps(training_state(model, tensors))
    if extra is not None:  # written in the same file, so in the same atomic step
        metadata["extra"] = json.dumps(extra)
    atomic_write(path, serialize(tensors, metadata), owner)

def save_model(model: Any, path: str | os.PathLike) -> None:
    """Saves the whole model: architecture, weights, compile settings and training state.

    ``load_model(path)`` returns a model that predicts bitwise the same and, when it was
    compiled, continues ``fit`` bitwise as the original would have.

    Args:
        model: A :class:`tinynet.Sequential` or functional :class:`tinynet.Model`.
        path: The file to write, replaced atomically: ``.safetensors`` (tinynet's format,
            everything above), or ``.keras``, a Keras 3 archive that
            ``keras.models.load_model`` opens (weights, optimizer variables, loss and
            metrics; not the random generator states; needs h5py, the ``keras`` extra).

    Raises:
        TypeError: ``model`` is not a ``Sequential`` or ``path`` not a path.
        ImportError: a ``.keras`` path without h5py installed.
        ValueError: ``path`` ends in neither ``.safetensors`` nor ``.keras``, a
            ``.keras`` file cannot hold a layer (tinynet-only, e.g.
            ``InstanceNormalization``, ``Lambda``, custom classes), a layer's config cannot be made (a ``call()`` layer
            created with arguments that are not JSON-able and no ``get_config``), a class
            would be saved under a name another registered class holds, or weight names
            collide. A custom class need not be registered to be saved; ``load_model``
            needs it (registered, or in ``custom_objects``).
        OSError: the file cannot be written (any previous file is left unchanged); the
            message names ``path`` (and a missing folder).
    """
    _save(model, path, False, "save_model")

def save_weights(model: Any, path: str | os.PathLike) -> None:
    """Saves only the weights: ``.safetensors`` (``<layer_name>/<param_name>`` tensors) or
    Keras's ``.weights.h5`` layout (h5py needed); see :func:`load_weights`."""
    _save(model, path, True, "save_weights")

def _match_weights(model: Any, tensors: dict[str, np.ndarray], where: str,
                   allow_optimizer: bool) -> list[tuple[Any, np.ndarray]]:
    """Pairs each parameter with its tensor, checking names, shapes and dtypes."""
    pairs = []
    names = _weight_names(model, where)
    for key, p in names:
        pairs.append((p, check_tensor(tensors, key, p.value.shape, np.float32, where)))
    known = {key for key, _ in names}
    extra = sorted(k for k in tensors if k not in known
                   and not (allow_optimizer and k.startswith(OPTIMIZER_PREFIX)))
    if extra:
        raise ValueError(f"{where}: the file has tensors the model does not: {extra[:10]}"
                         f"{' ...' if len(extra) > 10 else ''}")
    return pairs

def load_weights(model: Any, path: str | os.PathLike) -> None:
    """Loads weights saved by :func:`save_weights` (or :func:`save_model`) into ``model``.

    Tensors are matched by name (``<layer_name>/<param_name>``); a Keras ``.h5``
    weights file (``.weights.h5``, h5py needed) by Keras's layout (layer by layer, in
    order). The model must be built. Everything is checked before any weight changes; optimizer state in a full
    model file is ignored.

    Raises:
        ValueError: the file is corrupt or foreign, a tensor is missing or extra, or a
            shape or dtype differs (the message names the tensor).
    """
    owner = "load_weights"
    _check_model(model, owner)
    where = f"{owner}: {os.fspath(path)!r}" if isinstance(path, (str, os.PathLike)) else owner
    if not model.built or not all(layer.built for layer in model.layers):
        raise ValueError(f"{where}: model {model.name!r} is not built; build it (or call it on "
                         f"data) before loading weights")
    if _is_keras(fspath(path, owner), ".weights.h5", b"\x89HDF\r\n\x1a\n"):
        from tinynet.saving import keras_api

        keras_api.load_keras_weights(model, os.fspath(path), owner)
        return
    _, tensors = read_file(path, owner)
    for p, arr in _match_weights(model, tensors, where, allow_optimizer=True):
        p.value[...] = arr

def load_model(path: str | os.PathLike, custom_objects: dict | None = None,
               compile: bool = True) -> Any:
    """Loads a model saved by :func:`save_model` (``tn.load_model``), as Keras's
    ``load_model(filepath, custom_objects=None, compile=True)``.

    The model is rebuilt from its config, its weights are set bitwise, and, with
    ``compile=True`` and a compiled original, it is compiled with the saved optimizer,
    loss and metrics and gets back the optimizer state (slots and iterations) and the
    random generator states, so ``fit`` continues exactly where the original stopped.

    Classes and functions are found by the name the file gives them only, never imported:
    in ``custom_objects``, then the active ``custom_object_scope`` blocks, then the
    objects registered with :func:`register_keras_serializable` (or ``register_layer``)
    and the built-in ones.

    Args:
        path: A file written by :func:`save_model`, or a ``.keras`` archive written by
            Keras 3 (any backend) or tinynet (h5py needed): Sequential and functional
            models of the layers, optimizers, losses and metrics tinynet has. The
            archive is read in memory with every size capped, never extracted.
        custom_objects: ``{name: class or function}`` for custom layers, losses and
            metrics that are not registered (keyed by class or function name).
        compile: ``False`` skips the compile settings and training state.

    Raises:
        ValueError: the file is empty, truncated, corrupt, not safetensors, not a tinynet
            model file (e.g. weights-only), of a newer format version, names an unknown
            layer class (or, with ``compile=True``, an unknown loss), or its tensors do not
            match the model (missing, extra, shape or dtype); for a ``.keras`` file also:
            not a zip or truncated, a member with ``..`` or an absolute path, a member
            over its size budget, a ``Lambda`` layer (its code is never run), a Keras
            setting tinynet lacks; the message says which. Whatever the file holds, its
            content raises nothing but ValueError, naming the file and the field: a
            config beyond the loader's budgets and limits (docs/saving.md), a malformed
            random-generator state, an optimizer setting the optimizer refuses, ...
        TypeError: ``custom_objects`` is not a dict with str keys, or ``compile`` not a
            bool.
        OSError: the file cannot be read (the message names it).
    """
    owner = "load_model"
    if not isinstance(compile, bool):
        raise TypeError(f"{owner}: compile must be a bool, got {compile!r}")
    custom_objects = check_custom_objects(custom_objects, owner)
    if _is_keras(fspath(path, owner), ".keras", b"PK\x03\x04"):
        from tinynet.saving import keras_api

        return keras_api.load_keras(os.fspath(path), custom_objects, compile, owner)
    metadata, tensors = read_file(path, owner)
    where = f"{owner}: {os.fspath(path)!r}"
    with _file_errors(where):
        _check_model_file(metadata, where)
        with custom_object_scope(custom_objects):  # losses and metrics look names up here
            config = check_model_config(loads(metadata["model_config"], "model_config",
                                              where), where)
            compile_config = loads(metadata["compile_config"], "compile_config", where)
            model = build_model(config, where,
                                sum(arr.size for arr in tensors.values()) + WEIGHT_SLACK)
            if compile and compile_config is not None:
                compile_model(model, compile_config, where)
        _set_state(model, metadata, tensors, compile, where)
    return model


def _is_keras(path: str, suffix: str, magic: bytes) -> bool:
    """Whether ``path`` is a Keras file: its name ends in ``suffix`` or its first bytes are
    ``magic`` (a file under another name is read by what it holds, as tinynet's own)."""
    if path.endswith(suffix):
        return True
    try:
        with open(path, "rb") as file:
            return file.read(len(magic)) == magic
    except OSError:
        return False  # the safetensors reader reports it, naming the path
@contextlib.contextmanager
def _file_errors(where: str) -> Iterator[None]:
    """The last safety net of loading a file's content: every check raises a ValueError
    naming the file and the field at its source; any other exception that still escapes
    (a custom class's own error, a case no check foresaw) becomes one too, naming the
    file, with the original chained."""
    try:
        yield
    except ValueError:
        raise
    except Exception as exc:  # noqa: BLE001 - turned into the documented ValueError
        raise ValueError(f"{where}: cannot load the file's content: "
                         f"{type(exc).__name__}: {exc!s:.500}") from exc


def _check_model_file(metadata: dict, where: str) -> None:
    if metadata["kind"] != "model":
        raise ValueError(f"{where} holds weights only (written by save_weights); build the "
                         f"model and call load_weights instead")
    for key in ("model_config", "compile_config", "training_state"):
        if not isinstance(metadata.get(key), str):
            raise ValueError(f"{where}: metadata entry {key!r} is missing")


def _set_state(model: Any, metadata: dict, tensors: dict, with_state: bool,
               where: str) -> None:
    """Sets ``model``'s weights (and, ``with_state``, its training state) from a model
    file's tensors, checking everything before anything changes."""
    pairs = _match_weights(model, tensors, where, allow_optimizer=True)
    apply_state = None
    if with_state:
        state = loads(metadata["training_state"], "training_state", where)
        weights = {key for key, _ in _weight_names(model, where)}
        apply_state = restore_training_state(model, state, tensors, weights, where)
    for p, arr in pairs:
        p.value[...] = arr
    if apply_state is not None:
        apply_state()


def save_training(model: Any, path: str | os.PathLike, extra: dict) -> None:
    """:func:`save_model` with ``extra`` (JSON-able) in the same file, so both land in one
    atomic write (``BackupAndRestore``'s epoch); :func:`restore_training` returns it."""
    _save(model, path, False, "save_training", extra)


def restore_training(model: Any, path: str | os.PathLike) -> dict:
    """Puts a file written by :func:`save_model` back into ``model`` (built and compiled
    as the saved one): the weights, the optimizer's slots and iterations and the random
    generators, so ``fit`` continues as the saved model's would (``BackupAndRestore``).

    Returns:
        The ``extra`` dict :func:`save_training` stored (``{}`` without one).

    Raises:
        ValueError: the file is not a model file of this model (the message says why).
    """
    owner = "restore_training"
    _check_model(model, owner)
    metadata, tensors = read_file(path, owner)
    where = f"{owner}: {os.fspath(path)!r}"
    _check_model_file(metadata, where)
    extra = loads(metadata["extra"], "extra", where) if "extra" in metadata else {}
    if not isinstance(extra, dict):
        raise ValueError(f"{where}: metadata entry 'extra' must be an object")
    with _file_errors(where):
        _set_state(model, metadata, tensors, True, where)
    return extra
