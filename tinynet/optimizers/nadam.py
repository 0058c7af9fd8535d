"""``Nadam``: Adam with Nesterov momentum, Keras 3 rules (Dozat's momentum schedule)."""

from __future__ import annotations

import numpy as np

from tinynet.optimizers.moments import MomentOptimizer

__all__ = ["Nadam"]


class Nadam(MomentOptimizer):
    """Nadam as Keras 3 implements it.

    Step ``t = iterations + 1``, ``u(s) = beta_1 * (1 - 0.5 * 0.96**s)``; the optimizer
    keeps the product ``u_product = u(1) * ... * u(t)`` (float32, as Keras's variable)::

        u_product = u_product * u(t)                    # once per step, state "u_product"
        m = m + (g - m) * (1 - beta_1)                  # slot "momentum"
        v = v + (g*g - v) * (1 - beta_2)                # slot "velocity"
        m_hat = (u(t+1) * m) / (1 - u_product * u(t+1)) + ((1 - u(t)) * g) / (1 - u_product)
        v_hat = v / (1 - beta_2**t)
        w = w - (m_hat * lr) / (sqrt(v_hat) + epsilon)

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.001.
        beta_1: Decay of the first moment, in ``[0, 1)``.
        beta_2: Decay of the second moment, in ``[0, 1)``.
        epsilon: Non-negative stabilizer added to ``sqrt(v_hat)``.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "nadam"
    _rule = "nadam"

    def _scalar_specs(self) -> list[tuple[str, float]]:
        return [("u_product", 1.0)]

    def _step_scalars(self, t, lr):
        u_t = self.beta_1 * (1.0 - 0.5 * 0.96 ** t)
        u_next = self.beta_1 * (1.0 - 0.5 * 0.96 ** (t + 1))
        product = np.float32(float(self._scalars["u_product"]) * u_t)  # as Keras's variable
        self._scalars["u_product"] = product
        product = float(product)
        return 1.0 - self.beta_1, 1.0 - self.beta_2, (
            u_next, 1.0 - product * u_next, 1.0 - u_t, 1.0 - product, 1.0 - self.beta_2 ** t)
