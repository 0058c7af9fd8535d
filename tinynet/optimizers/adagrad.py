"""``Adagrad``: Keras 3 rules (accumulator starts at ``initial_accumulator_value``)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tinynet.ops.arrays import optimizers as updates
from tinynet.optimizers.optimizer import Optimizer, check_float

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad as Keras 3 implements it.

    Per parameter ``w`` with gradient ``g``::

        acc = acc + g*g                                   # slot "accumulator"
        w = w - lr * g / sqrt(acc + epsilon)

    PyTorch's ``Adagrad`` adds ``eps`` outside the sqrt instead.

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.001.
        initial_accumulator_value: Non-negative starting value of the accumulator.
        epsilon: Non-negative stabilizer added under the sqrt.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "adagrad"

    def __init__(self, learning_rate: float | Callable = 0.001,
                 initial_accumulator_value: float = 0.1, epsilon: float = 1e-7,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name)
        self.initial_accumulator_value = check_float(
            initial_accumulator_value, "initial_accumulator_value", "Adagrad")
        self.epsilon = check_float(epsilon, "epsilon", "Adagrad")

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [("accumulator", self.initial_accumulator_value)]

    def _update(self, w, g, slots, lr, common) -> None:
        updates.adagrad_update(w, g, slots["accumulator"].reshape(-1), lr,
                                np.float32(self.epsilon), common)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"initial_accumulator_value": self.initial_accumulator_value,
                       "epsilon": self.epsilon})
        return config
