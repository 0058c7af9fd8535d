"""``clone_model`` and ``model_from_json`` (Keras 3 names); ``model.to_json`` is
:func:`tinynet.saving.serialize_keras_object` as JSON.

A clone has the architecture of the original and NEW weights (each cloned layer is built
from its config, so its initializers run again, as in Keras); it is not compiled.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from tinynet.layers.input import InputLayer
from tinynet.layers.layer import Layer
from tinynet.layers.node import SymbolicTensor
from tinynet.models.graph import pick, reconnect

# model_from_json: the most weight values a JSON config may allocate (a lying config
# must not exhaust memory); 2**30 float32 values are 4 GiB.
MAX_JSON_WEIGHTS = 2 ** 30


def _default_clone(layer: Layer) -> Layer:
    """Keras's default ``clone_function``: the layer rebuilt from its config."""
    return type(layer).from_config(layer.get_config())


def _is_subclassed(model: Any) -> bool:
    return bool(getattr(type(model), "_has_call", False))


def clone_model(model: Any, input_tensors: Any = None,
                clone_function: Callable[[Layer], Layer] | None = None,
                call_function: Callable | None = None, recursive: bool = False,
                **kwargs: Any) -> Any:
    """A model with ``model``'s architecture and new weights (Keras 3
    ``keras.models.clone_model``).

    Args:
        model: A ``Sequential``, functional ``Model`` or subclassed model (rebuilt with
            ``cls.from_config(model.get_config())``).
        input_tensors: Optional ``tn.Input`` tensor(s) the clone starts from (one for a
            ``Sequential``; one per input, in order, for a functional model).
        clone_function: ``fn(layer) -> layer`` for each layer; default
            ``type(layer).from_config(layer.get_config())``. Return ``layer`` itself to
            share it (and its weights) with the original.
        call_function: functional models: ``fn(layer, inputs) -> outputs`` replaces the
            call ``layer(inputs)`` while the graph is rebuilt.
        recursive: Clone the models nested in ``model`` with the same arguments instead of
            passing them to ``clone_function``.

    Raises:
        TypeError: ``model`` is not a tinynet model, ``clone_function`` or
            ``call_function`` is not callable, or unknown keyword arguments.
        ValueError: ``input_tensors`` that do not fit the model, or ``clone_function`` /
            ``input_tensors`` / ``call_function`` given for a subclassed model.
    """
    from tinynet.layers import registry
    from tinynet.layers.layer import check_bool
    from tinynet.models.functional import Model
    from tinynet.models.sequential import Sequential

    owner = "clone_model"
    if kwargs:
        raise TypeError(f"{owner}: unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(model, registry.model_classes()):
        raise TypeError(f"{owner}: expected a tinynet model (Sequential or Model), got "
                        f"{type(model).__name__}: {model!r:.80}")
    for arg, fn in (("clone_function", clone_function), ("call_function", call_function)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{owner}: {arg} must be a callable or None, got "
                            f"{type(fn).__name__}: {fn!r:.80}")
    recursive = check_bool(recursive, "recursive", owner)
    if _is_subclassed(model):
        if clone_function is not None or input_tensors is not None or call_function is not None:
            raise ValueError(f"{owner}: clone_function, input_tensors and call_function are "
                             f"only supported for Sequential and functional models; model "
                             f"{model.name!r} is a subclassed model "
                             f"({type(model).__name__}), cloned from its config")
        return type(model).from_config(model.get_config())
    base = clone_function or _default_clone

    def clone_layer(layer: Layer) -> Layer:
        if recursive and isinstance(layer, registry.model_classes()):
            return clone_model(layer, clone_function=clone_function,
                               call_function=call_function, recursive=True)
        new = base(layer)
        if not isinstance(new, Layer):
            raise TypeError(f"{owner}: clone_function must return a tinynet Layer, got "
                            f"{type(new).__name__} for layer {layer.name!r}")
        return new

    if isinstance(model, Sequential):
        clone = _clone_sequential(model, input_tensors, clone_layer, owner)
    elif isinstance(model, Model):
        clone = _clone_functional(model, input_tensors, clone_layer, call_function, owner)
    else:  # pragma: no cover - every model class is one of these
        raise TypeError(f"{owner}: cannot clone a {type(model).__name__}")
    if not model.trainable:
        clone.trainable = False
    return clone


def _input_list(input_tensors: Any, count: int, owner: str) -> list:
    tensors = list(input_tensors) if isinstance(input_tensors, (list, tuple)) else [input_tensors]
    if len(tensors) != count:
        raise ValueError(f"{owner}: input_tensors must hold {count} tensor(s), one per model "
                         f"input, got {len(tensors)}")
    for t in tensors:
        if not (isinstance(t, SymbolicTensor) and isinstance(t.layer, InputLayer)):
            raise ValueError(f"{owner}: input_tensors must be tn.Input tensors, got "
                             f"{type(t).__name__}: {t!r:.80}")
    return tensors


def _clone_sequential(model: Any, input_tensors: Any, clone_layer: Callable,
                      owner: str) -> Any:
    from tinynet.models.sequential import Sequential

    clone = Sequential(name=model.name)
    if input_tensors is not None:
        clone.add(_input_list(input_tensors, 1, owner)[0])
    elif model._input is not None:
        clone.add(_default_clone(model._input))
    for layer in model.layers:
        clone.add(clone_layer(layer))
    if not clone.built and model._input_shape is not None and input_tensors is None:
        clone.build(tuple(model._input_shape))
    return clone


def _clone_functional(model: Any, input_tensors: Any, clone_layer: Callable,
                      call_function: Callable | None, owner: str) -> Any:
    """Walks ``model.get_config()``'s nodes, calling the cloned layers on new tensors."""
    config = model.get_config()
    originals = {layer.name: layer for layer in model._layers}
    tensors: dict[tuple, SymbolicTensor] = {}
    given = None
    if input_tensors is not None:
        given = _input_list(input_tensors, len(config["input_layers"]), owner)
        for ref, t in zip(config["input_layers"], given):
            tensors[tuple(ref)] = t
    created: list[tuple[str, Layer, list]] = []
    for entry in config["layers"]:
        layer = originals[entry["name"]]
        if isinstance(layer, InputLayer):
            if given is None:
                tensors[(layer.name, 0, 0)] = _default_clone(layer).output
            continue
        created.append((layer.name, clone_layer(layer), list(entry.get("inbound_nodes", []))))
    done = reconnect(created, tensors, call_function)
    for (orig, layer, nodes), n in zip(created, done):
        if n < len(nodes):
            raise ValueError(f"{owner}: layer {layer.name!r} could not be reconnected")
    return type(model)(pick(tensors, config["input_layers"], config.get("input_keys")),
                       pick(tensors, config["output_layers"], config.get("output_keys")),
                       name=model.name)


def model_from_json(json_string: Any, custom_objects: dict | None = None) -> Any:
    """The model ``model.to_json()`` described, with new weights (Keras 3
    ``keras.models.model_from_json``). Layer classes are looked up by name in
    ``custom_objects``, the active ``custom_object_scope`` blocks and the registries;
    nothing is imported or executed. Files from ``load_model``'s ``model_config`` (bare
    ``{"class_name", "config"}``) are read too.

    Raises:
        TypeError: ``json_string`` is not a str/bytes, or ``custom_objects`` is not a dict.
        ValueError: malformed JSON, not a model config, an unknown class name (the message
            says how to register it), or a config the model cannot be rebuilt from.
    """
    from tinynet.saving.config import build_model, check_model_config
    from tinynet.saving.files import loads
    from tinynet.custom_objects import check_custom_objects

    owner = "model_from_json"
    if not isinstance(json_string, (str, bytes, bytearray)):
        raise TypeError(f"{owner}: json_string must be a str (from model.to_json()), got "
                        f"{type(json_string).__name__}: {json_string!r:.80}")
    custom_objects = check_custom_objects(custom_objects, owner)
    data = loads(json_string, "json_string", owner)
    if not isinstance(data, dict) or "class_name" not in data:
        raise ValueError(f"{owner}: expected the JSON object model.to_json() writes, with "
                         f"'class_name' and 'config', got {type(data).__name__}: "
                         f"{json_string!s:.80}")
    registered = data.get("registered_name")
    entry = {"class_name": data["class_name"], "config": data.get("config")}
    if isinstance(registered, str) and ">" in registered:
        entry["class_name"] = registered.split(">", 1)[1]
    try:
        config = check_model_config(entry, owner, custom_objects)
    except ValueError as exc:
        raise ValueError(str(exc).replace("to load_model in", "to model_from_json in")) from None
    return build_model(config, owner, MAX_JSON_WEIGHTS, custom_objects, "json_string",
                       "MAX_JSON_WEIGHTS")
