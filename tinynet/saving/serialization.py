"""``serialize_keras_object`` / ``deserialize_keras_object`` (Keras 3 names): layers
(models included), losses, optimizers and metrics as
``{"module", "class_name", "config", "registered_name"}``; plain JSON values pass through.

Deserializing never imports or executes anything: ``class_name`` (or ``registered_name``)
is looked up in ``custom_objects``, the active ``custom_object_scope`` blocks and the
registries (built-in layers, losses, optimizers, metrics, and what
``register_keras_serializable`` / ``register_layer`` registered); ``module`` only tells
which registry to look in.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.reprs import plain_repr

_KINDS = ("layers", "losses", "optimizers", "metrics")


def _kind_of(obj: Any) -> str | None:
    from tinynet import losses, optimizers
    from tinynet.layers.layer import Layer

    if isinstance(obj, Layer):
        return "layers"
    if isinstance(obj, losses.Loss):
        return "losses"
    if isinstance(obj, optimizers.Optimizer):
        return "optimizers"
    from tinynet import metrics

    if isinstance(obj, metrics.Metric):
        return "metrics"
    return None


def _registered_key(obj: Any) -> str | None:
    """The ``package>name`` key ``obj`` was registered under, else ``None``."""
    from tinynet.custom_objects import get_custom_objects, get_registered_name

    key = get_registered_name(obj)
    return key if get_custom_objects().get(key) is obj else None


def serialize_keras_object(obj: Any) -> Any:
    """``obj`` as JSON-able data (Keras 3 ``keras.saving.serialize_keras_object``).

    ``None``, ``bool``, ``int``, ``float`` and ``str`` are returned as they are (NumPy
    scalars as Python ones), lists/tuples and dicts element by element; a layer or model,
    a loss, an optimizer or a metric becomes ``{"module", "class_name", "config",
    "registered_name"}`` (``registered_name`` is the ``package>name`` of an object
    decorated with ``register_keras_serializable``, else ``None``); a registered function
    becomes ``{"module", "class_name": "function", "config": name, "registered_name"}``.

    Raises:
        TypeError: any other object (the message names its type).
        ValueError: a non-finite float, or a dict key that is not a str.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        if not math.isfinite(obj):
            raise ValueError(f"serialize_keras_object: cannot serialize the non-finite float "
                             f"{obj!r} as JSON")
        return float(obj)
    if isinstance(obj, (list, tuple)):
        return [serialize_keras_object(item) for item in obj]
    if isinstance(obj, dict):
        out = {}
        for key, value in obj.items():
            if not isinstance(key, str):
                raise ValueError(f"serialize_keras_object: dict keys must be str, got "
                                 f"{key!r:.80}")
            out[key] = serialize_keras_object(value)
        return out
    kind = _kind_of(obj)
    if kind is not None:
        return _serialize_object(obj, kind)
    if callable(obj) and not isinstance(obj, type):
        key = _registered_key(obj)
        if key is not None:
            return {"module": getattr(obj, "__module__", None), "class_name": "function",
                    "config": key, "registered_name": key}
    raise TypeError(f"serialize_keras_object: cannot serialize {type(obj).__name__} "
                    f"{plain_repr(obj)}; supported: None, bool, int, float, str, lists, dicts, "
                    f"layers and models, losses, optimizers, metrics and functions registered "
                    f"with @tinynet.saving.register_keras_serializable()")


def _serialize_object(obj: Any, kind: str) -> dict:
    from tinynet.saving import config as config_module

    cls = type(obj)
    if kind == "layers":
        from tinynet.layers import registry

        if isinstance(obj, registry.model_classes()):
            entry = config_module.model_config(obj, owner="serialize_keras_object")
        else:
            try:
                config = obj.get_config()
            except NotImplementedError as exc:
                raise ValueError(f"serialize_keras_object: {exc}") from None
            entry = {"class_name": registry.registered_name_or_class(cls), "config": config}
    elif kind == "losses":
        from tinynet import losses

        entry = losses.serialize(obj)
    elif kind == "optimizers":
        from tinynet import optimizers

        entry = optimizers.serialize(obj)
    else:
        from tinynet import metrics

        public = getattr(metrics, cls.__name__, None) is cls
        entry = {"class_name": cls.__name__ if public else _registered_key(cls) or cls.__name__,
                 "config": obj.get_config()}
    key = _registered_key(cls)
    builtin = cls.__module__.startswith("tinynet.")
    module = f"tinynet.{kind}" if builtin and key is None else cls.__module__
    if kind == "layers" and builtin and entry["class_name"] in ("Sequential", "Model"):
        module = "tinynet.models"
    return {"module": module, "class_name": entry["class_name"],
            "config": serialize_keras_object(entry["config"]), "registered_name": key}


def _kind_from_module(module: Any) -> str | None:
    """``"tinynet.layers"`` / ``"keras.layers"`` ... -> ``"layers"``; models are layers."""
    if not isinstance(module, str):
        return None
    parts = module.split(".")
    for kind in _KINDS:
        if kind in parts:
            return kind
    if "models" in parts or module in ("keras", "tinynet"):
        return "layers"
    return None


def _unknown(name: Any, owner: str) -> ValueError:
    return ValueError(f"{owner}: unknown class {name!r:.80}; it is not a built-in layer, "
                      f"loss, optimizer or metric, nor registered: decorate the class with "
                      f"@tinynet.saving.register_keras_serializable(), or pass it in "
                      f"custom_objects={{{name!r:.80}: {name if isinstance(name, str) else 'cls'}}}")


def _layer(entry: dict, name: str, custom_objects: dict | None, owner: str) -> Any:
    from tinynet.saving.config import layer_classes

    table = layer_classes(custom_objects)
    if name not in table:
        raise _unknown(name, owner)
    cls, config = table[name], dict(entry["config"])
    try:
        if getattr(cls, "takes_custom_objects", False):  # a model: its layers by the same table
            return cls.from_config(config, custom_objects=table)
        return cls.from_config(config)
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
        raise ValueError(f"{owner}: cannot rebuild {name!r} from its config: "
                         f"{type(exc).__name__}: {exc}") from None


def _other(kind: str, name: str, config: dict, custom_objects: dict | None,
           owner: str) -> Any:
    from tinynet import losses, metrics, optimizers
    from tinynet.custom_objects import CustomObjectScope
    from tinynet.saving.config import _metric_class

    try:
        with CustomObjectScope(custom_objects or {}):
            if kind == "losses":
                return losses.get({"class_name": name, "config": config})
            if kind == "optimizers":
                return optimizers.get({"class_name": name, "config": config})
            return _metric_class({"class_name": name, "config": config}).from_config(config)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ValueError(f"{owner}: cannot rebuild {name!r} as one of tinynet.{kind}: "
                         f"{type(exc).__name__}: {exc}") from None


def _guess_kind(name: str, custom_objects: dict | None) -> str | None:
    """Which registry knows ``name`` (no ``module`` given): layers, then losses,
    optimizers, metrics; a registered class by its base class."""
    from tinynet import losses, metrics, optimizers
    from tinynet.layers.layer import Layer
    from tinynet.saving.config import layer_classes
    from tinynet.custom_objects import get_registered_object

    if name in layer_classes(custom_objects):
        return "layers"
    obj = get_registered_object(name, custom_objects)
    if isinstance(obj, type):
        for kind, base in (("layers", Layer), ("losses", losses.Loss),
                           ("optimizers", optimizers.Optimizer), ("metrics", metrics.Metric)):
            if issubclass(obj, base):
                return kind
    if name in getattr(losses, "_CLASSES", {}) or name == "LossFunctionWrapper":
        return "losses"
    if isinstance(getattr(optimizers, name, None), type) and issubclass(
            getattr(optimizers, name), optimizers.Optimizer):
        return "optimizers"
    if name in metrics.__all__:
        return "metrics"
    return None


def deserialize_keras_object(config: Any, custom_objects: dict | None = None,
                             safe_mode: bool = True, **kwargs: Any) -> Any:
    """The object :func:`serialize_keras_object` described (Keras 3
    ``keras.saving.deserialize_keras_object``).

    ``None``, numbers and strings are returned as they are, lists element by element; a
    dict ``{"class_name", "config"[, "module", "registered_name"]}`` is rebuilt from the
    class its ``registered_name`` or ``class_name`` names in ``custom_objects``, the active
    :func:`custom_object_scope` blocks or the registries (nothing is imported, ``module``
    only chooses the registry); ``{"class_name": "function", "config": name}`` returns the
    registered function. A dict without ``class_name`` is deserialized value by value.
    ``safe_mode`` is accepted for Keras compatibility (tinynet never runs code from a
    config, so it changes nothing).

    Raises:
        ValueError: an unknown class or function name (the message says how to register
            it), a malformed entry, or a config its class cannot be built from.
        TypeError: ``custom_objects`` is not a dict of str names.
    """
    from tinynet.custom_objects import check_custom_objects, get_registered_object

    owner = "deserialize_keras_object"
    custom_objects = check_custom_objects(custom_objects, owner)
    if config is None or isinstance(config, (bool, int, float, str)):
        return config
    if isinstance(config, (list, tuple)):
        return [deserialize_keras_object(c, custom_objects) for c in config]
    if not isinstance(config, dict):
        raise TypeError(f"{owner}: expected a dict (or a JSON value), got "
                        f"{type(config).__name__}: {config!r:.80}")
    if "class_name" not in config:
        return {k: deserialize_keras_object(v, custom_objects) for k, v in config.items()}
    name = config["class_name"]
    if not isinstance(name, str) or not name:
        raise ValueError(f"{owner}: 'class_name' must be a non-empty str, got {name!r:.80}")
    inner = config.get("config")
    if name == "function":
        key = config.get("registered_name") or inner
        fn = get_registered_object(key, custom_objects) if isinstance(key, str) else None
        if fn is None or isinstance(fn, type) or not callable(fn):
            raise _unknown(key, owner)
        return fn
    if not isinstance(inner, dict):
        raise ValueError(f"{owner}: {name!r} needs a 'config' object, got "
                         f"{type(inner).__name__}")
    registered = config.get("registered_name")
    if isinstance(registered, str) and registered and registered != name:
        if get_registered_object(registered, custom_objects) is not None:
            name = registered
    kind = _kind_from_module(config.get("module")) or _guess_kind(name, custom_objects)
    if kind is None:
        raise _unknown(name, owner)
    if kind == "layers":
        return _layer(config, name, custom_objects, owner)
    return _other(kind, name, inner, custom_objects, owner)


# -- tinynet.layers.serialize / deserialize (the layers facade names them lazily) ------------
def serialize_layer(layer: Any) -> dict:
    """``{"module", "class_name", "config", "registered_name"}`` for ``layer`` (Keras 3
    ``keras.layers.serialize``).

    Raises:
        TypeError: ``layer`` is not a tinynet Layer.
    """
    from tinynet.layers.layer import Layer

    if not isinstance(layer, Layer):
        raise TypeError(f"layers.serialize: expected a tinynet Layer, got "
                        f"{type(layer).__name__}: {layer!r:.80}")
    return serialize_keras_object(layer)


def deserialize_layer(config: Any, custom_objects: dict | None = None) -> Any:
    """The layer :func:`serialize` described (Keras 3 ``keras.layers.deserialize``); the
    class is looked up by name in ``custom_objects``, the active ``custom_object_scope``
    blocks and the layer registry (nothing is imported).

    Raises:
        TypeError: ``config`` is not a dict, or ``custom_objects`` is not a dict.
        ValueError: no ``class_name``, an unknown layer class, or a config the layer
            cannot be built from.
    """
    from tinynet.layers.layer import Layer

    if not isinstance(config, dict):
        raise TypeError(f"layers.deserialize: config must be a dict {{'class_name', "
                        f"'config'}}, got {type(config).__name__}: {config!r:.80}")
    if not isinstance(config.get("class_name"), str):
        raise ValueError(f"layers.deserialize: config needs a 'class_name' str, got keys "
                         f"{sorted(map(str, config))}")
    if not isinstance(config.get("config"), dict):
        raise ValueError(f"layers.deserialize: {config['class_name']!r:.80} needs a 'config' "
                         f"object")
    entry = {**config, "module": "tinynet.layers"}
    try:
        layer = deserialize_keras_object(entry, custom_objects)
    except ValueError as exc:
        raise ValueError(str(exc).replace("deserialize_keras_object", "layers.deserialize")) from None
    if not isinstance(layer, Layer):  # pragma: no cover - the layer table holds Layers only
        raise ValueError(f"layers.deserialize: {config['class_name']!r} is not a layer")
    return layer
