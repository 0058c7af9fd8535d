"""The graph of a functional model: which nodes run, in which order, and its layers; and
:class:`LayerGraph`, the one view of a model as layer calls that the summary and the
exporter walk (a ``Sequential`` is a chain, a functional ``Model`` its mapped graph).

:func:`map_graph` follows Keras 3's ``map_graph`` (``keras/src/ops/function.py``): a
depth-first walk back from the outputs orders the nodes; a node's depth is one more than
the deepest node that consumes it; nodes run from the deepest up, and the layers are
listed the same way (ties in the order the walk first met them), so ``model.layers`` and
the summary rows come in Keras's order.
"""

from __future__ import annotations

import collections
from typing import Any

from tinynet.layers.call_args import template_from_config
from tinynet.layers.node import Node, SymbolicTensor

__all__ = ["Graph", "map_graph", "reconnect", "pick", "Step", "LayerGraph", "chain_graph",
           "functional_graph"]


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


class Step:
    """One call of a layer in a model.

    Attributes:
        layer: The layer called (a nested model is one step).
        inputs: The keys of the values it takes, in order.
        outputs: The keys of the values it gives.
        listed: Whether the layer takes its inputs as a list (``layer([a, b])``).
        node: The functional graph's node of this call (``None`` in a ``Sequential``).
    """

    __slots__ = ("layer", "inputs", "outputs", "listed", "node")

    def __init__(self, layer: Any, inputs: list, outputs: list, listed: bool,
                 node: Node | None = None) -> None:
        self.layer = layer
        self.inputs = inputs
        self.outputs = outputs
        self.listed = listed
        self.node = node


class LayerGraph:
    """A model as a graph of layer calls: what ``model.layer_graph()`` returns.

    Values are named by keys (hashable, opaque); running the steps in order on the
    input values gives every step its inputs and the model its outputs.

    Attributes:
        inputs: The keys of the model's inputs.
        input_names: The inputs' names (the ``Input`` layers' names).
        input_shapes: The inputs' shapes, batch axis ``None`` (a ``Sequential`` not yet
            given an input shape has ``[None]``).
        input_dtypes: The inputs' dtypes (``"float32"``, or an ``Input``'s integer or bool
            dtype).
        steps: The layer calls in execution order.
        outputs: The keys of the model's outputs.
        built: Whether the model and every layer in it are built.
        chain: Whether the graph is a plain chain as Keras's summary decides it (no
            ``Connected to`` column): one node per depth, each of one input, and no
            layer called twice.
        nodes: The ids of the functional nodes inside the model (input nodes included),
            which ``layer.inbound_nodes`` are filtered by; ``None`` for a ``Sequential``.
    """

    __slots__ = ("inputs", "input_names", "input_shapes", "input_dtypes", "steps", "outputs",
                 "built", "chain", "nodes")

    def __init__(self, inputs: list, input_names: list[str], input_shapes: list,
                 input_dtypes: list[str], steps: list[Step], outputs: list, *, built: bool,
                 chain: bool, nodes: set | None = None) -> None:
        self.inputs = inputs
        self.input_names = input_names
        self.input_shapes = input_shapes
        self.input_dtypes = input_dtypes
        self.steps = steps
        self.outputs = outputs
        self.built = built
        self.chain = chain
        self.nodes = nodes


def chain_graph(layers: list[Any], input_name: str, input_shape: tuple | None,
                input_dtype: str, built: bool) -> LayerGraph:
    """A ``Sequential``'s layers as a :class:`LayerGraph`: value ``i`` is the input of
    layer ``i`` (``0`` the model's input), each layer one step."""
    steps = [Step(layer, [i], [i + 1], False) for i, layer in enumerate(layers)]
    return LayerGraph([0], [input_name], [input_shape], [input_dtype], steps, [len(layers)],
                      built=built, chain=True)


def functional_graph(graph: Graph, inputs: list[SymbolicTensor],
                     outputs: list[SymbolicTensor], built: bool) -> LayerGraph:
    """A functional model's mapped ``graph`` as a :class:`LayerGraph`: values keyed by
    the ``id`` of their symbolic tensors, one step per node."""
    steps = [Step(node.layer, [id(t) for t in node.inputs], [id(t) for t in node.outputs],
                  node.listed, node) for node in graph.nodes]
    return LayerGraph([id(t) for t in inputs], [t.name for t in inputs],
                      [tuple(t.shape) for t in inputs],
                      [getattr(t, "dtype", None) or "float32" for t in inputs], steps,
                      [id(t) for t in outputs],
                      built=built, chain=_is_chain(graph), nodes=graph.node_set)


def _is_chain(graph: Graph) -> bool:
    """Keras's test for a summary without ``Connected to``: every depth holds at most one
    node, of at most one input, and no layer runs at two nodes of the model."""
    in_model: list[Node] = []
    for nodes in graph.nodes_by_depth.values():
        if len(nodes) > 1 or (len(nodes) == 1 and len(nodes[0].inputs) > 1):
            return False
        in_model += nodes
    ids = {id(n) for n in in_model}
    for layer in graph.layers:
        if sum(id(n) in ids for n in layer.inbound_nodes) > 1:  # a shared layer
            return False
    return True


def _walk(inputs: list[SymbolicTensor], outputs: list[SymbolicTensor],
          owner: str) -> tuple[list[Node], dict[int, int]]:
    """Nodes from the inputs to the outputs (depth-first, post-order) and each layer's
    first traversal index (keyed by ``id``). Iterative (an explicit stack), so a chain of
    any length is walked without Python's recursion limit; the order is that of the
    recursive walk (each node's parents visited in order before it)."""
    finished: set[int] = set()
    order: list[Node] = []
    layer_index: dict[int, int] = {}
    input_ids = {id(t) for t in inputs}

    def enter(tensor: SymbolicTensor) -> Node | None:
        """What visiting ``tensor`` starts: its node, to walk, or None (nothing to do)."""
        node = tensor.node
        if id(node) in finished:
            return None
        if not node.is_input and id(tensor) in input_ids:
            finished.add(id(node))
            return None
        layer_index.setdefault(id(node.layer), len(layer_index))
        if node.is_input and id(tensor) not in input_ids:
            raise ValueError(f"{owner}: the graph is disconnected: tensor {tensor.name!r} "
                             f"(shape {tensor.shape}) comes from an input that is not among "
                             f"the model's inputs {[t.name for t in inputs]}")
        return node

    for tensor in outputs:
        root = enter(tensor)
        if root is None:
            continue
        stack: list[tuple[Node, int]] = [(root, 0)]  # (node, index of its next parent)
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                parent = enter(node.inputs[i])
                if parent is not None:
                    stack.append((parent, 0))
                continue
            stack.pop()
            finished.add(id(node))
            order.append(node)
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
    counts = collections.Counter(layer.name for layer in layers)
    for layer in layers:
        if counts[layer.name] > 1:
            raise ValueError(f"{owner}: the name {layer.name!r} is used {counts[layer.name]} "
                             f"times in the model; every layer needs its own name")
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
    whose inputs no layer produces).

    The calls come in the order of passes over the layers in config order, each layer
    running the nodes it can (one pass, when the config lists layers before their
    consumers); but a layer waiting for a tensor is only visited again once that tensor
    is made, so the whole costs O(nodes + inputs log layers) in any config order, not a
    pass per node."""
    import heapq

    done = [0] * len(created)
    waiting: dict[tuple, list[int]] = {}  # a missing tensor -> the layers waiting for it
    this_pass = list(range(len(created)))  # ascending: a valid heap
    next_pass: list[int] = []
    queued = set(this_pass)
    while this_pass or next_pass:
        if not this_pass:
            this_pass, next_pass = next_pass, this_pass
        i = heapq.heappop(this_pass)
        queued.discard(i)
        name, layer, nodes = created[i]
        while done[i] < len(nodes):
            node = nodes[done[i]]
            keys = [tuple(r) for r in node["inputs"]]
            missing = next((k for k in keys if k not in tensors), None)
            if missing is not None:
                waiting.setdefault(missing, []).append(i)
                break
            args = [tensors[k] for k in keys]
            more: tuple = ((), {})
            if node.get("call") is not None:  # a call() layer's further arguments
                template = template_from_config(node["call"], owner=f"layer {name!r}")
                more = template.fill(args[len(args) - template.count:])
                args = args[:len(args) - template.count]
            arg = args if node.get("listed") else args[0]
            out = (call(layer, arg, *more[0], **more[1]) if call is not None
                   else layer(arg, *more[0], **more[1]))
            for k, t in enumerate(out if isinstance(out, (list, tuple)) else [out]):
                key = (name, done[i], k)
                tensors[key] = t
                for j in waiting.pop(key, ()):  # later in this pass, or in the next
                    if j not in queued:
                        queued.add(j)
                        heapq.heappush(this_pass if j > i else next_pass, j)
            done[i] += 1
    return done


def pick(tensors: dict[tuple, Any], refs: list, keys: Any) -> Any:
    """The tensors ``refs`` name, shaped as a config's ``input_keys``/``output_keys`` say:
    a dict for dict keys, a list for ``"list"``, else the one tensor."""
    flat = [tensors[tuple(r)] for r in refs]
    if isinstance(keys, list):
        return dict(zip(keys, flat))
    return flat if keys == "list" else flat[0]
