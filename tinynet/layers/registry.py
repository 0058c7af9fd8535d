"""The registry of layer and model classes ``load_model`` may rebuild, by name.

Built-in layers (``tinynet.layers.__all__``) are entered on first use, models by their
own modules (``Sequential``), custom layers with :func:`register_layer`. Loading a file looks
class names up here and never imports or runs anything a file names.
"""

from __future__ import annotations

import importlib
import re
import sys
from typing import Any, TypeVar

from tinynet.layers.layer import Layer

__all__ = ["register_layer", "registered_layers", "registered_name", "registered_name_or_class",
           "plain_name", "register_model", "model_class", "model_classes"]

T = TypeVar("T", bound=type)

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LAYERS: dict[str, type] = {}
_MODELS: dict[str, type] = {}
# The built-in model classes register themselves when their modules load; a lookup loads
# them first (by name, as tinynet.layers loads its modules), so a file can be read in a
# process that has not imported them yet.
_MODEL_MODULES = ("tinynet.models.sequential", "tinynet.models.functional")


_builtins_added = False


def _layers() -> dict[str, type]:
    """The layer registry, with every class of ``tinynet.layers.__all__`` entered on first
    use (``tinynet.layers`` imports its modules lazily, so this loads them all)."""
    global _builtins_added
    if not _builtins_added:
        import tinynet.layers as layers_module

        for name in layers_module.__all__:
            cls = getattr(layers_module, name)
            if isinstance(cls, type) and issubclass(cls, Layer) and cls is not Layer:
                _LAYERS.setdefault(name, cls)
        # files written before InputLayer name their input entry "Input"
        _LAYERS.setdefault("Input", layers_module.InputLayer)
        _builtins_added = True
    return _LAYERS


def _models() -> dict[str, type]:
    for module in _MODEL_MODULES:
        if module not in sys.modules:
            importlib.import_module(module)
    return _MODELS


def registered_layers() -> dict[str, type]:
    """A copy of the layer registry: class name -> class (built-ins, registered custom
    layers, and the model classes, which are layers too), with the layer classes of
    ``tinynet.saving.register_keras_serializable`` under their plain registered name
    (``"package>Name"`` -> ``"Name"``) where no other class holds it."""
    from tinynet.custom_objects import get_custom_objects

    keras: dict[str, type] = {}
    for key, obj in get_custom_objects().items():
        plain = key.split(">", 1)[-1]
        if isinstance(obj, type) and issubclass(obj, Layer) and _NAME_RE.match(plain):
            keras.setdefault(plain, obj)
    return {**keras, **_layers(), **_models()}


def register_layer(cls: T | str | None = None, *, name: str | None = None) -> Any:
    """Registers a custom layer class so that ``load_model`` can rebuild it.

    Use as ``@register_layer``, ``@register_layer("MyName")`` or
    ``@register_layer(name="MyName")``; the default name is the class name. The class
    must subclass :class:`tinynet.layers.Layer` and round-trip through
    ``get_config``/``from_config``. Registering the same class again is allowed.

    Raises:
        TypeError: not a ``Layer`` subclass, or the name is not a str.
        ValueError: the name is not a plain identifier, or already names another class.
    """
    if isinstance(cls, str):
        if name is not None:
            raise TypeError("register_layer: give the name once, positionally or as name=")
        name, cls = cls, None

    def decorate(layer_cls: T) -> T:
        if not (isinstance(layer_cls, type) and issubclass(layer_cls, Layer)):
            raise TypeError(f"register_layer: expected a subclass of tinynet.layers.Layer, "
                            f"got {layer_cls!r}")
        key = layer_cls.__name__ if name is None else name
        if not isinstance(key, str):
            raise TypeError(f"register_layer: name must be a str, got {key!r}")
        if not _NAME_RE.match(key):
            raise ValueError(f"register_layer: name must be a plain identifier (letters, "
                             f"digits, underscores; no dots), got {key!r}")
        layers = _layers()
        existing = layers.get(key)
        redefined = (existing is not None and existing.__module__ == layer_cls.__module__
                     and existing.__qualname__ == layer_cls.__qualname__)
        if existing is not None and existing is not layer_cls and not redefined:
            raise ValueError(f"register_layer: the name {key!r} is already registered for "
                             f"{existing.__module__}.{existing.__qualname__}")
        layers[key] = layer_cls
        return layer_cls

    return decorate if cls is None else decorate(cls)


def registered_name(cls: type) -> str:
    """The name ``cls`` is registered under (its class name when that is free)."""
    layers = registered_layers()
    if layers.get(cls.__name__) is cls:
        return cls.__name__
    for key, value in layers.items():
        if value is cls and key != "Input":
            return key
    raise ValueError(f"save: layer class {cls.__module__}.{cls.__qualname__} is not registered; "
                     f"decorate it with @tinynet.saving.register_layer so load_model can "
                     f"rebuild it")


def registered_name_or_class(cls: type) -> str:
    """:func:`registered_name`, or the class name of a class not registered (a config
    for ``from_config`` with ``custom_objects``; saving checks registration itself)."""
    try:
        return registered_name(cls)
    except ValueError:
        return cls.__name__


def plain_name(name: str) -> bool:
    """Whether ``name`` is a plain identifier (what a registered name must be)."""
    return bool(_NAME_RE.match(name))


def register_model(cls: T) -> T:
    """Enters a model class (``Sequential``, ``Model``) under its class name."""
    _MODELS[cls.__name__] = cls
    return cls


def model_class(name: str) -> type:
    """The model class registered as ``name``."""
    return _models()[name]


def model_classes() -> tuple[type, ...]:
    """Every registered model class."""
    return tuple(_models().values())
