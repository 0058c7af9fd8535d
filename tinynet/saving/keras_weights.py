"""Keras 3's HDF5 weights layout for a tinynet model, and its optimizer's variables.

Keras stores each layer's variables (its own weights in ``layer.weights`` order) as
datasets ``layers/<name>/vars/0, 1, ...``, where ``<name>`` is the snake-cased class
name, numbered within its model (``dense``, ``dense_1``, ...; a Sequential's input layer
is not listed, a functional model's is); a nested model's layers sit under
``layers/<its name>/layers/...``. The optimizer's variables are ``optimizer/vars/<i>``:
``iterations``, the learning rate (unless it is a schedule), then its slots per
trainable weight, in the groups Keras's optimizer creates them (Adam: momentum and
velocity per weight, then the amsgrad ``velocity_hat`` of each weight).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinynet.layers import registry
from tinynet.saving.keras_config import keras_class_name, snake_case

#: Per optimizer class, its slots in Keras's variable order: each tuple is one group of
#: slots Keras creates together (interleaved weight by weight), the groups in order.
SLOT_GROUPS = {
    "Adam": (("momentum", "velocity"), ("velocity_hat",)),
    "AdamW": (("momentum", "velocity"), ("velocity_hat",)),
    "Nadam": (("momentum", "velocity"),),
    "Adamax": (("momentum", "norm"),),
    "SGD": (("momentum",),),
    "RMSprop": (("velocity",), ("momentum",), ("average_gradient",)),
    "Adagrad": (("accumulator",),),
    "Lion": (("momentum",),),
}


def layer_groups(model: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``[(h5 path, layer), ...]`` for ``model`` (path ``""``) and every layer inside it,
    in Keras's naming."""
    from tinynet.layers.input import InputLayer

    out = [(prefix.rstrip("/"), model)]
    functional = keras_class_name(model) == "Functional"
    children = model._layers if functional else [
        layer for layer in model.layers if not isinstance(layer, InputLayer)]
    used: dict[str, int] = {}
    for layer in children:
        name = snake_case(keras_class_name(layer))
        if name in used:
            used[name] += 1
            name = f"{name}_{used[name]}"
        else:
            used[name] = 0
        path = f"{prefix}layers/{name}"
        if isinstance(layer, registry.model_classes()):
            out += layer_groups(layer, path + "/")
        else:
            out.append((path, layer))
    return out


def own_weights(layer: Any) -> list[np.ndarray]:
    """A layer's own weights (a model has none of its own: its layers hold them)."""
    if isinstance(layer, registry.model_classes()):
        return []
    return [np.asarray(w, dtype=np.float32) for w in layer.get_weights()]


def _optimizer_class(optimizer: Any, owner: str) -> str:
    for klass in type(optimizer).__mro__:
        if klass.__name__ in SLOT_GROUPS and klass.__module__.startswith("tinynet."):
            return klass.__name__
    raise ValueError(f"{owner}: the optimizer {type(optimizer).__name__} has no Keras "
                     f"variable layout tinynet knows ({', '.join(SLOT_GROUPS)}); save as "
                     f".safetensors, or compile with one of those")


def optimizer_layout(model: Any, owner: str) -> list[tuple[str, Any, tuple, float]]:
    """Keras's optimizer variables for ``model``: ``(kind, key, shape, initial value)``
    with kind ``"iterations"``, ``"learning_rate"``, ``"slot"`` (key: (parameter, slot
    name)) or ``"scalar"`` (key: the scalar's name)."""
    optimizer = model.optimizer
    groups = SLOT_GROUPS[_optimizer_class(optimizer, owner)]
    specs = dict(optimizer._slot_specs())
    covered = {name for group in groups for name in group}
    if set(specs) - covered:
        raise ValueError(f"{owner}: the optimizer's slots {sorted(set(specs) - covered)} have "
                         f"no place in Keras's layout")
    layout: list[tuple[str, Any, tuple, float]] = [("iterations", None, (), 0.0)]
    if not callable(optimizer._learning_rate):
        layout.append(("learning_rate", None, (), 0.0))
    params = list(model.trainable_parameters())
    for group in groups:
        names = [name for name in group if name in specs]
        for p in params:
            layout += [("slot", (p, name), p.value.shape, specs[name]) for name in names]
    layout += [("scalar", name, (), init) for name, init in optimizer._scalar_specs()]
    return layout


def optimizer_arrays(model: Any, owner: str) -> list[np.ndarray]:
    """The optimizer's state as Keras's ``optimizer/vars`` list (fresh slots for weights
    never updated yet, at their initial values, as Keras's)."""
    optimizer = model.optimizer
    state = optimizer.get_state()
    out = []
    for kind, key, shape, init in optimizer_layout(model, owner):
        if kind == "iterations":
            out.append(np.array(optimizer.iterations, dtype=np.int64))
        elif kind == "learning_rate":
            out.append(np.array(optimizer.learning_rate, dtype=np.float32))
        elif kind == "slot":
            p, name = key
            arr = state.get(f"{p.path}/{name}")
            out.append(np.full(shape, init, np.float32) if arr is None else arr)
        else:
            out.append(np.asarray(state.get(key, init), dtype=np.float32))
    return out


def read_optimizer(model: Any, reader: Any, owner: str) -> Callable[[], None]:
    """Sets the file's ``optimizer/vars`` into a newly loaded ``model``'s optimizer
    (checked first); returns a function that sets iterations and the learning rate. A
    file with only those two (an optimizer Keras never built) leaves fresh slots."""
    optimizer = model.optimizer
    layout = optimizer_layout(model, owner)
    count = reader.count("optimizer")
    head = [entry for entry in layout if entry[0] in ("iterations", "learning_rate")]
    if count == 0:
        return lambda: None
    if count not in (len(layout), len(head)):
        raise ValueError(f"{reader.where}: the file has {count} optimizer variables, but a "
                         f"{type(optimizer).__name__} for this model has {len(layout)} in "
                         f"Keras's layout")
    values = []
    for i, (kind, _, shape, _) in enumerate(layout[:count]):
        values.append(reader.read("optimizer", i, shape, "i" if kind == "iterations" else "f"))
    iterations = int(values[0])
    if iterations < 0:
        raise ValueError(f"{reader.where}: optimizer iterations must be non-negative, got "
                         f"{iterations}")
    state: dict[str, Any] = {"iterations": np.int64(iterations)}
    lr = None
    for (kind, key, _, _), value in zip(layout, values):
        if kind == "learning_rate":
            lr = float(value)
        elif kind == "slot":
            state[f"{key[0].path}/{key[1]}"] = value
        elif kind == "scalar":
            state[key] = value.astype(np.float32)
    if count == len(layout):  # the model is new: setting the slots now harms nothing
        try:
            optimizer.set_state(state, list(model.trainable_parameters()))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{reader.where}: optimizer state does not match the model: "
                             f"{exc}") from None

    def apply() -> None:
        optimizer.iterations = iterations
        # the file's rate wins when it differs from the config's beyond float32 rounding
        # (a callback changed it); else the config's float64 value stays, bit for bit
        if (lr is not None and np.isfinite(lr) and lr >= 0
                and np.float32(optimizer.learning_rate) != np.float32(lr)):
            optimizer.learning_rate = lr

    return apply


def read_layers(model: Any, reader: Any) -> list[tuple[Any, list[np.ndarray]]]:
    """Each layer's weights from the file, checked (count and shapes) before any is set."""
    out = []
    for path, layer in layer_groups(model):
        expected = own_weights(layer)
        found = reader.count(path)
        if found != len(expected):
            raise ValueError(f"{reader.where}: layer {layer.name!r} ({path or 'the model'}) "
                             f"has {found} variables in the file, expected {len(expected)}")
        arrays = [reader.read(path, i, w.shape) for i, w in enumerate(expected)]
        if expected:
            out.append((layer, arrays))
    return out
