"""``Layer`` and ``Parameter``: the contract every tinynet layer follows.

A layer owns its parameters, builds them from the input shape on first use, writes
``forward`` and ``backward`` by hand next to each other (no autograd), and describes
itself with a JSON-able config. Shapes carry the batch axis as ``None``.
"""

from __future__ import annotations

import inspect
import itertools
import re
from typing import Any

import numpy as np

from tinynet.keywords import KeywordChecked
from tinynet.layers.call_args import first_argument
from tinynet.layers.hooks import check_allocation, structure_changed, weights_changed
from tinynet.layers.node import Node, is_symbolic
from tinynet.layers.symbolic import SymbolicCalls
from tinynet.layers.parameter import Parameter, initializer_fn, regularizer_of, weight_shape
from tinynet.layers.validation import check_name
from tinynet.tensor import Tensor, as_array

_TRACED: Any = None
_MISSING: Any = object()  # no first input given by position


def _traced() -> Any:
    """:mod:`tinynet.layers.traced` (the ``call()`` machinery), imported on first use and
    then kept (it runs on every step of a ``call()`` layer)."""
    global _TRACED
    if _TRACED is None:
        from tinynet.layers import traced

        _TRACED = traced
    return _TRACED

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


_DTYPES = ("float32", "int32", "int64", "bool")


# Layers are numbered as they are created: a model gives automatic names (``dense``,
# ``dense_1``) in creation order, as Keras's global counter does in a fresh process.
_CREATED = itertools.count()


def _values(x: Any) -> Any:
    """Data for a shape: a Tensor's or parameter's array, else ``x``."""
    if isinstance(x, Tensor):
        return x.data
    return getattr(x, "value", x) if isinstance(x, Parameter) else x


class Layer(SymbolicCalls, KeywordChecked):
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

    def __new__(cls, *args: Any, **kwargs: Any) -> "Layer":
        obj = super().__new__(cls)
        # a call() layer's get_config() falls back to its constructor arguments (Keras)
        obj._init_args = (args, kwargs)
        return obj

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._has_call = cls.call is not Layer.call and cls.forward is Layer.forward
        if cls._has_call and "__setattr__" not in vars(cls):
            cls.__setattr__ = Layer._track_setattr
        cls._default_name = None
        computation = cls.call if cls._has_call else cls.forward
        cls._forward_takes_mask = "mask" in inspect.signature(computation).parameters
        if "compute_mask" in vars(cls) and "supports_masking" not in vars(cls):
            cls.supports_masking = True  # Keras: a layer defining compute_mask supports it

    def __init__(self, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None, dtype: Any = None) -> None:
        if dtype is not None and str(getattr(dtype, "name", dtype)) not in _DTYPES:
            raise ValueError(f"{type(self).__name__}: dtype must be None or one of "
                             f"{', '.join(repr(d) for d in _DTYPES)}, got {dtype!r}")
        self._name = check_name(name, type(self).__name__)
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
        self._call_losses: list = []

    #: Whether the layer takes a list of inputs (the merging layers).
    multiple_inputs = False
    #: Whether the layer hands a mask on (Keras's ``supports_masking``); a mask reaching
    #: a layer without it is dropped with a warning (:mod:`tinynet.layers.mask_flow`).
    supports_masking = False
    #: Whether ``forward`` (or ``call``) takes ``mask=`` (set per class).
    _forward_takes_mask = False
    #: Whether the layer is written as ``call()`` (set per class).
    _has_call = False

    def _track_setattr(self, name: str, value: Any) -> None:
        """``__setattr__`` of ``call()`` layers (only theirs, so the built-in layers' hot
        attribute writes stay plain): tracks the layers assigned to it, as Keras does."""
        if not name.startswith("_") and (
                isinstance(value, Layer) or (isinstance(value, (list, tuple)) and value
                                             and all(isinstance(v, Layer) for v in value))):
            tracked = self.__dict__.setdefault("_sublayers", {})
            tracked[name] = list(value) if isinstance(value, (list, tuple)) else [value]
            weights_changed()
        object.__setattr__(self, name, value)

    def sublayers(self) -> list["Layer"]:
        """The layers a ``call()`` layer holds as attributes, in assignment order."""
        out: list[Layer] = []
        seen: set[int] = set()
        for group in self.__dict__.get("_sublayers", {}).values():
            for layer in group:
                if id(layer) not in seen:
                    seen.add(id(layer))
                    out.append(layer)
        return out

    # -- naming ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name if self._name is not None else self.default_name()

    @classmethod
    def default_name(cls) -> str:
        """The automatic name: Keras's snake_case of the class name (``Conv2D`` ->
        ``conv2d``); a model makes it unique (``conv2d_1``, ...)."""
        name = cls.__dict__.get("_default_name")
        if name is None:
            name = snake_case(cls.__name__)
            cls._default_name = name
        return name

    @name.setter
    def name(self, value: str) -> None:
        self._name = value
        if self.__dict__.get("_in_model"):  # a model's cached names change
            structure_changed()
        weights_changed()  # the parameters' paths change
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
        for sub in self.sublayers():  # a call() layer freezes what it holds, as Keras
            sub.trainable = self._trainable

    # -- parameters ------------------------------------------------------------
    def add_weight(self, *args: Any, shape: Any = None, initializer: Any = None,
                   dtype: Any = None, trainable: bool = True, regularizer: Any = None,
                   constraint: Any = None, name: str | None = None, **kwargs: Any) -> Parameter:
        """Creates, registers and returns a weight (from ``build``), as Keras's
        ``add_weight(shape=None, initializer=None, dtype=None, trainable=True,
        regularizer=None, constraint=None, name=None)``; the initializer defaults to
        ``"glorot_uniform"`` (Keras). The older ``add_weight(name, shape, initializer,
        trainable)`` order works too.

        Raises:
            ValueError: ``shape`` holds negative or unknown sizes.
            TypeError: ``shape`` is not a tuple of ints, or ``initializer`` is neither a
                name, an initializer object nor a callable.
        """
        owner = f"{type(self).__name__} {self.name!r}: add_weight"
        if args and isinstance(args[0], str):  # (name, shape, initializer, trainable)
            legacy = dict(zip(("name", "shape", "initializer", "trainable"), args))
            name, shape = legacy["name"], legacy.get("shape", shape)
            initializer = legacy.get("initializer", initializer)
            trainable = legacy.get("trainable", trainable)
        elif args:
            keras = dict(zip(("shape", "initializer", "dtype", "trainable"), args))
            shape = keras["shape"]
            initializer = keras.get("initializer", initializer)
            trainable = keras.get("trainable", trainable)
        shape = weight_shape(shape, owner)
        if name is None:
            taken = {p.name for p in self._params}
            name = next(n for n in (f"variable_{i}" if i else "variable"
                                    for i in itertools.count()) if n not in taken)
        check_name(name, owner, or_none=True)  # None was replaced by a free name above
        check_allocation(self, f"weight {name!r}", shape)  # load_model's budget
        init = initializer_fn(initializer, self, owner)
        try:
            value = np.asarray(init(shape), dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{owner}: initializer {initializer!r} failed for shape {shape}: "
                             f"{exc}") from None
        if value.shape != shape:
            value = np.broadcast_to(value, shape).copy()
        param = Parameter(value, name, trainable)
        param.trainable = self._trainable and bool(trainable)
        param.path = f"{self.name}/{name}"
        param.regularizer = regularizer_of(regularizer, owner)
        # building again replaces a weight rather than adding a second one
        self._params = [p for p in self._params if p.name != name]
        self._params.append(param)
        weights_changed()
        return param

    def parameters(self) -> list[Parameter]:
        """Every parameter in a stable order, non-trainable ones included (a ``call()``
        layer's own, then its sub-layers')."""
        if "_sublayers" not in self.__dict__:
            return list(self._params)
        return [p for _, p in self.named_weights()]

    def named_weights(self) -> list[tuple[str, Parameter]]:
        """``(name, Parameter)`` for every weight, the name unique within the layer: a
        sub-layer's weights are named ``<sub-layer>/<weight>`` (sub-layers sharing a name,
        such as two automatically named ``dense``, become ``dense``, ``dense_1``, ... in
        assignment order)."""
        out = [(p.name, p) for p in self._params]
        seen = {id(p) for p in self._params}
        used: set[str] = set()
        for sub in self.sublayers():
            label = sub.name
            for i in itertools.count(1):
                if label not in used:
                    break
                label = f"{sub.name}_{i}"
            used.add(label)
            for key, p in sub.named_weights():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append((f"{label}/{key}", p))
        return out

    @property
    def weights(self) -> list[Parameter]:
        """Every weight (Keras's ``layer.weights``)."""
        return self.parameters()

    @property
    def trainable_weights(self) -> list[Parameter]:
        return [p for p in self.parameters() if p.trainable]

    @property
    def non_trainable_weights(self) -> list[Parameter]:
        return [p for p in self.parameters() if not p.trainable]

    # -- losses added in call() ------------------------------------------------------
    def add_loss(self, loss: Any) -> None:
        """Adds a scalar to the training loss (from ``call()``, as Keras): recorded with
        the ops, so its gradient reaches the weights it came from. The value belongs to
        this layer: its ``losses`` lists it until the next top-level call clears it."""
        from tinynet.ops.autodiff import current

        graph = current()
        if graph is not None:
            graph.losses.append(loss)
        self._call_losses.append(loss)

    def _nested_layers(self) -> list["Layer"]:
        """This layer, then the layers inside it (a model's layers, a ``call()`` layer's
        sub-layers), depth first, each once."""
        out, seen, stack = [], set(), [self]
        while stack:
            layer = stack.pop()
            if id(layer) in seen or not isinstance(layer, Layer):
                continue
            seen.add(id(layer))
            out.append(layer)
            stack += [*layer.sublayers(), *(getattr(layer, "layers", None) or [])][::-1]
        return out

    def _clear_losses(self) -> None:
        """Empties the added losses of this layer and of every layer inside it (Keras does
        so at the start of each top-level call)."""
        for layer in self._nested_layers():
            layer.__dict__["_call_losses"] = []

    @property
    def losses(self) -> list:
        """Keras's ``layer.losses``: the losses added since the last top-level call began
        (``add_loss``, an activity regularizer), this layer's then those of the layers
        inside it (a model's layers, a ``call()`` layer's sub-layers), then the penalties
        of the regularized trainable weights (``regularizer(weight)``, computed now)."""
        out = [loss for layer in self._nested_layers() for loss in layer._call_losses]
        out += [p.regularizer(p) for p in self.trainable_weights if p.regularizer is not None]
        return out

    def trainable_parameters(self) -> list[Parameter]:
        return [p for p in self._params if p.trainable]

    def count_params(self) -> int:
        """Total number of weight scalars (trainable or not), as Keras counts them."""
        if not self.built:
            raise ValueError(
                f"Layer {self.name!r} is not built yet: call build(input_shape) or call the "
                f"layer on data before count_params()")
        return int(sum(p.size for p in self.parameters()))  # a call() layer's sub-layers too

    def get_weights(self) -> list[np.ndarray]:
        return [p.value.copy() for p in self.parameters()]

    def set_weights(self, weights: list) -> None:
        params = self.parameters()
        if not isinstance(weights, (list, tuple)):
            raise TypeError(f"Layer {self.name!r}: set_weights expects a list of arrays (as "
                            f"get_weights() returns), got {type(weights).__name__}")
        if len(weights) != len(params):
            raise ValueError(f"Layer {self.name!r}: set_weights expected {len(params)} arrays, "
                             f"got {len(weights)}")
        for p, w in zip(params, weights):
            p.assign(w)

    # -- build / call ------------------------------------------------------------
    def build(self, input_shape: tuple) -> None:
        """Creates the parameters for ``input_shape`` (batch axis included, as ``None``)."""
        self.built_input_shape = tuple(input_shape)
        self.built = True

    def output_shape(self, input_shape: tuple) -> tuple:
        """The output shape for ``input_shape`` (batch axis included); no data needed.

        A ``call()`` layer answers from ``compute_output_shape`` when it defines one, and
        otherwise by running ``call`` on a small zero batch."""
        if type(self)._has_call:
            if type(self).compute_output_shape is not Layer.compute_output_shape:
                return self.compute_output_shape(input_shape)
            from tinynet.layers import traced

            return traced.placeholder_output_shape(self, input_shape)
        return tuple(input_shape)

    def compute_output_shape(self, input_shape: tuple) -> tuple:
        """Keras-style alias of :meth:`output_shape`."""
        if type(self)._has_call:
            from tinynet.layers import traced

            return traced.placeholder_output_shape(self, input_shape)
        return self.output_shape(input_shape)

    def call(self, inputs: Any, training: Any = None) -> Any:
        """The layer's computation written with :mod:`tinynet.ops` (Keras style); tinynet
        records the ops and derives :meth:`backward`. Define this, or :meth:`forward`
        and :meth:`backward`."""
        raise NotImplementedError(self._how_to_write())

    def _how_to_write(self) -> str:
        return (f"{type(self).__name__} {self.name!r} has no computation: define "
                f"call(self, inputs) with tinynet.ops (backward is derived), or "
                f"forward(self, x, training=False) and backward(self, grad_output)")

    def forward(self, x: Any, training: bool = False, mask: Any = None,
                call: Any = None) -> Tensor:
        """The output for ``x``; caches what :meth:`backward` needs. A ``call()`` layer
        records its ops here (and gets ``mask=`` when its ``call`` names it; ``call``: a
        functional node's further arguments, ``(template, values)``, whose gradients
        :meth:`backward` returns after those of ``x``)."""
        if type(self)._has_call:
            return _traced().forward(self, x, training,
                                  kwargs={"mask": mask} if mask is not None else None,
                                  call=call)
        raise NotImplementedError(self._how_to_write())

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The mask of the output for ``inputs`` whose mask is ``previous_mask`` (Keras):
        ``previous_mask`` for a layer that supports masking, else ``None``. Layers that
        make a mask (``Embedding(mask_zero=True)``, ``Masking``) or consume one
        (``GlobalAveragePooling1D``) override it."""
        return previous_mask if self.supports_masking else None

    def backward(self, grad_output: Any) -> Tensor:
        """dL/dx of the last :meth:`forward`, filling every parameter's ``.grad``. A
        ``call()`` layer replays its recorded ops."""
        if type(self)._has_call:
            return _traced().backward(self, grad_output)
        raise NotImplementedError(self._how_to_write())

    def backward_params(self, grad_output: Any) -> None:
        """Fills the parameter gradients when dL/dx is not needed (a model's first layer).

        The default runs :meth:`backward`; layers whose input gradient is costly (Dense,
        Conv2D) skip it, and so does a ``call()`` layer (its ops skip what only the input
        gradient needs). The gradients are the ones :meth:`backward` would give.
        """
        if type(self)._has_call:
            _traced().backward_params(self, grad_output)
            return
        self.backward(grad_output)

    def __call__(self, x: Any = _MISSING, *args: Any, **kwargs: Any) -> Any:
        """On data: builds from ``x``'s shape if needed, then :meth:`forward` (or, for a
        ``call()`` layer, ``call`` with the extra arguments). On a symbolic tensor (or a
        list of them): the symbolic output (see the class doc). Inside another layer's
        ``call()``: recorded for that layer's backward.

        Raises:
            TypeError: a built-in layer got a second positional argument that is not the
                ``training`` flag (several inputs go in one list: ``layer([a, b])``).
            ValueError: a layer of several inputs got one array instead of a list.
        """
        if x is _MISSING:
            x = first_argument(self, kwargs)
        training = kwargs.pop("training", None)
        mask = kwargs.pop("mask", None) if type(self)._forward_takes_mask else None
        if not type(self)._has_call:
            if args:
                if len(args) == 1 and (args[0] is None or isinstance(args[0], (bool, np.bool_))):
                    training = args[0]
                    args = ()
                else:
                    raise TypeError(
                        f"{type(self).__name__} {self.name!r}: called with "
                        f"{1 + len(args)} positional arguments; pass several inputs as one "
                        f"list, layer([a, b]), and training as a keyword, training=True")
            if kwargs:
                from tinynet.keywords import unexpected_keywords

                raise unexpected_keywords(f"{type(self).__name__}.__call__", list(kwargs),
                                          ["training"])
        if is_symbolic(x):
            if not type(self)._has_call:
                return self._call_symbolic(x)
            if is_symbolic(mask):  # an explicit symbolic mask is one more input
                kwargs["mask"] = mask
            return self._call_symbolic(x, args, kwargs)
        if self.multiple_inputs and not isinstance(x, (list, tuple)):
            raise ValueError(f"{type(self).__name__} {self.name!r}: expects a list of inputs "
                             f"(layer([a, b])), got one {type(x).__name__} of shape "
                             f"{np.shape(_values(x))}")
        if not self.built:
            self._build_on(x)
        traced = _traced()
        current = traced.autodiff.current
        if type(self)._has_call:
            if mask is not None:
                kwargs["mask"] = mask
            if current() is not None:
                return traced.run_inline(self, x, training, args, kwargs)
            return traced.forward(self, x, training, args, kwargs)
        extra = {} if mask is None else {"mask": mask}
        if current() is not None:
            return traced.record_builtin(self, x, bool(training), **extra)
        return self.forward(x, training=bool(training), **extra)

    def _build_on(self, x: Any) -> None:
        """Builds the layer from the shape of data ``x`` (a list for several inputs)."""
        if isinstance(x, (list, tuple)) and (self.multiple_inputs or type(self)._has_call):
            shapes = [(None, *np.shape(_values(a))[1:]) for a in x]
            self.build(shapes)
        else:
            if not type(self)._has_call:
                as_array(x)  # the error for data that is not numeric
            self.build((None, *np.shape(_values(x))[1:]))
        self.built = True
        if "_sublayers" in self.__dict__:
            from tinynet.layers import traced

            traced.name_sublayers(self)

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
        if type(self)._has_call:
            from tinynet.layers.auto_config import auto_config, defines_get_config

            if not defines_get_config(type(self)):
                return auto_config(self, config)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Layer":
        config = dict(config)
        if "input_shape" in config and config["input_shape"] is not None:
            config["input_shape"] = tuple(config["input_shape"])
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} built={self.built}>"
