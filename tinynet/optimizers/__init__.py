"""Optimizers with Keras 3 names, defaults and update rules (see docs/optimizers.md).

``get`` resolves what ``Sequential.compile(optimizer=...)`` accepts: an optimizer
instance (returned as is), a name (``"sgd"``, ``"adam"``, ``"adamw"``, ``"nadam"``,
``"adamax"``, ``"lion"``, ``"rmsprop"``, ``"adagrad"`` or a class name,
case-insensitive; a new instance with defaults), or a
``{"class_name": ..., "config": ...}`` dict as written by :func:`serialize`.
"""

from __future__ import annotations

from typing import Any

from tinynet.optimizers import schedules
from tinynet.optimizers.adagrad import Adagrad
from tinynet.optimizers.adam import Adam
from tinynet.optimizers.adamax import Adamax
from tinynet.optimizers.adamw import AdamW
from tinynet.optimizers.lion import Lion
from tinynet.optimizers.nadam import Nadam
from tinynet.optimizers.optimizer import Optimizer
from tinynet.optimizers.rmsprop import RMSprop
from tinynet.optimizers.sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Nadam", "Adamax", "Lion", "RMSprop", "Adagrad",
           "get", "serialize", "schedules"]

_CLASSES: dict[str, type[Optimizer]] = {
    "sgd": SGD, "adam": Adam, "adamw": AdamW, "nadam": Nadam, "adamax": Adamax, "lion": Lion,
    "rmsprop": RMSprop, "adagrad": Adagrad,
}
_VALID = ", ".join(sorted(_CLASSES))
_CLASS_NAMES = ", ".join(c.__name__ for c in _CLASSES.values())


def _lookup(name: str) -> type[Optimizer]:
    cls = _CLASSES.get(name.lower())
    if cls is None:
        raise ValueError(f"Unknown optimizer {name!r}; valid names: {_VALID} "
                         f"(or the class names {_CLASS_NAMES})")
    return cls


def serialize(optimizer: Optimizer) -> dict:
    """Returns ``{"class_name": ..., "config": optimizer.get_config()}`` (JSON-able)."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"serialize: expected an Optimizer, got {type(optimizer).__name__}")
    return {"class_name": type(optimizer).__name__, "config": optimizer.get_config()}


def get(identifier: Any) -> Optimizer:
    """Returns an optimizer for ``identifier`` (instance, name or serialized dict).

    Raises:
        ValueError: An unknown name (the message lists the valid ones) or a malformed dict.
        TypeError: Any other type.
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        return _lookup(identifier)()
    if isinstance(identifier, dict):
        if "class_name" not in identifier:
            raise ValueError(f"optimizers.get: a config dict needs 'class_name' and 'config' "
                             f"keys, got keys {sorted(identifier)}")
        return _lookup(str(identifier["class_name"])).from_config(identifier.get("config", {}))
    raise TypeError(f"optimizers.get: expected an Optimizer instance, a name or a config dict, "
                    f"got {type(identifier).__name__}: {identifier!r}")
