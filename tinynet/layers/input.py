"""``Input`` and ``InputLayer``: where a model's data comes in (Keras 3).

``tn.Input(shape)`` returns a :class:`~tinynet.layers.node.SymbolicTensor` made by a new
``InputLayer``: the start of a functional model (``tn.Model(inputs, outputs)``), or the
first item of a ``Sequential`` list, which then knows its input shape.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from tinynet.keywords import checked_function
from tinynet.reprs import plain_repr
from tinynet.layers.layer import Layer, normalize_shape
from tinynet.layers.node import Node, SymbolicTensor
from tinynet.tensor import Tensor, as_array

__all__ = ["Input", "InputLayer", "input_array"]

_DTYPES = ("float32", "int32", "int64", "bool", "string")


def _checked_dtype(dtype: Any, owner: str) -> str:
    """``dtype`` as one of :data:`_DTYPES` (``None``: float32; NumPy dtypes by name)."""
    if dtype is None:
        return "float32"
    if dtype is str or dtype == "str":  # Keras reads Python's str as "string"
        return "string"
    try:
        name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    except TypeError:
        name = None
    if name not in _DTYPES:
        raise ValueError(f"{owner}: dtype must be None or one of {_DTYPES}, got "
                         f"{plain_repr(dtype)}")
    return name


def _checked_shape(shape: Any, batch_size: Any, batch_shape: Any, owner: str) -> tuple:
    """The shape with its batch axis (``batch_size``, or ``None`` for any) from ``shape``
    or ``batch_shape``; ``None`` in a later axis is a size known only from the data."""
    if (shape is None) == (batch_shape is None):
        raise ValueError(f"{owner}: give exactly one of shape and batch_shape, got "
                         f"shape={shape!r}, batch_shape={batch_shape!r}")
    if batch_shape is not None:
        if batch_size is not None:
            raise ValueError(f"{owner}: give batch_size only with shape, not with "
                             f"batch_shape={batch_shape!r}")
        batch = normalize_shape(batch_shape, f"{owner}: batch_shape")
        if not batch or batch[0] == 0:
            raise ValueError(f"{owner}: batch_shape must start with None (any batch size) or "
                             f"a positive batch size, got {batch_shape!r}")
        return batch
    if batch_size is not None:
        if (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                or batch_size <= 0):
            raise ValueError(f"{owner}: batch_size must be None or a positive int, got "
                             f"{batch_size!r}")
        batch_size = int(batch_size)
    return (batch_size, *normalize_shape(shape, f"{owner}: shape"))


def input_array(x: Any, dtype: str, arg: str) -> np.ndarray:
    """``x`` as a C-contiguous array of an Input's ``dtype``, as Keras converts a model's
    inputs to its Inputs' dtypes: float32 as :func:`~tinynet.tensor.as_array`; integers and
    bools cast from the data (floats truncated toward zero; a non-finite float refused)."""
    if dtype == "string":
        return _string_array(x, arg)
    data = x.data if isinstance(x, Tensor) else x
    kind = getattr(data, "dtype", np.dtype(float)).kind
    if kind in "USO" and _holds_text(data):
        raise TypeError(f"{arg} has dtype {dtype} and takes numbers, got an array of strings "
                        f"(dtype {data.dtype}); give the Input dtype='string' and a text layer "
                        f"(TextVectorization, StringLookup) to feed text")
    if dtype == "float32":
        return as_array(x, arg)
    try:
        arr = np.asarray(data)
    except (TypeError, ValueError):  # ragged: as_array names it
        arr = None
    if arr is None or arr.dtype.kind not in "biuf":
        arr = as_array(x, arg)  # names what x is when it is not numbers
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{arg} must hold finite numbers for an Input of dtype {dtype}, got "
                         f"{arr[~np.isfinite(arr)].flat[0].item()!r}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _holds_text(arr: np.ndarray) -> bool:
    """Whether an array of dtype ``U``/``S``/object holds strings (its first item)."""
    return arr.dtype.kind in "US" or (arr.size > 0 and isinstance(
        arr.reshape(-1)[0], (str, bytes, np.str_, np.bytes_)))


def _string_array(x: Any, arg: str) -> np.ndarray:
    """``x`` (strings: a list, a ``str``/``bytes``/object array) as a NumPy array for an
    Input of dtype ``"string"``: ``str`` and ``bytes`` arrays kept, object arrays checked to
    hold only ``str``/``bytes``; numbers refused (a string Input takes text)."""
    if isinstance(x, Tensor):
        raise TypeError(f"{arg} has dtype string and takes strings, got a Tensor of dtype "
                        f"{x.data.dtype}")
    try:
        arr = np.asarray(x) if not isinstance(x, np.ndarray) else x
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{arg} has dtype string and takes a list or array of strings, got "
                        f"{type(x).__name__}") from exc
    if arr.dtype.kind in "US":
        return np.ascontiguousarray(arr)
    if arr.dtype.kind != "O":
        raise TypeError(f"{arg} has dtype string and takes strings (str or bytes), got an "
                        f"array of dtype {arr.dtype}")
    for v in arr.reshape(-1):
        if not isinstance(v, (str, bytes, np.str_, np.bytes_)):
            raise TypeError(f"{arg} has dtype string and takes strings (str or bytes), got "
                            f"{type(v).__name__} {plain_repr(v)} in an object array")
    return np.ascontiguousarray(arr)


class InputLayer(Layer):
    """The layer behind ``tn.Input``: no weights, the identity on data.

    Args:
        shape: The per-sample shape, without the batch axis, e.g. ``(8, 8, 1)``; ``None``
            for a size known only from the data (a sequence of any length: ``(None,)``).
        batch_size: A fixed batch size shown in shapes, or ``None`` (any).
        dtype: ``"float32"`` (the dtype every tinynet layer computes in; ``None`` means it),
            or ``"int32"``, ``"int64"`` or ``"bool"``: the model casts its data to it and
            integer ids reach e.g. ``Embedding`` unchanged; or ``"string"`` (``str``):
            the data stays a NumPy ``str``/``bytes``/object array of text until the first
            text layer (``TextVectorization``, ``StringLookup``).
        batch_shape: The shape with the batch axis; instead of ``shape`` and
            ``batch_size``.
        name: Optional name (default ``input_layer``, made unique in a model).

    Attributes:
        output: The symbolic tensor this layer produces (what ``tn.Input`` returns;
            :attr:`Layer.output`).

    Shape:
        Input and output: ``[batch, *shape]`` (identity).
    """

    def __init__(self, shape: tuple | None = None, batch_size: int | None = None, *,
                 dtype: Any = "float32", batch_shape: tuple | None = None,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        owner = type(self).__name__
        self.dtype = _checked_dtype(dtype, owner)
        self.input_shape_arg = _checked_shape(shape, batch_size, batch_shape, owner)
        self.shape = self.input_shape_arg[1:]
        self.build(self.input_shape_arg)
        node = Node(self, [], listed=False)
        self.inbound_nodes.append(node)
        node.outputs.append(SymbolicTensor(self.input_shape_arg, self.dtype, self, 0))

    def output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def forward(self, x: Any, training: bool = False) -> Any:
        arr = input_array(x, self.dtype, f"{self.name}: input")
        return arr if self.dtype == "string" else Tensor(arr)

    def backward(self, grad_output: Any) -> Tensor:
        return Tensor(as_array(grad_output))

    def get_config(self) -> dict:
        return {"batch_shape": list(self.input_shape_arg), "dtype": self.dtype,
                "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "InputLayer":
        config = dict(config)
        if "shape" in config:  # files written before InputLayer (class name "Input")
            return cls(tuple(config["shape"]), name=config.get("name"))
        batch_shape = config.get("batch_shape")
        return cls(batch_shape=tuple(batch_shape) if isinstance(batch_shape, list) else batch_shape,
                   dtype=config.get("dtype", "float32"), name=config.get("name"))


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


_KERAS_ORDER = ("shape", "batch_size", "dtype", "sparse", "batch_shape", "name")


def _positional_order(function: Callable) -> Callable:
    """Reads positional arguments as tinynet's ``Input(shape, dtype, name)``, or as Keras's
    ``Input(shape, batch_size, dtype, sparse, batch_shape, name)`` when the second one is
    an int (a batch size); refuses ``Input(8, 8, 1)``, a shape spread over positional
    arguments, naming ``shape``."""
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if len(args) > 1 and _is_int(args[0]) and _is_int(args[1]):
            args = tuple(int(a) if _is_int(a) else a for a in args)
            extra = args[1:]
            raise TypeError(
                f"Input: shape must be a tuple, e.g. Input(shape={tuple(args)!r}); got extra "
                f"positional argument{'s' if len(extra) > 1 else ''} "
                f"{', '.join(repr(a) for a in extra)}")
        if len(args) > 1 and _is_int(args[1]):
            if len(args) > len(_KERAS_ORDER):
                raise TypeError(f"Input: takes at most {len(_KERAS_ORDER)} positional "
                                f"arguments {_KERAS_ORDER}, got {len(args)}")
            keras = dict(zip(_KERAS_ORDER, args))
            twice = sorted(set(keras) & set(kwargs))
            if twice:
                raise TypeError(f"Input: got multiple values for argument {twice[0]!r}")
            return function(**keras, **kwargs)
        return function(*args, **kwargs)
    return wrapper


@_positional_order
@checked_function
def Input(shape: tuple | None = None, dtype: Any = "float32", name: str | None = None, *,
          batch_size: int | None = None, batch_shape: tuple | None = None,
          sparse: bool | None = None) -> SymbolicTensor:
    """A symbolic input tensor (``keras.Input``): call layers on it, then build a
    ``tn.Model(inputs, outputs)``; or put it first in a ``Sequential`` list.

    Positional arguments follow ``Input(shape, dtype, name)``, or Keras's order
    ``Input(shape, batch_size, dtype, sparse, batch_shape, name)`` when the second one is
    an int.

    Args:
        shape: The per-sample shape, without the batch axis, e.g. ``(8, 8, 1)``; ``None``
            in an axis for a size known only from the data (``(None,)``: token ids of any
            length).
        dtype: ``"float32"`` (``None`` means it), ``"int32"``, ``"int64"`` or ``"bool"``:
            the model casts the data for this input to it, as Keras does; or ``"string"``
            (``str``) for text, which stays a NumPy array of strings until the first text
            layer (``TextVectorization``, ``StringLookup``).
        name: The input's name (used by ``Model`` to match a dict of inputs).
        batch_size: A fixed batch size shown in shapes, or ``None`` (any).
        batch_shape: The shape with its batch axis, instead of ``shape`` and
            ``batch_size``.
        sparse: ``None`` or ``False`` (tinynet has no sparse tensors).

    Returns:
        The :class:`~tinynet.layers.node.SymbolicTensor` of a new ``InputLayer``.

    Raises:
        TypeError: the shape spread over positional arguments (``Input(8, 8, 1)``; write
            ``Input((8, 8, 1))``), or an unknown keyword (the message suggests the closest).
        ValueError: a negative size, a ``dtype`` other than the five, both or neither of
            ``shape`` and ``batch_shape``, a ``batch_size`` that is not a positive int, or
            ``sparse=True``.

    Shape:
        ``(batch_size, *shape)``.
    """
    if sparse:
        raise ValueError(f"Input: sparse must be False or None (tinynet has no sparse "
                         f"tensors), got {sparse!r}")
    batch = _checked_shape(shape, batch_size, batch_shape, "Input")
    return InputLayer(batch_shape=batch, dtype=_checked_dtype(dtype, "Input"), name=name).output
