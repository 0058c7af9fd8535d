"""The value and gradient of a loss written with :mod:`tinynet.ops` (a ``Loss``
subclass's ``call(y_true, y_pred)`` or a function in a ``LossFunctionWrapper``).

``call`` returns the per-sample losses (or any tensor of losses); the reduction is Keras's:
``sum_over_batch_size`` (the default) and ``mean`` divide the weighted sum by the number
of values, ``sum`` does not divide, ``mean_with_sample_weight`` divides by the sum of the
weights. ``dL/dy_pred`` comes from recording the ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.losses.weights import sample_weights
from tinynet.ops import autodiff
from tinynet.tensor import Tensor, align_labels, as_array

__all__ = ["traced_compute", "traced_sample_losses", "traced_unreduced", "REDUCTIONS"]

REDUCTIONS = ("sum_over_batch_size", "sum", "mean", "mean_with_sample_weight", "none", None)


def _inputs(y_true: Any, y_pred: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    p = as_array(y_pred, f"{owner}: y_pred")
    return align_labels(owner, y_true, p), p


def traced_sample_losses(loss: Any, y_true: Any, y_pred: Any) -> np.ndarray:
    """What ``loss.call`` returns for the batch, as float64 (nothing recorded)."""
    t, p = _inputs(y_true, y_pred, type(loss).__name__)
    with autodiff.no_record():
        out = loss.call(Tensor._wrap(t), Tensor._wrap(p))
    return np.asarray(out.data if isinstance(out, Tensor) else out, dtype=np.float64)


def traced_unreduced(loss: Any, y_true: Any, y_pred: Any, sample_weight: Any) -> np.ndarray:
    """What a ``reduction=None`` (or ``"none"``) loss returns when called, as Keras: the
    losses ``call`` gives, times the sample weights, not reduced (float32)."""
    owner = loss.name if hasattr(loss, "fn") else type(loss).__name__
    t, p = _inputs(y_true, y_pred, owner)
    with autodiff.no_record():
        out = loss.call(Tensor._wrap(t), Tensor._wrap(p))
    v = np.asarray(out.data if isinstance(out, Tensor) else out, dtype=np.float64)
    if sample_weight is not None:
        w = sample_weights(owner, sample_weight, v.shape if v.ndim else (1,))
        v = v * (w.reshape(()) if v.ndim == 0 else w)
    return np.asarray(v, dtype=np.float32)


def traced_compute(loss: Any, y_true: Any, y_pred: Any, sample_weight: Any,
                   need_grad: bool) -> tuple[float, np.ndarray | None]:
    """The reduced loss and ``dL/dy_pred`` of a ``call()`` loss, by recording its ops."""
    owner = loss.name if hasattr(loss, "fn") else type(loss).__name__
    t, p = _inputs(y_true, y_pred, owner)
    graph = autodiff.Graph(owner=owner)
    with graph:
        leaf = graph.leaf(p, "y_pred")
        values = loss.call(Tensor._wrap(t), leaf)
    if not isinstance(values, Tensor):
        values = Tensor._wrap(np.asarray(values, dtype=np.float32))
    v = values.data.astype(np.float64)
    w = None if sample_weight is None else sample_weights(owner, sample_weight,
                                                          v.shape if v.ndim else (1,))
    if w is not None and v.ndim == 0:
        w = w.reshape(())
    weighted = v if w is None else v * w
    total = float(np.sum(weighted.reshape(-1)))
    reduction = getattr(loss, "reduction", "sum_over_batch_size")
    if reduction == "sum":
        scale = 1.0
    elif reduction == "mean_with_sample_weight" and w is not None:
        scale = 1.0 / max(float(np.sum(np.broadcast_to(w, v.shape))), 1e-30)
    else:
        scale = 1.0 / max(v.size, 1)
    value = total * scale
    if not need_grad:
        return value, None
    if values._node is None:
        raise RuntimeError(f"{owner}: cannot differentiate the loss: its value does not come "
                           f"from y_pred through tinynet ops (write it with tinynet.ops, not "
                           f"NumPy)")
    cot = np.full(v.shape, scale, dtype=np.float64) if w is None else scale * np.broadcast_to(
        w, v.shape)
    autodiff.backprop([values], [cot.astype(values.data.dtype)])
    grad = leaf._node.grad
    if grad is None:
        grad = np.zeros_like(p)
    return value, np.ascontiguousarray(grad.reshape(p.shape), dtype=np.float32)
