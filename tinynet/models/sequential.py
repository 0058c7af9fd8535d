"""``Sequential``: a linear stack of layers (the container); ``compile``/``fit`` and the
rest of the training surface come from :class:`~tinynet.models.training.Trainer`."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from tinynet import saving
from tinynet.callbacks.history import History
from tinynet.layers.input import Input
from tinynet.layers.layer import Layer, Parameter, normalize_shape, snake_case
from tinynet.layers.registry import register_model, registered_layers
from tinynet.models.training import Trainer, locked
from tinynet.tensor import Tensor

__all__ = ["Sequential"]


class Sequential(Trainer):
    """A linear stack of layers (Keras 3 ``keras.Sequential``).

    Args:
        layers: Optional list of layers to ``add`` in order (an ``Input`` may come first).
        name: The model name (shown by ``summary``).

    Attributes:
        layers: The layers, in order (an ``Input`` is not listed, as in Keras).
        optimizer, loss, metrics: Set by :meth:`compile` (objects, not identifiers).
        metrics_names: ``["loss", *metric keys]``; keys are the strings passed to compile.
        shuffle_rng: The ``numpy`` generator ``fit`` shuffles with (created by ``compile``).
        stop_training: Set it to ``True`` (from a callback) to end ``fit``.
        history: The :class:`~tinynet.callbacks.History` of the last ``fit``.

    Shape:
        Input: ``[batch, *input_shape[1:]]``; output: ``[batch, *output_shape[1:]]``.
    """

    def __init__(self, layers: list | None = None, *, name: str = "sequential") -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"Sequential: name must be a non-empty str, got {name!r}")
        self.name = name
        self._layers: list[Layer] = []
        self._input: Input | None = None
        self._input_shape: tuple | None = None
        self._output_shapes: list[tuple] = []
        self.built = False
        self.compiled = False
        self.optimizer: Any = None
        self.loss: Any = None
        self.metrics: list = []
        self.metrics_names: list[str] = ["loss"]
        self.shuffle_rng: np.random.Generator | None = None
        self.stop_training = False
        self.history: History | None = None
        self._lock = threading.RLock()
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

    def add(self, layer: Layer) -> None:
        """Appends ``layer`` (an ``Input`` first declares the input shape).

        The layer gets a name unique in the model (``dense``, ``dense_1``, ... for
        automatic names) and, when the input shape is known, is built at once.

        Raises:
            TypeError: ``layer`` is not a tinynet ``Layer``.
            ValueError: duplicate name, misplaced ``Input``, or the layer cannot take the
                previous layer's output (the message names both layers and the shape).
        """
        if isinstance(layer, Input):
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
        if any(layer is other for other in self._layers):
            raise ValueError(f"Sequential.add: layer {layer.name!r} is already in the model")
        taken = {other.name for other in self._layers}
        if getattr(layer, "_auto_name", False):
            base = snake_case(type(layer).__name__)
            name, k = base, 0
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            layer.name = name
        elif layer.name in taken:
            raise ValueError(f"Sequential.add: all layers must have unique names; "
                             f"{layer.name!r} is already the name of a layer in this model")
        previous = self._input_shape
        if not self._layers and previous is None and layer.input_shape_arg is not None:
            self._input_shape = tuple(layer.input_shape_arg)
        self._layers.append(layer)
        if self._input_shape is not None:
            try:
                self._build_from(len(self._output_shapes))
            except ValueError:
                self._layers.pop()
                self._input_shape = previous
                raise

    def pop(self) -> Layer:
        """Removes and returns the last layer.

        Raises:
            IndexError: the model has no layers.
        """
        if not self._layers:
            raise IndexError(f"Sequential.pop: model {self.name!r} has no layers")
        layer = self._layers.pop()
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
            try:
                if not layer.built:
                    layer.build(shape)
                    if getattr(layer, "built_input_shape", None) is None:
                        layer.built_input_shape = tuple(shape)
                    layer.built = True
                elif (layer.built_input_shape is not None
                      and tuple(layer.built_input_shape[1:]) != tuple(shape[1:])):
                    raise ValueError(f"it was already built for input shape "
                                     f"{tuple(layer.built_input_shape)}")
                out = tuple(layer.output_shape(shape))
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

    # -- weights -------------------------------------------------------------------------------
    def parameters(self) -> list[Parameter]:
        """Every parameter of every layer, in layer order (non-trainable included)."""
        return [p for layer in self._layers for p in layer.parameters()]

    def trainable_parameters(self) -> list[Parameter]:
        """The parameters the optimizer updates (those of trainable layers)."""
        return [p for p in self.parameters() if p.trainable]

    def count_params(self) -> int:
        """Total number of weight scalars, trainable or not."""
        if not self.built or not all(layer.built for layer in self._layers):
            raise ValueError(f"Sequential model {self.name!r} is not built yet: call "
                             f"build(input_shape), or fit/predict on data, first")
        return sum(layer.count_params() for layer in self._layers)

    def get_weights(self) -> list[np.ndarray]:
        """Copies of every weight array, in layer and parameter order."""
        return [p.value.copy() for p in self.parameters()]

    def set_weights(self, weights: list) -> None:
        """Sets every weight from a list like :meth:`get_weights`'s (checked before any
        change, so a mismatch leaves the model untouched)."""
        params = self.parameters()
        if len(weights) != len(params):
            raise ValueError(f"Sequential.set_weights: expected {len(params)} arrays, got "
                             f"{len(weights)}")
        arrays = [np.asarray(w, dtype=np.float32) for w in weights]
        for p, a in zip(params, arrays):
            if a.shape != p.value.shape:
                raise ValueError(f"Sequential.set_weights: {p.path} expects shape "
                                 f"{p.value.shape}, got {a.shape}")
        for p, a in zip(params, arrays):
            p.value[...] = a

    # -- config ----------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """``{"name", "layers": [{"class_name", "config"}, ...], "build_input_shape"}``
        (JSON-able; an ``Input`` appears first in ``layers`` when one was added)."""
        layers = [self._input, *self._layers] if self._input is not None else self._layers
        return {
            "name": self.name,
            "layers": [{"class_name": type(l).__name__, "config": l.get_config()} for l in layers],
            "build_input_shape": list(self._input_shape) if self._input_shape is not None else None,
        }

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Sequential":
        """Rebuilds a model from :meth:`get_config`'s dict (fresh weights).

        Layer classes are looked up in ``custom_objects`` first, then in ``tinynet.layers``.
        """
        model = cls(name=config.get("name", "sequential"))
        for entry in config.get("layers", []):
            layer_cls = _layer_class(entry["class_name"], custom_objects)
            model.add(layer_cls.from_config(dict(entry.get("config", {}))))
        shape = config.get("build_input_shape")
        if shape is not None and model._input_shape is None:
            model.build(tuple(shape))
        return model
    @locked
    def __call__(self, x: Any, training: bool = False) -> Tensor:
        """Forward pass on ``x`` (builds the model from ``x``'s shape if needed)."""
        return Tensor(self._forward(self._inputs(x, "Sequential.__call__"), training))

    # -- summary -----------------------------------------------------------------------------------
    def summary(self, line_length: int | None = None,
                print_fn: Callable[[str], Any] | None = None) -> None:
        """Prints Keras 3's summary table (byte for byte); see :mod:`tinynet.utils.summary`.

        Args:
            line_length: Total width; default ``min(88, terminal columns - 4)``.
            print_fn: Receives the whole text in one call (as Keras 3); default stdout.
        """
        from tinynet.utils.summary import print_summary

        print_summary(self, line_length=line_length, print_fn=print_fn)

    # -- persistence (tinynet.saving) --------------------------------------------------------
    def save(self, path: str) -> None:
        """Saves architecture, weights, compile settings, optimizer and random states
        to one ``.safetensors`` file (atomically)."""
        saving.save_model(self, path)

    def save_weights(self, path: str) -> None:
        """Saves the weights alone to one ``.safetensors`` file (atomically)."""
        saving.save_weights(self, path)

    def load_weights(self, path: str) -> None:
        """Loads weights saved by :meth:`save_weights` or :meth:`save`; names and shapes
        must match this model."""
        saving.load_weights(self, path)

    def __getstate__(self) -> dict:  # the lock cannot be pickled or deep-copied
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<Sequential name={self.name!r} layers={len(self._layers)} built={self.built}>"


register_model(Sequential)  # so that tinynet.saving rebuilds it without importing this module


def _layer_class(class_name: str, custom_objects: dict | None) -> type:
    if custom_objects and class_name in custom_objects:
        return custom_objects[class_name]
    known = registered_layers()
    if class_name in known:
        return known[class_name]
    raise ValueError(f"Sequential.from_config: unknown layer class {class_name!r}; pass it in "
                     f"custom_objects or register it")
