"""The losses a model adds to its compiled loss (Keras 3's ``model.losses``), for the
training loop (:mod:`tinynet.models.training`).

As Keras 3's ``Trainer.compute_loss``, in the train and the test step alike, the loss is
the compiled loss plus, unscaled and in this order, every loss the layers added during
the forward pass (``add_loss`` in a ``call()``, activity regularizers: see
:mod:`tinynet.regularizers`) and the penalty of every regularized trainable weight. Their
gradients join the weights' gradients: the added losses through the layers' backward,
the weight penalties after the backward pass (:func:`add_penalty_grads`).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinynet import regularizers

__all__ = ["may_add_losses", "forward_with_losses", "add_penalty_grads", "zeros_for_none"]


def may_add_losses(model: Any) -> bool:
    """Whether a layer may add a loss in its forward pass (a ``call()`` layer, an activity
    regularizer) or has a regularized weight: then ``compile`` needs no ``loss`` (Keras
    trains on the added losses alone)."""
    from tinynet.layers.layer import Layer

    if type(model).call is not Layer.call:  # a subclassed model: its call() may add losses
        return True
    stack = list(model.layers)
    while stack:
        layer = stack.pop()
        if (type(layer).call is not Layer.call
                or getattr(layer, "activity_regularizer", None) is not None
                or any(p.regularizer is not None for p in layer.parameters())):
            return True
        stack.extend(getattr(layer, "layers", None) or [])
    return False


def forward_with_losses(model: Any, xs: list[np.ndarray], training: bool, params: list,
                        where: Callable[[], str] | None = None) -> tuple[list, list, list]:
    """The forward pass of ``model``, the values of the losses to add to its compiled
    loss (those the layers added, in the order they were added, then the penalty of each
    regularized weight of ``params``, the trainable ones) and ``(weight, penalty)`` for
    those weights.

    Raises:
        ValueError: the model has no compiled loss and nothing was added.
    """
    with regularizers.collect_losses() as added:
        preds = model._run_forward(xs, training)
    penalties = [(p, regularizers.penalty(p.regularizer, p.value)) for p in params
                 if p.regularizer is not None]
    extra = [*added, *(value for _, value in penalties)] if penalties else added
    if not model._loss_slots and not extra:
        owner = where() if where is not None else f"{type(model).__name__}.evaluate"
        raise ValueError(f"{owner}: no loss to compute: compile() got no loss and no layer "
                         f"added one (add_loss, regularizers); pass loss= to compile()")
    return preds, extra, penalties


def add_penalty_grads(penalties: list) -> None:
    """Adds each weight penalty's gradient to its weight's gradient (after the backward
    pass, before the optimizer step)."""
    for p, _ in penalties:
        g = regularizers.penalty_grad(p.regularizer, p.value)
        p.grad = g if p.grad is None else p.grad + g


def zeros_for_none(grads: list, preds: list) -> list:
    """The output gradients with zeros for an output no compiled loss reaches (a model
    trained on its added losses alone)."""
    return [np.zeros_like(p) if g is None else g for g, p in zip(grads, preds)]
