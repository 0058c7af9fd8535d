"""``Adamax``: Adam with the infinity norm, Keras 3 rules."""

from __future__ import annotations

from tinynet.optimizers.moments import MomentOptimizer

__all__ = ["Adamax"]


class Adamax(MomentOptimizer):
    """Adamax (Kingma & Ba, section 7.1) as Keras 3 implements it.

    Step ``t = iterations + 1``; per parameter ``w`` with gradient ``g``::

        m = m + (g - m) * (1 - beta_1)                  # slot "momentum"
        u = max(beta_2 * u, |g|)                        # slot "norm"
        w = w - (lr * m) / ((1 - beta_1**t) * (u + epsilon))

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.001.
        beta_1: Decay of the first moment, in ``[0, 1)``.
        beta_2: Decay of the infinity norm, in ``[0, 1]``.
        epsilon: Non-negative stabilizer added to ``u``.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "adamax"
    _rule = "adamax"
    _slot_names = ("momentum", "norm")
    _betas = ("[0, 1)", "[0, 1]")

    def _step_scalars(self, t, lr):
        return 1.0 - self.beta_1, self.beta_2, (1.0 - self.beta_1 ** t,)
