"""The group-normalization core shared by group, instance, batch and layer normalization.

Ported from the Rust module tinynet's normalization grew from (``rustyml``'s
normalization module). Everything works on the channels-last buffer
``[batch, positions, channels]``; a group is a contiguous run of
``cpg = channels // num_groups`` channels of each position's channel vector. Batch norm
runs on the ``[1, batch * positions, C]`` view with one group per channel, layer norm on
``[rows, 1, features]`` with one group, instance norm with one group per channel.

This module is the door: :func:`gn_forward` and :func:`gn_backward` check their
arguments, make (or reuse) the shape's :class:`~.normalization_plan.Plan`, pick the
compiled kernel of its layout, flags and serial/parallel mode, and call it once. The
kernels (:mod:`tinynet.kernels.normalization`) live by what they do: ``forward``
(statistics and sweep), ``backward`` (gradient sums and ``dx``), ``rows`` and
``rows_registers`` (layer norm's rows), over the shared pieces ``layout`` (how a block of
positions is walked), ``lanes`` (the wide-row register passes), ``formulas`` (each output
expression once) and ``folds`` (the seed's fixed-order folds). Forward: statistics, then
one sweep writing the output (and ``x_normalized`` only when asked: the layers recompute
it from ``x`` in the backward, which saves a full write). Backward: one pass for the per-channel sums of ``g`` and
``g * x_norm``, one pass writing ``dx``.
"""

from __future__ import annotations

import math

import numpy as np

from tinynet import tuning
from tinynet.kernels import _jit
from tinynet.ops.arrays.streaming import empty_aligned
from tinynet.kernels.address import _key
from tinynet.kernels.normalization.backward import backward_bound
from tinynet.kernels.normalization.folds import (merge_rows_parallel,
                                                               merge_rows_serial)
from tinynet.kernels.normalization.forward import forward_bound
from tinynet.kernels.normalization.layout import SERIAL
from tinynet.ops.arrays.normalization_plan import Plan, plan_of, scratch
from tinynet.kernels.normalization.rows import (backward_rows_bound,
                                                              forward_rows_bound)

__all__ = ["group_norm_forward_core", "group_norm_backward_core", "gn_forward",
           "gn_backward", "Plan"]



def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


_NO_XN = np.empty(0, dtype=np.float32)  # the kernels' x_normalized when none is wanted


def _check_vec(v, channels: int, arg: str, who: str) -> np.ndarray:
    v = _f32(v).reshape(-1)
    if v.size != channels:
        raise ValueError(f"{who}: {arg} must have {channels} elements (one per channel), "
                         f"got {v.size}")
    return v


def _check_stat(v, plan: Plan, arg: str, who: str) -> np.ndarray:
    v = _f32(v).reshape(-1)
    if v.size != plan.batch * plan.groups:
        raise ValueError(f"{who}: {arg} must have batch * num_groups = "
                         f"{plan.batch * plan.groups} elements, got {v.size}")
    return v


def gn_forward(x, num_groups: int, gamma, beta, epsilon: float, *,
               gate: str = "gn_row_parallel_min_elems", want_xn: bool = True,
               stats: tuple | None = None):
    """Group-norm forward on channels-last data: the engine behind every norm layer.

    Args:
        x: ``[batch, *spatial, C]`` data.
        num_groups: Groups ``G`` (``C % G == 0``).
        gamma: Scale ``[C]``.
        beta: Offset ``[C]``.
        epsilon: Added to the biased variance.
        gate: The tuning gate that decides serial or parallel.
        want_xn: Also return the normalized input.
        stats: Optional fixed ``(mean, inv_std)`` per (sample, group), skipping the
            statistics pass (batch norm inference).

    Returns:
        ``(output, x_normalized or None, mean, var, inv_std)``; the statistics are float32
        ``[batch * G]`` (``var`` biased; zeros when ``stats`` was given).

    Shape:
        x, output, x_normalized: ``[N, *spatial, C]``; statistics: ``[N * G]``.
    """
    who = "group_norm_forward_core"
    if type(epsilon) is not float or not 0.0 <= epsilon < math.inf:  # the layers' case first
        if (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating))
                or not math.isfinite(epsilon) or epsilon < 0):
            raise ValueError(f"{who}: epsilon must be a finite number >= 0, got {epsilon!r}")
    x = _f32(x)
    plan = plan_of(x.shape, num_groups, who)
    gamma = _check_vec(gamma, plan.channels, "gamma", who)
    beta = _check_vec(beta, plan.channels, "beta", who)
    stream = plan.stream()
    new = empty_aligned if stream else np.empty
    out = new(x.shape, np.float32)
    want_xn = bool(want_xn)
    xn = new(x.shape, np.float32) if want_xn else _NO_XN
    n = plan.batch * plan.groups
    given = stats is not None
    runs = x.size and not _jit.SHAPES_ONLY  # (the compile-ahead helper's backward-first runs)
    # mean, var (biased), inv_std: written by the kernels unless given
    moments = (np.empty if runs and not given else np.zeros)((3, n), dtype=np.float32)
    if given:
        moments[0] = _check_stat(stats[0], plan, "mean", who)
        moments[2] = _check_stat(stats[1], plan, "inv_std", who)
    if runs:
        mode = plan.mode(gate, x.size)
        xf, of, xnf, eps = x.reshape(-1), out.reshape(-1), xn.reshape(-1), float(epsilon)
        # the door makes every other argument itself: these decide the arguments' types
        key = (True, mode, want_xn, _key(xf), _key(gamma), _key(beta))
        run = plan.bound.get(key)
        if plan.rows:
            if run is None:
                run = plan.bound[key] = forward_rows_bound(
                    plan.kind, mode != SERIAL, (xf, of, xnf, plan.dims, eps, given, want_xn,
                                                stream, gamma, beta, moments))
            run(xf, of, xnf, eps, given, want_xn, stream, gamma, beta, moments)
        else:
            part = scratch((2, plan.batch, plan.nblk, plan.groups), np.float64)
            if run is None:
                run = plan.bound[key] = forward_bound(
                    plan.layout, mode != SERIAL, want_xn, (xf, of, xnf, plan.dims_for(mode), eps,
                                                           given, stream, gamma, beta, part,
                                                           moments))
            run(xf, of, xnf, eps, given, stream, gamma, beta, part, moments)
    return out, (xn if want_xn else None), moments[0], moments[1], moments[2]


def gn_backward(grad_output, source, inv_std, num_groups: int, gamma, *, mean=None,
                affine_only: bool = False, row_gate: str = "gn_row_parallel_min_elems",
                param_gate: str = "gn_param_grad_parallel_min_elems"):
    """Group-norm backward: ``(grad_input, grad_gamma, grad_beta)``.

    Args:
        grad_output: dL/dy, shaped like the forward input.
        source: ``x_normalized``, or the forward input ``x`` when ``mean`` is given (the
            normalized input is then recomputed exactly as the forward computed it).
        inv_std: ``[batch * G]`` from the forward.
        num_groups: Groups ``G``.
        gamma: Scale ``[C]``.
        mean: ``[batch * G]`` forward means, to recompute ``x_normalized`` from ``x``.
        affine_only: The statistics were constants (batch norm inference):
            ``dx = inv_std * g * gamma``.
        row_gate: Gate for the two row passes.
        param_gate: Gate for the merge of the parameter-gradient column folds (layer
            norm's rows kernels merge them themselves, by ``row_gate``'s choice).

    Shape:
        grad_output, source: ``[N, *spatial, C]``; inv_std, mean: ``[N * G]``.
    """
    who = "group_norm_backward_core"
    g = _f32(grad_output)
    s = _f32(source)
    if g.shape != s.shape:
        raise ValueError(f"{who}: grad_output shape {g.shape} does not match x_normalized "
                         f"shape {s.shape}")
    plan = plan_of(g.shape, num_groups, who)
    gamma = _check_vec(gamma, plan.channels, "gamma", who)
    inv_std = _check_stat(inv_std, plan, "inv_std", who)
    recompute = mean is not None
    n = plan.batch * plan.groups
    stats = scratch((2, n), np.float32, "stats")  # mean (read only when recomputing), inv_std
    if recompute:
        stats[0] = _check_stat(mean, plan, "mean", who)
    stats[1] = inv_std
    stream = plan.stream()
    dx = (empty_aligned if stream else np.empty)(g.shape, np.float32)
    c = plan.channels
    if g.size == 0:
        return dx, np.zeros(c, dtype=np.float32), np.zeros(c, dtype=np.float32)
    mode = plan.mode(row_gate, g.size)
    parts = scratch((2, plan.ntasks, c), np.float64)  # the kernels start every row
    gf, sf, dxf, affine_only = g.reshape(-1), s.reshape(-1), dx.reshape(-1), bool(affine_only)
    # the door makes every other argument itself: these decide the arguments' types
    key = (False, mode, recompute, affine_only, _key(gf), _key(sf), _key(gamma))
    run = plan.bound.get(key)
    if plan.rows:  # the kernel merges its chunk partials into (grad_beta, grad_gamma)
        sums = np.empty((2, c), dtype=np.float32)
        if run is None:
            run = plan.bound[key] = backward_rows_bound(
                plan.kind, recompute and not affine_only, mode != SERIAL,
                (gf, sf, dxf, plan.dims, recompute, affine_only, stream, gamma, stats, sums,
                 parts))
        run(gf, sf, dxf, recompute, affine_only, stream, gamma, stats, sums, parts)
        return dx, sums[1], sums[0]
    gp = scratch((2, plan.batch, plan.nblk, plan.groups), np.float64)
    coeff = scratch((2, n), np.float32)
    if run is None:
        run = plan.bound[key] = backward_bound(
            plan.layout, mode != SERIAL, recompute, (gf, sf, dxf, plan.dims_for(mode),
                                                     affine_only, stream, gamma, stats, gp,
                                                     coeff, parts))
    run(gf, sf, dxf, affine_only, stream, gamma, stats, gp, coeff, parts)
    merge = (merge_rows_parallel if tuning.use_parallel(param_gate, parts[0].size)
             else merge_rows_serial)
    sums = merge(parts)
    return dx, sums[1], sums[0]


def group_norm_forward_core(x, num_groups: int, gamma, beta, epsilon: float):
    """Group-normalization forward core (the Rust original's signature).

    Args:
        x: float32 ``[batch, *spatial, C]``.
        num_groups: Number of groups; ``C`` must be divisible by it.
        gamma: float32 ``[C]``.
        beta: float32 ``[C]``.
        epsilon: Added to the biased variance.

    Returns:
        ``(output, x_normalized, inv_std)``: output and x_normalized shaped like ``x``,
        ``inv_std`` float32 ``[batch * num_groups]``.

    Shape:
        x: ``[N, *spatial, C]``; inv_std: ``[N * G]``.
    """
    out, xn, _mean, _var, inv_std = gn_forward(x, num_groups, gamma, beta, epsilon)
    return out, xn, inv_std


def group_norm_backward_core(grad_output, x_normalized, inv_std, num_groups: int, gamma):
    """Group-normalization backward core (the Rust original's signature).

    ``dx = inv_std * (g * gamma - (sum_g + x_norm * sum_g_xnorm) / group_size)`` with the
    sums per (sample, group) of ``g * gamma`` and ``g * gamma * x_norm``; ``grad_beta`` and
    ``grad_gamma`` are the column folds of ``g`` and ``g * x_norm`` over the ``[M, C]`` view.

    Returns:
        ``(grad_input, grad_gamma, grad_beta)``, the last two float32 ``[C]``.

    Shape:
        grad_output, x_normalized: ``[N, *spatial, C]``; inv_std: ``[N * G]``.
    """
    return gn_backward(grad_output, x_normalized, inv_std, num_groups, gamma)
