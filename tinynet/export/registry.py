"""The converter registry: one function per tinynet layer class, found by exact class.

A converter is ``fn(builder, layer, x, shape) -> str``: it appends the layer's inference
computation to the :class:`~tinynet.export.builder.OnnxBuilder` and returns the name of
its output value. ``x`` is the input value's name and ``shape`` the input's shape (batch
axis ``None``); a layer with several inputs (``multiple_inputs``) gets lists of both.

A converter registered with ``unknown_sizes=True`` also works when a non-batch size of
its input is unknown (a ``None`` sequence length: ONNX's symbolic dimension); one with
``integer_inputs=True`` takes an integer input as it is (``Embedding``'s ids), where the
exporter casts it to float32 for every other layer, as tinynet computes.

Lookup is by the exact class (``type(layer)``): a subclass of a tinynet layer may compute
something else (it overrides ``forward``), so it has no export unless one is registered
for it.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

__all__ = ["converts", "converter_for", "exported_names", "takes_integers",
           "takes_unknown_sizes"]

Converter = Callable[..., str]

_CONVERTERS: dict[str, Converter] = {}
_UNKNOWN_SIZES: set[str] = set()
_INTEGER_INPUTS: set[str] = set()
_MODULES = ("tinynet.export.convert_basic", "tinynet.export.convert_conv",
            "tinynet.export.convert_image", "tinynet.export.convert_norm",
            "tinynet.export.convert_recurrent", "tinynet.export.convert_attention")
_loaded = False


def converts(*names: str, unknown_sizes: bool = False,
             integer_inputs: bool = False) -> Callable[[Converter], Converter]:
    """Registers the decorated function for the ``tinynet.layers`` classes ``names``
    (``unknown_sizes``, ``integer_inputs``: what it can take, as the module says)."""

    def decorate(fn: Converter) -> Converter:
        for name in names:
            _CONVERTERS[name] = fn
            (_UNKNOWN_SIZES.add if unknown_sizes else _UNKNOWN_SIZES.discard)(name)
            (_INTEGER_INPUTS.add if integer_inputs else _INTEGER_INPUTS.discard)(name)
        return fn

    return decorate


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in _MODULES:
            importlib.import_module(module)
        _loaded = True


def exported_names() -> list[str]:
    """The names of the ``tinynet.layers`` classes that have a converter, sorted."""
    _load()
    return sorted(_CONVERTERS)


def converter_for(layer: Any) -> Converter | None:
    """The converter of ``layer``'s exact class, or ``None``."""
    _load()
    cls = type(layer)
    fn = _CONVERTERS.get(cls.__name__)
    if fn is None:
        return None
    import tinynet.layers as layers_module

    return fn if getattr(layers_module, cls.__name__, None) is cls else None


def takes_unknown_sizes(layer: Any) -> bool:
    """Whether ``layer``'s converter works with an unknown non-batch input size."""
    return converter_for(layer) is not None and type(layer).__name__ in _UNKNOWN_SIZES


def takes_integers(layer: Any) -> bool:
    """Whether ``layer``'s converter takes integer inputs as they are."""
    return converter_for(layer) is not None and type(layer).__name__ in _INTEGER_INPUTS
