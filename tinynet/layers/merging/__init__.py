"""Merging layers: several inputs in, one output (Keras 3 names and semantics)."""

from tinynet.layers.merging.add import Add
from tinynet.layers.merging.average import Average
from tinynet.layers.merging.concatenate import Concatenate
from tinynet.layers.merging.maximum import Maximum
from tinynet.layers.merging.minimum import Minimum
from tinynet.layers.merging.multiply import Multiply
from tinynet.layers.merging.subtract import Subtract

__all__ = ["Add", "Average", "Concatenate", "Maximum", "Minimum", "Multiply", "Subtract"]
