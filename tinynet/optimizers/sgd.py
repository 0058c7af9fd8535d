"""``SGD``: gradient descent with optional (Nesterov) momentum, Keras 3 rules."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.ops.arrays import optimizers as updates
from tinynet.optimizers.optimizer import Optimizer, check_float

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent, with momentum and Nesterov momentum as in Keras 3.

    Update per parameter ``w`` with gradient ``g`` (after clipping and weight decay)::

        momentum == 0:  w = w - lr * g
        otherwise:      m = momentum * m - lr * g            # slot "momentum", starts at 0
                        w = w + m                              # nesterov=False
                        w = w + (momentum * m - lr * g)        # nesterov=True

    Args:
        learning_rate: Step size (or a schedule ``f(iterations)``). Defaults to 0.01.
        momentum: Float in ``[0, 1]``; 0 is plain gradient descent.
        nesterov: Use Nesterov momentum.
        weight_decay, clipnorm, clipvalue, global_clipnorm, name: See :class:`Optimizer`.
    """

    _default_name = "SGD"

    def __init__(self, learning_rate: float | Callable = 0.01, momentum: float = 0.0,
                 nesterov: bool = False, weight_decay: float | None = None,
                 clipnorm: float | None = None, clipvalue: float | None = None,
                 global_clipnorm: float | None = None, name: str | None = None) -> None:
        super().__init__(learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name)
        self.momentum = check_float(momentum, "momentum", "SGD", high=1.0, high_open=False,
                                    expected="a float in [0, 1]")
        self.nesterov = check_bool(nesterov, "nesterov", "SGD")

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [("momentum", 0.0)] if self.momentum != 0 else []

    def _update(self, w, g, slots, lr, common) -> None:
        use_momentum = "momentum" in slots
        updates.sgd_update(w, g, self._flat(slots, "momentum"), lr, np.float32(self.momentum),
                            use_momentum, self.nesterov, common)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"momentum": self.momentum, "nesterov": self.nesterov})
        return config
