"""``Lion``: the sign of an interpolated momentum (Chen et al., 2023), Keras 3 rules."""

from __future__ import annotations

from typing import Callable

from tinynet.optimizers.moments import MomentOptimizer

__all__ = ["Lion"]


class Lion(MomentOptimizer):
    """Lion as Keras 3 implements it.

    Per parameter ``w`` with gradient ``g``::

        w = w - lr * sign(m * beta_1 + g * (1 - beta_1))
        m = m * beta_2 + g * (1 - beta_2)               # slot "momentum"

    A NaN in ``m * beta_1 + g * (1 - beta_1)`` makes the weight NaN (NumPy's, JAX's and
    TensorFlow's ``sign``; Keras on PyTorch takes ``sign(nan) = 0`` and leaves it).
    Keras suggests a learning rate 3-10x smaller, and a weight decay 3-10x larger, than
    for AdamW.

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.001.
        beta_1: Weight of the momentum in the update direction, in ``(0, 1]``.
        beta_2: Decay of the momentum, in ``[0, 1]``.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "lion"
    _rule = "lion"
    _slot_names = ("momentum",)
    _betas = ("(0, 1]", "[0, 1]")
    _config_keys = ("beta_1", "beta_2")

    def __init__(self, learning_rate: float | Callable = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.99, weight_decay: float | None = None,
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None, name: str | None = None) -> None:
        super().__init__(learning_rate, beta_1, beta_2, 0.0, weight_decay, clipnorm, clipvalue,
                         global_clipnorm, name)

    def _step_scalars(self, t, lr):
        return 1.0 - self.beta_1, self.beta_2, (self.beta_1, 1.0 - self.beta_2)
