"""Reverse-mode automatic differentiation for :mod:`tinynet.ops`.

While a :class:`Graph` is active (a ``call()`` layer's forward, a function loss), every op
whose inputs include a tracked tensor records a :class:`Node`: its parents and its
vector-Jacobian product. :func:`backprop` replays the nodes in reverse creation order
(a valid topological order, since a node is created after its parents), each node's
incoming gradients summed in a fixed order, so the result is bitwise independent of the
thread count like every other tinynet pass.

Outside a graph nothing is recorded: ops cost their arithmetic only.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from tinynet import tensor as _tensor
from tinynet.tensor import Tensor

__all__ = ["Graph", "Node", "current", "record", "backprop", "leaf", "no_record", "needed"]

_local = threading.local()


class Node:
    """One recorded op: its parents (tracked input tensors or ``None``) and its VJP.

    Attributes:
        seq: Creation number within the graph (reverse order is a topological order).
        parents: One entry per differentiable input: the tracked ``Tensor`` or ``None``.
        vjp: ``vjp(grad) -> sequence`` of one gradient (or ``None``) per parent; ``None``
            for a leaf.
        grad: The gradient summed into this node during :func:`backprop`.
        param: For a parameter's leaf, the :class:`~tinynet.layers.layer.Parameter`.
    """

    __slots__ = ("seq", "parents", "vjp", "grad", "param", "label")

    def __init__(self, seq: int, parents: tuple, vjp: Callable | None, label: str = "",
                 param: Any = None) -> None:
        self.seq = seq
        self.parents = parents
        self.vjp = vjp
        self.grad: np.ndarray | None = None
        self.param = param
        self.label = label


class Graph:
    """One recording: numbers its nodes, keeps a leaf per parameter it meets, and notes
    tracked tensors that user code turned into NumPy (which cuts the record).

    Use as a context manager; graphs nest (the innermost records).
    """

    __slots__ = ("owner", "param_leaves", "sublayer_grads", "escapes", "losses", "nodes",
                 "_prev")

    def __init__(self, owner: str = "") -> None:
        self.owner = owner
        self.param_leaves: dict[int, Tensor] = {}
        self.sublayer_grads: dict[int, list] = {}  # id(param) -> [param, summed grad]
        self.escapes: list[str] = []
        self.losses: list = []  # what add_loss() added during the recording
        self.nodes: list[Node] = []  # every node, in creation order
        self._prev: Graph | None = None

    def next_seq(self) -> int:
        """The number of the next node (nodes are numbered in creation order)."""
        return len(self.nodes)

    def leaf(self, value: Any, label: str = "input") -> Tensor:
        """A tracked leaf tensor holding ``value``'s data (no copy for a Tensor)."""
        data = value.data if isinstance(value, Tensor) else np.asarray(value)
        t = Tensor._wrap(data)
        nodes = self.nodes
        node = t._node = Node(len(nodes), (), None, label)
        nodes.append(node)
        return t

    def param_leaf(self, param: Any) -> Tensor:
        """The leaf tensor of ``param`` in this graph (one per parameter, so every use of
        a weight sums into one gradient)."""
        t = self.param_leaves.get(id(param))
        if t is None:
            t = Tensor._wrap(param.value)
            nodes = self.nodes
            node = t._node = Node(len(nodes), (), None, param.path, param)
            nodes.append(node)
            self.param_leaves[id(param)] = t
        return t

    def add_sublayer_grads(self, params: Sequence[Any]) -> None:
        """Sums the ``.grad`` a built-in layer's backward just wrote into this graph's
        per-parameter totals (a layer called twice in one ``call()`` gets both)."""
        for p in params:
            if p.grad is None:
                continue
            entry = self.sublayer_grads.get(id(p))
            if entry is None:
                self.sublayer_grads[id(p)] = [p, p.grad.copy()]
            else:
                entry[1] = entry[1] + p.grad

    def __enter__(self) -> "Graph":
        self._prev = getattr(_local, "graph", None)
        _local.graph = self
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.graph = self._prev
        self._prev = None


class no_record:
    """Context manager that pauses recording (ops inside record nothing)."""

    def __enter__(self) -> None:
        self._prev = getattr(_local, "graph", None)
        _local.graph = None

    def __exit__(self, *exc: Any) -> None:
        _local.graph = self._prev


def current() -> Graph | None:
    """The active graph, or ``None`` when nothing records."""
    return getattr(_local, "graph", None)


def leaf(value: Any, label: str = "input") -> Tensor:
    """A tracked leaf in the active graph (``value`` as a Tensor when none is active)."""
    graph = current()
    if graph is None:
        return value if isinstance(value, Tensor) else Tensor._wrap(np.asarray(value))
    return graph.leaf(value, label)


def record(data: np.ndarray, inputs: Sequence[Any], vjp: Callable, label: str = "") -> Tensor:
    """Wraps an op's result; records a node when a graph is active, the result is a float
    array and some input is a tracked tensor.

    Args:
        data: The op's result.
        inputs: The op's differentiable inputs as passed to the VJP's order (tracked
            Tensors, untracked values or ``None``).
        vjp: ``vjp(grad) -> tuple`` of one gradient (or ``None``) per input.
        label: The op's name (for error messages).
    """
    out = Tensor._wrap(data)
    graph = getattr(_local, "graph", None)
    if graph is None or data.dtype.kind != "f":
        return out
    parents = []
    tracked = False
    for x in inputs:  # a plain loop: this runs for every op inside a recording
        if isinstance(x, Tensor) and x._node is not None:
            parents.append(x)
            tracked = True
        else:
            parents.append(None)
    if tracked:
        nodes = graph.nodes
        node = out._node = Node(len(nodes), tuple(parents), vjp, label)
        nodes.append(node)
    return out


def _reachable(roots: Sequence[Tensor]) -> list[Node]:
    seen: set[int] = set()
    nodes: list[Node] = []
    stack = [t._node for t in roots if t._node is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(p._node for p in node.parents if p is not None and p._node is not None)
    nodes.sort(key=lambda n: n.seq, reverse=True)
    return nodes


def backprop(outputs: Sequence[Tensor], grads: Sequence[Any], graph: Graph | None = None
             ) -> None:
    """Runs the recorded VJPs from ``outputs`` back to the leaves.

    Each output's node receives its gradient; afterwards every reached leaf's
    ``node.grad`` holds its total gradient (``None`` where no path reached it).
    Interior nodes drop their gradients as they go. Given the ``graph`` that recorded
    the outputs, its nodes are walked in reverse creation order as they are (a node no
    gradient reaches is skipped); otherwise the nodes reachable from ``outputs`` are
    found first.
    """
    nodes = list(reversed(graph.nodes)) if graph is not None else _reachable(outputs)
    for node in nodes:
        node.grad = None
    for t, g in zip(outputs, grads):
        if t._node is None or g is None:
            continue
        g = np.asarray(g, dtype=t.data.dtype)
        t._node.grad = g if t._node.grad is None else t._node.grad + g
    ndarray = np.ndarray
    for node in nodes:
        if node.vjp is None or node.grad is None:
            continue
        gs = node.vjp(node.grad)
        node.grad = None
        for parent, g in zip(node.parents, gs):
            if parent is None or g is None:
                continue
            pn = parent._node
            if pn is None:  # a leaf whose gradient is not wanted (see needed())
                continue
            like = parent.data
            if not (type(g) is ndarray and g.dtype == like.dtype and g.shape == like.shape):
                g = _fit(g, like)
            pn.grad = g if pn.grad is None else pn.grad + g


def needed(t: Any) -> bool:
    """Whether a VJP must compute the gradient for input ``t``: a tracked tensor (an op
    skips a costly gradient nobody wants, e.g. a first layer's input gradient)."""
    return t is not None and t._node is not None


def _fit(g: Any, like: np.ndarray) -> np.ndarray:
    """``g`` as an array of ``like``'s dtype and shape (a VJP may hand back a scalar)."""
    g = np.asarray(g)
    if g.dtype != like.dtype:
        g = g.astype(like.dtype)
    if g.shape != like.shape:
        g = np.broadcast_to(g, like.shape).copy()
    return g


def _note_escape(t: Tensor) -> None:
    graph = current()
    if graph is not None:
        graph.escapes.append(f"a tensor of shape {t.shape}")


_tensor._ESCAPE = _note_escape
