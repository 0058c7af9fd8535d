"""``OnnxBuilder``: the nodes and initializers of one ONNX graph, made with the ``onnx``
package's helper API (``onnx.helper.make_node``, ``onnx.numpy_helper.from_array``).

The converters (:mod:`tinynet.export.convert_basic` and its siblings) call it; it names
every value uniquely (``<layer path>/<hint>``), caches a layer's weights so a layer called
twice (shared weights) stores them once, and hides the operator-set differences the
converters would otherwise repeat (reduction axes became an input in opset 18).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, Sequence

import numpy as np

__all__ = ["OnnxBuilder", "channels_first", "channels_last", "unique_name"]


def unique_name(base: str, taken: set[str]) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``taken``, which is
    added to ``taken``."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def channels_first(rank: int) -> list[int]:
    """The permutation ``[batch, ..., channels] -> [batch, channels, ...]``."""
    return [0, rank - 1, *range(1, rank - 1)]


def channels_last(rank: int) -> list[int]:
    """The permutation ``[batch, channels, ...] -> [batch, ..., channels]``."""
    return [0, *range(2, rank), 1]


class OnnxBuilder:
    """Collects one graph's nodes and initializers.

    Args:
        opset: The default domain's operator set version the graph targets.

    Attributes:
        opset: As given.
        nodes: The ``NodeProto`` s in execution order.
        initializers: The ``TensorProto`` s of the constants and weights.
    """

    def __init__(self, opset: int) -> None:
        from onnx import TensorProto, helper, numpy_helper

        self.INT64 = TensorProto.INT64
        self.FLOAT = TensorProto.FLOAT
        self._helper = helper
        self._numpy_helper = numpy_helper
        self.opset = int(opset)
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._taken: set[str] = set()
        self._node_names: set[str] = set()
        self._cached: dict[Any, str] = {}
        self._transposed: dict[str, tuple[str, list[int]]] = {}  # output -> (input, perm)
        self._scope = ""
        #: ``emit_layer(layer, x, shape, path) -> (value, shape)``: one layer or model on the
        #: value ``x`` (set by the exporter; wrappers convert their inner layer with it)
        self.emit_layer: Any = None

    # -- names ------------------------------------------------------------------------------
    def reserve(self, name: str) -> None:
        """Keeps ``name`` (a graph input or output) from being given to another value."""
        self._taken.add(name)

    def fresh(self, hint: str, taken: set[str] | None = None) -> str:
        """A value name not used yet: ``<scope>/<hint>``, with ``_1``, ``_2``, ... when
        taken (node names have their own set, ``taken``)."""
        taken = self._taken if taken is None else taken
        return unique_name(f"{self._scope}/{hint}" if self._scope else hint, taken)

    @property
    def path(self) -> str:
        """The current scope: the path of the layer being converted."""
        return self._scope

    @contextlib.contextmanager
    def scope(self, path: str) -> Iterator[None]:
        """Names made inside start with ``path`` (a layer's path in the model)."""
        previous, self._scope = self._scope, path
        try:
            yield
        finally:
            self._scope = previous

    # -- constants ----------------------------------------------------------------------------
    def const(self, value: Any, hint: str = "const", dtype: Any = np.float32,
              key: Any = None) -> str:
        """An initializer holding ``value`` as ``dtype``; the same ``key`` (for example
        ``(id(layer), "kernel")``) returns the one made first."""
        if key is not None and key in self._cached:
            return self._cached[key]
        name = self.fresh(hint)
        array = np.ascontiguousarray(np.asarray(value, dtype=dtype))
        self.initializers.append(self._numpy_helper.from_array(array, name))
        if key is not None:
            self._cached[key] = name
        return name

    def index(self, value: int, hint: str = "index") -> str:
        """A 0-d int64 initializer (``Gather``'s index that drops the axis)."""
        name = self.fresh(hint)
        self.initializers.append(self._numpy_helper.from_array(np.array(value, np.int64), name))
        return name

    def ints(self, values: Sequence[int], hint: str = "shape") -> str:
        """A 1-D int64 initializer (shapes, axes, pads, slice bounds)."""
        return self.const(np.asarray(list(values), dtype=np.int64).reshape(-1), hint, np.int64)

    # -- nodes ------------------------------------------------------------------------------------
    def op(self, op_type: str, inputs: Sequence[str], hint: str | None = None,
           outputs: int = 1, skip: Sequence[int] = (), **attrs: Any) -> Any:
        """Appends one node; returns its output name (a list when ``outputs > 1``).

        Args:
            op_type: The ONNX operator (default domain).
            inputs: Input value names (``""`` for a skipped optional input).
            hint: The output's name hint (default the operator's name).
            outputs: How many outputs the node has.
            skip: The indices of optional outputs not wanted (named ``""``).
            **attrs: The node's attributes (``None`` values are left out).
        """
        hint = hint or op_type
        names = ["" if i in skip else self.fresh(hint if outputs == 1 else f"{hint}_{i}")
                 for i in range(outputs)]
        kept = {k: v for k, v in attrs.items() if v is not None}
        node_name = self.fresh(op_type, self._node_names)
        self.nodes.append(self._helper.make_node(op_type, list(inputs), names, name=node_name,
                                                 **kept))
        return names[0] if outputs == 1 else names

    def transpose(self, x: str, perm: Sequence[int], hint: str = "transpose") -> str:
        """``x`` with its axes permuted; a transpose of a transpose becomes one (or none:
        a channels-last value between two channels-first operators stays channels-first)."""
        perm = [int(p) for p in perm]
        if x in self._transposed:  # a transpose of a transpose: one, or none
            x, first = self._transposed[x]
            perm = [first[p] for p in perm]
        if perm == list(range(len(perm))):
            return x
        y = self.op("Transpose", [x], hint, perm=perm)
        self._transposed[y] = (x, perm)
        return y

    def prune(self, outputs: Sequence[str]) -> None:
        """Drops the nodes no graph output depends on (a ``Transpose`` whose only use
        :meth:`transpose` folded away, a state nobody returns) and the initializers no
        node left reads."""
        needed = set(outputs)
        kept = []
        for node in reversed(self.nodes):
            if any(out in needed for out in node.output if out):
                kept.append(node)
                needed.update(node.input)
        self.nodes = kept[::-1]
        self.initializers = [t for t in self.initializers if t.name in needed]

    def reduce(self, op_type: str, x: str, axes: Sequence[int], keepdims: bool,
               hint: str | None = None) -> str:
        """``ReduceMean``/``ReduceMax``/``ReduceSum`` over ``axes`` (an attribute before
        opset 18, an input from it)."""
        axes = [int(a) for a in axes]
        if self.opset >= 18 or op_type == "ReduceSum":
            return self.op(op_type, [x, self.ints(axes, "axes")], hint,
                           keepdims=int(keepdims))
        return self.op(op_type, [x], hint, axes=axes, keepdims=int(keepdims))

    def add_bias(self, x: str, bias: np.ndarray | None, key: Any, hint: str = "bias") -> str:
        """``x + bias`` along the last axis (``x`` itself without a bias)."""
        if bias is None:
            return x
        return self.op("Add", [x, self.const(bias, hint, key=key)], "add_bias")
