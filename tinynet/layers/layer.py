"""``Layer`` and ``Parameter``: the contract every tinynet layer follows.

A layer owns its parameters, builds them from the input shape on first use, writes
``forward`` and ``backward`` by hand next to each other (no autograd), and describes
itself with a JSON-able config. Shapes carry the batch axis as ``None``.
"""

from __future__ import annotations

import itertools
import re
from typing import Any, Callable

import numpy as np

from tinynet.layers.node import Node, SymbolicTensor, is_symbolic, symbolic_list
from tinynet.tensor import Tensor, as_array

__all__ = ["Layer", "Parameter", "snake_case", "normalize_shape", "check_positive_int",
           "check_bool"]


def snake_case(name: str) -> str:
    """Keras's class-name-to-layer-name rule: ``Conv2D`` -> ``conv2d``, ``ReLU`` -> ``re_lu``."""
    intermediate = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def normalize_shape(shape: Any, arg: str = "input_shape") -> tuple:
    """Returns ``shape`` as a tuple of positive ints or ``None`` (unknown) entries."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{arg} must be a tuple of ints, got {shape!r}")
    out = []
    for dim in shape:
        if dim is None:
            out.append(None)
        elif isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim >= 0:
            out.append(int(dim))
        else:
            raise ValueError(f"{arg} must hold non-negative ints or None, got {tuple(shape)!r}")
    return tuple(out)


def check_positive_int(value: Any, arg: str, owner: str) -> int:
    """Validates a strictly positive int argument, naming ``owner``, ``arg`` and the value."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{owner}: {arg} must be a positive int, got {value!r}")
    if value <= 0:
        raise ValueError(f"{owner}: {arg} must be a positive int, got {value}")
    return int(value)


def check_bool(value: Any, arg: str, owner: str) -> bool:
    """Validates a bool argument."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: {arg} must be a bool, got {value!r}")
    return bool(value)


def _shapes(shape: Any) -> list[tuple]:
    """One shape or several (a list, or a tuple of tuples) as a list of shapes."""
    if isinstance(shape, list) or (isinstance(shape, tuple) and shape
                                   and isinstance(shape[0], (tuple, list))):
        return [tuple(s) for s in shape]
    return [tuple(shape)]


# Layers are numbered as they are created: a model gives automatic names (``dense``,
# ``dense_1``) in creation order, as Keras's global counter does in a fresh process.
_CREATED = itertools.count()


class Parameter:
    """A named float32 weight and its gradient.

    Attributes:
        value: The weight, a C-contiguous float32 ndarray (updated in place by optimizers).
        grad: The gradient from the last ``backward`` (same shape), or ``None``.
        name: The Keras weight name (``kernel``, ``bias``, ``gamma``, ...).
        trainable: Whether optimizers update it. Moving statistics are never trainable.
    """

    __slots__ = ("value", "grad", "name", "_trainable", "_always_frozen", "path")

    def __init__(self, value: np.ndarray, name: str, trainable: bool = True) -> None:
        self.value = np.require(value, dtype=np.float32, requirements="C")  # 0-d stays 0-d
        self.grad: np.ndarray | None = None
        self.name = name
        self._always_frozen = not trainable
        self._trainable = bool(trainable)
        self.path = name

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value) and not self._always_frozen

    @property
    def shape(self) -> tuple[int, ...]:
        return self.value.shape

    @property
    def size(self) -> int:
        return self.value.size

    def assign(self, value: Any) -> None:
        """Copies ``value`` into the weight in place, checking the shape."""
        arr = np.asarray(value, dtype=np.float32)
        if arr.shape != self.value.shape:
            raise ValueError(
                f"Parameter {self.path}: expected shape {self.value.shape}, got {arr.shape}")
        self.value[...] = arr

    def __repr__(self) -> str:
        return f"Parameter({self.path}, shape={self.value.shape}, trainable={self.trainable})"


class Layer:
    """Base class of every layer.

    Subclasses implement ``build`` (create parameters with :meth:`add_weight`),
    ``forward`` (cache what backward needs), ``backward`` (fill ``Parameter.grad``,
    return dL/dx), ``output_shape`` and ``get_config``. A layer with several inputs
    (``multiple_inputs = True``) takes a list in ``build``, ``output_shape`` and
    ``forward``, and its ``backward`` returns a list of input gradients in that order.

    Called on a symbolic tensor (from ``tn.Input``), a layer builds itself for its shape
    and returns the symbolic output, recording the call as a node of a functional model.

    Args:
        name: Layer name; defaults to the snake_case class name (made unique by the model).
        trainable: ``False`` freezes the layer's parameters.
        input_shape: Optional input shape without the batch axis, as in Keras.

    Shape:
        Input: ``[batch, ...]``; output: ``output_shape(input_shape)``.
    """

    def __init__(self, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"{type(self).__name__}: name must be a non-empty str, got {name!r}")
        self._name = name
        self._auto_name = name is None
        self._trainable = check_bool(trainable, "trainable", type(self).__name__)
        self.built = False
        owner = type(self).__name__
        self.input_shape_arg = ((None, *normalize_shape(input_shape, f"{owner}: input_shape"))
                                if input_shape is not None else None)
        self.built_input_shape: tuple | None = None
        self._params: list[Parameter] = []
        self._cache: Any = None
        self.inbound_nodes: list[Node] = []
        self._created = next(_CREATED)

    #: Whether the layer takes a list of inputs (the merging layers).
    multiple_inputs = False

    # -- naming ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name if self._name is not None else self.default_name()

    @classmethod
    def default_name(cls) -> str:
        """The automatic name: Keras's snake_case of the class name (``Conv2D`` ->
        ``conv2d``); a model makes it unique (``conv2d_1``, ...)."""
        return snake_case(cls.__name__)

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        for p in self._params:
            p.path = f"{value}/{p.name}"

    # -- trainable ---------------------------------------------------------------
    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = check_bool(value, "trainable", self.name)
        for p in self._params:
            p.trainable = self._trainable

    # -- parameters ------------------------------------------------------------
    def add_weight(self, name: str, shape: tuple, initializer: Callable[[tuple], np.ndarray] | str,
                   trainable: bool = True) -> Parameter:
        """Creates, registers and returns a parameter (used from ``build``)."""
        if isinstance(initializer, str):
            from tinynet.initializers import get as get_initializer

            initializer = get_initializer(initializer, self)
        value = initializer(tuple(shape))
        param = Parameter(value, name, trainable)
        param.trainable = self._trainable
        param.path = f"{self.name}/{name}"
        # building again replaces a weight rather than adding a second one
        self._params = [p for p in self._params if p.name != name]
        self._params.append(param)
        return param

    def parameters(self) -> list[Parameter]:
        """Every parameter in a stable order, non-trainable ones included."""
        return list(self._params)

    def trainable_parameters(self) -> list[Parameter]:
        return [p for p in self._params if p.trainable]

    def count_params(self) -> int:
        """Total number of weight scalars (trainable or not), as Keras counts them."""
        if not self.built:
            raise ValueError(
                f"Layer {self.name!r} is not built yet: call build(input_shape) or call the "
                f"layer on data before count_params()")
        return int(sum(p.size for p in self._params))

    def get_weights(self) -> list[np.ndarray]:
        return [p.value.copy() for p in self._params]

    def set_weights(self, weights: list) -> None:
        if len(weights) != len(self._params):
            raise ValueError(
                f"Layer {self.name!r}: set_weights expected {len(self._params)} arrays, got {len(weights)}")
        for p, w in zip(self._params, weights):
            p.assign(w)

    # -- build / call ------------------------------------------------------------
    def build(self, input_shape: tuple) -> None:
        """Creates the parameters for ``input_shape`` (batch axis included, as ``None``)."""
        self.built_input_shape = tuple(input_shape)
        self.built = True

    def output_shape(self, input_shape: tuple) -> tuple:
        """The output shape for ``input_shape`` (batch axis included); no data needed."""
        return tuple(input_shape)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        """Keras-style alias of :meth:`output_shape`."""
        return self.output_shape(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, grad_output: Any) -> Tensor:  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def backward_params(self, grad_output: Any) -> None:
        """Fills the parameter gradients when dL/dx is not needed (a model's first layer).

        The default runs :meth:`backward`; layers whose input gradient is costly (Dense,
        Conv2D) skip it. The gradients are the ones :meth:`backward` would give.
        """
        self.backward(grad_output)

    def __call__(self, x: Any, training: bool = False) -> Any:
        """On data: builds from ``x``'s shape if needed, then :meth:`forward`. On a
        symbolic tensor (or a list of them): the symbolic output (see the class doc)."""
        if is_symbolic(x):
            return self._call_symbolic(x)
        if not self.built:
            if self.multiple_inputs:
                arrays = [as_array(a, f"{self.name}: input {i}") for i, a in enumerate(x)]
                self.build([(None, *a.shape[1:]) for a in arrays])
                x = arrays
            else:
                arr = as_array(x)
                self.build((None, *arr.shape[1:]))
                x = arr
            self.built = True
        return self.forward(x, training=training)

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

    def _call_symbolic(self, x: Any) -> Any:
        owner = f"{type(self).__name__} {self.name!r}"
        listed = isinstance(x, (list, tuple))
        tensors = symbolic_list(x, owner)
        if self.multiple_inputs and not listed:
            raise ValueError(f"{owner}: expects a list of input tensors, got one tensor "
                             f"{tensors[0].name!r}")
        if listed and not self.multiple_inputs:
            if len(tensors) != 1:
                raise ValueError(f"{owner}: takes one input tensor, got a list of "
                                 f"{len(tensors)}")
            listed = False
        shape = [t.shape for t in tensors] if listed else tensors[0].shape
        try:
            self.build_for(shape)
            out = self.compute_output_shape(shape)
        except ValueError as exc:
            names = ", ".join(f"{t.name!r} {t.shape}" for t in tensors)
            raise ValueError(f"{owner} cannot take {names}: {exc}") from exc
        node = Node(self, tensors, listed)
        self.inbound_nodes.append(node)
        index = len(self.inbound_nodes) - 1
        shapes = out if isinstance(out, list) else [out]
        node.outputs = [SymbolicTensor(s, "float32", self, index, k) for k, s in enumerate(shapes)]
        return node.outputs if isinstance(out, list) else node.outputs[0]

    def forward_state(self) -> Any:
        """What ``backward`` needs from the last ``forward``: a model running this layer
        at two places (a shared layer) keeps each call's state and puts it back before
        that call's ``backward``."""
        return self._cache

    def restore_forward_state(self, state: Any) -> None:
        """Puts back a state from :meth:`forward_state`."""
        self._cache = state

    def _require_cache(self) -> Any:
        """Returns the forward cache, or raises ``RuntimeError`` if forward never ran."""
        if self._cache is None:
            raise RuntimeError(
                f"{type(self).__name__} {self.name!r}: backward called before forward "
                f"(no cached forward pass)")
        return self._cache

    def _check_grad(self, grad_output: Any, expected: tuple) -> np.ndarray:
        """``grad_output`` as an array, which must have the last output's shape."""
        g = as_array(grad_output)
        if g.shape != tuple(expected):
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: grad_output must have shape "
                f"{tuple(expected)} (the last output's shape), got {g.shape}")
        return g

    def _shape4(self, input_shape: tuple) -> tuple:
        """``input_shape`` as a tuple, which must have rank 4 (an image batch)."""
        input_shape = tuple(input_shape)
        if len(input_shape) != 4:
            raise ValueError(f"{type(self).__name__} {self.name!r}: input must have rank 4 "
                             f"[batch, height, width, channels], got shape {input_shape}")
        return input_shape

    def _check_rank(self, x: np.ndarray, min_rank: int, max_rank: int | None = None) -> None:
        if x.ndim < min_rank or (max_rank is not None and x.ndim > max_rank):
            want = f"{min_rank}" if max_rank == min_rank else (
                f">= {min_rank}" if max_rank is None else f"{min_rank} to {max_rank}")
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: input must have rank {want} "
                f"(batch axis included), got shape {x.shape}")

    # -- config ------------------------------------------------------------------
    def get_config(self) -> dict:
        """JSON-able constructor arguments; ``type(self).from_config(cfg)`` rebuilds the layer."""
        config: dict[str, Any] = {"name": self.name, "trainable": self.trainable}
        if self.input_shape_arg is not None:
            config["input_shape"] = list(self.input_shape_arg[1:])
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Layer":
        config = dict(config)
        if "input_shape" in config and config["input_shape"] is not None:
            config["input_shape"] = tuple(config["input_shape"])
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} built={self.built}>"
