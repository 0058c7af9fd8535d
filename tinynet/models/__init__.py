"""Models: ``Sequential`` (a stack of layers) and ``Model`` (a functional graph)."""

from tinynet.models.functional import Model
from tinynet.models.sequential import Sequential

__all__ = ["Model", "Sequential"]
