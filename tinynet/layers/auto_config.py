"""Keras's automatic config of a ``call()`` layer that defines no ``get_config``: the
arguments its constructor was given (``Layer.__new__`` keeps them in ``_init_args``),
bound to ``__init__``'s signature, when they are JSON-able."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["auto_config", "defines_get_config"]

_JSON_SCALARS = (str, int, float, bool, type(None))


def _jsonable(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return type(value) in _JSON_SCALARS


def defines_get_config(cls: type) -> bool:
    """Whether ``cls`` (or a base below ``Layer``) defines its own ``get_config`` in its
    class body; one tinynet installs on a class (a subclassed model's) does not count."""
    for klass in cls.__mro__:
        fn = vars(klass).get("get_config")
        if fn is not None:  # the one Python calls
            if klass.__name__ == "Layer" and klass.__module__ == "tinynet.layers.layer":
                return False
            return getattr(fn, "__qualname__", "").startswith(f"{klass.__qualname__}.")
    return False


def auto_config(layer: Any, base: dict) -> dict:
    """Keras's automatic config of a ``call()`` layer without ``get_config``: the base
    config plus the arguments its constructor was given (bound to ``__init__``'s
    signature), when they are JSON-able.

    Raises:
        NotImplementedError: an argument is not JSON-able (the message says to define
            ``get_config``).
    """
    cls = type(layer)
    args, kwargs = getattr(layer, "_init_args", ((), {}))
    signature = inspect.signature(cls.__init__)
    given: dict[str, Any] = {}
    bad: list[str] = []
    try:
        bound = signature.bind_partial(None, *args, **kwargs).arguments
    except TypeError:
        bound, bad = {}, ["the constructor's arguments"]
    for key, value in list(bound.items())[1:]:
        kind = signature.parameters[key].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            if value:
                bad.append(f"*{key}")
        elif kind is inspect.Parameter.VAR_KEYWORD:
            given.update(value)
        else:
            given[key] = value
    bad += [f"{key}={value!r:.60}" for key, value in given.items() if not _jsonable(value)]
    if bad:
        raise NotImplementedError(
            f"{cls.__name__} {layer.name!r}: cannot make its config: it was created with "
            f"arguments that are not JSON-able ({', '.join(bad)}); define "
            f"get_config(self) returning its constructor arguments (start from "
            f"super().get_config()) to save it")
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD
                    for p in signature.parameters.values())
    config = {key: value for key, value in base.items()
              if takes_any or key in signature.parameters}
    config.update({key: value for key, value in given.items() if key not in base})
    return config
