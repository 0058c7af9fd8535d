"""Translating model and compile configurations between tinynet and Keras 3 files.

tinynet's layers already carry Keras's class names and config keys; what differs is
mapped here, both ways: Keras's wrapping (``module``, ``registered_name``, dtype
policies, ``build_config``, ``compile_config``), its functional-graph node format
(``args`` of ``__keras_tensor__`` entries), and a few keys one side has and the other not
(a Keras key tinynet lacks is accepted only with its neutral value, e.g. ``groups=1``, a
constraint of ``None``; initializers are dropped on reading, as the weights come from
the file). Nothing here imports or runs code named by a file: classes are looked up by
name in tinynet's registries.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from tinynet.layers import registry
from tinynet.layers.call_args import NODE_INPUT, template_from_config
from tinynet.saving.keras_attention import (ATTENTION_CLASSES, constant_masks,
                                            keras_attention_entry, tinynet_attention_node)

#: tinynet layers Keras has no class for, with the reason and what keeps them.
_NO_KERAS = {
    "InstanceNormalization": "Keras 3 has no InstanceNormalization layer",
    "Lambda": "a Lambda layer's function would have to travel as code",
}
#: tinynet classes written as a Keras Activation layer (same outputs, no weights).
_AS_ACTIVATION = {"Sigmoid": "sigmoid", "Tanh": "tanh"}
#: tinynet-only config keys Keras's class rejects, per class (the initializer's seed:
#: it only seeds the first weights, which the file carries anyway).
_TINYNET_ONLY = {
    **{name: ("seed",) for name in ("Dense", "Conv1D", "Conv2D", "Conv2DTranspose",
                                    "DepthwiseConv2D", "SeparableConv2D", "Embedding")},
    "SpatialDropout2D": ("trainable",),
}
_POLICY = {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
           "registered_name": None}
_FUNCTIONAL_MODULE = "keras.src.models.functional"
_NEUTRAL_KEYS = {"groups": 1, "data_format": "channels_last", "sparse": False,
                 "ragged": False, "optional": False, "synchronized": False, "renorm": False,
                 "rms_scaling": False, "use_ema": False, "autocast": True}
_IGNORED_KEYS = ("renorm_momentum", "ema_momentum", "dtype")
#: Keras config keys tinynet's class ignores, per class: a recurrent layer's
#: ``zero_output_for_mask`` (what a masked step outputs) has no effect without a mask.
_IGNORED_PER_CLASS = {name: ("zero_output_for_mask",) for name in ("SimpleRNN", "LSTM", "GRU")}
#: The vocabulary layers: a learned vocabulary travels as an asset, not in the config.
_VOCABULARY = ("StringLookup", "IntegerLookup", "TextVectorization")


# The most tokens a file may give one vocabulary layer (checked before building it).
MAX_VOCABULARY = 2 ** 22
VOCABULARY_CLASSES = ("StringLookup", "IntegerLookup", "TextVectorization")


def snake_case(name: str) -> str:
    """Keras's file-path form of a class name: ``MaxPooling2D`` -> ``max_pooling2d``."""
    name = re.sub(r"\W+", "", name)
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def keras_class_name(layer: Any) -> str:
    """The Keras class a tinynet layer or model is written as."""
    name = type(layer).__name__
    if name in _AS_ACTIVATION:
        return "Activation"
    if isinstance(layer, registry.model_classes()) and name == "Model":
        return "Functional"
    return name


# -- tinynet -> Keras ------------------------------------------------------------------------
def check_writable(model: Any, owner: str) -> None:
    """ValueError naming every layer (and its class) a Keras file cannot hold."""
    bad = []
    builtin = {**registry.registered_layers(),
               **{cls.__name__: cls for cls in registry.model_classes()}}
    for layer in _walk_layers(model):
        cls = type(layer)
        name = cls.__name__
        if name in _NO_KERAS:
            bad.append(f"{layer.name!r} ({name}: {_NO_KERAS[name]})")
        elif name == "MultiHeadAttention" and constant_masks(layer):
            bad.append(f"{layer.name!r} (MultiHeadAttention called with the constant "
                       f"{'/'.join(constant_masks(layer))}, which a Keras node holds "
                       f"only as a model input)")
        elif name in ATTENTION_CLASSES and constant_masks(layer):
            bad.append(f"{layer.name!r} ({name} called with a constant mask, which tinynet "
                       f"does not write to a .keras file; give its inputs their own masks, "
                       f"e.g. from Embedding(mask_zero=True))")
        elif (builtin.get(name) is not cls or not cls.__module__.startswith("tinynet.")) \
                and _registered(cls) is None:
            bad.append(f"{layer.name!r} ({cls.__module__}.{cls.__qualname__}: a custom class "
                       f"not registered with register_keras_serializable)")
    for layer in _walk_layers(model):
        if isinstance(getattr(layer, "_input_keys", None), list) or isinstance(
                getattr(layer, "_output_keys", None), list):
            raise ValueError(f"{owner}: model {layer.name!r} takes or gives a dict of "
                             f"tensors, which tinynet does not write to a .keras file; give "
                             f"its inputs and outputs as lists, or save as .safetensors")
    if bad:
        raise ValueError(f"{owner}: a Keras .keras file cannot hold these tinynet layers: "
                         f"{', '.join(bad)}; save as .safetensors (model.save('m.safetensors')"
                         f", which keeps every tinynet layer and resumes training bitwise) "
                         f"or export for inference with model.export('m.onnx', "
                         f"format='onnx')")


def _registered(cls: type) -> str | None:
    """The ``package>name`` a custom class is registered under, else ``None``."""
    from tinynet.custom_objects import get_registered_name, get_registered_object

    key = get_registered_name(cls)
    return key if ">" in key and get_registered_object(key) is cls else None


def _walk_layers(model: Any) -> list:
    out = [model]
    for layer in model.layers:
        if isinstance(layer, registry.model_classes()):
            out += _walk_layers(layer)
        else:
            out.append(layer)
    return out


#: The config keys of a wrapper layer that hold a whole layer's entry.
_WRAPPED = ("layer", "backward_layer")


def _is_function_ref(value: Any) -> bool:
    """Whether ``value`` is Keras's reference to a registered function
    (``{"class_name": "function", "config": "package>name", ...}``)."""
    return (isinstance(value, dict) and value.get("class_name") == "function"
            and isinstance(value.get("config"), str))


def _layer_config(class_name: str, config: dict) -> tuple[str, dict]:
    config = dict(config)
    activation = config.get("activation")
    if isinstance(activation, str) and ">" in activation:  # a registered function
        config["activation"] = {"module": "builtins", "class_name": "function",
                                "config": activation, "registered_name": "function"}
    if class_name in _AS_ACTIVATION:
        return "Activation", {"name": config["name"], "trainable": config.get("trainable", True),
                              "dtype": dict(_POLICY), "activation": _AS_ACTIVATION[class_name]}
    for key in _TINYNET_ONLY.get(class_name, ()):
        config.pop(key, None)
    if class_name in _VOCABULARY and not config.pop("has_input_vocabulary", False):
        config.update(vocabulary=None, idf_weights=None)  # learned: written as an asset
    for key in _WRAPPED:  # Bidirectional's and TimeDistributed's inner layers
        inner = config.get(key)
        if isinstance(inner, dict) and isinstance(inner.get("config"), dict):
            inner_class, inner_config = _layer_config(inner["class_name"], inner["config"])
            config[key] = {**inner, "class_name": inner_class, "config": inner_config}
    if class_name != "InputLayer":
        config["dtype"] = dict(_POLICY)
    return class_name, config


def _tensor_shapes(model: Any) -> dict[tuple, list]:
    """``(layer name, node index, tensor index) -> shape`` for a functional model's graph,
    the node indices counted as its config counts them (nodes in this graph only)."""
    shapes = {}
    for layer in model._layers:
        kept = [n for n in layer.inbound_nodes if id(n) in model._graph.node_set]
        for k, node in enumerate(kept):
            for t, tensor in enumerate(node.outputs):
                shapes[(layer.name, k, t)] = list(tensor.shape)
    return shapes


def _keras_tensor(ref: list, shapes: dict) -> dict:
    return {"class_name": "__keras_tensor__",
            "config": {"shape": shapes.get(tuple(ref)), "dtype": "float32",
                       "keras_history": list(ref)}}


def _flat_refs(refs: list) -> list:
    """One reference stays flat (``["dense", 0, 0]``), as Keras writes a single tensor."""
    return list(refs[0]) if len(refs) == 1 else [list(r) for r in refs]


def keras_model_entry(model: Any) -> dict:
    """``{"module", "class_name", "config", "registered_name", "build_config"}`` of a
    tinynet Sequential or functional Model, as Keras 3 writes it."""
    from tinynet.layers.input import InputLayer

    config = model.get_config()
    by_name = {layer.name: layer for layer in getattr(model, "_layers", model.layers)}
    layers = []
    shapes = _tensor_shapes(model) if keras_class_name(model) == "Functional" else {}
    for entry in config["layers"]:
        layer = by_name.get(entry["config"].get("name"), None)
        if layer is not None and isinstance(layer, registry.model_classes()):
            out = keras_model_entry(layer)
        elif layer is not None and _registered(type(layer)) is not None:
            inner = {**entry["config"], "dtype": dict(_POLICY)}
            out = {"module": type(layer).__module__, "class_name": type(layer).__name__,
                   "config": inner, "registered_name": _registered(type(layer))}
        else:
            class_name, inner = _layer_config(entry["class_name"], entry["config"])
            out = {"module": "keras.layers", "class_name": class_name, "config": inner,
                   "registered_name": None}
        if out["class_name"] in ATTENTION_CLASSES and out["module"] == "keras.layers":
            out, flags = keras_attention_entry(out, entry, shapes)
        else:
            flags = None
        if "inbound_nodes" in entry:
            out["name"] = entry["name"]
            out["inbound_nodes"] = [] if isinstance(layer, InputLayer) else [
                _keras_call_node(node, shapes) if node.get("call") is not None else
                {"args": [[_keras_tensor(r, shapes) for r in node["inputs"]]
                          if node.get("listed") else _keras_tensor(node["inputs"][0], shapes)],
                 "kwargs": {}} for node in entry["inbound_nodes"]]
            if flags is not None:  # the call arguments as Keras's node keywords
                for node in out["inbound_nodes"]:
                    if out["class_name"] == "MultiHeadAttention":  # (query, value, key)
                        node["args"] = node["args"][0]
                    node["kwargs"] = dict(flags)
        layers.append(out)
    if keras_class_name(model) == "Functional":
        inner = {"name": config["name"], "trainable": config["trainable"], "layers": layers,
                 "input_layers": _flat_refs(config["input_layers"]),
                 "output_layers": _flat_refs(config["output_layers"])}
        return {"module": _FUNCTIONAL_MODULE, "class_name": "Functional", "config": inner,
                "registered_name": "Functional", "build_config": {"input_shape": None}}
    inner = {"name": config["name"], "trainable": config.get("trainable", True),
             "dtype": dict(_POLICY), "layers": layers,
             "build_input_shape": config.get("build_input_shape")}
    return {"module": "keras", "class_name": "Sequential", "config": inner,
            "registered_name": None,
            "build_config": {"input_shape": config.get("build_input_shape")}}


# -- Keras -> tinynet ------------------------------------------------------------------------
def _accepted_keys(cls: type) -> set[str]:
    """The keyword arguments ``cls(...)`` takes (through ``**kwargs`` to the bases)."""
    keys: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters
        keys |= {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                             p.KEYWORD_ONLY)} - {"self"}
        if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            break
    return keys


def neutral(key: str, value: Any) -> bool:
    """Whether a Keras config key tinynet's class lacks has a value that changes nothing."""
    if key in _NEUTRAL_KEYS:
        return value == _NEUTRAL_KEYS[key]
    if key in _IGNORED_KEYS or key.endswith("_initializer"):
        return True
    return value is None


def _check_dtype(value: Any, what: str, where: str) -> None:
    name = value.get("config", {}).get("name") if isinstance(value, dict) else value
    if name not in (None, "float32"):
        raise ValueError(f"{where}: {what} has dtype policy {name!r:.80}; tinynet computes in "
                         f"float32 only")


_INITIALIZER_NAMES = {"GlorotUniform": "glorot_uniform", "GlorotNormal": "glorot_normal",
                      "HeUniform": "he_uniform", "HeNormal": "he_normal", "Zeros": "zeros",
                      "Ones": "ones", "LecunUniform": "lecun_uniform",
                      "LecunNormal": "lecun_normal"}
_FIXED_SCALE = {("RandomUniform", (("maxval", 0.05), ("minval", -0.05))): "uniform",
                ("RandomNormal", (("mean", 0.0), ("stddev", 0.05))): "normal"}


def _initializer(value: Any) -> Any:
    """A Keras initializer entry as tinynet's name, or ``None`` when tinynet has no name
    for it (the layer's default then; initializers only make the first weights, which the
    file's replace)."""
    if not isinstance(value, dict):
        return value
    config = {k: v for k, v in (value.get("config") or {}).items()
              if k not in ("input_axes", "output_axes", "seed") and v is not None}
    name = value.get("class_name")
    if name in _INITIALIZER_NAMES and not config:
        return _INITIALIZER_NAMES[name]
    return _FIXED_SCALE.get((name, tuple(sorted(config.items()))))


def check_vocabulary_config(class_name: str, config: dict, where: str) -> None:
    """A vocabulary layer's Keras config within the loader's budget (before building)."""
    if class_name not in VOCABULARY_CLASSES:
        return
    name = config.get("name")
    sizes = {"vocabulary_size": config.get("vocabulary_size")}
    if isinstance(config.get("vocabulary"), list):
        sizes["vocabulary"] = len(config["vocabulary"])
    if config.get("pad_to_max_tokens"):
        sizes["max_tokens"] = config.get("max_tokens")
    for key, value in sizes.items():
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{where}: layer {name!r:.80} ({class_name}) has {key}="
                             f"{value!r:.80}; expected a non-negative int")
        if value > MAX_VOCABULARY:
            raise ValueError(f"{where}: layer {name!r:.80} ({class_name}) has {key}={value}, "
                             f"more than the {MAX_VOCABULARY} tokens a file may give a layer; "
                             f"refused before allocating")


def _tinynet_layer_config(cls: type, class_name: str, config: dict, where: str) -> dict:
    accepted = _accepted_keys(cls)
    name = config.get("name")
    if class_name != "InputLayer":  # an input's dtype is its data's (Input checks it)
        _check_dtype(config.get("dtype"), f"layer {name!r:.80}", where)
    check_vocabulary_config(class_name, config, where)
    out = {}
    for key, value in config.items():
        if key in _IGNORED_PER_CLASS.get(class_name, ()):
            continue
        if key in accepted and key != "dtype":
            if key in _WRAPPED and isinstance(value, dict) \
                    and isinstance(value.get("config"), dict):
                inner_cls = registry.registered_layers().get(value.get("class_name"))
                if inner_cls is None:
                    raise ValueError(f"{where}: layer {name!r:.80} wraps a layer of class "
                                     f"{value.get('class_name')!r:.80}, which tinynet does "
                                     f"not have")
                out[key] = {**value, "config": _tinynet_layer_config(
                    inner_cls, value["class_name"], value["config"], where)}
            elif key == "activation" and _is_function_ref(value):
                out[key] = value["config"]  # a registered function, by its name
            elif not key.endswith("_initializer"):
                out[key] = value
            elif _initializer(value) is not None:
                out[key] = _initializer(value)
        elif key == "dtype" and class_name == "InputLayer":
            out[key] = value if isinstance(value, str) else "float32"  # Input checks it
        elif not neutral(key, value):
            raise ValueError(f"{where}: layer {name!r:.80} ({class_name}) has {key}="
                             f"{value!r:.80}, which tinynet's {class_name} does not support")
    return out


def _layer_class(entry: dict, where: str, table: dict) -> tuple[str, type]:
    class_name = entry.get("class_name")
    config = entry.get("config") if isinstance(entry.get("config"), dict) else {}
    layer_name = config.get("name", entry.get("name"))
    if class_name == "Lambda":
        raise ValueError(f"{where}: layer {layer_name!r:.80} is a Lambda layer, whose "
                         f"function the file holds as Python bytecode; tinynet never runs "
                         f"code from a file: rebuild the model in tinynet with the function, "
                         f"or replace the Lambda with a registered custom layer")
    registered = entry.get("registered_name")
    for key in (registered, class_name):
        if isinstance(key, str) and key in table:
            return key, table[key]
    raise ValueError(f"{where}: layer {layer_name!r:.80} has class {class_name!r:.80}, which "
                     f"tinynet does not have (nor is it registered); tinynet reads the "
                     f"Keras layers it implements, and custom classes registered with "
                     f"@tinynet.saving.register_keras_serializable() or given in "
                     f"custom_objects")


def _refs(args: Any, where: str) -> tuple[list, bool]:
    """A Keras node's ``args`` as tinynet's ``inputs`` references and ``listed``."""
    if not isinstance(args, list) or len(args) != 1:
        raise ValueError(f"{where}: a functional node with {len(args) if isinstance(args, list) else 0} "
                         f"positional arguments; tinynet reads nodes of one tensor or one list")
    arg = args[0]
    listed = isinstance(arg, list)
    refs = []
    for tensor in arg if listed else [arg]:
        history = tensor.get("config", {}).get("keras_history") if isinstance(tensor, dict) else None
        if not (isinstance(history, list) and len(history) == 3):
            raise ValueError(f"{where}: a functional node's input is not a Keras tensor "
                             f"reference: {tensor!r:.120}")
        refs.append(list(history))
    return refs, listed


def _call_node(node: dict, kwargs: dict, where: str) -> dict:
    """A Keras node of a ``call()`` layer as tinynet's: its first argument as ``inputs``,
    and the further arguments, Keras tensors in them as more inputs, as ``call``."""
    args = node.get("args")
    if not isinstance(args, list) or not args:
        raise ValueError(f"{where}: a functional node without positional arguments; "
                         f"tinynet reads nodes whose first argument is a tensor or a list")
    refs, listed = _refs(args[:1], where)
    more: list = []

    def take(entry: Any) -> int | None:
        if isinstance(entry, dict) and entry.get("class_name") == "__keras_tensor__":
            if not _history(entry):
                raise ValueError(f"{where}: a call argument is not a Keras tensor reference: "
                                 f"{entry!r:.120}")
            more.append(list(_history(entry)))
            return len(more) - 1
        return None
    kept = {k: v for k, v in kwargs.items() if k != "training"}
    template = template_from_config({"args": args[1:], "kwargs": kept}, take, where)
    if template.count == 0 and not template.args and not template.kwargs:
        return {"inputs": refs, "listed": listed}
    return {"inputs": refs + more, "listed": listed,
            "call": template.get_config(lambda i: {NODE_INPUT: i})}


def _keras_call_node(node: dict, shapes: dict) -> dict:
    """A tinynet node with further call arguments as Keras writes it: the first input,
    then the arguments, each tensor a ``__keras_tensor__`` entry."""
    template = template_from_config(node["call"])
    refs = node["inputs"]
    n = len(refs) - template.count
    first = ([_keras_tensor(r, shapes) for r in refs[:n]] if node.get("listed")
             else _keras_tensor(refs[0], shapes))
    config = template.get_config(lambda i: _keras_tensor(refs[n + i], shapes))
    return {"args": [first, *config["args"]], "kwargs": config["kwargs"]}


def _history(tensor: Any) -> tuple:
    """A Keras tensor entry's ``keras_history`` (``(layer, node, index)``), else ``()``."""
    config = tensor.get("config") if isinstance(tensor, dict) else None
    history = config.get("keras_history") if isinstance(config, dict) else None
    if (isinstance(history, list) and len(history) == 3 and isinstance(history[0], str)
            and all(isinstance(v, int) for v in history[1:])):
        return tuple(history)
    return ()


def _nodes_args(entry: Any) -> list:
    """The ``args`` list of each of a layer entry's well-formed inbound nodes."""
    nodes = entry.get("inbound_nodes") if isinstance(entry, dict) else None
    return [n for n in nodes if isinstance(n, dict) and isinstance(n.get("args"), list)] \
        if isinstance(nodes, list) else []


def _automatic_masks(layers: list) -> set[str]:
    """Names of the op layers that are an ``Embedding(mask_zero=True)``'s mask: Keras's
    functional config records the mask the embedding computes (``ids != 0`` of the
    embedding's own input) as a ``NotEqual`` op layer passed on as ``mask=``, and the
    query's mask an ``Attention`` hands on as a ``ConvertToTensor`` of it; tinynet's
    layers hand that mask on themselves, so the ops and those arguments are dropped."""
    embedded = set()
    for entry in layers:
        config = entry.get("config") if isinstance(entry, dict) else None
        if isinstance(config, dict) and entry.get("class_name") == "Embedding" \
                and config.get("mask_zero") is True:
            embedded.update(_history(n["args"][0]) for n in _nodes_args(entry) if n["args"])
    embedded.discard(())
    out = set()
    for entry in layers:
        if not isinstance(entry, dict) or entry.get("class_name") != "NotEqual":
            continue
        nodes = _nodes_args(entry)
        if nodes and len(nodes) == len(entry["inbound_nodes"]) and all(
                len(n["args"]) == 2 and type(n["args"][1]) in (int, float)
                and n["args"][1] == 0 and not n.get("kwargs")
                and _history(n["args"][0]) in embedded for n in nodes):
            out.add(entry["name"] if isinstance(entry.get("name"), str) else None)
    out.discard(None)
    for entry in layers:  # in graph order: a conversion of a conversion is found too
        if isinstance(entry, dict) and entry.get("class_name") == "ConvertToTensor" \
                and isinstance(entry.get("name"), str) and _converts_mask(entry, out):
            out.add(entry["name"])
    return out


def _converts_mask(entry: dict, masks: set[str]) -> bool:
    """Whether a ``ConvertToTensor`` entry only converts one of ``masks`` (each node)."""
    config = entry.get("config")
    nodes = _nodes_args(entry)
    return (isinstance(config, dict) and all(
        config.get(k) is None for k in ("dtype", "sparse", "ragged"))
        and bool(nodes) and len(nodes) == len(entry["inbound_nodes"]) and all(
            len(n["args"]) == 1 and not n.get("kwargs")
            and _history(n["args"][0])[:1] and _history(n["args"][0])[0] in masks
            for n in nodes))


def _nested_refs(refs: Any) -> list:
    if isinstance(refs, list) and refs and isinstance(refs[0], str):
        return [refs]
    return refs


def tinynet_model_config(entry: Any, where: str, table: dict) -> dict:
    """A Keras model entry (Sequential or Functional) as tinynet's ``{"class_name",
    "config"}``, checked class by class (``table``: the layer classes by name)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
        raise ValueError(f"{where}: config.json is not a Keras model config")
    class_name, config = entry.get("class_name"), entry["config"]
    if class_name not in ("Sequential", "Functional", "Model"):
        raise ValueError(f"{where}: the model class {class_name!r:.80} is not one tinynet "
                         f"reads from a .keras file (Sequential and functional models)")
    functional = class_name != "Sequential"
    layers = config.get("layers")
    if not isinstance(layers, list):
        raise ValueError(f"{where}: invalid model config: 'layers' must be a list")
    out_layers = []
    masks = _automatic_masks(layers) if functional else set()
    for layer_entry in layers:
        if not isinstance(layer_entry, dict):
            raise ValueError(f"{where}: invalid model config: a layer entry is not an object")
        if isinstance(layer_entry.get("name"), str) and layer_entry["name"] in masks:
            continue  # an Embedding's mask, which tinynet's layers hand on themselves
        if layer_entry.get("class_name") in ("Sequential", "Functional", "Model"):
            out, cls = tinynet_model_config(layer_entry, where, table), None
        else:
            name, cls = _layer_class(layer_entry, where, table)
            inner = layer_entry.get("config")
            if not isinstance(inner, dict):
                raise ValueError(f"{where}: layer {name!r} has no 'config' object")
            out = {"class_name": name, "config": _tinynet_layer_config(cls, name, inner, where)}
        if functional:
            out["name"] = layer_entry.get("name", out["config"].get("name"))
            nodes = layer_entry.get("inbound_nodes", [])
            if not isinstance(nodes, list):
                raise ValueError(f"{where}: invalid model config: 'inbound_nodes' must be a list")
            out["inbound_nodes"] = []
            for node in nodes:
                if not isinstance(node, dict):
                    raise ValueError(f"{where}: invalid model config: a node is not an object")
                kwargs = node.get("kwargs") or {}
                if not isinstance(kwargs, dict):
                    raise ValueError(f"{where}: invalid model config: a node's 'kwargs' must "
                                     f"be an object")
                kwargs = dict(kwargs)
                if out["class_name"] in ATTENTION_CLASSES:
                    args, flags = tinynet_attention_node(out["class_name"], out["name"],
                                                         node, kwargs, where)
                    node = {**node, "args": args}
                    if out["inbound_nodes"] and flags != out["config"].get("call_options"):
                        raise ValueError(f"{where}: layer {out['name']!r:.80} "
                                         f"({out['class_name']}) is called with different "
                                         f"call arguments in different nodes, which "
                                         f"tinynet's layer does not keep")
                    out["config"]["call_options"] = flags
                if _history(kwargs.get("mask"))[:1] and _history(kwargs["mask"])[0] in masks:
                    del kwargs["mask"]  # the automatic mask (see _automatic_masks)
                # training: tinynet's fit/predict set it for every layer, as Keras's do
                if getattr(cls, "_has_call", False):  # a call() layer keeps its arguments
                    out["inbound_nodes"].append(_call_node(node, kwargs, where))
                    continue
                used = {k: v for k, v in kwargs.items() if v is not None and k != "training"}
                if used:
                    raise ValueError(f"{where}: layer {out['name']!r:.80} is called with "
                                     f"keyword arguments {sorted(used)} tinynet does not take")
                refs, listed = _refs(node.get("args"), where)
                out["inbound_nodes"].append({"inputs": refs, "listed": listed})
        out_layers.append(out)
    inner = {"name": config.get("name"), "trainable": config.get("trainable", True),
             "layers": out_layers}
    if functional:
        for key in ("input", "output"):
            refs = config.get(f"{key}_layers")
            inner[f"{key}_layers"] = _nested_refs(refs)
            # a list of references is a model of a list of tensors (Keras writes one flat)
            inner[f"{key}_keys"] = "list" if isinstance(refs, list) and refs and isinstance(
                refs[0], list) else None
        return {"class_name": "Model", "config": inner}
    if config.get("build_input_shape") is not None:
        inner["build_input_shape"] = config["build_input_shape"]
    return {"class_name": "Sequential", "config": inner}
