"""Keras's vocabularies in a ``.keras`` archive: what ``StringLookup``, ``IntegerLookup``
and ``TextVectorization`` save besides their config.

As Keras 3 writes them: a vocabulary the layer was given stays in its config; a learned
one (``adapt``) is the archive member ``assets/<layer path>/vocabulary.txt``, the whole
vocabulary (special tokens first) one token a line, joined by ``"\\n"``, with the
config's ``vocabulary`` ``None`` and ``vocabulary_size`` its length. A
``TextVectorization`` writes it twice, at its own path and at its ``_lookup_layer``'s.
In ``"tf_idf"`` mode the idf weights are also the dataset ``<path>/vars/idf_weights``.

Reading checks every size against ``keras_config.MAX_VOCABULARY`` before anything is
built (the config's sizes in ``keras_config.check_config``), and a vocabulary that is malformed (not UTF-8, not integers for ``IntegerLookup``, repeated or
too many tokens) is a ``ValueError`` naming the member.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.saving import keras_config
from tinynet.saving.keras_config import VOCABULARY_CLASSES, keras_class_name
from tinynet.saving.keras_weights import layer_groups

#: Largest vocabulary (tokens, special ones included) a Keras file may give one layer;
#: also the largest ``max_tokens`` a padded layer may allocate from a file.
ASSET_NAME = "vocabulary.txt"
#: What ``str.splitlines`` (Keras's reader) breaks lines at, besides "\n".
_LINE_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def vocabulary_layers(model: Any) -> list[tuple[str, Any]]:
    """``[(weights path, layer), ...]`` of the vocabulary layers in ``model`` (a
    ``TimeDistributed`` one under its ``layer``)."""
    out = []
    for path, layer in layer_groups(model):
        while keras_class_name(layer) == "TimeDistributed":
            path, layer = f"{path}/layer", layer.layer
        if keras_class_name(layer) in VOCABULARY_CLASSES:
            out.append((path, layer))
    return out


def _lookup(layer: Any) -> Any:
    """The ``IndexLookup`` doing the work (a TextVectorization's inner StringLookup)."""
    return layer._lookup if keras_class_name(layer) == "TextVectorization" else layer


def is_learned(layer: Any) -> bool:
    """Whether the layer's vocabulary goes to an asset (not given to it: learned, or
    none yet)."""
    return not _lookup(layer)._has_input_vocabulary


def _paths(path: str, layer: Any) -> list[str]:
    if keras_class_name(layer) == "TextVectorization":
        return [path, f"{path}/_lookup_layer"]
    return [path]


def _check_token(token: Any, layer: Any, owner: str) -> str:
    text = str(token)
    if "\n" in text or any(c in text for c in _LINE_BREAKS):
        raise ValueError(f"{owner}: layer {layer.name!r} has the token {text!r:.80} with a "
                         f"line break, which Keras's one-token-a-line vocabulary file cannot "
                         f"hold; remove it from the vocabulary, or save as .safetensors")
    return text


def asset_members(model: Any, owner: str) -> dict[str, bytes]:
    """The ``assets/.../vocabulary.txt`` members of ``model``'s archive."""
    out = {}
    for path, layer in vocabulary_layers(model):
        if not is_learned(layer):
            continue
        tokens = [_check_token(t, layer, owner) for t in _lookup(layer).get_vocabulary()]
        data = "\n".join(tokens).encode("utf-8")
        for where in _paths(path, layer):
            out[f"assets/{where}/{ASSET_NAME}"] = data
    return out


def named_vars(model: Any) -> dict[str, dict[str, np.ndarray]]:
    """``{weights path: {"idf_weights": array}}`` for the ``"tf_idf"`` layers (Keras
    saves their idf weights as a named dataset)."""
    out = {}
    for path, layer in vocabulary_layers(model):
        lookup = _lookup(layer)
        if lookup.output_mode == "tf_idf" and lookup._idf is not None:
            for where in _paths(path, layer):
                out[where] = {"idf_weights": np.asarray(lookup._idf, dtype=np.float32)}
    return out


def _parse(data: bytes, member: str, layer: Any, where: str) -> list:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: vocabulary {member!r} is not UTF-8 text ({exc})") from None
    lines = 1 + text.count("\n") + sum(text.count(c) for c in _LINE_BREAKS)
    if lines > keras_config.MAX_VOCABULARY:
        raise ValueError(f"{where}: vocabulary {member!r} has {lines} lines, more than the "
                         f"{keras_config.MAX_VOCABULARY} tokens a file may give a layer; refused before "
                         f"building it")
    tokens = text.splitlines()
    while tokens and tokens[-1] == "":
        tokens.pop()
    if keras_class_name(layer) != "IntegerLookup":
        return tokens
    values = []
    for i, token in enumerate(tokens):
        try:
            values.append(int(token))
        except ValueError:
            raise ValueError(f"{where}: vocabulary {member!r} line {i + 1} is {token!r:.80}, "
                             f"not an integer (IntegerLookup {layer.name!r})") from None
    return values


def read_vocabularies(model: Any, members: dict[str, bytes], where: str) -> list:
    """Each vocabulary layer's learned vocabulary from its asset, parsed and checked
    (before the weights file is opened): ``[(path, layer, tokens), ...]``, the tokens
    ``None`` for a given vocabulary (the config holds it)."""
    found = []
    for path, layer in vocabulary_layers(model):
        lookup = _lookup(layer)
        member = f"assets/{path}/{ASSET_NAME}"
        tokens = None
        if is_learned(layer):
            if member not in members:
                raise ValueError(f"{where}: layer {layer.name!r} ({keras_class_name(layer)}) "
                                 f"has no vocabulary in its config and the archive has no "
                                 f"{member!r}")
            tokens = _parse(members[member], member, layer, where)
            if lookup._saved_size is not None and len(tokens) != lookup._saved_size:
                raise ValueError(f"{where}: vocabulary {member!r} has {len(tokens)} tokens, but "
                                 f"layer {layer.name!r}'s config says vocabulary_size="
                                 f"{lookup._saved_size}")
            twin = members.get(f"assets/{path}/_lookup_layer/{ASSET_NAME}")
            if twin is not None and twin != members[member]:
                raise ValueError(f"{where}: layer {layer.name!r}: the vocabularies {member!r} "
                                 f"and its _lookup_layer's differ")
        found.append((path, layer, tokens))
    return found


def set_vocabularies(found: list, reader: Any, where: str) -> None:
    """Sets the vocabularies :func:`read_vocabularies` found (and a ``"tf_idf"`` layer's
    idf weights, read from the weights file) in the newly built model."""
    for path, layer, tokens in found:
        lookup = _lookup(layer)
        if lookup.output_mode != "tf_idf" and tokens is None:
            continue  # a given vocabulary: the config held it
        tokens = lookup.get_vocabulary() if tokens is None else tokens
        idf = None
        if lookup.output_mode == "tf_idf":
            width = lookup.max_tokens if lookup.pad_to_max_tokens else len(tokens)
            idf = reader.read(path, "idf_weights", (width,))[:len(tokens)]
        try:
            lookup.set_vocabulary(tokens, idf)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: layer {layer.name!r} ({keras_class_name(layer)}): the "
                             f"file's vocabulary does not fit it: {exc}") from None
