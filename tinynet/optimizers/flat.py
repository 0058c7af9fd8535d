"""One optimizer kernel call for every parameter: weights and slots as views of flat buffers.

The update rules are elementwise, so updating the concatenation of all parameters at once
gives the same bits as updating each on its own; what it saves is the Python and the
kernel dispatch per parameter (a small model's step updates a dozen small arrays).
"""

from __future__ import annotations

import numpy as np

from tinynet.layers.layer import Parameter

__all__ = ["FlatGroup"]


class FlatGroup:
    """Parameters whose weights and slots live in one flat float32 buffer each.

    Building the group copies each weight and slot into its buffer and points the
    parameter (and the slot dict) at a view of it. Anything that later replaces a
    weight or slot array (``p.value = ...``) breaks the link, which :meth:`matches`
    notices; the optimizer then builds a new group from the current arrays (and drops its
    group when ``set_state`` replaces the slot dicts).

    Args:
        params: Distinct parameters, in update order.
        slots: The optimizer's per-parameter slot dicts (same order), updated in place.
    """

    __slots__ = ("views", "slot_dicts", "key", "w", "g", "slots")

    def __init__(self, params: list[Parameter], slots: list[dict[str, np.ndarray]]) -> None:
        sizes = [p.value.size for p in params]
        ends = np.cumsum([0, *sizes])
        total = int(ends[-1])
        self.slot_dicts = list(slots)
        self.w = np.empty(total, dtype=np.float32)
        self.g = np.empty(total, dtype=np.float32)
        names = list(slots[0]) if slots else []
        self.slots = {name: np.empty(total, dtype=np.float32) for name in names}
        self.views: list[np.ndarray] = []
        for p, own, lo, hi in zip(params, slots, ends[:-1], ends[1:]):
            view = self.w[lo:hi].reshape(p.value.shape)
            view[...] = p.value
            p.value = view
            self.views.append(view)
            for name in names:
                sview = self.slots[name][lo:hi].reshape(p.value.shape)
                sview[...] = own[name]
                own[name] = sview
                self.views.append(sview)
        self.key = self._key(params)

    def _key(self, params: list[Parameter]) -> list[int]:
        # The identities of each parameter, its weight array and its slot arrays. The group
        # keeps its views alive, so no other live array can have a view's id.
        key = [id(p) for p in params]
        key += [id(p.value) for p in params]
        key += [id(a) for d in self.slot_dicts for a in d.values()]
        return key

    def matches(self, params: list[Parameter]) -> bool:
        """Whether ``params`` are this group's, each weight and slot still one of its views."""
        return self._key(params) == self.key

    def gather(self, grads: list[np.ndarray]) -> np.ndarray:
        """The gradients (flat, in parameter order) copied into one buffer."""
        np.concatenate(grads, axis=None, out=self.g)
        return self.g
