"""Process-wide hooks that layers call and the loader and models set or read: the
loader's allocation budget, and the count that invalidates the models' cached layer
indexes. Imports nothing from tinynet (``layer`` and ``traced`` both use it)."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["allocation_check", "AllocationRefused", "check_allocation", "structure_changed",
           "structure_epoch", "weights_changed", "weights_epoch"]

#: ``allocation_check.check(layer, what, shape, transient)`` runs before a layer allocates
#: an array at build (a weight, fixed statistics, a trial batch), in the loading thread
#: only (``load_model`` bounds what a file's config may make it allocate:
#: ``tinynet.saving.config.build_model``).
allocation_check = threading.local()


class AllocationRefused(Exception):
    """Raised by the loader's allocation check. Not a ``ValueError``, so that no layer's
    or model's shape error wraps it on the way out; ``load_model`` turns it into a
    ``ValueError`` naming the file."""


def check_allocation(layer: Any, what: str, shape: tuple, transient: bool = False) -> None:
    """Asks the loader's budget (when ``load_model`` is building, in its thread) before
    ``layer`` allocates an array of ``shape`` for ``what`` at build; ``transient`` for an
    array freed at once (a trial batch), else it stays with the layer."""
    check = getattr(allocation_check, "check", None)
    if check is not None:
        check(layer, what, tuple(shape), transient)


# The models' cached indexes of their layers (names, places; ``Sequential.add``) hold while
# this count stays: it grows whenever a Sequential's layers change and whenever a layer
# held by one is renamed, so adding a layer costs O(1), not a walk of the whole model.
_STRUCTURE = [0]


def structure_changed() -> None:
    """Invalidates every model's cached layer index (see ``_STRUCTURE``)."""
    _STRUCTURE[0] += 1


def structure_epoch() -> int:
    return _STRUCTURE[0]


# The models' cached lists of trainable parameters (``Trainer._step_state``) hold while this
# count and ``_STRUCTURE`` stay: it grows whenever a layer gains a weight, a weight's or a
# layer's ``trainable`` flag is set, a layer is renamed or a layer starts tracking
# sub-layers.
_WEIGHTS = [0]


def weights_changed() -> None:
    """Invalidates every model's cached parameter lists (see ``_WEIGHTS``)."""
    _WEIGHTS[0] += 1


def weights_epoch() -> int:
    return _WEIGHTS[0]
