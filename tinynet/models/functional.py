"""``Model``: a functional model, a graph of layers from ``tn.Input`` tensors to outputs
(Keras 3 ``keras.Model(inputs, outputs)``).

The forward pass runs the graph's nodes in Keras's order; the backward runs them in
reverse. A tensor used by several nodes receives the sum of their gradients, added in
that fixed reverse order, and a layer called at several places (shared weights) gets its
state for each call put back before that call's backward and the sum of the calls'
weight gradients, again in a fixed order: a run gives the same bits at any thread count.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers import mask_flow
from tinynet.layers.call_args import NODE_INPUT
from tinynet.layers.input import InputLayer, input_array
from tinynet.layers.traced import unique_names
from tinynet.layers.layer import Layer
from tinynet.layers.node import SymbolicTensor, symbolic_list
from tinynet.layers.registry import register_model
from tinynet.models.base import BaseModel
from tinynet.models.graph import LayerGraph, functional_graph, map_graph, pick, reconnect
from tinynet.models.sequential import build_layer
from tinynet.models.subclassed import install
from tinynet.models.training import fits, targets
from tinynet.tensor import as_array

__all__ = ["Model"]


def _structure(value: Any, what: str, owner: str) -> tuple[list[SymbolicTensor], Any]:
    """The flat tensors of ``value`` (a tensor, a list or a dict) and its structure:
    ``None`` (one tensor), ``"list"`` or the dict's keys."""
    if isinstance(value, dict):
        if not value:
            raise ValueError(f"{owner}: {what} must not be empty")
        keys = list(value)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError(f"{owner}: the keys of {what} must be str, got {keys}")
        return symbolic_list([value[k] for k in keys], f"{owner}: {what}"), keys
    if isinstance(value, (list, tuple)):
        if not value:
            raise ValueError(f"{owner}: {what} must not be empty")
        return symbolic_list(value, f"{owner}: {what}"), "list"
    return symbolic_list(value, f"{owner}: {what}"), None


class Model(BaseModel):
    """A functional model (see the module docstring).

    Args:
        inputs: The ``tn.Input`` tensor, or a list of them, or a dict keyed by name.
        outputs: The output tensor, or a list of them, or a dict keyed by name.
        name: The model name; default ``functional``.

    Attributes:
        inputs, outputs: The flat lists of symbolic tensors.
        layers: Every layer of the graph in Keras's order, ``InputLayer`` s included.
        output_names: The names of the layers producing the outputs.

    Shape:
        Inputs: one array per input, ``[batch, *input.shape[1:]]``; outputs likewise.
    """

    takes_custom_objects = True
    keras_class_name = "Functional"  # what Keras's summary calls a functional model

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "call" in vars(cls) or getattr(cls, "_has_call", False):
            install(cls, Model)

    def __init__(self, inputs: Any = None, outputs: Any = None, name: str | None = None,
                 **kwargs: Any) -> None:
        owner = "Model"
        if inputs is None and outputs is None and type(self)._has_call:
            unknown = [k for k in kwargs if k not in ("trainable", "dtype")]
            if unknown:
                from tinynet.keywords import unexpected_keywords

                raise unexpected_keywords(type(self).__name__, unknown,
                                          ["name", "trainable", "dtype"])
            self._init_subclassed(name, **kwargs)
            return
        if kwargs:
            from tinynet.keywords import unexpected_keywords

            raise unexpected_keywords("Model", list(kwargs), ["inputs", "outputs", "name"])
        if inputs is None or outputs is None:
            raise TypeError("Model: give inputs and outputs (tn.Model(inputs, outputs)), or "
                            "subclass tn.Model and define call()")
        self._init_model(name)
        self.inputs, self._input_keys = _structure(inputs, "inputs", owner)
        self.outputs, self._output_keys = _structure(outputs, "outputs", owner)
        for t in self.inputs:
            if not isinstance(t.layer, InputLayer):
                raise ValueError(f"{owner}: every input must come from tn.Input, got the output "
                                 f"of layer {t.layer.name!r}")
        if len({id(t) for t in self.inputs}) != len(self.inputs):
            raise ValueError(f"{owner}: an input tensor appears twice in inputs")
        if isinstance(self._input_keys, list):
            for key, t in zip(self._input_keys, self.inputs):
                if key != t.name:
                    raise ValueError(f"{owner}: the inputs dict maps {key!r} to the input "
                                     f"named {t.name!r}; use the input's name as its key")
        self._name_layers(self.inputs, self.outputs)
        graph = map_graph(self.inputs, self.outputs, owner)
        self._graph = graph
        self._layers: list[Layer] = graph.layers
        self._states: dict[int, Any] = {}
        self._shapes: dict[int, tuple] = {}
        self.built = True
        self._check_one_place(owner)

    @classmethod
    def default_name(cls) -> str:
        return "functional"

    @staticmethod
    def _name_layers(inputs: list[SymbolicTensor], outputs: list[SymbolicTensor]) -> None:
        """Automatic names made unique within the graph in creation order (``dense``,
        ``dense_1``, ...), as Keras names layers in a fresh process; explicit names stay."""
        seen: dict[int, Layer] = {}
        walked: set[int] = set()  # nodes (a shared layer has several)
        input_ids = {id(i) for i in inputs}
        stack = list(outputs)
        while stack:
            t = stack.pop()
            seen[id(t.layer)] = t.layer
            if id(t.node) not in walked and id(t) not in input_ids:
                walked.add(id(t.node))
                stack += t.node.inputs
        unique_names(seen.values())

    # -- structure ---------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    def layer_graph(self) -> LayerGraph:
        """The model as a graph of layer calls, one step per node in execution order
        (what the summary and the exporter walk)."""
        built = self.built and all(layer.built for layer in self._layers)
        return functional_graph(self._graph, self.inputs, self.outputs, built)

    @property
    def multiple_inputs(self) -> bool:  # type: ignore[override]
        return len(self.inputs) > 1

    def _multiple_outputs(self) -> bool:
        return len(self.outputs) > 1

    @property
    def output_names(self) -> list[str]:
        return [t.layer.name for t in self.outputs]

    @property
    def input_shape(self) -> Any:
        """The input shape (batch axis ``None``), or a list of them for several inputs."""
        shapes = [t.shape for t in self.inputs]
        return shapes if self.multiple_inputs else shapes[0]

    @property
    def output_shape(self) -> Any:
        """The output shape (batch axis ``None``), or a list of them for several outputs."""
        shapes = [t.shape for t in self.outputs]
        return shapes if self._multiple_outputs() else shapes[0]

    @property
    def built_input_shape(self) -> Any:
        return self.input_shape

    @built_input_shape.setter
    def built_input_shape(self, value: Any) -> None:
        pass  # fixed by the inputs

    def build(self, input_shape: Any = None) -> None:
        """A functional model is built by its construction; ``input_shape`` must match."""
        if input_shape is not None:
            self.compute_output_shape(input_shape)

    def compute_output_shape(self, input_shape: Any) -> Any:
        shapes = input_shape if self.multiple_inputs else [input_shape]
        if not isinstance(shapes, list) or len(shapes) != len(self.inputs) or any(
                tuple(s[1:]) != tuple(t.shape[1:]) for s, t in zip(shapes, self.inputs)):
            raise ValueError(f"model {self.name!r} expects input shape {self.input_shape}, "
                             f"got {input_shape}")
        return self.output_shape

    # -- data ----------------------------------------------------------------------------------
    def _input_arrays(self, x: Any, owner: str) -> list[np.ndarray]:
        names = [t.name for t in self.inputs]
        if isinstance(x, dict):
            missing = [n for n in names if n not in x]
            extra = [k for k in x if k not in names]
            if missing or extra:
                raise ValueError(f"{owner}: model {self.name!r} takes inputs {names}; the dict "
                                 f"lacks {missing} and has unknown keys {extra}")
            items = [x[n] for n in names]
        elif isinstance(x, (list, tuple)) and (self.multiple_inputs
                                               or self._input_keys == "list"):
            if len(x) != len(names):
                raise ValueError(f"{owner}: model {self.name!r} takes {len(names)} inputs "
                                 f"{names}, got a list of {len(x)}")
            items = list(x)
        elif self.multiple_inputs:
            raise ValueError(f"{owner}: model {self.name!r} takes {len(names)} inputs {names}; "
                             f"pass a list or a dict of arrays, got {type(x).__name__}")
        else:
            items = [x]
        arrays = []
        for t, item in zip(self.inputs, items):
            arr = input_array(item, t.dtype, f"{owner}: input {t.name!r}")
            if arr.shape[:1] == (0,) or not fits(t.shape, arr):
                raise ValueError(f"{owner}: input {t.name!r} of model {self.name!r} expects "
                                 f"a non-empty batch of shape {t.shape} (None = any), got "
                                 f"shape {arr.shape}")
            arrays.append(arr)
        return arrays

    def _target_arrays(self, y: Any, owner: str) -> list[np.ndarray]:
        names = self.output_names
        if len(names) == 1 and not isinstance(y, dict):
            if isinstance(y, (list, tuple)) and self._output_keys == "list" and len(y) == 1:
                y = y[0]  # outputs given as a list of one: a list of one target too
            return [targets(y, owner)]
        if isinstance(y, dict):
            keys = self._output_keys if isinstance(self._output_keys, list) else names
            missing = [k for k in keys if k not in y]
            if missing:
                raise ValueError(f"{owner}: y lacks targets for the outputs {missing}; the "
                                 f"outputs are {keys}")
            return [targets(y[k], f"{owner}: y[{k!r}]") for k in keys]
        if not isinstance(y, (list, tuple)) or len(y) != len(names):
            raise ValueError(f"{owner}: model {self.name!r} has {len(names)} outputs {names}; "
                             f"pass y as a list or dict with one target per output")
        return [targets(item, f"{owner}: y[{i}]") for i, item in enumerate(y)]

    def _pack_outputs(self, outputs: list[np.ndarray]) -> Any:
        """A dict for dict outputs, else one array for one output (as Keras 3, even when
        it was given as a list of one) or a list."""
        if isinstance(self._output_keys, list):
            return dict(zip(self._output_keys, outputs))
        return outputs if len(outputs) > 1 else outputs[0]

    # -- running the graph ------------------------------------------------------------------
    def _steps(self) -> list[tuple]:
        """The graph's nodes in execution order, each as the tuple the passes read: ``(node,
        layer, input ids, output ids, listed, first_count, call template, shared, fed only
        by model inputs)`` (the graph is fixed at construction, so this is built once)."""
        steps = self.__dict__.get("_step_plan")
        if steps is None:  # ids of this process's objects (a copied model makes its own)
            nodes = self._graph.nodes
            counts: dict[int, int] = {}
            for node in nodes:
                counts[id(node.layer)] = counts.get(id(node.layer), 0) + 1
            inputs = {id(t) for t in self.inputs}
            steps = [(node, node.layer, tuple(id(t) for t in node.inputs),
                      tuple(id(t) for t in node.outputs), node.listed, node.first_count,
                      node.call, counts[id(node.layer)] > 1,
                      all(id(t) in inputs for t in node.inputs))
                     for node in nodes]
            self.__dict__["_step_plan"] = steps
        return steps

    def _run_forward(self, xs: list[np.ndarray], training: bool) -> list[np.ndarray]:
        values = {id(t): x for t, x in zip(self.inputs, xs)}
        masks = {id(t): m for t, m in zip(self.inputs, self._take_input_masks(len(xs)))
                 if m is not None}
        states, shapes = {}, {}
        for node, layer, ins, outs, listed, n, call_node, shared, _ in self._steps():
            args = [values[i] for i in ins]
            mask = [masks.get(i) for i in ins] if masks else [None] * len(ins)
            call = None if call_node is None else (call_node, args[n:])
            out, out_mask = mask_flow.run(layer, args[:n] if listed else args[0],
                                          mask[:n] if listed else mask[0], training, call)
            if len(outs) == 1 and not isinstance(out, list):
                o = values[outs[0]] = as_array(out)
                shapes[outs[0]] = o.shape
                if out_mask is not None:
                    masks[outs[0]] = out_mask
            else:
                outl = out if isinstance(out, list) else [out]
                out_masks = (out_mask if isinstance(out_mask, list)
                             else [out_mask] * len(outl))
                for i, o, m in zip(outs, outl, out_masks):
                    o = values[i] = as_array(o)
                    shapes[i] = o.shape
                    if m is not None:
                        masks[i] = m
            if shared:
                states[id(node)] = layer.forward_state()
        self._states, self._shapes = states, shapes
        self._output_masks = [masks.get(id(t)) for t in self.outputs]
        return [values[id(t)] for t in self.outputs]

    def _run_backward(self, grads: list, input_grads: bool) -> list[np.ndarray] | None:
        acc: dict[int, np.ndarray] = {}
        owned: set[int] = set()  # sums this pass allocated: later terms go in in place

        def add(key: int, g: np.ndarray) -> None:
            prev = acc.get(key)
            if prev is None:
                acc[key] = g  # the first term as it is (it may be another's array)
            elif key in owned and prev.shape == g.shape:
                np.add(prev, g, out=prev)  # the same rounding as prev + g
            else:
                acc[key] = prev + g
                owned.add(key)

        for t, g in zip(self.outputs, grads):
            if g is not None:
                add(id(t), as_array(g))
        shared_grads: dict[int, tuple] = {}
        for node, layer, ins, outs, listed, _, call_node, shared, from_inputs in reversed(
                self._steps()):
            if len(outs) == 1:  # an output no loss reaches passes zeros back
                g = acc.pop(outs[0], None)
                if g is None:
                    g = np.zeros(self._shapes[outs[0]], dtype=np.float32)
            else:
                gs = [acc.pop(i, None) for i in outs]
                g = [np.zeros(self._shapes[i], dtype=np.float32) if d is None else d
                     for i, d in zip(outs, gs)]
            if shared:
                layer.restore_forward_state(self._states[id(node)])
            if not input_grads and not listed and from_inputs:
                layer.backward_params(g)  # nothing consumes dL/dx of a model input
            else:
                dx = layer.backward(g)
                dxs = dx if listed or call_node is not None else [dx]
                for i, d in zip(ins, dxs):
                    add(i, as_array(d))
            if shared:
                for p in layer.parameters():
                    if p.grad is None:
                        continue
                    prev = shared_grads.get(id(p))
                    shared_grads[id(p)] = (p, p.grad.copy() if prev is None
                                           else prev[1] + p.grad)
        for p, g in shared_grads.values():
            p.grad = g
        if not input_grads:
            return None
        batch = next(iter(self._shapes.values()))[0] if self._shapes else 0
        return [acc[id(t)] if id(t) in acc
                else np.zeros((batch, *t.shape[1:]), dtype=np.float32)  # unused by the graph
                for t in self.inputs]

    def forward_state(self) -> Any:
        return ([layer.forward_state() for layer in self._layers], self._states, self._shapes)

    def restore_forward_state(self, state: Any) -> None:
        inner, self._states, self._shapes = state
        for layer, s in zip(self._layers, inner):
            layer.restore_forward_state(s)

    # -- config ---------------------------------------------------------------------------------
    def _node_refs(self) -> dict[int, int]:
        """Each graph node's index among its layer's nodes in this model."""
        refs: dict[int, int] = {}
        for layer in self._layers:
            kept = [n for n in layer.inbound_nodes if id(n) in self._graph.node_set]
            for k, node in enumerate(kept):
                refs[id(node)] = k
        return refs

    def get_config(self) -> dict:
        """``{"name", "trainable", "layers": [{"class_name", "config", "name",
        "inbound_nodes"}], "input_layers", "output_layers"}`` plus the dict keys of the
        inputs and outputs, when given as dicts (JSON-able). A subclassed model whose own
        ``get_config`` calls ``super().get_config()`` gets the subclassed default."""
        if getattr(type(self), "_has_call", False):
            from tinynet.models.subclassed import SubclassedModel

            return SubclassedModel.get_config(self)
        refs = self._node_refs()

        def ref(t: SymbolicTensor) -> list:
            return [t.layer.name, refs[id(t.node)], t.tensor_index]

        layers = []
        for layer in self._layers:
            kept = [n for n in layer.inbound_nodes if id(n) in self._graph.node_set]
            entry = self._layer_entry(layer)
            entry["name"] = layer.name
            entry["inbound_nodes"] = [] if isinstance(layer, InputLayer) else [
                {"inputs": [ref(t) for t in n.inputs], "listed": n.listed,
                 **({} if n.call is None else
                    {"call": n.call.get_config(lambda i: {NODE_INPUT: i})})} for n in kept]
            layers.append(entry)
        return {"name": self.name, "trainable": self.trainable, "layers": layers,
                "input_layers": [ref(t) for t in self.inputs],
                "output_layers": [ref(t) for t in self.outputs],
                "input_keys": self._input_keys, "output_keys": self._output_keys}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Model":
        """Rebuilds a model from :meth:`get_config`'s dict (fresh weights); layer classes
        from ``custom_objects`` first, then the registry.

        Raises:
            ValueError: the config is malformed (a node refers to a missing tensor).
        """
        owner = "Model.from_config"
        created: list[tuple[Layer, list]] = []
        tensors: dict[tuple, SymbolicTensor] = {}
        for entry in config["layers"]:
            layer = build_layer(entry, custom_objects, owner)
            if isinstance(layer, InputLayer):
                tensors[(layer.name, 0, 0)] = layer.output
            created.append((layer, list(entry.get("inbound_nodes", []))))
        done = reconnect([(layer.name, layer, nodes) for layer, nodes in created], tensors)
        for (layer, nodes), n in zip(created, done):
            if n < len(nodes):
                raise ValueError(f"{owner}: layer {layer.name!r} has a node whose inputs "
                                 f"{nodes[n]['inputs']} no other layer produces")

        model = cls(pick(tensors, config["input_layers"], config.get("input_keys")),
                    pick(tensors, config["output_layers"], config.get("output_keys")),
                    name=config.get("name"))
        if config.get("trainable") is False:
            model.trainable = False
        return model

    def __repr__(self) -> str:
        return (f"<Model name={self.name!r} inputs={[t.name for t in self.inputs]} "
                f"outputs={self.output_names} layers={len(self._layers)}>")


register_model(Model)  # so that tinynet.saving rebuilds it without importing this module
