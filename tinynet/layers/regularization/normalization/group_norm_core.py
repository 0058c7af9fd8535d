"""The group-normalization core shared by group, instance, batch and layer normalization.

Ported from the seed (``rustyml``'s normalization module). Everything works on the
channels-last buffer ``[batch, positions, channels]``; a group is a contiguous run of
``channels // num_groups`` channels of each position's channel vector.

Statistics, per (sample, group), in one pass of shifted sums: with ``K`` the first element
of the group in that sample, accumulate ``s1 = sum(x - K)`` and ``s2 = sum((x - K)^2)``,
then ``mean = K + s1/n`` and ``var = s2/n - (s1/n)^2``. Measuring from ``K`` keeps both
sums on the scale of the spread, so a mean that dwarfs the spread (``1e6 + small``) does
not cancel catastrophically as the textbook ``E[x^2] - E[x]^2`` would in float32.

Fold order, fixed by shape alone: positions are folded in blocks of
``rows_per_block(C)`` rows into per-channel float32 lanes; each block's lanes are reduced
to groups in channel order (8-lane segment sums); block partials are merged in block
order in float64. The serial and parallel kernels share those block helpers, so a gate
or the thread count decides where the work runs, never the bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from tinynet import tuning
from tinynet.layers.regularization.normalization import folds
from tinynet.layers.regularization.normalization.folds import rows_per_block, segment_sum

__all__ = ["group_norm_forward_core", "group_norm_backward_core", "gn_forward",
           "gn_backward"]


# ----------------------------------------------------------------------------- kernels
@njit(cache=True)
def _shift_channels(x, base, channels, cpg):
    """The shift (first element of each group at position 0) broadcast to channels."""
    shift_c = np.empty(channels, dtype=np.float32)
    for c0 in range(0, channels, cpg):
        k = x[base + c0]
        for j in range(cpg):
            shift_c[c0 + j] = k
    return shift_c


@njit(cache=True)
def _stats_block(x, base, p0, p1, channels, cpg, shift_c, c1, c2, out1, out2):
    """Shifted sums of positions ``p0..p1`` of one sample, reduced to groups."""
    for c in range(channels):
        c1[c] = np.float32(0.0)
        c2[c] = np.float32(0.0)
    for p in range(p0, p1):
        row = base + p * channels
        for c in range(channels):
            d = x[row + c] - shift_c[c]
            c1[c] += d
            c2[c] += d * d
    g = 0
    for c0 in range(0, channels, cpg):
        out1[g] = segment_sum(c1, c0, c0 + cpg)
        out2[g] = segment_sum(c2, c0, c0 + cpg)
        g += 1


@njit(cache=True)
def _sample_stats(x, b, positions, channels, cpg, block, part1, part2):
    """Every block partial of sample ``b`` (serially, in block order)."""
    base = b * positions * channels
    shift_c = _shift_channels(x, base, channels, cpg)
    c1 = np.empty(channels, dtype=np.float32)
    c2 = np.empty(channels, dtype=np.float32)
    nblk = part1.shape[0]
    for k in range(nblk):
        _stats_block(x, base, k * block, min((k + 1) * block, positions), channels, cpg,
                     shift_c, c1, c2, part1[k], part2[k])


@njit(cache=True)
def _finish_sample(x, b, positions, channels, cpg, epsilon, part1, part2,
                   mean, var, inv_std, mean_c, inv_c):
    """Merges sample ``b``'s block partials in block order; per-group and per-channel stats."""
    groups = channels // cpg
    base = b * positions * channels
    n = np.float64(positions * cpg)
    for g in range(groups):
        s1 = np.float64(0.0)
        s2 = np.float64(0.0)
        for k in range(part1.shape[0]):
            s1 += part1[k, g]
            s2 += part2[k, g]
        m = s1 / n
        v = max(s2 / n - m * m, 0.0)
        mu = np.float64(x[base + g * cpg]) + m
        inv = 1.0 / np.sqrt(v + epsilon)
        i = b * groups + g
        mean[i] = np.float32(mu)
        var[i] = np.float32(v)
        inv_std[i] = np.float32(inv)
        for j in range(cpg):
            mean_c[b, g * cpg + j] = np.float32(mu)
            inv_c[b, g * cpg + j] = np.float32(inv)


@njit(cache=True)
def _sweep(x, xn, out, want_xn, base, r0, r1, channels, mean_c, inv_c, gamma, beta):
    """``xn = (x - mean) * inv_std``; ``out = xn * gamma + beta`` over rows ``r0..r1``."""
    for r in range(r0, r1):
        row = base + r * channels
        if want_xn:
            for c in range(channels):
                v = (x[row + c] - mean_c[c]) * inv_c[c]
                xn[row + c] = v
                out[row + c] = v * gamma[c] + beta[c]
        else:
            for c in range(channels):
                v = (x[row + c] - mean_c[c]) * inv_c[c]
                out[row + c] = v * gamma[c] + beta[c]


@njit(cache=True)
def _forward_sample(x, b, positions, channels, cpg, block, epsilon, gamma, beta, xn, out,
                    want_xn, part1, part2, mean, var, inv_std, mean_c, inv_c):
    """Statistics then sweep for one sample, while it is still in cache."""
    _sample_stats(x, b, positions, channels, cpg, block, part1[b], part2[b])
    _finish_sample(x, b, positions, channels, cpg, epsilon, part1[b], part2[b],
                   mean, var, inv_std, mean_c, inv_c)
    _sweep(x, xn, out, want_xn, b * positions * channels, 0, positions, channels,
           mean_c[b], inv_c[b], gamma, beta)


@njit(cache=True)
def _forward_serial(x, batch, positions, channels, cpg, block, epsilon, gamma, beta,
                    xn, out, want_xn, part1, part2, mean, var, inv_std, mean_c, inv_c):
    for b in range(batch):
        _forward_sample(x, b, positions, channels, cpg, block, epsilon, gamma, beta, xn, out,
                        want_xn, part1, part2, mean, var, inv_std, mean_c, inv_c)


@njit(cache=True, parallel=True)
def _forward_batch_parallel(x, batch, positions, channels, cpg, block, epsilon, gamma, beta,
                            xn, out, want_xn, part1, part2, mean, var, inv_std, mean_c,
                            inv_c):
    for b in prange(batch):
        _forward_sample(x, b, positions, channels, cpg, block, epsilon, gamma, beta, xn, out,
                        want_xn, part1, part2, mean, var, inv_std, mean_c, inv_c)


@njit(cache=True, parallel=True)
def _forward_block_parallel(x, batch, positions, channels, cpg, block, epsilon, gamma, beta,
                            xn, out, want_xn, part1, part2, mean, var, inv_std, mean_c,
                            inv_c):
    """Batch too small to fill the pool: split each sample into its position blocks."""
    nblk = part1.shape[1]
    for t in prange(batch * nblk):
        b = t // nblk
        k = t - b * nblk
        base = b * positions * channels
        shift_c = _shift_channels(x, base, channels, cpg)
        c1 = np.empty(channels, dtype=np.float32)
        c2 = np.empty(channels, dtype=np.float32)
        _stats_block(x, base, k * block, min((k + 1) * block, positions), channels, cpg,
                     shift_c, c1, c2, part1[b, k], part2[b, k])
    for b in range(batch):
        _finish_sample(x, b, positions, channels, cpg, epsilon, part1[b], part2[b],
                       mean, var, inv_std, mean_c, inv_c)
    for t in prange(batch * nblk):
        b = t // nblk
        k = t - b * nblk
        _sweep(x, xn, out, want_xn, b * positions * channels, k * block,
               min((k + 1) * block, positions), channels, mean_c[b], inv_c[b], gamma, beta)


@njit(cache=True)
def _bwd_block(g, xn, base, p0, p1, channels, cpg, gamma, c1, c2, out1, out2):
    """Per-group sums of ``g * gamma`` and ``g * gamma * xn`` over positions ``p0..p1``."""
    for c in range(channels):
        c1[c] = np.float32(0.0)
        c2[c] = np.float32(0.0)
    for p in range(p0, p1):
        row = base + p * channels
        for c in range(channels):
            t = g[row + c] * gamma[c]
            c1[c] += t
            c2[c] += t * xn[row + c]
    k = 0
    for c0 in range(0, channels, cpg):
        out1[k] = segment_sum(c1, c0, c0 + cpg)
        out2[k] = segment_sum(c2, c0, c0 + cpg)
        k += 1


@njit(cache=True)
def _bwd_coeffs(b, positions, channels, cpg, inv_std, part1, part2, is_c, sg_c, sgx_c):
    """Merges sample ``b``'s block partials; broadcasts ``inv_std``, ``sum_g/n``, ``sum_gxn/n``."""
    groups = channels // cpg
    n = np.float64(positions * cpg)
    for gr in range(groups):
        s1 = np.float64(0.0)
        s2 = np.float64(0.0)
        for k in range(part1.shape[0]):
            s1 += part1[k, gr]
            s2 += part2[k, gr]
        inv = inv_std[b * groups + gr]
        a = np.float32(s1 / n)
        bb = np.float32(s2 / n)
        for j in range(cpg):
            is_c[gr * cpg + j] = inv
            sg_c[gr * cpg + j] = a
            sgx_c[gr * cpg + j] = bb


@njit(cache=True)
def _dx_rows(g, xn, dx, base, r0, r1, channels, gamma, is_c, sg_c, sgx_c):
    """``dx = inv_std * (g * gamma - (sum_g + xn * sum_gxn) / n)`` over rows ``r0..r1``."""
    for r in range(r0, r1):
        row = base + r * channels
        for c in range(channels):
            dx[row + c] = is_c[c] * (g[row + c] * gamma[c] - (sg_c[c] + xn[row + c] * sgx_c[c]))


@njit(cache=True)
def _backward_sample(g, xn, dx, b, positions, channels, cpg, block, gamma, inv_std):
    base = b * positions * channels
    nblk = (positions + block - 1) // block
    groups = channels // cpg
    part1 = np.empty((nblk, groups), dtype=np.float64)
    part2 = np.empty((nblk, groups), dtype=np.float64)
    c1 = np.empty(channels, dtype=np.float32)
    c2 = np.empty(channels, dtype=np.float32)
    for k in range(nblk):
        _bwd_block(g, xn, base, k * block, min((k + 1) * block, positions), channels, cpg,
                   gamma, c1, c2, part1[k], part2[k])
    is_c = np.empty(channels, dtype=np.float32)
    sg_c = np.empty(channels, dtype=np.float32)
    sgx_c = np.empty(channels, dtype=np.float32)
    _bwd_coeffs(b, positions, channels, cpg, inv_std, part1, part2, is_c, sg_c, sgx_c)
    _dx_rows(g, xn, dx, base, 0, positions, channels, gamma, is_c, sg_c, sgx_c)


@njit(cache=True)
def _backward_serial(g, xn, dx, batch, positions, channels, cpg, block, gamma, inv_std):
    for b in range(batch):
        _backward_sample(g, xn, dx, b, positions, channels, cpg, block, gamma, inv_std)


@njit(cache=True, parallel=True)
def _backward_batch_parallel(g, xn, dx, batch, positions, channels, cpg, block, gamma,
                             inv_std):
    for b in prange(batch):
        _backward_sample(g, xn, dx, b, positions, channels, cpg, block, gamma, inv_std)


@njit(cache=True, parallel=True)
def _backward_block_parallel(g, xn, dx, batch, positions, channels, cpg, block, gamma,
                             inv_std):
    nblk = (positions + block - 1) // block
    groups = channels // cpg
    part1 = np.empty((batch, nblk, groups), dtype=np.float64)
    part2 = np.empty((batch, nblk, groups), dtype=np.float64)
    for t in prange(batch * nblk):
        b = t // nblk
        k = t - b * nblk
        c1 = np.empty(channels, dtype=np.float32)
        c2 = np.empty(channels, dtype=np.float32)
        _bwd_block(g, xn, b * positions * channels, k * block,
                   min((k + 1) * block, positions), channels, cpg, gamma, c1, c2,
                   part1[b, k], part2[b, k])
    is_c = np.empty((batch, channels), dtype=np.float32)
    sg_c = np.empty((batch, channels), dtype=np.float32)
    sgx_c = np.empty((batch, channels), dtype=np.float32)
    for b in range(batch):
        _bwd_coeffs(b, positions, channels, cpg, inv_std, part1[b], part2[b], is_c[b],
                    sg_c[b], sgx_c[b])
    for t in prange(batch * nblk):
        b = t // nblk
        k = t - b * nblk
        _dx_rows(g, xn, dx, b * positions * channels, k * block,
                 min((k + 1) * block, positions), channels, gamma, is_c[b], sg_c[b],
                 sgx_c[b])


# ----------------------------------------------------------------------------- wrappers
def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _layout(shape: tuple, num_groups: int, who: str) -> tuple[int, int, int, int]:
    if len(shape) < 2:
        raise ValueError(f"{who}: input must have rank >= 2 ([batch, ..., channels]), got shape {shape}")
    channels = int(shape[-1])
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) or num_groups < 1:
        raise ValueError(f"{who}: num_groups must be a positive int, got {num_groups!r}")
    if channels % num_groups:
        raise ValueError(f"{who}: channels ({channels}) must be divisible by groups ({num_groups})")
    batch = int(shape[0])
    positions = int(np.prod(shape[1:-1], dtype=np.int64)) if len(shape) > 2 else 1
    return batch, positions, channels, channels // num_groups


def _check_vec(v, channels: int, arg: str, who: str) -> np.ndarray:
    v = _f32(v).reshape(-1)
    if v.size != channels:
        raise ValueError(f"{who}: {arg} must have {channels} elements (one per channel), got {v.size}")
    return v


def gn_forward(x, num_groups: int, gamma, beta, epsilon: float, *,
               gate: str = "gn_row_parallel_min_elems", want_xn: bool = True):
    """Group-norm forward on a channels-last array; the engine behind every norm layer.

    Args:
        x: ``[batch, *spatial, C]`` data.
        num_groups: Groups ``G`` (``C % G == 0``).
        gamma: Scale ``[C]``.
        beta: Offset ``[C]``.
        epsilon: Added to the variance.
        gate: The tuning gate that decides serial or parallel.
        want_xn: Also return the normalized input (needed by the backward).

    Returns:
        ``(output, x_normalized or None, mean, var, inv_std)``; the statistics are
        float32 ``[batch * G]`` (``var`` biased).
    """
    x = _f32(x)
    batch, positions, channels, cpg = _layout(x.shape, num_groups, "group_norm_forward_core")
    gamma = _check_vec(gamma, channels, "gamma", "group_norm_forward_core")
    beta = _check_vec(beta, channels, "beta", "group_norm_forward_core")
    out = np.empty_like(x)
    xn = np.empty_like(x) if want_xn else np.empty(0, dtype=np.float32)
    stats = [np.zeros(batch * num_groups, dtype=np.float32) for _ in range(3)]
    if x.size == 0:
        xn = np.zeros_like(x) if want_xn else None
        return out, xn, *stats
    block = rows_per_block(channels)
    nblk = (positions + block - 1) // block
    part1 = np.empty((batch, nblk, num_groups), dtype=np.float64)
    part2 = np.empty((batch, nblk, num_groups), dtype=np.float64)
    mean_c = np.empty((batch, channels), dtype=np.float32)
    inv_c = np.empty((batch, channels), dtype=np.float32)
    if tuning.use_parallel(gate, x.size):
        kernel = (_forward_batch_parallel if batch >= tuning.get_num_threads()
                  else _forward_block_parallel)
    else:
        kernel = _forward_serial
    kernel(x.reshape(-1), batch, positions, channels, cpg, block, float(epsilon), gamma, beta,
           xn.reshape(-1), out.reshape(-1), want_xn, part1, part2, *stats, mean_c, inv_c)
    return out, (xn if want_xn else None), *stats


def gn_backward(grad_output, x_normalized, inv_std, num_groups: int, gamma, *,
                row_gate: str = "gn_row_parallel_min_elems",
                param_gate: str = "gn_param_grad_parallel_min_elems",
                want_param_grads: bool = True):
    """Group-norm backward; returns ``(grad_input, grad_gamma, grad_beta)``.

    ``grad_gamma`` / ``grad_beta`` are ``None`` when ``want_param_grads`` is false.
    """
    g = _f32(grad_output)
    xn = _f32(x_normalized)
    who = "group_norm_backward_core"
    if g.shape != xn.shape:
        raise ValueError(f"{who}: grad_output shape {g.shape} does not match x_normalized shape {xn.shape}")
    batch, positions, channels, cpg = _layout(g.shape, num_groups, who)
    gamma = _check_vec(gamma, channels, "gamma", who)
    inv_std = _f32(inv_std).reshape(-1)
    if inv_std.size != batch * num_groups:
        raise ValueError(f"{who}: inv_std must have batch * num_groups = {batch * num_groups} "
                         f"elements, got {inv_std.size}")
    dx = np.empty_like(g)
    if g.size == 0:
        zeros = np.zeros(channels, dtype=np.float32)
        return dx, zeros, zeros.copy()
    grad_gamma = grad_beta = None
    if want_param_grads:
        parallel = tuning.use_parallel(param_gate, g.size)
        grad_beta = folds.col_sum(g, channels, parallel)
        grad_gamma = folds.col_dot(g, xn, channels, parallel)
    block = rows_per_block(channels)
    if tuning.use_parallel(row_gate, g.size):
        kernel = (_backward_batch_parallel if batch >= tuning.get_num_threads()
                  else _backward_block_parallel)
    else:
        kernel = _backward_serial
    kernel(g.reshape(-1), xn.reshape(-1), dx.reshape(-1), batch, positions, channels, cpg,
           block, gamma, inv_std)
    return dx, grad_gamma, grad_beta


def group_norm_forward_core(x, num_groups: int, gamma, beta, epsilon: float):
    """Group-normalization forward core (the seed's signature).

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
    """Group-normalization backward core (the seed's signature).

    ``dx = inv_std * (g * gamma - (sum_g + x_norm * sum_g_xnorm) / group_size)`` with the
    sums per (sample, group) of ``g * gamma`` and ``g * gamma * x_norm``; the parameter
    gradients are column folds over the ``[M, C]`` view.

    Returns:
        ``(grad_input, grad_gamma, grad_beta)``, the last two float32 ``[C]``.

    Shape:
        grad_output, x_normalized: ``[N, *spatial, C]``; inv_std: ``[N * G]``.
    """
    return gn_backward(grad_output, x_normalized, inv_std, num_groups, gamma)
