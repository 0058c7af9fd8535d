"""What a training step updates: the trainable parameters, and backups of the statistics a
training forward pass changes (for :class:`tinynet.models.training.Trainer`).

Walking every layer's weights (their paths set on the way) costs a step of
``train_on_batch`` as much as a small layer's pass, so the lists are kept on the model
while neither of ``layers.hooks``' counts moved: no layer was added, removed or renamed,
gained a weight or sub-layers, and no ``trainable`` flag was set since.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.hooks import structure_epoch, weights_epoch

__all__ = ["step_state"]

# In the key, so a copy of the lists that a pickled or deep-copied model carries is never
# taken for this process's (the copy's token is another object).
_TOKEN = object()


def step_state(model: Any) -> tuple[list, list[tuple[Any, np.ndarray]]]:
    """``model``'s trainable parameters (a new list each call) and ``(parameter, backup)``
    for the non-trainable parameters of its trainable layers (e.g. BatchNormalization's
    moving statistics), the backups reused while their shapes hold."""
    key = (structure_epoch(), weights_epoch())
    kept = model.__dict__.get("_step_kept")
    if kept is not None and kept[0] is _TOKEN and kept[1] == key and all(
            backup.shape == p.value.shape for p, backup in kept[3]):
        return list(kept[2]), kept[3]
    guarded = [p for layer in model.layers if layer.trainable
               for p in layer.parameters() if not p.trainable]
    params = model.trainable_parameters()
    guard = [(p, np.empty_like(p.value)) for p in guarded]
    model.__dict__["_step_kept"] = (_TOKEN, key, params, guard)
    return list(params), guard
