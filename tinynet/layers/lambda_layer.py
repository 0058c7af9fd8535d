"""``Lambda``: a layer from a function written with :mod:`tinynet.ops` (Keras 3's
``keras.layers.Lambda``).

The layer's ``call`` is ``function(inputs, **arguments)``; its backward comes from the
automatic differentiation of the ops the function runs, as for any ``call()`` layer (a
function that leaves the ops for NumPy gets the error naming the layer at backward).

Saving: Keras stores a Python lambda's bytecode in the file and runs it on load (in its
unsafe mode). tinynet never stores or runs code from a file: a ``Lambda`` saves its
function by the name it is registered under
(``@tinynet.saving.register_keras_serializable()``), and ``load_model`` looks that name up
(``custom_objects``, ``custom_object_scope``, the registry). Saving a ``Lambda`` whose
function is not registered (a Python ``lambda``, say) raises a ``ValueError`` that says
so; for anything with weights or state, write a custom layer (a registered ``Layer``
subclass with ``call()``). A ``Lambda`` has no ONNX export (a function is arbitrary
Python code).
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable

from tinynet.layers.layer import Layer

__all__ = ["Lambda"]


def _expects(function: Callable, arg: str) -> bool:
    try:
        return arg in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False


def _check_output_shape(value: Any) -> Any:
    """``None``, a callable, or a shape without the batch axis (a tuple of ints or
    ``None``; a list of such shapes for several outputs)."""
    what = ("Lambda: output_shape must be None, a tuple of ints (the output shape without "
            "the batch axis), a list of such tuples or a callable input_shape -> "
            f"output_shape, got {value!r}")
    if value is None or callable(value):
        return value

    def one(shape: Any) -> tuple:
        if isinstance(shape, (int,)) and not isinstance(shape, bool):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)):
            raise TypeError(what)
        for d in shape:
            if d is not None and (isinstance(d, bool) or not isinstance(d, int)):
                raise TypeError(what)
            if d is not None and d < 0:
                raise ValueError(what)
        return tuple(shape)

    if isinstance(value, list) and value and all(isinstance(s, (tuple, list)) for s in value):
        return [one(s) for s in value]
    return one(value)


def _function_config(fn: Callable, arg: str, owner: str) -> dict:
    """Keras's config of a registered function; a ``ValueError`` for any other."""
    from tinynet.custom_objects import get_registered_name, get_registered_object

    name = get_registered_name(fn)
    if get_registered_object(name) is fn:
        return {"module": "builtins", "class_name": "function", "config": name,
                "registered_name": "function"}
    shown = getattr(fn, "__name__", type(fn).__name__)
    what = "a Python lambda" if shown == "<lambda>" else f"the function {shown!r}"
    raise ValueError(
        f"{owner}: cannot save its {arg}, {what}: tinynet never stores code in a file (Keras "
        f"stores a lambda's bytecode; tinynet does not). Register the function with "
        f"@tinynet.saving.register_keras_serializable() so that the file names it, or "
        f"write a custom layer instead (a Layer subclass with call(), registered the same "
        f"way)")


def _function_from_config(entry: Any, arg: str, owner: str,
                          custom_objects: dict | None) -> Callable:
    from tinynet.custom_objects import lookup

    if isinstance(entry, dict) and entry.get("class_name") == "__lambda__":
        raise ValueError(f"{owner}: {arg} is a Python lambda stored as bytecode (a Keras "
                         f"file); tinynet never runs code from a file. Register the "
                         f"function with @tinynet.saving.register_keras_serializable() and "
                         f"save the model from tinynet, or write a custom layer")
    name = entry.get("config") if isinstance(entry, dict) else entry
    fn = lookup(name, f"{owner}: {arg}", custom_objects)
    if not callable(fn):
        raise ValueError(f"{owner}: {arg} {name!r} names {fn!r:.80}, not a function")
    return fn


class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` (written with :mod:`tinynet.ops`) as a layer.

    Args:
        function: The computation, ``function(inputs)`` with ops (``inputs`` a tensor, or
            a list of tensors when the layer is called on a list). If it takes ``training``
            (or ``mask``) by name, it gets the call's ``training`` flag (or ``None``).
        output_shape: The output shape without the batch axis (a tuple, or a list of
            tuples for several outputs), or a callable ``input_shape -> output_shape``
            (batch axis included); by default found by running ``function`` on a small
            zero batch.
        mask: Kept for Keras compatibility (``None`` or a callable); tinynet layers carry
            no masks.
        arguments: Extra keyword arguments for ``function`` (a dict; JSON values to save).
        name: Layer name (default ``lambda``).
        trainable, input_shape, dtype: As for every layer.

    Raises:
        TypeError: ``function`` is not callable, or a bad ``output_shape``, ``mask`` or
            ``arguments``.
    """

    supports_masking = True  # a mask passes through (Keras)

    takes_custom_objects = True

    def __init__(self, function: Callable, output_shape: Any = None, mask: Any = None,
                 arguments: dict | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(function) or isinstance(function, type):
            raise TypeError(f"Lambda: function must be a function (written with "
                            f"tinynet.ops), got {function!r:.80}")
        if mask is not None and not callable(mask):
            raise TypeError(f"Lambda: mask must be None or a callable, got {mask!r:.80}")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict) or not all(isinstance(k, str) for k in arguments):
            raise TypeError(f"Lambda: arguments must be a dict of keyword arguments for "
                            f"the function, got {arguments!r:.80}")
        self.function = function
        self._output_shape = _check_output_shape(output_shape)
        self.mask = mask
        self.arguments = dict(arguments)
        self._fn_expects_training_arg = _expects(function, "training")
        self._fn_expects_mask_arg = _expects(function, "mask")

    def call(self, inputs: Any, training: Any = None) -> Any:
        kwargs = dict(self.arguments)
        if self._fn_expects_mask_arg:
            kwargs["mask"] = None
        if self._fn_expects_training_arg:
            kwargs["training"] = training
        return self.function(inputs, **kwargs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """From ``output_shape`` when given (the batch axis added to a tuple), else by
        running ``function`` on a small zero batch."""
        first = input_shape[0] if isinstance(input_shape, list) else input_shape
        batch = first[0] if len(first) else None
        if self._output_shape is None:  # the batch axis as the input's
            from tinynet.layers import traced

            out = traced.placeholder_output_shape(self, input_shape)
            if isinstance(out, list):
                return [(batch, *s[1:]) for s in out]
            return (batch, *out[1:])
        if callable(self._output_shape):
            out = self._output_shape(input_shape)
            return [tuple(s) for s in out] if isinstance(out, list) else tuple(out)
        if isinstance(self._output_shape, list):
            return [(batch, *s) for s in self._output_shape]
        return (batch, *self._output_shape)

    def get_config(self) -> dict:
        """The config, the functions by their registered names.

        Raises:
            ValueError: ``function`` (or a callable ``output_shape`` or ``mask``) is not
                registered with ``tinynet.saving.register_keras_serializable``, or
                ``arguments`` holds values JSON cannot store.
        """
        owner = f"Lambda {self.name!r}"
        config = super().get_config()
        config["function"] = _function_config(self.function, "function", owner)
        if self._output_shape is not None:
            if callable(self._output_shape):
                config["output_shape"] = _function_config(self._output_shape,
                                                          "output_shape", owner)
            elif isinstance(self._output_shape, list):
                config["output_shape"] = [list(s) for s in self._output_shape]
            else:
                config["output_shape"] = list(self._output_shape)
        if self.mask is not None:
            config["mask"] = _function_config(self.mask, "mask", owner)
        try:
            json.dumps(self.arguments, allow_nan=False)
        except (TypeError, ValueError):
            raise ValueError(f"{owner}: cannot save arguments {self.arguments!r:.120}: "
                             f"only JSON values (numbers, strings, lists, dicts) can be "
                             f"saved; write a custom layer for anything else") from None
        config["arguments"] = dict(self.arguments)
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Lambda":
        """Rebuilds the layer, looking its functions up by registered name.

        Raises:
            ValueError: a function name that nothing registers, or a Keras file's lambda
                bytecode (never run).
        """
        config = dict(config)
        owner = "Lambda.from_config"
        config["function"] = _function_from_config(config.get("function"), "function",
                                                   owner, custom_objects)
        shape = config.get("output_shape")
        if isinstance(shape, dict) or isinstance(shape, str):
            config["output_shape"] = _function_from_config(shape, "output_shape", owner,
                                                           custom_objects)
        elif isinstance(shape, list):
            config["output_shape"] = ([tuple(s) for s in shape]
                                      if shape and all(isinstance(s, list) for s in shape)
                                      else tuple(shape))
        if config.get("mask") is not None:
            config["mask"] = _function_from_config(config["mask"], "mask", owner,
                                                   custom_objects)
        if config.get("input_shape") is not None:
            config["input_shape"] = tuple(config["input_shape"])
        return cls(**config)
