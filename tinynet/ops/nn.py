"""``keras.ops.nn``-style functions: crossentropies, ``normalize``, ``moments``-based helpers.

The crossentropies follow ``keras.ops`` (elementwise or per-sample, no reduction;
probabilities clipped to ``[1e-7, 1 - 1e-7]``; ``from_logits`` through a stable
log-sigmoid / log-softmax) and are compositions of ops, so their VJPs are the ops' own.
The convolution and pooling functions live in :mod:`tinynet.ops.conv`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.ops import activations as act
from tinynet.ops import creation, elementwise as ew, reductions as rd
from tinynet.ops.core import OpError, unwrap
from tinynet.tensor import Tensor

__all__ = ["binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "normalize", "EPSILON"]

#: Keras's ``backend.epsilon()``.
EPSILON = 1e-7


def _same_shape(op: str, target: Any, output: Any) -> None:
    ts = np.shape(unwrap(target, op, "target")[0])
    os_ = np.shape(unwrap(output, op, "output")[0])
    if ts != os_:
        raise OpError(f"{op}: target and output must have the same shape, got target {ts} "
                      f"and output {os_}")


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Tensor:
    """Elementwise binary crossentropy (no reduction)."""
    _same_shape("binary_crossentropy", target, output)
    if from_logits:
        return ew.subtract(ew.negative(ew.multiply(target, act.log_sigmoid(output))),
                           ew.multiply(ew.subtract(1.0, target),
                                       act.log_sigmoid(ew.negative(output))))
    p = ew.clip(output, EPSILON, 1.0 - EPSILON)
    bce = ew.add(ew.multiply(target, ew.log(p)),
                 ew.multiply(ew.subtract(1.0, target), ew.log(ew.subtract(1.0, p))))
    return ew.negative(bce)


def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                             axis: int = -1) -> Tensor:
    """Per-sample crossentropy of one-hot (or soft) ``target`` over ``axis``."""
    _same_shape("categorical_crossentropy", target, output)
    if from_logits:
        log_prob = act.log_softmax(output, axis=axis)
    else:
        p = ew.divide(output, rd.sum(output, axis=axis, keepdims=True))
        log_prob = ew.log(ew.clip(p, EPSILON, 1.0 - EPSILON))
    return ew.negative(rd.sum(ew.multiply(target, log_prob), axis=axis))


def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                                   axis: int = -1) -> Tensor:
    """Per-sample crossentropy of integer class ids ``target`` (a trailing axis of 1 is
    dropped) against ``output`` over ``axis``."""
    t = np.asarray(unwrap(target, "sparse_categorical_crossentropy", "target")[0])
    o_shape = np.shape(unwrap(output, "sparse_categorical_crossentropy", "output")[0])
    if t.ndim == len(o_shape) and t.shape[-1] == 1:
        t = t.reshape(t.shape[:-1])
    if t.shape != tuple(o_shape[:-1]):
        raise OpError(f"sparse_categorical_crossentropy: target must hold one class id per "
                      f"sample, shape {tuple(o_shape[:-1])}, got {t.shape} (one-hot targets "
                      f"take categorical_crossentropy)")
    onehot = creation.one_hot(t.astype(np.int64), o_shape[axis], axis=axis)
    return categorical_crossentropy(onehot, output, from_logits=from_logits, axis=axis)


def normalize(x: Any, axis: int = -1, order: int = 2, epsilon: float | None = None) -> Tensor:
    """``x`` divided by its ``order``-norm along ``axis`` (``keras.ops.normalize``)."""
    from tinynet.ops.linalg import norm

    eps = EPSILON if epsilon is None else epsilon
    if order == 2:
        inv = ew.rsqrt(rd.sum(ew.square(x), axis=axis, keepdims=True))
        return ew.multiply(x, ew.minimum(inv, 1.0 / eps))
    return ew.divide(x, ew.maximum(norm(x, ord=order, axis=axis, keepdims=True), eps))
