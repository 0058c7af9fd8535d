"""Plain float64 NumPy references for the normalization layers (tests only).

Written from the normalization layers' documented semantics (docs/normalization.md)
alone, independent of the Numba kernels: two-pass statistics in
float64, biased variance, channels-last inputs. Every function takes array-likes, works in
float64 and returns float64 arrays.

The backward of any "normalize over a set of axes S" operation with
``xhat = (x - mean_S(x)) * inv_std`` and ``y = xhat * gamma + beta`` is::

    dxhat = g * gamma
    dx    = inv_std * (dxhat - mean_S(dxhat) - xhat * mean_S(dxhat * xhat))

and the parameter gradients are ``sum(g * xhat)`` / ``sum(g)`` over every axis the parameter
is broadcast along. Group, instance, batch (training) and layer norm are all that operation
with a different ``S`` and parameter layout.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "normalize_axes_forward", "normalize_axes_backward",
    "group_norm_forward", "group_norm_backward",
    "instance_norm_forward", "instance_norm_backward",
    "batch_norm_train_forward", "batch_norm_train_backward",
    "batch_norm_infer_forward", "batch_norm_infer_backward",
    "batch_norm_moving_update",
    "layer_norm_forward", "layer_norm_backward", "layer_norm_param_shape",
    "layer_norm_inv_std", "grad_term_scale",
]


def _f64(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float64)


def _ones_or(value, shape) -> np.ndarray:
    return np.ones(shape) if value is None else _f64(value).reshape(shape)


def _zeros_or(value, shape) -> np.ndarray:
    return np.zeros(shape) if value is None else _f64(value).reshape(shape)


# -- generic: normalize over `axes`, parameters broadcast with shape `pshape` ---------------
def normalize_axes_forward(x, axes: tuple[int, ...], gamma_b, beta_b, epsilon: float):
    """Normalizes ``x`` over ``axes`` (two-pass, biased variance).

    Args:
        x: Input (any shape).
        axes: Axes the statistics run over.
        gamma_b: Scale, already broadcastable against ``x``.
        beta_b: Offset, already broadcastable against ``x``.
        epsilon: Added to the variance.

    Returns:
        ``(output, x_hat, mean, inv_std)``; ``mean`` and ``inv_std`` keep dims.
    """
    x = _f64(x)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    inv_std = 1.0 / np.sqrt(var + epsilon)
    x_hat = (x - mean) * inv_std
    return x_hat * gamma_b + beta_b, x_hat, mean, inv_std


def normalize_axes_backward(g, x_hat, inv_std, axes: tuple[int, ...], gamma_b,
                            param_sum_axes: tuple[int, ...]):
    """Backward of :func:`normalize_axes_forward`.

    Args:
        g: Upstream gradient (same shape as the output).
        x_hat: The normalized input from the forward.
        inv_std: Per-statistic inverse std (keepdims) from the forward.
        axes: The statistics axes.
        gamma_b: Scale broadcastable against ``g``.
        param_sum_axes: Axes the parameters are broadcast along (summed for their grads).

    Returns:
        ``(dx, dgamma, dbeta)``; parameter grads keep dims (reshape them as needed).
    """
    g = _f64(g)
    dxh = g * gamma_b
    dx = inv_std * (dxh - dxh.mean(axis=axes, keepdims=True)
                    - x_hat * (dxh * x_hat).mean(axis=axes, keepdims=True))
    dgamma = (g * x_hat).sum(axis=param_sum_axes, keepdims=True)
    dbeta = g.sum(axis=param_sum_axes, keepdims=True)
    return dx, dgamma, dbeta


# -- group / instance norm ---------------------------------------------------------------
def _group_view(x, groups: int) -> np.ndarray:
    x = _f64(x)
    n, c = x.shape[0], x.shape[-1]
    if c % groups:
        raise ValueError(f"reference: {c} channels not divisible by {groups} groups")
    return x.reshape(n, -1, groups, c // groups)


def group_norm_forward(x, groups: int, gamma=None, beta=None, epsilon: float = 1e-3):
    """Group norm over ``[batch, *spatial, C]``; group ``g`` is channels ``g*C/G..(g+1)*C/G-1``.

    Returns:
        ``(output, x_normalized, inv_std)`` with ``inv_std`` shaped ``[batch * groups]``
        (the core's layout) and the arrays shaped like ``x``.
    """
    x = _f64(x)
    xv = _group_view(x, groups)
    c = x.shape[-1]
    gb = _ones_or(gamma, (1, 1, groups, c // groups))
    bb = _zeros_or(beta, (1, 1, groups, c // groups))
    out, x_hat, _, inv_std = normalize_axes_forward(xv, (1, 3), gb, bb, epsilon)
    return out.reshape(x.shape), x_hat.reshape(x.shape), inv_std.reshape(-1)


def group_norm_backward(g, x, groups: int, gamma=None, epsilon: float = 1e-3):
    """Returns ``(dx, dgamma [C], dbeta [C])`` of group norm at ``x`` for upstream ``g``."""
    x = _f64(x)
    xv = _group_view(x, groups)
    c = x.shape[-1]
    gb = _ones_or(gamma, (1, 1, groups, c // groups))
    _, x_hat, _, inv_std = normalize_axes_forward(xv, (1, 3), gb, 0.0, epsilon)
    dx, dgamma, dbeta = normalize_axes_backward(
        _f64(g).reshape(xv.shape), x_hat, inv_std, (1, 3), gb, (0, 1))
    return dx.reshape(x.shape), dgamma.reshape(c), dbeta.reshape(c)


def instance_norm_forward(x, gamma=None, beta=None, epsilon: float = 1e-3):
    """Instance norm = group norm with one group per channel."""
    return group_norm_forward(x, np.shape(x)[-1], gamma, beta, epsilon)


def instance_norm_backward(g, x, gamma=None, epsilon: float = 1e-3):
    return group_norm_backward(g, x, np.shape(x)[-1], gamma, epsilon)


# -- batch norm ----------------------------------------------------------------------------
def _bn_layout(ndim: int, axis: int):
    axis = axis % ndim
    stat_axes = tuple(a for a in range(ndim) if a != axis)
    bshape = [1] * ndim
    return axis, stat_axes, bshape


def batch_norm_train_forward(x, gamma=None, beta=None, epsilon: float = 1e-3, axis: int = -1):
    """Training-mode batch norm: statistics over every axis but ``axis`` (biased variance).

    Returns:
        ``(output, batch_mean [C], batch_var [C])`` (biased variance).
    """
    x = _f64(x)
    axis, stat_axes, bshape = _bn_layout(x.ndim, axis)
    bshape[axis] = x.shape[axis]
    out, _, mean, inv_std = normalize_axes_forward(
        x, stat_axes, _ones_or(gamma, bshape), _zeros_or(beta, bshape), epsilon)
    var = ((x - mean) ** 2).mean(axis=stat_axes)
    return out, mean.reshape(-1), var.reshape(-1)


def batch_norm_train_backward(g, x, gamma=None, epsilon: float = 1e-3, axis: int = -1):
    """Returns ``(dx, dgamma [C], dbeta [C])`` of training-mode batch norm."""
    x = _f64(x)
    axis, stat_axes, bshape = _bn_layout(x.ndim, axis)
    bshape[axis] = x.shape[axis]
    gb = _ones_or(gamma, bshape)
    _, x_hat, _, inv_std = normalize_axes_forward(x, stat_axes, gb, 0.0, epsilon)
    dx, dgamma, dbeta = normalize_axes_backward(g, x_hat, inv_std, stat_axes, gb, stat_axes)
    return dx, dgamma.reshape(-1), dbeta.reshape(-1)


def batch_norm_infer_forward(x, moving_mean, moving_variance, gamma=None, beta=None,
                             epsilon: float = 1e-3, axis: int = -1):
    """Inference-mode batch norm with the moving statistics."""
    x = _f64(x)
    axis, _, bshape = _bn_layout(x.ndim, axis)
    bshape[axis] = x.shape[axis]
    mm = _f64(moving_mean).reshape(bshape)
    inv = 1.0 / np.sqrt(_f64(moving_variance).reshape(bshape) + epsilon)
    return (x - mm) * inv * _ones_or(gamma, bshape) + _zeros_or(beta, bshape)


def batch_norm_infer_backward(g, x, moving_mean, moving_variance, gamma=None,
                              epsilon: float = 1e-3, axis: int = -1):
    """Returns ``(dx, dgamma [C], dbeta [C])`` of inference-mode batch norm (an affine map)."""
    x, g = _f64(x), _f64(g)
    axis, stat_axes, bshape = _bn_layout(x.ndim, axis)
    bshape[axis] = x.shape[axis]
    inv = 1.0 / np.sqrt(_f64(moving_variance).reshape(bshape) + epsilon)
    x_hat = (x - _f64(moving_mean).reshape(bshape)) * inv
    dx = g * _ones_or(gamma, bshape) * inv
    return dx, (g * x_hat).sum(axis=stat_axes), g.sum(axis=stat_axes)


def batch_norm_moving_update(moving_mean, moving_variance, batch_mean, batch_var,
                             momentum: float = 0.99):
    """Keras rule: ``moving = moving * momentum + batch * (1 - momentum)``."""
    mm = _f64(moving_mean) * momentum + _f64(batch_mean) * (1.0 - momentum)
    mv = _f64(moving_variance) * momentum + _f64(batch_var) * (1.0 - momentum)
    return mm, mv


# -- layer norm ----------------------------------------------------------------------------
def _ln_axes(ndim: int, axis) -> tuple[int, ...]:
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return tuple(a % ndim for a in axes)


def layer_norm_param_shape(input_shape: Sequence[int], axis) -> tuple[int, ...]:
    """Keras: gamma/beta hold one entry per element of the normalized axes (in axis order)."""
    axes = _ln_axes(len(input_shape), axis)
    return tuple(int(input_shape[a]) for a in axes)


def _ln_bshape(shape, axes) -> list[int]:
    bshape = [1] * len(shape)
    for a in axes:
        bshape[a] = shape[a]
    return bshape


def _ln_param_b(value, shape, axes, fill):
    if value is None:
        return fill
    # parameters are stored in axis order; move them into broadcast position
    p = _f64(value).reshape([shape[a] for a in axes])
    order = np.argsort(axes)
    return np.transpose(p, order).reshape(_ln_bshape(shape, axes))


def layer_norm_inv_std(x, axis=-1, epsilon: float = 1e-3) -> np.ndarray:
    """Per-sample ``1 / sqrt(var + eps)`` over ``axis`` (keepdims)."""
    x = _f64(x)
    return normalize_axes_forward(x, _ln_axes(x.ndim, axis), 1.0, 0.0, epsilon)[3]


def layer_norm_forward(x, axis=-1, gamma=None, beta=None, epsilon: float = 1e-3):
    """Layer norm: per sample, statistics over ``axis`` (int or tuple)."""
    x = _f64(x)
    axes = _ln_axes(x.ndim, axis)
    out, _, _, _ = normalize_axes_forward(
        x, axes, _ln_param_b(gamma, x.shape, axes, 1.0), _ln_param_b(beta, x.shape, axes, 0.0),
        epsilon)
    return out


def layer_norm_backward(g, x, axis=-1, gamma=None, epsilon: float = 1e-3):
    """Returns ``(dx, dgamma, dbeta)``; parameter grads shaped like the normalized axes."""
    x = _f64(x)
    axes = _ln_axes(x.ndim, axis)
    gb = _ln_param_b(gamma, x.shape, axes, 1.0)
    _, x_hat, _, inv_std = normalize_axes_forward(x, axes, gb, 0.0, epsilon)
    others = tuple(a for a in range(x.ndim) if a not in axes)
    dx, dgamma, dbeta = normalize_axes_backward(g, x_hat, inv_std, axes, gb, others)
    # back from broadcast position to axis order
    sorted_axes = sorted(axes)
    keep = [x.shape[a] for a in sorted_axes]
    perm = [sorted_axes.index(a) for a in axes]
    return (dx, np.transpose(dgamma.reshape(keep), perm), np.transpose(dbeta.reshape(keep), perm))


def grad_term_scale(g, gamma, inv_std) -> float:
    """Size of the terms the input gradient is a difference of: ``|g * gamma| * inv_std``.

    ``dx`` can cancel far below its terms (tiny groups, near-constant data), so a float32
    result is only accurate relative to this scale, not relative to ``|dx|``.
    """
    gmax = float(np.max(np.abs(_f64(g)))) if np.size(g) else 0.0
    gam = 1.0 if gamma is None else float(np.max(np.abs(_f64(gamma))))
    return gmax * gam * float(np.max(_f64(inv_std)))
