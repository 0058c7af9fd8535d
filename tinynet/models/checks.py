"""Checks of ``fit``'s arguments: ``validation_freq``, and the check ``fit``,
``evaluate`` and ``train_on_batch`` make of the targets before the first forward pass:
each output's labels against its loss, from the model's output shapes, so a label/loss
mismatch (one-hot labels with a sparse loss, class indices with ``BinaryCrossentropy``)
fails at once, naming the loss that fits the labels, and not after the first batch's
forward pass (whose kernels may take long to compile)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["check_targets", "check_validation_freq"]


def check_targets(model: Any, ys: list[np.ndarray], owner: str) -> None:
    """Raises the error each output's loss would raise on ``ys`` (one target array per
    output), prefixed with ``owner`` (and the output's name when there are several)."""
    slots = getattr(model, "_loss_slots", None)
    if not slots:
        return
    try:
        shapes = model.output_shape
        names = list(model.output_names)
    except Exception:  # noqa: BLE001 - no shapes yet (a model without them): the losses
        return         # check the first batch, as they always do
    shapes = shapes if isinstance(shapes, list) else [shapes]
    for i, loss, _ in slots:
        check = getattr(loss, "check_targets", None)
        shape = shapes[i] if i < len(shapes) else None
        if (check is None or not isinstance(shape, tuple) or not shape
                or any(not isinstance(d, int) for d in shape[1:])):
            continue
        try:
            check(ys[i], (ys[i].shape[0], *shape[1:]))
        except (ValueError, TypeError) as exc:
            where = f"{owner}: " if len(names) == 1 else f"{owner}: output {names[i]!r}: "
            raise type(exc)(where + str(exc)) from None


def check_validation_freq(value: Any, owner: str) -> Callable[[int], bool]:
    """``fit``'s ``validation_freq`` as a test of a 1-based epoch: a positive int (every
    that many epochs) or a list of positive ints (those epochs)."""
    what = (f"{owner}: validation_freq must be a positive int or a non-empty list of "
            f"positive ints, got {value!r}")
    if isinstance(value, list):
        if not value or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                and v >= 1 for v in value):
            raise ValueError(what)
        chosen = {int(v) for v in value}
        return lambda epoch: epoch in chosen
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(what)
    if value < 1:
        raise ValueError(what)
    every = int(value)
    return lambda epoch: epoch % every == 0
