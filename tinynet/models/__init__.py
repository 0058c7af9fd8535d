"""Models: ``Sequential``."""

from tinynet.models.sequential import Sequential

__all__ = ["Sequential"]
