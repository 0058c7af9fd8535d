"""The graph of a functional model: which nodes run, in which order, and its layers.

:func:`map_graph` follows Keras 3's ``map_graph`` (``keras/src/ops/function.py``): a
depth-first walk back from the outputs orders the nodes; a node's depth is one more than
the deepest node that consumes it; nodes run from the deepest up, and the layers are
listed the same way (ties in the order the walk first met them), so ``model.layers`` and
the summary rows come in Keras's order.
"""

from __future__ import annotations

import collections
from typing import Any

from tinynet.layers.node import Node, SymbolicTensor

__all__ = ["Graph", "map_graph", "reconnect", "pick"]


class Graph:
    """What :func:`map_graph` finds.

    Attributes:
        nodes: Every node that runs (input nodes excluded), in execution order.
        nodes_by_depth: ``{depth: [node, ...]}`` (input nodes included), as Keras's.
        layers: The layers in Keras's order (``InputLayer`` s included).
        node_set: Every node of the graph (input nodes included).
    """

    def __init__(self, nodes: list[Node], nodes_by_depth: dict[int, list[Node]],
                 layers: list[Any]) -> None:
        self.nodes = nodes
        self.nodes_by_depth = nodes_by_depth
        self.layers = layers
        self.node_set = {id(n) for depth in nodes_by_depth.values() for n in depth}


def _walk(inputs: list[SymbolicTensor], outputs: list[SymbolicTensor],
          owner: str) -> tuple[list[Node], dict[int, int]]:
    """Nodes from the inputs to the outputs (depth-first, post-order) and each layer's
    first traversal index (keyed by ``id``)."""
    finished: set[int] = set()
    order: list[Node] = []
    layer_index: dict[int, int] = {}
    input_ids = {id(t) for t in inputs}

    def visit(tensor: SymbolicTensor) -> None:
        node = tensor.node
        if id(node) in finished:
            return
        if not node.is_input and id(tensor) in input_ids:
            finished.add(id(node))
            return
        layer_index.setdefault(id(node.layer), len(layer_index))
        if node.is_input and id(tensor) not in input_ids:
            raise ValueError(f"{owner}: the graph is disconnected: tensor {tensor.name!r} "
                             f"(shape {tensor.shape}) comes from an input that is not among "
                             f"the model's inputs {[t.name for t in inputs]}")
        for parent in node.inputs:
            visit(parent)
        finished.add(id(node))
        order.append(node)

    for tensor in outputs:
        visit(tensor)
    return order, layer_index


def map_graph(inputs: list[SymbolicTensor], outputs: list[SymbolicTensor], owner: str) -> Graph:
    """The nodes and layers between ``inputs`` and ``outputs`` (see the module docstring).

    Raises:
        ValueError: an output depends on a tensor the inputs do not give (a disconnected
            graph), an input no output uses, or two layers share one name.
    """
    order, layer_index = _walk(inputs, outputs, owner)
    in_graph = {id(n) for n in order}
    node_depth: dict[int, int] = {}
    layer_depth: dict[int, int] = {}
    layers_by_id: dict[int, Any] = {}
    nodes_by_id: dict[int, Node] = {}
    for node in reversed(order):
        depth = node_depth.setdefault(id(node), 0)
        depth = max(depth, layer_depth.get(id(node.layer), 0))
        layer_depth[id(node.layer)] = depth
        layers_by_id[id(node.layer)] = node.layer
        node_depth[id(node)] = depth
        nodes_by_id[id(node)] = node
        for parent in node.parents:
            if id(parent) in in_graph:
                node_depth[id(parent)] = max(depth + 1, node_depth.get(id(parent), 0))
                nodes_by_id[id(parent)] = parent
    used = {id(t.layer) for t in inputs if id(t.layer) in layer_depth}
    unused = [t.name for t in inputs if id(t.layer) not in used]
    if unused:
        raise ValueError(f"{owner}: the inputs {unused} are not used by any output; remove "
                         f"them from inputs or connect them to an output")
    nodes_by_depth: dict[int, list[Node]] = collections.defaultdict(list)
    for key, depth in node_depth.items():
        nodes_by_depth[depth].append(nodes_by_id[key])
    layers_at: dict[int, list[Any]] = collections.defaultdict(list)
    for key, depth in layer_depth.items():
        layers_at[depth].append(layers_by_id[key])
    layers = []
    for depth in sorted(layers_at, reverse=True):
        layers += sorted(layers_at[depth], key=lambda layer: layer_index[id(layer)])
    names = [layer.name for layer in layers]
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"{owner}: the name {name!r} is used {names.count(name)} times "
                             f"in the model; every layer needs its own name")
    computable = {id(t) for t in inputs}
    nodes = []
    for depth in sorted(nodes_by_depth, reverse=True):
        for node in nodes_by_depth[depth]:
            if node.is_input:
                computable.update(id(t) for t in node.outputs)
                continue
            for t in node.inputs:
                if id(t) not in computable:
                    raise ValueError(f"{owner}: the graph is disconnected: layer "
                                     f"{node.layer.name!r} needs tensor {t.name!r} (shape "
                                     f"{t.shape}), which the inputs do not give")
            computable.update(id(t) for t in node.outputs)
            nodes.append(node)
    return Graph(nodes, dict(nodes_by_depth), layers)


def reconnect(created: list[tuple[str, Any, list]], tensors: dict[tuple, Any],
              call: Any = None) -> list[int]:
    """Calls each layer on the tensors its config's nodes name, until no node can run:
    ``created`` holds ``(name in the config, layer, inbound nodes)``, ``tensors`` maps
    ``(layer name, node index, tensor index)`` to the symbolic tensors made so far (the
    inputs at first) and receives the outputs. ``call(layer, x)`` calls a layer (default
    ``layer(x)``). Returns how many nodes of each layer ran (fewer than it has: a node
    whose inputs no layer produces)."""
    done = [0] * len(created)
    progress = True
    while progress:
        progress = False
        for i, (name, layer, nodes) in enumerate(created):
            while done[i] < len(nodes):
                node = nodes[done[i]]
                keys = [tuple(r) for r in node["inputs"]]
                if not all(k in tensors for k in keys):
                    break
                args = [tensors[k] for k in keys]
                arg = args if node.get("listed") else args[0]
                out = call(layer, arg) if call is not None else layer(arg)
                for k, t in enumerate(out if isinstance(out, (list, tuple)) else [out]):
                    tensors[(name, done[i], k)] = t
                done[i] += 1
                progress = True
    return done


def pick(tensors: dict[tuple, Any], refs: list, keys: Any) -> Any:
    """The tensors ``refs`` name, shaped as a config's ``input_keys``/``output_keys`` say:
    a dict for dict keys, a list for ``"list"``, else the one tensor."""
    flat = [tensors[tuple(r)] for r in refs]
    if isinstance(keys, list):
        return dict(zip(keys, flat))
    return flat if keys == "list" else flat[0]
