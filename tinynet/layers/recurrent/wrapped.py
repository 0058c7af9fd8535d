"""What the wrappers (Bidirectional, TimeDistributed) share: the inner layer's config
entry (Keras's ``{"class_name", "config"}`` form) and its rebuilding from the layer
registry (never code from a file)."""

from __future__ import annotations

from typing import Any

from tinynet.layers import registry
from tinynet.layers.hooks import weights_changed
from tinynet.layers.layer import Layer

__all__ = ["check_layer", "layer_entry", "layer_from_entry", "hold"]


def check_layer(layer: Any, arg: str, owner: str) -> Layer:
    """``layer`` must be a tinynet Layer instance."""
    if not isinstance(layer, Layer):
        raise TypeError(f"{owner}: {arg} must be a tinynet Layer instance, got "
                        f"{type(layer).__name__}: {layer!r:.80}")
    return layer


def layer_entry(layer: Layer) -> dict:
    """Keras's serialized form of a wrapped layer."""
    return {"module": "keras.layers", "class_name": registry.registered_name_or_class(type(layer)),
            "config": layer.get_config(), "registered_name": None}


def layer_from_entry(entry: Any, arg: str, owner: str) -> Layer:
    """A layer rebuilt from :func:`layer_entry`'s form (or a layer, returned as it is)."""
    if isinstance(entry, Layer):
        return entry
    if (not isinstance(entry, dict) or not isinstance(entry.get("class_name"), str)
            or not isinstance(entry.get("config"), dict)):
        raise ValueError(f"{owner}: {arg} must be a layer or a {{'class_name': str, "
                         f"'config': dict}} entry, got {entry!r:.80}")
    cls = registry.registered_layers().get(entry["class_name"])
    if cls is None:
        raise ValueError(f"{owner}: {arg}: unknown layer class {entry['class_name']!r}")
    return cls.from_config(entry["config"])


def hold(wrapper: Layer, **layers: Layer) -> None:
    """Makes ``layers`` the wrapper's sub-layers: their weights are the wrapper's (named
    ``<sub-layer>/<weight>``), and freezing the wrapper freezes them."""
    wrapper.__dict__["_sublayers"] = {key: [layer] for key, layer in layers.items()}
    weights_changed()
