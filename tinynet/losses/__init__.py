"""Losses with Keras 3 semantics and hand-written gradients (see :mod:`.base` for the
reduction, the numerics and ``sample_weight``)."""

from __future__ import annotations

from typing import Any

from tinynet.losses.base import EPSILON, Loss
from tinynet.losses.custom import LossFunctionWrapper
from tinynet.losses.crossentropy import (BinaryCrossentropy, CategoricalCrossentropy,
                                         SparseCategoricalCrossentropy)
from tinynet.losses.focal import BinaryFocalCrossentropy, CategoricalFocalCrossentropy
from tinynet.losses.margins import CategoricalHinge, Hinge, KLDivergence, SquaredHinge
from tinynet.losses.regression import Huber, LogCosh, MeanAbsoluteError, MeanSquaredError

__all__ = ["Loss", "MeanSquaredError", "MeanAbsoluteError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "Huber", "LogCosh",
           "KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge",
           "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy", "LossFunctionWrapper",
           "get", "serialize", "EPSILON"]


_CLASSES: dict[str, type[Loss]] = {
    "mse": MeanSquaredError, "mean_squared_error": MeanSquaredError,
    "mae": MeanAbsoluteError, "mean_absolute_error": MeanAbsoluteError,
    "binary_crossentropy": BinaryCrossentropy,
    "categorical_crossentropy": CategoricalCrossentropy,
    "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
    "huber": Huber, "log_cosh": LogCosh, "logcosh": LogCosh,
    "kl_divergence": KLDivergence, "kld": KLDivergence, "hinge": Hinge,
    "squared_hinge": SquaredHinge, "categorical_hinge": CategoricalHinge,
    "binary_focal_crossentropy": BinaryFocalCrossentropy,
    "categorical_focal_crossentropy": CategoricalFocalCrossentropy,
}
for _cls in (MeanSquaredError, MeanAbsoluteError, BinaryCrossentropy, CategoricalCrossentropy,
             SparseCategoricalCrossentropy, Huber, LogCosh, KLDivergence, Hinge, SquaredHinge,
             CategoricalHinge, BinaryFocalCrossentropy, CategoricalFocalCrossentropy):
    _CLASSES[_cls.__name__] = _cls
_VALID = ", ".join(_CLASSES)


def serialize(loss: Loss) -> dict:
    """Returns ``{"class_name": ..., "config": loss.get_config()}`` (JSON-able); a custom
    ``Loss`` subclass is named by its registered name
    (:func:`tinynet.saving.register_keras_serializable`), a function loss is a
    ``LossFunctionWrapper`` naming its function that way."""
    if not isinstance(loss, Loss):
        raise TypeError(f"serialize: expected a Loss, got {type(loss).__name__}")
    from tinynet.custom_objects import registered_name

    cls = type(loss)
    name = cls.__name__ if _CLASSES.get(cls.__name__) is cls else registered_name(cls)
    return {"class_name": name, "config": loss.get_config()}


def get(identifier: Any) -> Loss:
    """Returns a :class:`Loss` for an instance (as is), a name, a serialized dict, a
    ``Loss`` subclass (instantiated) or a function ``fn(y_true, y_pred)`` written with
    :mod:`tinynet.ops` (wrapped in :class:`LossFunctionWrapper`), as Keras.

    A dict names a built-in loss, ``LossFunctionWrapper`` or a custom ``Loss`` subclass
    by its registered name (looked up in the active ``custom_object_scope``s and the
    registry of :func:`tinynet.saving.register_keras_serializable`; nothing is imported).

    Raises:
        ValueError: An unknown name (the message lists the valid ones, or says how to
            register a custom loss).
        TypeError: Any other type.
    """
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        cls = _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"Unknown loss {identifier!r}; valid names: {_VALID}")
        return cls()
    if isinstance(identifier, dict) and "class_name" in identifier:
        name = identifier["class_name"]
        cls = _CLASSES.get(name) if isinstance(name, str) else None
        if cls is None:
            cls = _custom_class(name)
        config = identifier.get("config", {})
        if not isinstance(config, dict):
            raise TypeError(f"losses.get: the config of {name!r} must be a dict, got "
                            f"{type(config).__name__}")
        return cls.from_config(config)
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier) and not isinstance(identifier, type):
        return LossFunctionWrapper(identifier)
    raise TypeError(f"losses.get: expected a Loss instance, a name or a config dict, got "
                    f"{type(identifier).__name__}: {identifier!r}")


def _custom_class(name: Any) -> type[Loss]:
    """``LossFunctionWrapper`` or a custom ``Loss`` subclass by registered name."""
    from tinynet.custom_objects import resolve_class

    if name == "LossFunctionWrapper":
        return LossFunctionWrapper
    cls = resolve_class(name, Loss)
    if cls is None or cls is Loss:
        raise ValueError(f"Unknown loss {name!r:.80}: not a built-in loss ({_VALID}) nor a "
                         f"Loss subclass registered with "
                         f"@tinynet.saving.register_keras_serializable() or passed in "
                         f"custom_objects")
    return cls
