"""Layers (Keras 3 names and defaults, channels-last)."""

from tinynet.layers.input import Input
from tinynet.layers.layer import Layer, Parameter

__all__ = ["Input", "Layer", "Parameter"]
