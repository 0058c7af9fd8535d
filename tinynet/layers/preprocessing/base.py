"""What the preprocessing layers (text, lookups, hashing, binning) share: the base class
that runs them on NumPy data of any dtype (strings included), the checks of their
arguments and inputs, and Keras's categorical encoding (``one_hot`` / ``multi_hot`` /
``count``) of integer indices.

These layers compute in NumPy only: they have no weights and no gradient (``backward``
returns zeros, as nothing upstream of a preprocessing layer can be trained), and they
sit before the first differentiable layer of a model, or run standalone in a data
pipeline (``ids = vectorize(texts)``, then ``model.fit(ids, y)``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.tensor import Tensor

__all__ = ["PreprocessingLayer", "check_choice", "check_optional_int", "encode_categorical",
           "as_values", "as_strings", "adapt_batches"]


def check_choice(value: Any, arg: str, owner: str, choices: tuple, *,
                 allow_none: bool = False, allow_callable: bool = False) -> Any:
    """``value`` if it is one of ``choices`` (or None / a callable where allowed)."""
    if value is None and allow_none:
        return None
    if allow_callable and callable(value):
        return value
    if isinstance(value, str) and value in choices:
        return value
    extra = (" or None" if allow_none else "") + (" or a callable" if allow_callable else "")
    raise ValueError(f"{owner}: {arg} must be one of {', '.join(map(repr, choices))}{extra}, "
                     f"got {value!r}")


def check_optional_int(value: Any, arg: str, owner: str, minimum: int) -> int | None:
    """``None``, or an int of at least ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{owner}: {arg} must be None or an int >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{owner}: {arg} must be None or an int >= {minimum}, got {value}")
    return int(value)


def as_values(x: Any, owner: str) -> np.ndarray:
    """``x`` (a Tensor, an array, a list or a scalar) as a NumPy array, any dtype kept;
    ragged lists are refused."""
    if isinstance(x, Tensor):
        return x.data
    if x is None:
        raise TypeError(f"{owner}: inputs must be an array, a list or a scalar, got None")
    try:
        arr = np.asarray(x)
    except ValueError as exc:
        raise ValueError(f"{owner}: inputs must be rectangular (use lists of equal length), "
                         f"got {type(x).__name__}: {exc}") from None
    if arr.dtype.kind == "O" and any(isinstance(v, (list, tuple, np.ndarray))
                                     for v in arr.flat):
        raise ValueError(f"{owner}: inputs must be rectangular (use lists of equal length), "
                         f"got a ragged {type(x).__name__}")
    return arr


def as_strings(x: Any, owner: str, encoding: str = "utf-8") -> np.ndarray:
    """``x`` as a NumPy array of Python ``str`` (dtype object): ``str`` / ``bytes``
    scalars, lists and arrays (``U``, ``S`` or object dtype); bytes are decoded with
    ``encoding``."""
    arr = as_values(x, owner)
    if arr.dtype.kind == "U":
        return arr.astype(object)
    if arr.dtype.kind not in "SO":
        raise TypeError(f"{owner}: inputs must be strings (str or bytes: a list or a NumPy "
                        f"str/bytes/object array), got dtype {arr.dtype}")
    out = np.empty(arr.shape, dtype=object)
    flat = out.reshape(-1)
    for i, v in enumerate(arr.reshape(-1)):
        if isinstance(v, (bytes, np.bytes_)):
            flat[i] = bytes(v).decode(encoding)
        elif isinstance(v, str):
            flat[i] = str(v)
        else:
            raise TypeError(f"{owner}: inputs must be strings (str or bytes), got "
                            f"{type(v).__name__} {v!r}")
    return out


def adapt_batches(data: Any, owner: str) -> Iterator[Any]:
    """What ``adapt(data)`` reads, as Keras reads it: a list, tuple or array is one batch;
    any other iterable (a generator, a ``PyDataset``-like object) yields batches."""
    if isinstance(data, (str, bytes)) or data is None:
        raise TypeError(f"{owner}: adapt() takes a list or array of samples or an iterable "
                        f"of batches, got {type(data).__name__}")
    if isinstance(data, (list, tuple, np.ndarray, Tensor)):
        yield data
        return
    if not hasattr(data, "__iter__"):
        raise TypeError(f"{owner}: adapt() takes a list or array of samples or an iterable "
                        f"of batches, got {type(data).__name__}")
    yield from data


def _bincount_rows(rows: np.ndarray, depth: int, binary: bool,
                   weights: np.ndarray | None) -> np.ndarray:
    """Per-row counts of each index in ``[0, depth)`` of a 2-D int array (indices outside
    are dropped, as ``tf.math.bincount(..., maxlength=depth)`` drops them)."""
    n = rows.shape[0]
    out = np.zeros((n, depth), dtype=np.float64)
    keep = (rows >= 0) & (rows < depth)
    r = np.broadcast_to(np.arange(n)[:, None], rows.shape)[keep]
    c = rows[keep]
    w = np.ones(c.shape, np.float64) if weights is None else weights[keep].astype(np.float64)
    np.add.at(out, (r, c), w)
    if binary:
        out = (out > 0).astype(np.float64)
    return out


def encode_categorical(indices: np.ndarray, output_mode: str, depth: int,
                       count_weights: np.ndarray | None = None,
                       dtype: Any = np.float32) -> np.ndarray:
    """Keras's encoding of integer ``indices`` (TensorFlow's route): ``"one_hot"`` appends
    a ``depth`` axis (after dropping a last axis of size 1); ``"multi_hot"`` / ``"count"``
    reduce a 1-D input to one ``[depth]`` vector, a 2-D input row by row to
    ``[batch, depth]``, and a higher-rank input over axis 1. Indices outside
    ``[0, depth)`` contribute nothing.

    Shape:
        Input: any rank (a scalar counts as ``[1]``); output as described, ``dtype``.
    """
    x = np.asarray(indices, dtype=np.int64)
    w = None if count_weights is None else np.asarray(count_weights)
    if x.ndim == 0:
        x = x.reshape(1)
        w = None if w is None else w.reshape(1)
    if output_mode == "one_hot":
        if x.shape[-1] == 1:
            x = x.reshape(x.shape[:-1])
        flat = x.reshape(-1)
        out = np.zeros((flat.size, depth), dtype=dtype)
        ok = (flat >= 0) & (flat < depth)
        out[np.nonzero(ok)[0], flat[ok]] = 1
        return out.reshape((*x.shape, depth))
    binary = output_mode == "multi_hot"
    if x.ndim == 1:
        out = _bincount_rows(x[None], depth, binary, None if w is None else w[None])[0]
    elif x.ndim == 2:
        out = _bincount_rows(x, depth, binary, w)
    else:  # rank > 2: one-hot over a new last axis, reduced over axis 1
        moved = np.moveaxis(x, 1, -1)
        lead = moved.shape[:-1]
        rows = moved.reshape(-1, moved.shape[-1])
        rw = None if w is None else np.moveaxis(w, 1, -1).reshape(rows.shape)
        out = _bincount_rows(rows, depth, binary, rw).reshape((*lead, depth))
    out_dtype = dtype if w is None else w.dtype
    return out.astype(out_dtype)


def string_symbolic_call(layer: Any, x: Any, call: Callable[[Any], Any]) -> Any:
    """A text layer's call on a symbolic tensor: ``call(x)`` (the ordinary symbolic call)
    when ``x`` is a string ``tn.Input`` (``dtype="string"``); a numeric tensor is refused,
    since the layer takes text; an inverted lookup (ids to strings) is refused, since no
    model layer takes strings."""
    owner = f"{type(layer).__name__} {layer.name!r}"
    if getattr(layer, "invert", False):
        raise TypeError(f"{owner}: with invert=True it returns strings, which no model layer "
                        f"takes; run it on the model's output ids instead "
                        f"(layer(model.predict(x)))")
    dtype = getattr(x, "dtype", None)
    if dtype != "string":
        raise TypeError(f"{owner}: takes strings, so on a model input it needs "
                        f"tn.Input(..., dtype='string'), got a tensor of dtype {dtype!r}")
    return call(x)


class PreprocessingLayer(Layer):
    """Base of the NumPy preprocessing layers: called on data of any dtype (strings too),
    they skip the float32 conversion other layers make, return Keras's dtype (int64 ids,
    float32 or int64 encodings), have no weights and pass no gradient.

    Called on a symbolic tensor (``tn.Input``) the layer joins a functional model or
    ``Sequential`` like any layer; the text layers (``TextVectorization``,
    ``StringLookup``) take a string ``tn.Input(..., dtype="string")``, so a model can
    ``fit`` and ``predict`` on raw text. No gradient flows into them (they have no
    weights and their inputs are data).

    Shape:
        Input and output: see each layer.
    """

    def __init__(self, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape, dtype=dtype)

    def _build_on(self, x: Any) -> None:
        shape = np.shape(as_values(x, f"{type(self).__name__} {self.name!r}"))
        self.build((None, *shape[1:]) if shape else ())
        self.built = True

    def _compute(self, x: Any) -> Any:
        """The layer's output for data ``x`` (a NumPy array, or a list for ragged output)."""
        raise NotImplementedError

    def forward(self, x: Any, training: bool = False) -> Any:
        """Runs the layer on ``x``; numeric outputs come back as a ``Tensor`` of Keras's
        dtype, strings (an inverted ``StringLookup``) and ragged outputs as NumPy."""
        if not self.built:
            self._build_on(x)
        out = self._compute(x)
        self._cache = (np.shape(as_values(x, f"{type(self).__name__} {self.name!r}")),)
        if isinstance(out, np.ndarray) and out.dtype.kind in "biuf":
            return Tensor._wrap(np.ascontiguousarray(out))
        return out

    def backward(self, grad_output: Any) -> Tensor:
        """Zeros shaped like the input: a preprocessing layer passes no gradient."""
        (in_shape,) = self._require_cache()
        return Tensor(np.zeros(in_shape, dtype=np.float32))

    def backward_params(self, grad_output: Any) -> None:
        """Nothing to fill: the layer has no weights."""
        self._require_cache()
