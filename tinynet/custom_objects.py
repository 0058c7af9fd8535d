"""Custom objects by registered name, as Keras: ``register_keras_serializable``,
``custom_object_scope``, ``get_custom_objects`` (public as ``tinynet.saving``'s).

A low floor of the package (it imports only :mod:`tinynet.reprs`): the layers, losses,
metrics and regularizers that save a custom function or class by name reach it without
importing ``saving``.

A file names custom classes and functions by a string (``"package>name"``, Keras's
registered name); loading looks the string up in ``custom_objects=``, the active
:class:`custom_object_scope`s and the registry, in that order, and never imports or runs
anything the file names.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from tinynet.reprs import plain_repr

__all__ = ["register_keras_serializable", "custom_object_scope", "CustomObjectScope",
           "get_custom_objects", "get_registered_name", "get_registered_object",
           "registered_name", "lookup", "resolve_class", "check_custom_objects"]

_GLOBAL: dict[str, Any] = {}
_NAMES: dict[int, str] = {}  # id(object) -> registered name
_local = threading.local()


def register_keras_serializable(package: str = "Custom", name: str | None = None
                                ) -> Callable[[Any], Any]:
    """Registers a class or function under ``"<package>>name"`` (name defaults to its
    ``__name__``). A ``Layer`` subclass is also found by the plain ``name`` in the layer
    registry (:func:`tinynet.layers.registry.registered_layers`, unless a built-in or
    ``register_layer`` class holds it), so ``load_model`` and ``from_config`` rebuild it
    without ``custom_objects``.

    Raises:
        TypeError: ``package`` or ``name`` is not a str.
        ValueError: the registered name is taken by another object.
    """
    if not isinstance(package, str) or not package:
        raise TypeError(f"register_keras_serializable: package must be a non-empty str, "
                        f"got {package!r}")
    if name is not None and (not isinstance(name, str) or not name):
        raise TypeError(f"register_keras_serializable: name must be a non-empty str or None, "
                        f"got {name!r}")

    def decorate(obj: Any) -> Any:
        key = f"{package}>{name or obj.__name__}"
        existing = _GLOBAL.get(key)
        if existing is not None and existing is not obj and not _same_definition(existing, obj):
            raise ValueError(f"register_keras_serializable: {key!r} is already registered "
                             f"for {plain_repr(existing)}")
        _GLOBAL[key] = obj
        _NAMES[id(obj)] = key
        return obj

    return decorate


def _same_definition(a: Any, b: Any) -> bool:
    """A class or function defined again at the same place (a re-run script)."""
    return (getattr(a, "__module__", None) == getattr(b, "__module__", None)
            and getattr(a, "__qualname__", None) == getattr(b, "__qualname__", None))


class CustomObjectScope:
    """``with custom_object_scope({"name": obj}):`` makes the names resolvable inside."""

    def __init__(self, custom_objects: dict | None = None) -> None:
        self.custom_objects = check_custom_objects(custom_objects, "custom_object_scope")

    def __enter__(self) -> "CustomObjectScope":
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self.custom_objects)
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.stack.pop()


custom_object_scope = CustomObjectScope


def check_custom_objects(custom_objects: Any, owner: str) -> dict:
    """``custom_objects`` as a new dict: ``None`` or a dict of non-empty str names.

    Raises:
        TypeError: not a dict, or a name that is not a non-empty str.
    """
    if custom_objects is None:
        return {}
    if not isinstance(custom_objects, dict):
        raise TypeError(f"{owner}: custom_objects must be a dict {{name: class or function}} "
                        f"or None, got {type(custom_objects).__name__}: {custom_objects!r:.80}")
    for key in custom_objects:
        if not isinstance(key, str) or not key:
            raise TypeError(f"{owner}: custom_objects keys must be non-empty str names, got "
                            f"{key!r:.80}")
    return dict(custom_objects)


def get_custom_objects() -> dict:
    """The global registry (mutable, as in Keras)."""
    return _GLOBAL


def scoped_objects() -> dict:
    """The names of the active scopes (inner scopes win)."""
    out: dict = {}
    for objects in getattr(_local, "stack", []):
        out.update(objects)
    return out


def get_registered_name(obj: Any) -> str:
    """The name ``obj`` was registered under, else its ``__name__``."""
    key = _NAMES.get(id(obj))
    if key is not None and _GLOBAL.get(key) is obj:  # (an id may be reused once freed)
        return key
    return getattr(obj, "__name__", type(obj).__name__)


registered_name = get_registered_name


def get_registered_object(name: str, custom_objects: dict | None = None) -> Any:
    """The object ``name`` resolves to, or ``None``: ``custom_objects``, the active scopes,
    then the registry (a plain name also matches a registered ``package>name``)."""
    for table in (custom_objects or {}, scoped_objects(), _GLOBAL):
        if name in table:
            return table[name]
    if ">" not in name:
        hits = [obj for key, obj in _GLOBAL.items() if key.split(">", 1)[1] == name]
        if len(hits) == 1:
            return hits[0]
    return None


def lookup(name: Any, owner: str, custom_objects: dict | None = None) -> Any:
    """:func:`get_registered_object` or a ``ValueError`` naming what to do."""
    if not isinstance(name, str):
        raise ValueError(f"{owner}: expected a registered name (str), got {name!r}")
    obj = get_registered_object(name, custom_objects)
    if obj is None:
        raise ValueError(f"{owner}: unknown object {name!r}; register it with "
                         f"@tinynet.saving.register_keras_serializable() or pass it in "
                         f"custom_objects")
    return obj


def resolve_class(name: Any, base: type, custom_objects: dict | None = None) -> type | None:
    """The subclass of ``base`` a file's ``name`` resolves to (:func:`get_registered_object`,
    which never imports anything), or ``None`` (also for any other object)."""
    if not isinstance(name, str):
        return None
    obj = get_registered_object(name, custom_objects)
    return obj if isinstance(obj, type) and issubclass(obj, base) else None

