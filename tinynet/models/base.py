"""``BaseModel``: what ``Sequential`` and the functional ``Model`` share.

A model is a :class:`~tinynet.layers.Layer` (so it can sit inside another model, as in
Keras) and a :class:`~tinynet.models.training.Trainer` (``compile``/``fit``/...). The
container classes provide the graph: ``_input_arrays``, ``_target_arrays``,
``_run_forward`` and ``_run_backward`` over lists of arrays (one per model input or
output); this class turns them into the layer protocol and the weight surface.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from tinynet import saving
from tinynet.callbacks.history import History
from tinynet.keywords import checked_method
from tinynet.layers.input import input_array
from tinynet.layers.layer import Layer, Parameter, check_bool
from tinynet.layers.node import is_symbolic
from tinynet.layers.registry import registered_name_or_class
from tinynet.models.training import Trainer, locked
from tinynet.scalars import float_array
from tinynet.tensor import Tensor, as_array

__all__ = ["BaseModel"]


class BaseModel(Trainer, Layer):
    """The shared surface of tinynet's models (see the module docstring).

    Shape:
        As its container's: one array per model input in, one per output out, each with
        the batch axis first.
    """

    def _init_model(self, name: str | None) -> None:
        Layer.__init__(self, name=name)
        self.compiled = False
        self.optimizer: Any = None
        self.loss: Any = None
        self.metrics: list = []
        self.metrics_names: list[str] = ["loss"]
        self.shuffle_rng: np.random.Generator | None = None
        self.stop_training = False
        self.history: History | None = None
        self._lock = threading.RLock()

    # -- structure ---------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:  # pragma: no cover - each container defines it
        raise NotImplementedError

    @checked_method
    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """The layer called ``name`` (or at position ``index`` of :attr:`layers`).

        Raises:
            ValueError: no such layer, or neither or both of ``name`` and ``index`` given.
        """
        owner = f"{type(self).__name__}.get_layer"
        if (name is None) == (index is None):
            raise ValueError(f"{owner}: give exactly one of name and index, got name={name!r}, "
                             f"index={index!r}")
        layers = self.layers
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
                raise TypeError(f"{owner}: index must be an int, got {index!r}")
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"{owner}: index {index} is out of range for a model of "
                                 f"{len(layers)} layers")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"{owner}: no layer named {name!r} in model {self.name!r}; its "
                         f"layers are {[layer.name for layer in layers]}")

    def named_layers(self) -> list[tuple[str, Layer]]:
        """Every layer that is not a model, with its path (``block/conv2d`` inside a
        nested model named ``block``), in layer order."""
        out = []
        stack = [("", iter(self.layers))]  # iterative: any nesting depth
        while stack:
            prefix, layers = stack[-1]
            layer = next(layers, None)
            if layer is None:
                stack.pop()
            elif isinstance(layer, BaseModel):
                stack.append((f"{prefix}{layer.name}/", iter(layer.layers)))
            else:
                out.append((prefix + layer.name, layer))
        return out

    def _check_one_place(self, owner: str) -> None:
        """Raises ``ValueError`` when one layer belongs to this model at two places (to
        two models nested in it, or to one of them and the model itself): its weights
        would be counted, and its gradients taken, twice. Calling one layer several times
        in one graph is fine (shared weights)."""
        places: dict[int, list[str]] = {}
        for path, layer in self.named_layers():
            places.setdefault(id(layer), []).append(path)
        for paths in places.values():
            if len(paths) > 1:
                raise ValueError(
                    f"{owner}: layer {paths[0].rsplit('/', 1)[-1]!r} belongs to the model at "
                    f"{len(paths)} places {paths}; a layer may be called several times in one "
                    f"graph (shared weights), but not belong to two of the models inside "
                    f"another (or to one and the outer graph)")

    def named_parameters(self) -> list[tuple[str, Parameter]]:
        """``(path/weight name, Parameter)`` for every weight, in :meth:`parameters` order
        (``dense/kernel``; ``block/conv2d/kernel`` inside a nested model; a ``call()``
        layer's sub-layer weights as ``layer/sub-layer/kernel``, from
        :meth:`Layer.named_weights`); each parameter's ``path`` is set to it."""
        out = [(f"{path}/{key}", p) for path, layer in self.named_layers()
               for key, p in layer.named_weights()]
        for key, p in out:  # the path the optimizer's state and error messages use
            p.path = key
        return out

    # -- weights -------------------------------------------------------------------------------
    def parameters(self) -> list[Parameter]:
        """Every parameter of every layer, in layer order (non-trainable included)."""
        return [p for _, p in self.named_parameters()]

    def trainable_parameters(self) -> list[Parameter]:
        """The parameters the optimizer updates (those of trainable layers)."""
        return [p for p in self.parameters() if p.trainable]

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        """Sets ``trainable`` on every layer inside (as Keras): ``False`` freezes all of
        the model's weights, ``True`` unfreezes them."""
        self._trainable = check_bool(value, "trainable", self.name)
        for layer in self.layers:
            layer.trainable = self._trainable

    def _check_built(self) -> None:
        if not self.built or not all(layer.built for layer in self.layers):
            raise ValueError(f"{type(self).__name__} model {self.name!r} is not built yet: "
                             f"call build(input_shape), or fit/predict on data, first")

    def count_params(self) -> int:
        """Total number of weight scalars, trainable or not."""
        self._check_built()
        return sum(layer.count_params() for layer in self.layers)

    def get_weights(self) -> list[np.ndarray]:
        """Copies of every weight array, in layer and parameter order."""
        return [p.value.copy() for p in self.parameters()]

    def set_weights(self, weights: list) -> None:
        """Sets every weight from a list like :meth:`get_weights`'s (checked before any
        change, so a mismatch leaves the model untouched)."""
        owner = f"{type(self).__name__}.set_weights"
        params = self.named_parameters()
        if not isinstance(weights, (list, tuple)):
            raise TypeError(f"{owner}: expected a list of {len(params)} arrays (as "
                            f"get_weights() returns), got {type(weights).__name__}")
        if len(weights) != len(params):
            raise ValueError(f"{owner}: expected {len(params)} arrays, got {len(weights)}")
        arrays = [float_array(w, np.float32) for w in weights]
        for (path, p), a in zip(params, arrays):
            if a.shape != p.value.shape:
                raise ValueError(f"{owner}: {path} expects shape {p.value.shape}, got {a.shape}")
        for (_, p), a in zip(params, arrays):
            p.value[...] = a

    # -- the layer protocol (a model inside a model) ----------------------------------------
    @property
    def input(self) -> Any:
        """The model's symbolic input (a list for several), as ``model.inputs``."""
        inputs = self.inputs
        return inputs[0] if len(inputs) == 1 else list(inputs)

    @property
    def output(self) -> Any:
        """The model's symbolic output (a list for several), as ``model.outputs``."""
        outputs = self.outputs
        return outputs[0] if len(outputs) == 1 else list(outputs)

    #: A model hands on the masks its own layers give its outputs (Keras).
    supports_masking = True

    def forward(self, x: Any, training: bool = False, mask: Any = None) -> Any:
        """The outputs for ``x`` (a list of arrays for several inputs); a ``Tensor``, or a
        list of them for several outputs. ``mask``: the inputs' masks (a list for several
        inputs), handed to the model's first layers."""
        xs = list(x) if self.multiple_inputs else [x]
        if mask is not None:
            self._input_masks = list(mask) if self.multiple_inputs else [mask]
        dtypes = self._entry_dtypes() or ["float32"] * len(xs)
        outs = self._run_forward([input_array(a, dtype, f"{self.name}: input")
                                  for a, dtype in zip(xs, dtypes)], training)
        return [Tensor(o) for o in outs] if self._multiple_outputs() else Tensor(outs[0])

    def backward(self, grad_output: Any) -> Any:
        """dL/d(input) (a list for several inputs), filling every parameter's gradient."""
        grads = self._output_grads(grad_output)
        dxs = self._run_backward(grads, True)
        return [Tensor(d) for d in dxs] if self.multiple_inputs else Tensor(dxs[0])

    def backward_params(self, grad_output: Any) -> None:
        self._run_backward(self._output_grads(grad_output), False)

    def _output_grads(self, grad_output: Any) -> list[np.ndarray]:
        grads = list(grad_output) if self._multiple_outputs() else [grad_output]
        return [None if g is None else as_array(g, f"{self.name}: grad_output") for g in grads]

    def _multiple_outputs(self) -> bool:
        return False

    def _take_input_masks(self, count: int) -> list:
        """The input masks :meth:`forward` was given (once), else ``count`` Nones."""
        return self.__dict__.pop("_input_masks", None) or [None] * count

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The masks of the outputs of the last forward pass (``None`` where an output has
        none)."""
        masks = self.__dict__.get("_output_masks") or [None]
        return masks if self._multiple_outputs() else masks[0]

    def _entry_dtypes(self) -> list[str]:
        """The dtype each model input is cast to: its ``Input``'s; float32 for a subclassed
        model, which has none."""
        inputs = getattr(self, "inputs", None) or ()
        return [t.dtype for t in inputs]

    def forward_state(self) -> Any:
        return [layer.forward_state() for layer in self.layers]

    def restore_forward_state(self, state: Any) -> None:
        for layer, s in zip(self.layers, state):
            layer.restore_forward_state(s)

    @locked
    def __call__(self, x: Any, training: bool = False) -> Any:
        """On data: the model's outputs (inference unless ``training``). On symbolic
        tensors: the symbolic outputs, the model becoming one node of a larger model."""
        if is_symbolic(x):
            return self._call_symbolic(x)
        xs = self._input_arrays(x, f"{type(self).__name__}.__call__")
        self._clear_losses()  # a top-level call (Keras): the losses of this call only
        outs = self._run_forward(xs, training)
        return [Tensor(o) for o in outs] if self._multiple_outputs() else Tensor(outs[0])

    # -- config ---------------------------------------------------------------------------------
    @staticmethod
    def _layer_entry(layer: Layer) -> dict:
        return {"class_name": registered_name_or_class(type(layer)), "config": layer.get_config()}

    def to_json(self, **kwargs: Any) -> str:
        """The architecture as JSON (Keras 3 ``model.to_json``): ``{"module", "class_name",
        "config", "registered_name"}``, no weights; ``kwargs`` go to ``json.dumps``.
        ``tn.models.model_from_json`` rebuilds the model (with new weights)."""
        import json

        from tinynet.saving.serialization import serialize_keras_object

        return json.dumps(serialize_keras_object(self), **kwargs)

    # -- summary -----------------------------------------------------------------------------------
    @checked_method
    def summary(self, line_length: int | None = None,
                print_fn: Callable[[str], Any] | None = None) -> None:
        """Prints Keras 3's summary table (byte for byte); see :mod:`tinynet.utils.summary`.

        Args:
            line_length: Total width; default ``min(88, terminal columns - 4)`` (108 for a
                functional model with the ``Connected to`` column).
            print_fn: Receives the whole text in one call (as Keras 3); default stdout.
        """
        from tinynet.utils.summary import print_summary

        print_summary(self, line_length=line_length, print_fn=print_fn)

    # -- persistence (tinynet.saving) --------------------------------------------------------
    @checked_method
    def save(self, path: str) -> None:
        """Saves architecture, weights, compile settings, optimizer and random states
        to one ``.safetensors`` file (atomically), or, for a ``.keras`` path, a Keras 3
        archive (``keras.models.load_model`` opens it; h5py needed); see
        :func:`tinynet.saving.save_model`."""
        saving.save_model(self, path)

    @checked_method
    def save_weights(self, path: str) -> None:
        """Saves the weights alone to one ``.safetensors`` file (atomically), or in Keras's
        layout for a ``.weights.h5`` path (h5py needed)."""
        saving.save_weights(self, path)

    @checked_method
    def load_weights(self, path: str) -> None:
        """Loads weights saved by :meth:`save_weights` or :meth:`save`; names and shapes
        must match this model."""
        saving.load_weights(self, path)

    @checked_method
    def export(self, path: str, format: str = "onnx", opset: int | None = None) -> None:
        """Writes the inference graph to ``path`` as ONNX (Keras 3's ``model.export``):
        channels-last inputs and outputs as the model's, a dynamic batch axis; see
        :mod:`tinynet.export` and docs/export.md.

        Args:
            path: The file to write (atomically), e.g. ``"model.onnx"``.
            format: ``"onnx"``, the only format.
            opset: The ONNX operator set version (>= 13); default 17.

        Raises:
            ValueError: another ``format``, a layer without an export (a custom layer),
                an unbuilt model, or an ``opset`` out of range.
            TypeError: ``path`` is not a str or os.PathLike, or ``opset`` not an int.
            ImportError: the ``onnx`` package is missing (``pip install tinynet[onnx]``).
        """
        from tinynet.export import export_model

        export_model(self, path, format=format, opset=opset)

    def __getstate__(self) -> dict:  # the lock cannot be pickled or deep-copied
        return {k: v for k, v in self.__dict__.items()  # the index and plan are keyed by id()
                if k not in ("_lock", "_layer_index", "_step_plan")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()
