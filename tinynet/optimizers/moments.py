"""``MomentOptimizer``: what Adam, AdamW, Nadam, Adamax and Lion share.

They all keep a first moment ("momentum" slot) and run one kernel
(:func:`tinynet.ops.arrays.optimizers.moments_update`), a ``rule`` apart. Each subclass
states its rule, its slots, the ranges of ``beta_1`` and ``beta_2``, its config keys and
its per-step scalars (:meth:`MomentOptimizer._step_scalars`); this class checks the
arguments, computes the scalars once per step (float64, rounded once to float32) and
calls the kernel.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from tinynet.ops.arrays import optimizers as updates
from tinynet.optimizers.checks import check_float, check_unit_interval
from tinynet.optimizers.optimizer import Optimizer

__all__ = ["MomentOptimizer"]

_F32 = np.float32
_K = 5  # the kernel's per-step scalars


class MomentOptimizer(Optimizer):
    """Base of the first-moment optimizers (see the module docstring).

    Class attributes of a subclass: ``_rule`` (the update rule's name, one of
    :data:`tinynet.ops.arrays.optimizers.MOMENT_RULES`), ``_slot_names`` (slots,
    created zero-filled; the second one is the kernel's ``v``), ``_betas`` (the intervals
    of ``beta_1`` and ``beta_2``) and ``_config_keys`` (the attributes ``get_config``
    adds; ``epsilon`` among them means the optimizer takes one). The constructor's
    arguments and defaults are Keras's Nadam and Adamax ones (which keep it); Adam and
    Lion define their own.
    """

    _rule = "adam"
    _slot_names: tuple[str, ...] = ("momentum", "velocity")
    _betas = ("[0, 1)", "[0, 1)")
    _config_keys: tuple[str, ...] = ("beta_1", "beta_2", "epsilon")
    amsgrad = False

    def __init__(self, learning_rate: float | Callable = 0.001, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 name: str | None = None) -> None:
        super().__init__(learning_rate, weight_decay=weight_decay, clipnorm=clipnorm,
                         clipvalue=clipvalue, global_clipnorm=global_clipnorm, name=name)
        owner = type(self).__name__
        self.beta_1 = check_unit_interval(beta_1, "beta_1", owner, self._betas[0])
        self.beta_2 = check_unit_interval(beta_2, "beta_2", owner, self._betas[1])
        if "epsilon" in self._config_keys:
            self.epsilon = check_float(epsilon, "epsilon", owner)
        self._step: tuple = ()

    def _slot_specs(self) -> list[tuple[str, float]]:
        return [(name, 0.0) for name in self._slot_names]

    def _step_scalars(self, t: int, lr: float) -> tuple[float, float, tuple[float, ...]]:
        """``(one_minus_b1, b2, k)`` of step ``t`` (float64; see the kernel's rules), once
        per step: it may advance the optimizer's own scalars (Nadam's ``u_product``)."""
        raise NotImplementedError(f"{type(self).__name__}._step_scalars")  # pragma: no cover

    def _prepare_step(self, lr: float) -> None:
        one_minus_b1, b2, k = self._step_scalars(self.iterations + 1, lr)
        k32 = tuple(_F32(x) for x in k) + (_F32(0.0),) * (_K - len(k))
        self._step = (_F32(one_minus_b1), _F32(b2), k32, _F32(getattr(self, "epsilon", 0.0)))

    def _update(self, w, g, slots, lr, common) -> None:
        one_minus_b1, b2, k, eps = self._step
        second = self._slot_names[1] if len(self._slot_names) > 1 else ""
        updates.moments_update(w, g, slots["momentum"].reshape(-1), self._flat(slots, second),
                               self._flat(slots, "velocity_hat"), self._rule, one_minus_b1,
                               b2, k, eps, self.amsgrad, lr, common)

    def _can_check_step(self) -> bool:
        return self._rule == "adam"

    def _check_update(self, w, g, slots, lr, common) -> int:
        one_minus_b1, b2, k, eps = self._step
        return updates.adam_check(w, g, slots["momentum"].reshape(-1),
                                  self._flat(slots, self._slot_names[1]),
                                  self._flat(slots, "velocity_hat"), one_minus_b1, b2, k, eps,
                                  self.amsgrad, lr, common)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({key: getattr(self, key) for key in self._config_keys})
        return config
