"""Losses with Keras 3 semantics and hand-written gradients (see :mod:`.base` for the
reduction, the numerics and ``sample_weight``)."""

from __future__ import annotations

from typing import Any

from tinynet.losses.base import EPSILON, Loss
from tinynet.losses.crossentropy import (BinaryCrossentropy, CategoricalCrossentropy,
                                         SparseCategoricalCrossentropy)
from tinynet.losses.focal import BinaryFocalCrossentropy, CategoricalFocalCrossentropy
from tinynet.losses.margins import CategoricalHinge, Hinge, KLDivergence, SquaredHinge
from tinynet.losses.regression import Huber, LogCosh, MeanAbsoluteError, MeanSquaredError

__all__ = ["Loss", "MeanSquaredError", "MeanAbsoluteError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "Huber", "LogCosh",
           "KLDivergence", "Hinge", "SquaredHinge", "CategoricalHinge",
           "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy", "get", "serialize",
           "EPSILON"]


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
    """Returns ``{"class_name": ..., "config": loss.get_config()}`` (JSON-able)."""
    if not isinstance(loss, Loss):
        raise TypeError(f"serialize: expected a Loss, got {type(loss).__name__}")
    return {"class_name": type(loss).__name__, "config": loss.get_config()}


def get(identifier: Any) -> Loss:
    """Returns a :class:`Loss` for an instance (as is), a name or a serialized dict.

    Raises:
        ValueError: An unknown name (the message lists the valid ones).
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
        cls = _CLASSES.get(str(identifier["class_name"]))
        if cls is None:
            raise ValueError(f"Unknown loss {identifier['class_name']!r}; valid names: {_VALID}")
        return cls.from_config(identifier.get("config", {}))
    raise TypeError(f"losses.get: expected a Loss instance, a name or a config dict, got "
                    f"{type(identifier).__name__}: {identifier!r}")
