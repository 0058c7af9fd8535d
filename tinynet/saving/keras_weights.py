"""Keras 3's HDF5 weights layout for a tinynet model, and its optimizer's variables.

Keras stores each layer's variables (its own weights in ``layer.weights`` order) as
datasets ``layers/<name>/vars/0, 1, ...``, where ``<name>`` is the snake-cased class
name, numbered within its model (``dense``, ``dense_1``, ...; a Sequential's input layer
is not listed, a functional model's is); a nested model's layers sit under
``layers/<its name>/layers/...``. A layer built from other Keras objects keeps their
variables under the attribute that holds them (Keras's saving walks attributes): an
LSTM's under ``cell``, a Bidirectional's under ``forward_layer`` / ``backward_layer``, a
TimeDistributed's under ``layer``; :data:`WEIGHT_PATHS` says so per class. The
optimizer's variables are ``optimizer/vars/<i>``: ``iterations``, the learning rate
(unless it is a schedule), then its slots per trainable weight, in the groups Keras's
optimizer creates them (Adam: momentum and velocity per weight, then the amsgrad
``velocity_hat`` of each weight).
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


#: A node of Keras's weights tree: ``(h5 path, vars name, parameters)``; the parameters
#: are the datasets ``<path>/vars/0, 1, ...`` (the ``vars`` group's ``name`` attribute is
#: the object's name, which Keras only records).
Node = tuple[str, str, list]


def _join(path: str, child: str) -> str:
    return f"{path}/{child}" if path and child else path or child


def _under(attr: str, layer: Any) -> list[Node]:
    """``layer``'s nodes under the attribute ``attr`` of the layer that holds it."""
    return [(_join(attr, path), name, params) for path, name, params in layer_nodes(layer)]


def _recurrent(layer: Any) -> list[Node]:
    # Keras's SimpleRNN, LSTM and GRU keep their weights in a cell (LSTMCell, ...)
    cell = f"{snake_case(keras_class_name(layer))}_cell"
    return [("", layer.name, []), ("cell", cell, layer.parameters())]


def _bidirectional(layer: Any) -> list[Node]:
    return ([("", layer.name, [])] + _under("forward_layer", layer.forward_layer)
            + _under("backward_layer", layer.backward_layer))


def _time_distributed(layer: Any) -> list[Node]:
    return [("", layer.name, [])] + _under("layer", layer.layer)


def _text_vectorization(layer: Any) -> list[Node]:
    # Keras's TextVectorization holds a StringLookup as its attribute ``_lookup_layer``
    return [("", layer.name, []), ("_lookup_layer", "string_lookup", [])]


#: MultiHeadAttention's projections: Keras's attribute and tinynet's sub-layer, in the
#: order of Keras's trainable weights.
_MHA_PROJECTIONS = (("query_dense", "query"), ("key_dense", "key"),
                    ("value_dense", "value"), ("output_dense", "attention_output"))


def _multi_head_attention(layer: Any) -> list[Node]:
    # Keras's MultiHeadAttention holds four EinsumDense layers and a weightless dropout
    # and softmax; an unbuilt layer has no projections yet
    subs = layer.__dict__.get("_sublayers") or {}
    nodes: list[Node] = [("", layer.name, []), ("_dropout_layer", "dropout", []),
                         ("_softmax", "softmax", [])]
    return nodes + [(attr, sub, subs[sub][0].parameters()) for attr, sub in _MHA_PROJECTIONS
                    if sub in subs]


#: Per Keras class, where a layer's variables sit in Keras's weights tree when they are not
#: simply the layer's own ``vars``: ``layer -> [(relative path, vars name, parameters),
#: ...]``, path ``""`` being the layer itself and any other the attribute path of the
#: Keras object that holds them (Keras's saving walks an object's attributes). A layer
#: holding layers lists each with ``_under(attribute, sub_layer)``, which recurses.
WEIGHT_PATHS: dict[str, Callable[[Any], list[Node]]] = {
    "SimpleRNN": _recurrent,
    "LSTM": _recurrent,
    "GRU": _recurrent,
    "Bidirectional": _bidirectional,
    "TimeDistributed": _time_distributed,
    "TextVectorization": _text_vectorization,
    "MultiHeadAttention": _multi_head_attention,
}


def layer_nodes(layer: Any) -> list[Node]:
    """The weights-tree nodes of one layer (not a model), relative to its own path."""
    hook = WEIGHT_PATHS.get(keras_class_name(layer))
    if hook is not None:
        return hook(layer)
    return [("", layer.name, layer.parameters())]


def weight_nodes(model: Any) -> list[Node]:
    """Every node of ``model``'s weights tree in Keras's paths (a model's own node holds
    nothing: its layers hold the weights)."""
    out: list[Node] = []
    for path, layer in layer_groups(model):
        if isinstance(layer, registry.model_classes()):
            out.append((path, layer.name, []))
        else:
            out += [(_join(path, sub), name, params) for sub, name, params in layer_nodes(layer)]
    return out


def node_arrays(model: Any) -> list[tuple[str, str, list[np.ndarray]]]:
    """``(path, name, arrays)`` of every node, as written."""
    return [(path, name, [np.asarray(p.value, dtype=np.float32) for p in params])
            for path, name, params in weight_nodes(model)]


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


def read_layers(model: Any, reader: Any) -> list[tuple[Any, np.ndarray]]:
    """``(parameter, array)`` for every weight of ``model``, read from the file and checked
    (count and shapes) before any is set."""
    out = []
    for path, name, params in weight_nodes(model):
        found = reader.count(path)
        if found != len(params):
            raise ValueError(f"{reader.where}: {name!r} ({path or 'the model'}) has {found} "
                             f"variables in the file, expected {len(params)}")
        out += [(p, reader.read(path, i, p.value.shape)) for i, p in enumerate(params)]
    return out
