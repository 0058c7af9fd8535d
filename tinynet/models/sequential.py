"""``Sequential``: a linear stack of layers (the container); ``compile``/``fit`` and the
rest of the training surface come from :class:`~tinynet.models.training.Trainer`, the
weights, the layer protocol (a model inside a model) and saving from
:class:`~tinynet.models.base.BaseModel`."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers import mask_flow
from tinynet.layers.hooks import structure_changed, structure_epoch
from tinynet.layers.input import InputLayer, input_array
from tinynet.layers.layer import Layer, normalize_shape
from tinynet.layers.node import SymbolicTensor
from tinynet.layers.registry import register_model, registered_layers
from tinynet.models.base import BaseModel
from tinynet.models.graph import LayerGraph, chain_graph
from tinynet.models.training import fits, targets
from tinynet.tensor import as_array

__all__ = ["Sequential", "layer_class"]


class Sequential(BaseModel):
    """A linear stack of layers (Keras 3 ``keras.Sequential``).

    Args:
        layers: Optional list of layers to ``add`` in order (``tn.Input(shape)`` may come
            first); a model may be one of them.
        name: The model name (shown by ``summary``); default ``sequential``.

    Attributes:
        layers: The layers, in order (the input is not listed, as in Keras).
        optimizer, loss, metrics: Set by :meth:`compile` (objects, not identifiers).
        metrics_names: ``["loss", *metric keys]``; keys are the strings passed to compile.
        shuffle_rng: The ``numpy`` generator ``fit`` shuffles with (created by ``compile``).
        stop_training: Set it to ``True`` (from a callback) to end ``fit``.
        history: The :class:`~tinynet.callbacks.History` of the last ``fit``.

    Shape:
        Input: ``[batch, *input_shape[1:]]``; output: ``[batch, *output_shape[1:]]``.
    """

    takes_custom_objects = True  # from_config passes them on to nested models
    _ahead_by_layer = True

    def __init__(self, layers: list | None = None, *, name: str = "sequential") -> None:
        # the default name is an automatic one: unique within a model it is nested in
        self._init_model(None if name == "sequential" else name)
        self._layers: list[Layer] = []
        self._input: InputLayer | None = None
        self._input_shape: tuple | None = None
        self._output_shapes: list[tuple] = []
        if layers is not None:
            if not isinstance(layers, (list, tuple)):
                raise TypeError(f"Sequential: layers must be a list of layers, got "
                                f"{type(layers).__name__}")
            for layer in layers:
                self.add(layer)

    # -- structure ---------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    def layer_graph(self) -> LayerGraph:
        """The model as a graph of layer calls: a chain, each layer taking the previous
        one's output (what the summary and the exporter walk)."""
        name = self._input.name if self._input is not None else "input_layer"
        dtype = getattr(self._input, "dtype", None) or "float32"
        built = self.built and all(layer.built for layer in self._layers)
        return chain_graph(list(self._layers), name, self._input_shape, dtype, built)

    def add(self, layer: Layer) -> None:
        """Appends ``layer`` (``tn.Input(shape)`` first declares the input shape; a model
        may be added like a layer).

        The layer gets a name unique in the model (``dense``, ``dense_1``, ... for
        automatic names) and, when the input shape is known, is built at once.

        Raises:
            TypeError: ``layer`` is not a tinynet ``Layer`` (or a ``tn.Input`` tensor).
            ValueError: duplicate name, misplaced ``Input``, or the layer cannot take the
                previous layer's output (the message names both layers and the shape).
        """
        if isinstance(layer, SymbolicTensor):
            if not isinstance(layer.layer, InputLayer):
                raise TypeError(f"Sequential.add: a symbolic tensor may only be added as the "
                                f"model's input (from tn.Input), got the output of "
                                f"{layer.layer.name!r}")
            layer = layer.layer
        if isinstance(layer, InputLayer):
            if self._layers or self._input is not None or self._input_shape is not None:
                raise ValueError(f"Sequential: an Input must be the first element and appear "
                                 f"once; got {layer!r} after the input shape was set")
            self._input = layer
            self._input_shape = tuple(layer.input_shape_arg)
            self.built = True
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: expected a tinynet Layer, got "
                            f"{type(layer).__name__}: {layer!r}")
        if layer is self:
            raise ValueError(f"Sequential.add: model {self.name!r} cannot contain itself")
        if layer.multiple_inputs:
            raise ValueError(f"Sequential.add: layer {layer.name!r} ({type(layer).__name__}) "
                             f"takes several inputs; a Sequential model passes one tensor "
                             f"from layer to layer (use tn.Model for such graphs)")
        index = self._index()
        entry_epoch = index["epoch"]
        if id(layer) in index["ids"]:
            raise ValueError(f"Sequential.add: layer {layer.name!r} is already in the model")
        taken = index["names"]
        if getattr(layer, "_auto_name", False):
            base = layer.default_name()
            k = index["suffix"].get(base, 0)  # no smaller suffix is free (names only grow)
            name = base if k == 0 else f"{base}_{k}"
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            index["suffix"][base] = k
            layer.name = name
        elif layer.name in taken:
            raise ValueError(f"Sequential.add: all layers must have unique names; "
                             f"{layer.name!r} is already the name of a layer in this model")
        inside = ([(f"{layer.name}/{path}", inner) for path, inner in layer.named_layers()]
                  if isinstance(layer, BaseModel) else [(layer.name, layer)])
        self._check_new_places(index["places"], inside)
        previous = self._input_shape
        declared = layer.input_shape_arg
        if declared is None and isinstance(layer, BaseModel):  # a model knows its input
            declared = layer.built_input_shape
        if not self._layers and previous is None and declared is not None:
            self._input_shape = tuple(declared)
        self._layers.append(layer)
        if self._input_shape is not None:
            try:
                self._build_from(len(self._output_shapes))
            except ValueError:
                self._layers.pop()
                self._input_shape = previous
                raise
        layer._in_model = True
        structure_changed()  # the models holding this one see it change
        if structure_epoch() == entry_epoch + 1:  # nothing else changed meanwhile
            index["epoch"] = structure_epoch()
            index["names"].add(layer.name)
            index["ids"].add(id(layer))
            for path, inner in inside:
                index["places"].setdefault(id(inner), []).append(path)
        else:
            self.__dict__.pop("_layer_index", None)

    def _index(self) -> dict:
        """The layers indexed, cached while no model changes (``structure_epoch``):
        ``names`` and ``ids`` of the layers, ``places`` (``{id: [path, ...]}`` of every
        layer inside, those of nested models included) and ``suffix`` (per automatic base
        name, the smallest suffix that may be free), so ``add`` costs O(1), not O(n)."""
        index = self.__dict__.get("_layer_index")
        if index is None or index["epoch"] != structure_epoch():
            places: dict[int, list[str]] = {}
            for path, inner in self.named_layers():
                places.setdefault(id(inner), []).append(path)
            for paths in places.values():  # a nested model changed since: as before
                if len(paths) > 1:
                    raise _two_places(paths)
            index = {"epoch": structure_epoch(), "names": {l.name for l in self._layers},
                     "ids": {id(l) for l in self._layers}, "places": places, "suffix": {}}
            self._layer_index = index
        return index

    def _check_new_places(self, places: dict[int, list[str]], inside: list) -> None:
        """:meth:`_check_one_place` for the layers ``inside`` a layer being added (the
        model's own ``places`` indexed): the same error, without walking the model."""
        new: dict[int, list[str]] = {}
        for path, inner in inside:
            new.setdefault(id(inner), []).append(path)
        for key, paths in new.items():
            if key in places or len(paths) > 1:
                raise _two_places(places.get(key, []) + paths)

    def pop(self) -> Layer:
        """Removes and returns the last layer.

        Raises:
            IndexError: the model has no layers.
        """
        if not self._layers:
            raise IndexError(f"Sequential.pop: model {self.name!r} has no layers")
        layer = self._layers.pop()
        structure_changed()
        del self._output_shapes[len(self._layers):]
        return layer

    def build(self, input_shape: tuple | None = None) -> None:
        """Builds every layer in order for ``input_shape`` (batch axis included, e.g.
        ``(None, 8, 8, 1)``), chaining the output shapes.

        Raises:
            ValueError: no input shape is known, it conflicts with the declared one, or a
                layer cannot take the previous output (both layers and shapes named).
        """
        if input_shape is None:
            if self._input_shape is None:
                raise ValueError(f"Sequential.build: model {self.name!r} has no input shape; "
                                 f"pass input_shape, e.g. build((None, 8))")
            input_shape = self._input_shape
        shape = normalize_shape(input_shape, "Sequential.build: input_shape")
        if len(shape) < 2:
            raise ValueError(f"Sequential.build: input_shape must include the batch axis and "
                             f"at least one feature axis, e.g. (None, 8), got {shape}")
        shape = (None, *shape[1:])
        if self._input_shape is not None and self._input_shape[1:] != shape[1:]:
            raise ValueError(f"Sequential.build: model {self.name!r} expects input shape "
                             f"{self._input_shape}, got {shape}")
        previous, self._input_shape = self._input_shape, shape
        try:
            self._build_from(0)
        except ValueError:
            self._input_shape = previous
            raise

    def _build_from(self, start: int) -> None:
        shape = self._input_shape if start == 0 else self._output_shapes[start - 1]
        del self._output_shapes[start:]
        for i in range(start, len(self._layers)):
            layer = self._layers[i]
            layer._input_dtypes = [self._entry_dtypes()[0] if i == 0 else "float32"]
            try:
                layer.build_for(shape)
                out = layer.compute_output_shape(shape)
                if isinstance(out, list):
                    raise ValueError(f"it has {len(out)} outputs; a Sequential model passes "
                                     f"one tensor from layer to layer")
                out = tuple(out)
            except ValueError as exc:
                if i == 0:
                    source = "the model input"
                else:
                    prev = self._layers[i - 1]
                    source = f"the output of {prev.name!r} ({type(prev).__name__})"
                raise ValueError(f"Layer {layer.name!r} ({type(layer).__name__}) cannot take "
                                 f"{source} with shape {shape}: {exc}") from exc
            self._output_shapes.append(out)
            shape = out
        self.built = True

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        """The output shape for ``input_shape`` (batch axis included); builds the model
        for it when it has no input shape yet."""
        if self._input_shape is None:
            self.build(input_shape)
        elif tuple(input_shape[1:]) != tuple(self._input_shape[1:]):
            raise ValueError(f"model {self.name!r} expects input shape {self._input_shape}, "
                             f"got {tuple(input_shape)}")
        return self.output_shape

    @property
    def built_input_shape(self) -> tuple | None:
        return self._input_shape

    @built_input_shape.setter
    def built_input_shape(self, value: Any) -> None:
        pass  # the input shape is the model's own (build sets it)

    @property
    def input_shape(self) -> tuple:
        """The input shape with the batch axis as ``None``, e.g. ``(None, 8, 8, 1)``."""
        if self._input_shape is None:
            raise AttributeError(f"Sequential model {self.name!r} has no defined input shape yet.")
        return self._input_shape

    @property
    def output_shape(self) -> tuple:
        """The output shape with the batch axis as ``None``, e.g. ``(None, 10)``."""
        if self._input_shape is None or len(self._output_shapes) != len(self._layers):
            raise AttributeError(f"Sequential model {self.name!r} is not built yet, so it has "
                                 f"no output shape.")
        return self._output_shapes[-1] if self._output_shapes else self._input_shape

    @property
    def inputs(self) -> list:
        """``[the symbolic input]`` of the model's graph (Keras builds a Sequential with a
        known input shape as a functional graph; :meth:`_symbolic_graph`)."""
        return [self._symbolic_graph()[0]]

    @property
    def outputs(self) -> list:
        """``[the symbolic output]`` of the model's graph."""
        return [self._symbolic_graph()[1]]

    def _symbolic_graph(self) -> tuple:
        """The layers called in turn on a symbolic input (the ``Input`` given, else one of
        the input shape), so each layer has its ``input`` and ``output`` as in Keras;
        made once per list of layers.

        Raises:
            AttributeError: the model has no input shape yet.
        """
        if self._input_shape is None:
            raise AttributeError(f"Sequential model {self.name!r} has no defined input shape "
                                 f"yet, so no inputs or outputs (start it with tn.Input or "
                                 f"call build)")
        key = (tuple(map(id, self._layers)), self._input_shape)
        cached = self.__dict__.get("_graph_cache")
        if cached is not None and cached[0] == key:
            return cached[1]
        if not self.built or len(self._output_shapes) != len(self._layers):
            self._build_from(0)
        x = (self._input if self._input is not None
             else InputLayer(batch_shape=self._input_shape)).output
        start = x
        for layer in self._layers:
            x = layer._call_symbolic(x)
        self._graph_cache = (key, (start, x))
        return start, x

    # -- config ----------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """``{"name", "trainable", "layers": [{"class_name", "config"}, ...],
        "build_input_shape"}`` (JSON-able; the ``InputLayer`` comes first in ``layers``
        when the model has one; a nested model appears with its own config)."""
        layers = [self._input, *self._layers] if self._input is not None else self._layers
        return {
            "name": self.name,
            "trainable": self.trainable,
            "layers": [self._layer_entry(l) for l in layers],
            "build_input_shape": list(self._input_shape) if self._input_shape is not None else None,
        }

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Sequential":
        """Rebuilds a model from :meth:`get_config`'s dict (fresh weights).

        Layer classes are looked up in ``custom_objects`` first, then in the registry
        (``tinynet.layers`` and the model classes).
        """
        model = cls(name=config.get("name"))
        for entry in config.get("layers", []):
            model.add(build_layer(entry, custom_objects, "Sequential.from_config"))
        shape = config.get("build_input_shape")
        if shape is not None and model._input_shape is None:
            model.build(tuple(shape))
        if config.get("trainable") is False:
            model.trainable = False
        return model

    # -- the graph (Trainer and BaseModel run it) --------------------------------------------
    def _input_arrays(self, x: Any, owner: str) -> list[np.ndarray]:
        """``[x]`` as a C-contiguous array of the input's dtype (float32 unless an ``Input``
        says otherwise), checked against (or defining) the input shape."""
        dtype = self._entry_dtypes()[0]
        x = input_array(x, dtype, f"{owner}: x")
        if x.ndim < (1 if dtype == "string" else 2) or x.shape[0] == 0:  # text: one per row
            raise ValueError(f"{owner}: x must be a non-empty batch with at least one feature "
                             f"axis, got x with shape {x.shape}")
        if self._input_shape is None:
            self.build((None, *x.shape[1:]))
        elif not self.built or len(self._output_shapes) != len(self._layers):
            self._build_from(0)
        want = self._input_shape
        if not fits(want, x):
            raise ValueError(f"{owner}: model {self.name!r} expects input shape {want} "
                             f"(None = any), got x with shape {x.shape}")
        return [x]

    def _entry_dtypes(self) -> list[str]:
        return [self._input.dtype if self._input is not None else "float32"]

    def _target_arrays(self, y: Any, owner: str) -> list[np.ndarray]:
        return [targets(y, owner)]

    @property
    def output_names(self) -> list[str]:
        """The name of the output (the last layer's, as Keras)."""
        return [self._layers[-1].name if self._layers else self.name]

    def _run_forward(self, xs: list[np.ndarray], training: bool) -> list[np.ndarray]:
        out, mask = xs[0], self._take_input_masks(1)[0]
        for layer in self._layers:
            out, mask = mask_flow.run(layer, out, mask, training)
        self._output_masks = [mask]
        return [as_array(out)]

    def _run_backward(self, grads: list, input_grads: bool) -> list[np.ndarray] | None:
        grad = grads[0]
        for i in range(len(self._layers) - 1, -1, -1):
            layer = self._layers[i]
            if i == 0 and not input_grads:  # nothing consumes dL/dx of the first layer
                layer.backward_params(grad)
                return None
            grad = layer.backward(grad)
        return [as_array(grad)] if input_grads else None

    def __repr__(self) -> str:
        return f"<Sequential name={self.name!r} layers={len(self._layers)} built={self.built}>"


def _two_places(paths: list[str]) -> ValueError:
    """``BaseModel._check_one_place``'s error, for ``Sequential.add``."""
    return ValueError(
        f"Sequential.add: layer {paths[0].rsplit('/', 1)[-1]!r} belongs to the model at "
        f"{len(paths)} places {paths}; a layer may be called several times in one graph "
        f"(shared weights), but not belong to two of the models inside another (or to one "
        f"and the outer graph)")


register_model(Sequential)  # so that tinynet.saving rebuilds it without importing this module


def layer_class(class_name: str, custom_objects: dict | None, owner: str) -> type:
    """The class a config names: ``custom_objects`` first, then the registry."""
    if custom_objects and class_name in custom_objects:
        return custom_objects[class_name]
    known = registered_layers()
    if class_name in known:
        return known[class_name]
    raise ValueError(f"{owner}: unknown layer class {class_name!r}; pass it in "
                     f"custom_objects or register it")


def build_layer(entry: dict, custom_objects: dict | None, owner: str) -> Layer:
    """The layer (or model) a ``{"class_name", "config"}`` entry describes; a model gets
    the same ``custom_objects`` for its own layers."""
    cls = layer_class(entry["class_name"], custom_objects, owner)
    config = dict(entry.get("config", {}))
    if getattr(cls, "takes_custom_objects", False):
        return cls.from_config(config, custom_objects=custom_objects)
    return cls.from_config(config)
