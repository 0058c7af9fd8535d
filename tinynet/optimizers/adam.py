"""``Adam``: adaptive moment estimation, Keras 3 rules (epsilon outside the sqrt)."""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.optimizers import updates
from tinynet.optimizers.optimizer import Optimizer, check_float

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam as Keras 3 implements it.

    Step ``t = iterations + 1``; per parameter ``w`` with gradient ``g``::

        alpha = lr * sqrt(1 - beta_2**t) / (1 - beta_1**t)
        m = m + (g - m) * (1 - beta_1)                   # slot "momentum"
        v = v + (g*g - v) * (1 - beta_2)                 # slot "velocity"
        v_hat = max(v_hat, v); v = v_hat                 # amsgrad only, slot "velocity_hat"
        w = w - (m * alpha) / (sqrt(v) + epsilon)

    ``epsilon`` is the paper's "epsilon hat": PyTorch's ``eps`` equals
    ``epsilon / sqrt(1 - beta_2**t)`` here (see docs/optimizers.md).

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.001.
        beta_1: Decay of the first moment, in ``[0, 1)``.
        beta_2: Decay of the second moment, in ``[0, 1)``.
        epsilon: Non-negative stabilizer added to ``sqrt(v)``.
        amsgrad: Use the AMSGrad variant.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "adam"

    def __init__(self, learning_rate: float | Callable = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name)
        owner = type(self).__name__
        self.beta_1 = check_float(beta_1, "beta_1", owner, high=1.0,
                                  expected="a float in [0, 1)")
        self.beta_2 = check_float(beta_2, "beta_2", owner, high=1.0,
                                  expected="a float in [0, 1)")
        self.epsilon = check_float(epsilon, "epsilon", owner)
        self.amsgrad = check_bool(amsgrad, "amsgrad", owner)
        self._alpha = np.float32(0.0)

    def _slot_specs(self) -> list[tuple[str, float]]:
        specs = [("momentum", 0.0), ("velocity", 0.0)]
        if self.amsgrad:
            specs.append(("velocity_hat", 0.0))
        return specs

    def _prepare_step(self, lr: float) -> None:
        t = self.iterations + 1
        self._alpha = np.float32(lr * math.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t))

    def _update(self, w, g, slots, lr, common) -> None:
        updates.adam_update(w, g, slots["momentum"].reshape(-1), slots["velocity"].reshape(-1),
                             self._flat(slots, "velocity_hat"), self._alpha,
                             np.float32(1.0 - self.beta_1), np.float32(1.0 - self.beta_2),
                             np.float32(self.epsilon), self.amsgrad, lr, common)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                       "amsgrad": self.amsgrad})
        return config
