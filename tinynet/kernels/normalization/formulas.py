"""The element expressions of the normalization passes, each written once.

Every pass that writes an output element (spans, wide rows, layer norm's rows, scalar or
``f32x16`` vectors) computes it with one of these functions, so each output has the same
operations in the same order whatever loop produced it. They take scalars or vectors
alike (``simd``'s vectors support ``+``, ``-``, ``*``) and are inlined at every use:
one or two float operations each, a call would cost more than the work.

Two forms exist because the group kernels fold ``inv_std`` into per-channel coefficients
(one multiply per element fewer), while layer norm's rows keep one ``inv_std`` per row:

- group: ``out = (x - mean) * (inv_std * gamma) + beta``,
  ``dx = (inv_std * gamma) * g - (inv_std * sum_g / n + (inv_std * sum_gxn / n * inv_std)
  * (x - mean))`` (``* xn`` when ``xn`` is given);
- row: ``out = ((x - mean) * inv_std) * gamma + beta``,
  ``dx = inv_std * (g * gamma - (sum_g / n + xn * sum_gxn / n))``.
"""

from __future__ import annotations

from tinynet.kernels._jit import njit

__all__ = ["normalized", "affine_group", "dx_group", "affine_row", "dx_row"]


@njit(callee=True, cache=True, error_model="numpy")
def normalized(x, mean, inv_std):
    """``xn = (x - mean) * inv_std``."""
    return (x - mean) * inv_std


@njit(callee=True, cache=True, error_model="numpy")
def affine_group(x, mean, scale, beta):
    """The group sweep: ``(x - mean) * scale + beta`` with ``scale = inv_std * gamma``."""
    return (x - mean) * scale + beta


@njit(callee=True, cache=True, error_model="numpy")
def dx_group(g, e, ga, ca, xa):
    """The group ``dx``: ``ga * g - (ca + xa * e)``, ``e`` = ``x - mean`` or ``xn``, with
    ``ga = inv * gamma``, ``ca = inv * sum_g / n``, ``xa = inv * sum_gxn / n`` (times
    ``inv`` again when ``e = x - mean``)."""
    return ga * g - (ca + xa * e)


@njit(callee=True, cache=True, error_model="numpy")
def affine_row(xn, gamma, beta):
    """The row sweep: ``xn * gamma + beta``."""
    return xn * gamma + beta


@njit(callee=True, cache=True, error_model="numpy")
def dx_row(g, xn, k, gamma, a, b):
    """The row ``dx``: ``k * (g * gamma - (a + xn * b))`` with ``k = inv_std``,
    ``a = sum_g / n``, ``b = sum_gxn / n``."""
    return k * (g * gamma - (a + xn * b))
