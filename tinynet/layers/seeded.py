"""A layer's own random generator (Dropout, the augmentation layers)."""

from __future__ import annotations

import numpy as np

from tinynet.random import make_rng

__all__ = ["OwnGenerator"]


class OwnGenerator:
    """Mixin before ``Layer``: ``rng``, the layer's ``numpy.random.Generator``, made with
    ``make_rng(self.seed)`` on first use (so building a model draws nothing) and settable
    (``load_model`` puts a saved state back; :mod:`tinynet.saving.state` saves any layer's
    ``rng``). The layer sets ``self.seed`` and ``self._rng = None``."""

    _rng: np.random.Generator | None = None

    @property
    def rng(self) -> np.random.Generator:
        """The layer's generator, created with ``make_rng(self.seed)`` on first access."""
        if self._rng is None:
            self._rng = make_rng(self.seed)
        return self._rng

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        if not isinstance(value, np.random.Generator):
            raise TypeError(
                f"{type(self).__name__} {self.name!r}: rng must be a numpy.random.Generator, "
                f"got {type(value).__name__}")
        self._rng = value
