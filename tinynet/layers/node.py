"""Symbolic tensors and the nodes that connect them: how a functional model is recorded.

Calling a layer on a :class:`SymbolicTensor` (``tn.Input(...)`` makes the first ones)
computes no values: it builds the layer for the input shape, infers the output shape and
appends a :class:`Node` (this call of this layer, its input tensors, its output tensor)
to the layer's ``inbound_nodes``. A tensor remembers the node that produced it
(``layer``, ``node_index``, ``tensor_index``, as Keras's ``_keras_history``), so
``tn.Model(inputs, outputs)`` walks back from its outputs to find the graph. Calling one
layer on two tensors makes two nodes of one layer: the weights are shared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SymbolicTensor", "Node", "is_symbolic", "symbolic_list"]


class SymbolicTensor:
    """A placeholder for the values a model will compute: shape, dtype and history.

    Attributes:
        shape: The shape with the batch axis as ``None``, e.g. ``(None, 8, 8, 1)``.
        dtype: ``"float32"``.
        name: The tensor's name (the producing layer's name, as Keras's ``KerasTensor``).
        layer, node_index, tensor_index: Which call of which layer produced it.

    Shape:
        ``shape`` (``ndim = len(shape)``).
    """

    __slots__ = ("shape", "dtype", "layer", "node_index", "tensor_index")

    def __init__(self, shape: tuple, dtype: str, layer: Any, node_index: int,
                 tensor_index: int = 0) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self.layer = layer
        self.node_index = node_index
        self.tensor_index = tensor_index

    @property
    def name(self) -> str:
        return self.layer.name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def node(self) -> "Node":
        return self.layer.inbound_nodes[self.node_index]

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise TypeError(f"symbolic tensor {self.name!r} (shape {self.shape}) holds no values: "
                        f"build a tn.Model from it and call the model on data")

    def __bool__(self) -> bool:
        raise TypeError(f"symbolic tensor {self.name!r} has no truth value")

    def __repr__(self) -> str:
        return (f"<SymbolicTensor shape={self.shape}, dtype={self.dtype}, "
                f"name={self.name}[{self.node_index}][{self.tensor_index}]>")


class Node:
    """One call of a layer on symbolic tensors.

    Attributes:
        layer: The layer called.
        inputs: The input tensors, in order (empty for an ``InputLayer``'s node).
        outputs: The output tensors (one per output of the layer).
        listed: Whether the layer was called with a list (merging layers, a model with
            several inputs), so it receives a list when the graph runs.
        call: For a ``call()`` layer called with more arguments than its first input,
            their :class:`~tinynet.layers.call_args.CallTemplate`: the symbolic tensors
            among them are the last ``call.count`` of ``inputs``; else ``None``.
    """

    __slots__ = ("layer", "inputs", "outputs", "listed", "call")

    def __init__(self, layer: Any, inputs: list[SymbolicTensor], listed: bool,
                 call: Any = None) -> None:
        self.layer = layer
        self.inputs = list(inputs)
        self.outputs: list[SymbolicTensor] = []
        self.listed = listed
        self.call = call

    @property
    def first_count(self) -> int:
        """How many of ``inputs`` are the call's first input (the rest: ``call``'s)."""
        return len(self.inputs) - (self.call.count if self.call is not None else 0)

    @property
    def is_input(self) -> bool:
        return not self.inputs

    @property
    def parents(self) -> list["Node"]:
        return [t.node for t in self.inputs]

    def __repr__(self) -> str:
        return f"<Node {self.layer.name} inputs={[t.name for t in self.inputs]}>"


def is_symbolic(x: Any) -> bool:
    """Whether ``x`` is a symbolic tensor, or a non-empty list or tuple of them."""
    if isinstance(x, SymbolicTensor):
        return True
    return (isinstance(x, (list, tuple)) and len(x) > 0
            and any(isinstance(t, SymbolicTensor) for t in x))


def symbolic_list(x: Any, owner: str) -> list[SymbolicTensor]:
    """``x`` (a symbolic tensor or a list of them) as a list, every item checked.

    Raises:
        TypeError: an item is not a symbolic tensor (a plain array among them).
    """
    items = list(x) if isinstance(x, (list, tuple)) else [x]
    for i, t in enumerate(items):
        if not isinstance(t, SymbolicTensor):
            raise TypeError(f"{owner}: expected symbolic tensors (from tn.Input or a layer "
                            f"called on one), got {type(t).__name__} at position {i}")
    return items
