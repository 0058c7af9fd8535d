"""Weight regularizers with Keras 3 names, defaults and values: ``L1``, ``L2``, ``L1L2``.

A regularizer maps a weight to a scalar penalty that training adds to the loss; it is
written with :mod:`tinynet.ops`, so a custom ``Regularizer`` subclass (or a plain function
``weight -> scalar``) needs only ``__call__``: its gradient comes from the same automatic
differentiation as a ``call()`` layer's. The built-in ones compute their gradient in
closed form (the values JAX's autodiff gives: ``l1 * (1 if w >= 0 else -1)``,
``2 * l2 * w``).

Where they act, as Keras 3 (``Trainer.compute_loss`` adds ``model.losses`` in both the
train and the test step):

* ``kernel_regularizer=`` and the like on a layer (or ``add_weight(regularizer=)``): the
  penalty of each *trainable* weight, computed from the weights of the forward pass, is
  added to the loss of ``fit``, ``train_on_batch`` and ``evaluate``, and its gradient to
  the weight's gradient before the optimizer step;
* ``activity_regularizer=``: the penalty of the layer's output divided by the batch size
  (Keras 3.15's ``divide_no_nan(regularizer(output), batch)``) is added to the loss, and
  its gradient to the output's gradient in the layer's backward;
* ``add_loss()`` in a ``call()``: each value (summed if not a scalar) is added to the
  loss unscaled, its gradient flowing back through the recorded ops.

Config form (``serialize``): Keras 3's ``{"module": "keras.regularizers", "class_name":
"L2", "config": {"l2": 0.01}, "registered_name": None}``; a custom class registered with
``tinynet.saving.register_keras_serializable`` is saved under its registered name and
found again by that name only (a file never runs code).

Factors: as Keras 3.15, ``L1`` keeps its factor as a float32 tensor (so its config shows
``0.10000000149011612`` for ``0.1``), ``L2`` and ``L1L2`` keep the Python float; every
penalty is computed in the weight's float32 (the factor cast to it).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable

import numpy as np

from tinynet import ops
from tinynet.keywords import KeywordChecked
from tinynet.scalars import is_real, to_float

__all__ = ["Regularizer", "L1", "L2", "L1L2", "l1", "l2", "l1_l2", "get", "serialize",
           "deserialize"]


def _factor(value: Any, arg: str, owner: str) -> float:
    if value is None:  # Keras: None means the default
        return 0.01 if owner in ("L1", "L2") else 0.0
    if not is_real(value):
        raise TypeError(f"{owner}: {arg} must be a non-negative float, got {value!r}")
    number = to_float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{owner}: {arg} must be a non-negative finite float, got {value!r}")
    return number


class Regularizer(KeywordChecked):
    """Base class: ``regularizer(weight) -> scalar`` penalty, written with ``tinynet.ops``.

    A subclass defines ``__call__`` (and ``get_config`` if it takes arguments); register
    it with ``tinynet.saving.register_keras_serializable`` to save models that use it.
    """

    def __call__(self, x: Any) -> Any:  # pragma: no cover - abstract
        return ops.zeros(())

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Regularizer":
        return cls(**config)

    def _grad(self, x: np.ndarray, scale: np.float32) -> np.ndarray:
        """``scale * d(self(x))/dx`` (automatic differentiation; built-ins: closed form)."""
        return _autodiff_grad(self, x, scale)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class L1(Regularizer):
    """``l1 * sum(|x|)`` (Keras default ``l1=0.01``; ``l1`` is kept in float32, as Keras)."""

    def __init__(self, l1: float = 0.01) -> None:
        self.l1 = float(np.float32(_factor(l1, "l1", "L1")))

    def __call__(self, x: Any) -> Any:
        return ops.multiply(np.float32(self.l1), ops.sum(ops.abs(x)))

    def _grad(self, x, scale):
        f = np.float32(scale) * np.float32(self.l1)
        return np.where(x >= 0, f, -f).astype(x.dtype, copy=False)

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * sum(x**2)`` (Keras default ``l2=0.01``)."""

    def __init__(self, l2: float = 0.01) -> None:
        self.l2 = _factor(l2, "l2", "L2")

    def __call__(self, x: Any) -> Any:
        return ops.multiply(np.float32(self.l2), ops.sum(ops.square(x)))

    def _grad(self, x, scale):
        return (np.float32(scale) * np.float32(self.l2)) * (2 * x)

    def get_config(self) -> dict:
        return {"l2": self.l2}


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x**2)`` (Keras defaults ``l1=0.0, l2=0.0``)."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        self.l1 = _factor(l1, "l1", "L1L2")
        self.l2 = _factor(l2, "l2", "L1L2")

    def __call__(self, x: Any) -> Any:
        out = ops.zeros(())
        if self.l1:
            out = ops.add(out, ops.multiply(np.float32(self.l1), ops.sum(ops.abs(x))))
        if self.l2:
            out = ops.add(out, ops.multiply(np.float32(self.l2), ops.sum(ops.square(x))))
        return out

    def _grad(self, x, scale):
        g = np.zeros_like(x)
        if self.l1:
            f = np.float32(scale) * np.float32(self.l1)
            g = g + np.where(x >= 0, f, -f).astype(x.dtype, copy=False)
        if self.l2:
            g = g + (np.float32(scale) * np.float32(self.l2)) * (2 * x)
        return g

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


# Keras 3's lower-case spellings (``keras.regularizers.l2(1e-3)``) are the classes.
l1 = L1
l2 = L2
l1_l2 = L1L2

_ALIASES = {"l1": L1, "l2": L2, "l1_l2": L1L2, "l1l2": L1L2}
_CLASSES = {"L1": L1, "L2": L2, "L1L2": L1L2}
_NAMES = "'l1', 'l2', 'l1l2' (or 'L1', 'L2', 'L1L2')"


def get(identifier: Any, owner: str = "regularizers.get") -> Any:
    """``None``, a name (``"l1"``, ``"l2"``, ``"l1l2"``, or a class name), a config dict,
    a ``Regularizer`` or a callable ``weight -> scalar``, as a regularizer (a name gives
    the class's defaults, as Keras: ``"l1l2"`` is ``L1L2()``, which is zero).

    Raises:
        ValueError: an unknown name or config.
        TypeError: any other type.
    """
    if identifier is None or isinstance(identifier, Regularizer):
        return identifier
    if isinstance(identifier, str):
        cls = _ALIASES.get(identifier.lower()) or _CLASSES.get(identifier)
        if cls is None:
            raise ValueError(f"{owner}: unknown regularizer {identifier!r}; expected one of "
                             f"{_NAMES}, a Regularizer or a callable")
        return cls()
    if isinstance(identifier, dict):
        return deserialize(identifier, owner=owner)
    if isinstance(identifier, type) and issubclass(identifier, Regularizer):
        return identifier()
    if callable(identifier):
        return identifier
    raise TypeError(f"{owner}: regularizer must be None, a name, a Regularizer or a "
                    f"callable, got {identifier!r}")


def serialize(regularizer: Any, owner: str = "regularizers.serialize") -> dict | None:
    """Keras 3's config of ``regularizer`` (``None`` stays ``None``).

    Raises:
        ValueError: a custom regularizer (class or function) that is not registered with
            ``tinynet.saving.register_keras_serializable``: a file names code, it never
            holds it.
    """
    if regularizer is None:
        return None
    cls = type(regularizer)
    if isinstance(regularizer, Regularizer):
        if _CLASSES.get(cls.__name__) is cls:
            return {"module": "keras.regularizers", "class_name": cls.__name__,
                    "config": regularizer.get_config(), "registered_name": None}
        name = _registered(cls)
        if name is not None:
            return {"module": None, "class_name": cls.__name__,
                    "config": regularizer.get_config(), "registered_name": name}
        what = f"the Regularizer subclass {cls.__name__}"
    else:
        name = _registered(regularizer)
        if name is not None:  # a registered function, as Keras writes one
            return {"module": "builtins", "class_name": "function", "config": name,
                    "registered_name": "function"}
        what = f"the function {getattr(regularizer, '__name__', regularizer)!r}"
    raise ValueError(f"{owner}: cannot serialize {what}: register it with "
                     f"@tinynet.saving.register_keras_serializable() so that the file can "
                     f"name it (tinynet never saves or runs code from a file)")


def _registered(obj: Any) -> str | None:
    """The name ``obj`` is registered under (``register_keras_serializable``), or None."""
    from tinynet.custom_objects import get_registered_name, get_registered_object

    name = get_registered_name(obj)
    return name if get_registered_object(name) is obj else None


def deserialize(config: Any, custom_objects: dict | None = None,
                owner: str = "regularizers.deserialize") -> Any:
    """The regularizer :func:`serialize` described: a built-in class, or a registered
    custom class or function (looked up by name in ``custom_objects``, the active
    ``custom_object_scope`` and the registry).

    Raises:
        ValueError: not such a config, or an unknown class or name.
    """
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"{owner}: a regularizer config must be a dict with a 'class_name', "
                         f"got {config!r:.200}")
    name = config["class_name"]
    registered = config.get("registered_name")
    if name == "function":  # a registered function
        from tinynet.custom_objects import lookup

        return lookup(config.get("config"), f"{owner}: function", custom_objects)
    cls = _CLASSES.get(name) if not registered else None
    if cls is None and (registered or name in (custom_objects or {})):
        from tinynet.custom_objects import lookup

        cls = lookup(registered or name, f"{owner}: registered class", custom_objects)
        if not (isinstance(cls, type) and issubclass(cls, Regularizer)):
            raise ValueError(f"{owner}: {registered or name!r} names {cls!r}, not a "
                             f"Regularizer subclass")
    if cls is None:
        raise ValueError(f"{owner}: unknown regularizer class {name!r}; expected one of "
                         f"{', '.join(_CLASSES)} or a registered Regularizer subclass")
    inner = config.get("config", {})
    if not isinstance(inner, dict):
        raise ValueError(f"{owner}: the config of {name!r} must be a dict, got {inner!r:.200}")
    return cls.from_config(dict(inner))


# -- penalties and their gradients (the training loop and the layers use these) -------------
def _autodiff_grad(fn: Callable, x: np.ndarray, scale: Any) -> np.ndarray:
    from tinynet.ops import autodiff
    from tinynet.tensor import Tensor

    graph = autodiff.Graph(owner="regularizer")
    with graph:
        leaf = graph.leaf(x)
        out = fn(leaf)
    if not isinstance(out, Tensor) or out._node is None:
        return np.zeros_like(x)
    autodiff.backprop([out], [np.full(out.shape, scale, dtype=out.data.dtype)])
    g = leaf._node.grad
    return np.zeros_like(x) if g is None else np.asarray(g, dtype=x.dtype)


def penalty(regularizer: Callable, x: np.ndarray) -> float:
    """``regularizer(x)`` as a Python float (summed if it is not a scalar, as Keras's
    ``_aggregate_additional_loss``); nothing is recorded."""
    from tinynet.ops import autodiff

    with autodiff.no_record():
        out = regularizer(x)
    data = getattr(out, "data", out)
    return float(np.sum(np.asarray(data, dtype=np.float32)))


def penalty_grad(regularizer: Callable, x: np.ndarray, scale: Any = 1.0) -> np.ndarray:
    """``scale * d regularizer(x) / dx`` as an array like ``x``."""
    scale = np.float32(scale)
    if isinstance(regularizer, Regularizer):
        return regularizer._grad(x, scale)
    return _autodiff_grad(regularizer, x, scale)


def activity_loss(layer: Any, y: np.ndarray, batch: int) -> None:
    """Called by a layer with an ``activity_regularizer`` at the end of ``forward`` (``y``
    its output, ``batch`` the batch size): the penalty divided by the batch size becomes
    the layer's ``losses`` and joins the training loss."""
    from tinynet.tensor import Tensor

    value = penalty(layer.activity_regularizer, y)
    value = float(np.float32(value) / np.float32(batch)) if batch else 0.0
    layer._call_losses = [Tensor._wrap(np.asarray(value, dtype=np.float32))]
    report_loss(value)


def activity_grad(layer: Any, y: np.ndarray, batch: int, g: np.ndarray) -> np.ndarray:
    """``g`` (the output gradient, shaped like ``y``) plus the gradient of the layer's
    activity penalty (divided by the batch size)."""
    if not batch:
        return g
    scale = np.float32(1.0) / np.float32(batch)
    return g + penalty_grad(layer.activity_regularizer, y, scale).reshape(g.shape)


def check_layer_regularizer(value: Any, arg: str, owner: str) -> Any:
    """A layer argument ``<weight>_regularizer`` as a regularizer (or ``None``)."""
    return get(value, owner=f"{owner}: {arg}")


def config_entry(regularizer: Any, arg: str, owner: str) -> dict | None:
    """A layer's ``get_config`` entry for a regularizer argument."""
    return serialize(regularizer, owner=f"{owner}: {arg}")


# -- the losses layers add during a forward pass ------------------------------------------
_local = threading.local()


class collect_losses:  # noqa: N801 - used as a function, ``with collect_losses() as bag``
    """Collects, in a list, the values of the losses the layers add during the forward
    passes run inside (activity regularizers, ``add_loss``); the training loop adds them
    to the loss. Nested collections each get their own list. (A class, not a generator:
    it runs once per training step.)"""

    __slots__ = ("bag", "_previous")

    def __enter__(self) -> list:
        self._previous = getattr(_local, "bag", None)
        self.bag = _local.bag = []
        return self.bag

    def __exit__(self, *exc: Any) -> None:
        _local.bag = self._previous


def report_loss(value: float) -> None:
    """Adds ``value`` to the active :func:`collect_losses` list (none: nothing happens)."""
    bag = getattr(_local, "bag", None)
    if bag is not None:
        bag.append(value)
