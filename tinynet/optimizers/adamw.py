"""``AdamW``: Adam with decoupled weight decay (Keras 3 rules)."""

from __future__ import annotations

from typing import Callable

from tinynet.optimizers.adam import Adam

__all__ = ["AdamW"]


class AdamW(Adam):
    """Adam with decoupled weight decay, as Keras 3 (Loshchilov & Hutter).

    Before each Adam step (see :class:`Adam`), every parameter not excluded with
    :meth:`exclude_from_weight_decay` decays: ``w = w - (w * weight_decay) * lr``.
    This equals PyTorch's ``AdamW`` decay ``w *= 1 - lr * weight_decay``.

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.001.
        weight_decay: Non-negative decay rate. Defaults to 0.004 (None is an error).
        beta_1, beta_2, epsilon, amsgrad: As :class:`Adam`.
        clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "adamw"

    def __init__(self, learning_rate: float | Callable = 0.001, weight_decay: float = 0.004,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 amsgrad: bool = False, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 name: str | None = None) -> None:
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a non-negative float, got None")
        super().__init__(learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         amsgrad=amsgrad, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name)
