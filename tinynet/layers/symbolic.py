"""How a layer is called on symbolic tensors (``tn.Input`` and the outputs of layers called
on them): it builds for their shapes, infers its output shapes and records a
:class:`~tinynet.layers.node.Node`; and Keras's ``layer.input`` / ``layer.output``, the
tensors of its first such call. :class:`~tinynet.layers.layer.Layer` inherits it."""

from __future__ import annotations

from typing import Any

from tinynet.layers.call_args import split_call
from tinynet.layers.node import Node, SymbolicTensor, symbolic_list

__all__ = ["SymbolicCalls"]


def _shapes(shape: Any) -> list[tuple]:
    """One shape or several (a list, or a tuple of tuples) as a list of shapes."""
    if isinstance(shape, list) or (isinstance(shape, tuple) and shape
                                   and isinstance(shape[0], (tuple, list))):
        return [tuple(s) for s in shape]
    return [tuple(shape)]


class SymbolicCalls:
    """The symbolic side of :class:`~tinynet.layers.layer.Layer` (see the module doc)."""

    @property
    def input(self) -> Any:
        """The symbolic input(s) of the layer's first call on symbolic tensors (Keras):
        one tensor, or a list for a layer called on a list.

        Raises:
            AttributeError: the layer was never called on symbolic tensors.
        """
        node = self._first_node("input")
        first = node.inputs[:node.first_count]
        return list(first) if node.listed else first[0]

    @property
    def output(self) -> Any:
        """The symbolic output(s) of the layer's first call on symbolic tensors (Keras).

        Raises:
            AttributeError: the layer was never called on symbolic tensors.
        """
        node = self._first_node("output")
        return node.outputs[0] if len(node.outputs) == 1 else list(node.outputs)

    def _first_node(self, what: str) -> Node:
        if not self.inbound_nodes:
            raise AttributeError(f"Layer {self.name!r} has never been called on symbolic "
                                 f"tensors and thus has no defined {what} (call it on "
                                 f"tn.Input(...) or put it in a model with a known input "
                                 f"shape)")
        return self.inbound_nodes[0]

    def build_for(self, input_shape: Any) -> None:
        """Builds the layer for ``input_shape`` (a list of shapes for several inputs)
        unless built; a built layer must have been built for the same shape.

        Raises:
            ValueError: the layer was built for another shape (the message names both).
        """
        if not self.built:
            self.build(input_shape)
            if getattr(self, "built_input_shape", None) is None:
                self.built_input_shape = (list(map(tuple, input_shape))
                                          if isinstance(input_shape, list) else tuple(input_shape))
            self.built = True
            return
        built = self.built_input_shape
        if built is None:
            return
        a, b = _shapes(built), _shapes(input_shape)
        if len(a) != len(b) or any(tuple(x[1:]) != tuple(y[1:]) for x, y in zip(a, b)):
            raise ValueError(f"it was already built for input shape {built}")

    def _call_symbolic(self, x: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        """The symbolic output(s) of calling the layer on ``x``; ``args`` and ``kwargs``
        (a ``call()`` layer's further arguments) are kept in the node, and the symbolic
        tensors among them become its further inputs (:mod:`tinynet.layers.call_args`)."""
        owner = f"{type(self).__name__} {self.name!r}"
        template, extra = split_call(args, kwargs or {})
        listed = isinstance(x, (list, tuple))
        tensors = symbolic_list(x, owner)
        if self.multiple_inputs and not listed:
            raise ValueError(f"{owner}: expects a list of input tensors, got one tensor "
                             f"{tensors[0].name!r}")
        if listed and not self.multiple_inputs and not type(self)._has_call:
            if len(tensors) != 1:
                raise ValueError(f"{owner}: takes one input tensor, got a list of "
                                 f"{len(tensors)}")
            listed = False
        shape = [t.shape for t in tensors] if listed else tensors[0].shape
        self._input_dtypes = [t.dtype for t in tensors]  # a call() layer's placeholders
        try:
            self.build_for(shape)
            out = (self.compute_output_shape(shape) if template is None
                   else self._call_output_shape(shape, template, extra))
        except ValueError as exc:
            names = ", ".join(f"{t.name!r} {t.shape}" for t in tensors)
            raise ValueError(f"{owner} cannot take {names}: {exc}") from exc
        node = Node(self, [*tensors, *extra], listed, template)
        self.inbound_nodes.append(node)
        index = len(self.inbound_nodes) - 1
        shapes = out if isinstance(out, list) else [out]
        node.outputs = [SymbolicTensor(s, "float32", self, index, k) for k, s in enumerate(shapes)]
        return node.outputs if isinstance(out, list) else node.outputs[0]

    def _call_output_shape(self, shape: Any, template: Any, extra: list) -> Any:
        """The output shape of a call with further arguments: the layer's own
        ``compute_output_shape`` when it defines one (given the first input's shape, as
        Keras gives it), else a trial call with every argument in place."""
        from tinynet.layers import traced

        if type(self).compute_output_shape.__qualname__ != "Layer.compute_output_shape":
            return self.compute_output_shape(shape)
        return traced.placeholder_output_shape(self, shape, template, extra)
