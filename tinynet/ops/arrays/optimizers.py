"""The optimizer update operations, the steps :mod:`tinynet.optimizers` take: each picks
the serial or parallel kernel of :mod:`tinynet.kernels.optimizers` with the
``optimizer_parallel_min_elems`` gate (kernels never read tuning); both give the same
bits."""

from __future__ import annotations

import numpy as np

from tinynet import tuning
from tinynet.kernels import optimizers as ok
from tinynet.ops.arrays.reduction import det_reduce

__all__ = ["MOMENT_RULES", "sum_squares", "sgd_update", "moments_update", "adam_check",
           "rmsprop_update", "adagrad_update"]

_GATE = "optimizer_parallel_min_elems"

# The rules of :func:`moments_update` by name, and the moments kernel's code of each (the
# codes stay inside ops; the optimizers name their rule).
_RULE_CODES = {"adam": ok.ADAM, "nadam": ok.NADAM, "adamax": ok.ADAMAX, "lion": ok.LION}
MOMENT_RULES = tuple(_RULE_CODES)


def _parallel(n: int) -> bool:
    return tuning.use_parallel(_GATE, n)


def sum_squares(x: np.ndarray) -> float:
    """Deterministic float64 sum of squares of a flat float32 array (fixed blocks)."""
    return det_reduce(x, squares=True, gate=_GATE)


def sgd_update(w, g, m, lr, momentum, use_momentum, nesterov, common) -> None:
    """In-place SGD step on flat float32 arrays (``m`` may be empty without momentum)."""
    kernel = ok.sgd_parallel if _parallel(w.size) else ok.sgd_serial
    kernel(w, g, m, lr, momentum, use_momentum, nesterov, *common)


def moments_update(w, g, m, v, vhat, rule, one_minus_b1, b2, k, eps, amsgrad, lr,
                   common) -> None:
    """In-place Adam, Nadam, Adamax or Lion step (``rule``: one of :data:`MOMENT_RULES`,
    see :func:`tinynet.kernels.optimizers.moments_blocks`); ``v``/``vhat`` may be empty
    where the rule does not read them."""
    kernel = ok.moments_parallel if _parallel(w.size) else ok.moments_serial
    kernel(w, g, m, v, vhat, _RULE_CODES[rule], one_minus_b1, b2, k, eps, amsgrad, lr, *common)


def adam_check(w, g, m, v, vhat, one_minus_b1, b2, k, eps, amsgrad, lr, common) -> int:
    """The first index of ``w`` whose :func:`moments_update` step with rule ``"adam"``
    (the same arguments) would give a NaN or infinite weight, else -1; nothing is
    written."""
    kernel = ok.adam_check_parallel if _parallel(w.size) else ok.adam_check_serial
    return int(kernel(w, g, m, v, vhat, one_minus_b1, b2, k[0], eps, amsgrad, lr, *common))


def rmsprop_update(w, g, vel, mom, avg, lr, rho, one_minus_rho, momentum, use_momentum,
                   centered, eps, common) -> None:
    """In-place RMSprop step (``mom``/``avg`` may be empty when unused)."""
    kernel = ok.rmsprop_parallel if _parallel(w.size) else ok.rmsprop_serial
    kernel(w, g, vel, mom, avg, lr, rho, one_minus_rho, momentum, use_momentum, centered, eps,
           *common)


def adagrad_update(w, g, acc, lr, eps, common) -> None:
    """In-place Adagrad step."""
    kernel = ok.adagrad_parallel if _parallel(w.size) else ok.adagrad_serial
    kernel(w, g, acc, lr, eps, *common)
