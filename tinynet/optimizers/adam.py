"""``Adam``: adaptive moment estimation, Keras 3 rules (epsilon outside the sqrt)."""

from __future__ import annotations

import math
from typing import Callable

from tinynet.layers.layer import check_bool
from tinynet.optimizers.moments import MomentOptimizer

__all__ = ["Adam"]


class Adam(MomentOptimizer):
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
        amsgrad: Use the AMSGrad variant (Reddi et al., 2018): divide by the largest
            ``v`` seen so far instead of the current one.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "adam"
    _config_keys = ("beta_1", "beta_2", "epsilon", "amsgrad")

    def __init__(self, learning_rate: float | Callable = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, beta_1, beta_2, epsilon, weight_decay, clipnorm,
                         clipvalue, global_clipnorm, name)
        self.amsgrad = check_bool(amsgrad, "amsgrad", type(self).__name__)

    def _slot_specs(self) -> list[tuple[str, float]]:
        return super()._slot_specs() + ([("velocity_hat", 0.0)] if self.amsgrad else [])

    def _step_scalars(self, t, lr):
        alpha = lr * math.sqrt(1.0 - self.beta_2 ** t) / (1.0 - self.beta_1 ** t)
        return 1.0 - self.beta_1, 1.0 - self.beta_2, (alpha,)
