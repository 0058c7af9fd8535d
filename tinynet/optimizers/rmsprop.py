"""``RMSprop``: Keras 3 rules (epsilon inside the sqrt, optional momentum and centering)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.ops.arrays import optimizers as updates
from tinynet.optimizers.optimizer import Optimizer, check_float

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop as Keras 3 implements it.

    Per parameter ``w`` with gradient ``g``::

        v = rho * v + (1 - rho) * g*g                     # slot "velocity"
        a = rho * a + (1 - rho) * g                       # centered only, "average_gradient"
        denom = v - a*a + epsilon   (centered)   or   v + epsilon
        inc = lr * g / sqrt(denom)
        m = momentum * m + inc; w = w - m                 # momentum > 0, slot "momentum"
        w = w - inc                                       # momentum == 0

    PyTorch's ``RMSprop(alpha=rho)`` adds ``eps`` outside the sqrt instead.

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.001.
        rho: Discount of the squared-gradient average, in ``[0, 1)``.
        momentum: Float in ``[0, 1]``; 0 disables momentum.
        epsilon: Non-negative stabilizer added under the sqrt.
        centered: Normalize by the estimated variance instead of the second moment.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "rmsprop"

    def __init__(self, learning_rate: float | Callable = 0.001, rho: float = 0.9,
                 momentum: float = 0.0, epsilon: float = 1e-7, centered: bool = False,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name)
        self.rho = check_float(rho, "rho", "RMSprop", high=1.0, expected="a float in [0, 1)")
        self.momentum = check_float(momentum, "momentum", "RMSprop", high=1.0,
                                    high_open=False, expected="a float in [0, 1]")
        self.epsilon = check_float(epsilon, "epsilon", "RMSprop")
        self.centered = check_bool(centered, "centered", "RMSprop")

    def _slot_specs(self) -> list[tuple[str, float]]:
        specs = [("velocity", 0.0)]
        if self.momentum > 0:
            specs.append(("momentum", 0.0))
        if self.centered:
            specs.append(("average_gradient", 0.0))
        return specs

    def _update(self, w, g, slots, lr, common) -> None:
        updates.rmsprop_update(
            w, g, slots["velocity"].reshape(-1), self._flat(slots, "momentum"),
            self._flat(slots, "average_gradient"), lr, np.float32(self.rho),
            np.float32(1.0 - self.rho), np.float32(self.momentum), "momentum" in slots,
            self.centered, np.float32(self.epsilon), common)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                       "centered": self.centered})
        return config
