"""Group backward: the per-channel gradient sums, then ``dx``.

One pass per block of positions accumulates the per-channel ``u = sum(g)`` and
``v = sum(g * xn)`` in the layout's lane order (:mod:`.layout`); they give both the
parameter gradients (added to float64 task rows, merged in task order afterwards) and,
weighted by ``gamma`` and reduced per group, the per-(sample, group) sums behind ``dx``
(block partials merged in block order in float64). A second pass writes ``dx``
(:func:`formulas.dx_group`). ``xn`` is given, or recomputed from the layer input as the
forward sweep computed it. When whole samples go to a task both passes of a sample run
back to back while it is still in cache.

:func:`backward_kernel` has one serial driver per ``recompute`` for every layout, as
:mod:`.forward` does: both passes inlined, the layout a run-time value, and the layout's
wide-row loops (the gradient sums and ``dx``) kernels of their own that the driver calls
through their addresses (the layers always recompute ``xn``, so they compile it without
the given-``xn`` branches); one parallel driver for every layout (``CHUNKS`` and
``BLOCKS``) calls the serial driver through its address on each task's share.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np
from numba import prange

from tinynet.kernels._jit import njit
from tinynet.kernels.address import _key, call_at
from tinynet.kernels.normalization.folds import group_sums
from tinynet.kernels.normalization.formulas import dx_group, normalized
from tinynet.kernels.normalization.lanes import (DX, GRAD_RECOMPUTE, GRAD_XN,
                                                               half_sums, map_rows, quad_sums)
from tinynet.kernels.normalization.layout import (APPLY_PASS, BY_BLOCKS, Dims, FINISH_PASS,
                                                                HALF_ROWS, I64, QUAD_ROWS, VEC,
                                                                SERIAL, bound_driver,
                                                                wide_argument,
                                                                SPANS, STATS_PASS, TWO_QUADS,
                                                                copies_needed, expand,
                                                                fold_copies, lane_copies, repeat,
                                                                span, span_count, span_reps,
                                                                task_count, task_share,
                                                                wide_rows, zero)

__all__ = ["backward_kernel", "backward_bound"]


@njit(cache=True, inline="always", error_model="numpy")
def _grad_lanes(recompute, gs, ss, mean_c, inv_c, u, v, width):
    for i in range(width):
        xn = normalized(ss[i], mean_c[i], inv_c[i]) if recompute else ss[i]
        u[i] += gs[i]
        v[i] += gs[i] * xn


def _wide_grad_fn(layout: int, recompute: bool):
    """The wide-row gradient sums of ``layout`` and ``recompute`` (:mod:`.lanes`), a
    kernel of its own that :func:`_block_lanes` calls through its address."""

    @njit(callee=True, cache=True, variant=f"{layout}_{int(recompute)}", error_model="numpy")
    def wide_grad(g, s, start, rows, mean_c, inv_c, u, v):
        """The lanes ``u``, ``v`` of ``rows`` wide rows from ``start`` (written, not added
        to)."""
        mode = GRAD_RECOMPUTE if recompute else GRAD_XN
        if layout == HALF_ROWS:
            half_sums(mode, g, s, start, rows, mean_c, inv_c, u, v)
        elif layout == QUAD_ROWS:
            quad_sums(mode, 1, g, s, start, rows, mean_c, inv_c, u, v)
        else:
            quad_sums(mode, 2, g, s, start, rows, mean_c, inv_c, u, v)

    return wide_grad


def _grad_fn(recompute: bool):
    """The gradient-sums block for ``recompute``, inlined into its serial driver (see
    :func:`_serial_fn`)."""

    @njit(cache=True, inline="always", error_model="numpy")
    def block_lanes(g, s, b, base, p0, p1, d, stats, scratch, u, v, wide):
        """Per-channel lanes ``u = sum(g)``, ``v = sum(g * xn)`` over positions ``p0..p1``
        (``u``, ``v`` hold ``reps * C`` floats; the totals end in their first ``C``). A
        single-position block keeps lane copy 0 only, as the forward's statistics do.
        ``wide`` is ``(layout, wide-row gradient kernel's address, ...)``."""
        layout = wide[0]
        channels = d.channels
        reps = span_reps(channels)
        w = reps * channels
        mean_c = scratch[:w]
        inv_c = scratch[w:2 * w]
        single = p1 - p0 == 1
        if recompute:
            copies = 1 if single else copies_needed(layout, channels, reps)
            expand(stats[0], stats[1], b, channels, d.cpg, mean_c, inv_c)
            repeat(mean_c, channels, copies)
            repeat(inv_c, channels, copies)
        lo = p0
        if layout == SPANS:
            zero(u, channels if single else w)
            zero(v, channels if single else w)
        else:
            per_row, rows = wide_rows(layout, p0, p1, channels)
            call_at(wide[1], (g, s, np.int64(base + p0 * channels), np.int64(rows), mean_c,
                              inv_c, u, v))
            lo = p0 + rows * per_row  # leftover positions: one-position spans into copy 0
        for q in range(span_count(lo, p1, reps)):
            row, width = span(q, base, lo, p1, reps, channels)
            _grad_lanes(recompute, g[row:row + width], s[row:row + width], mean_c, inv_c, u,
                        v, width)
        copies = 1 if single else lane_copies(layout, channels, reps)
        fold_copies(u, channels, copies)
        fold_copies(v, channels, copies)

    @njit(cache=True, inline="always", error_model="numpy")
    def grad_body(g, s, b, p0, p1, d, stats, gamma, scratch, u, v, gp, k, wide):
        """The lanes of positions ``p0..p1`` of sample ``b`` and the per-group block
        partials ``gp[:, b, k] = (sum(gamma * u), sum(gamma * v))``."""
        block_lanes(g, s, b, b * d.positions * d.channels, p0, p1, d, stats, scratch, u, v,
                    wide)
        # each product rounded, then folded (a segment dot's bits), in scratch: u and v go
        # on to the parameter gradients
        gu = scratch[:d.channels]
        gv = scratch[d.channels:2 * d.channels]
        for c in range(d.channels):
            gu[c] = gamma[c] * u[c]
            gv[c] = gamma[c] * v[c]
        group_sums(gu, gv, d.channels, d.cpg, gp, b, k)

    return grad_body


@njit(callee=True, cache=True, error_model="numpy")
def _coefficients(b, d, gp, affine_only, coeff):
    """Merges sample ``b``'s group partials in block order: ``sum / n`` per group into
    ``coeff[0]`` (of ``g * gamma``) and ``coeff[1]`` (of ``g * gamma * xn``)."""
    groups = d.channels // d.cpg
    n = np.float64(d.positions * d.cpg)
    for gi in range(groups):
        s1 = np.float64(0.0)
        s2 = np.float64(0.0)
        for k in range(d.nblk):
            s1 += gp[0, b, k, gi]
            s2 += gp[1, b, k, gi]
        if affine_only:
            s1 = 0.0
            s2 = 0.0
        coeff[0, b * groups + gi] = np.float32(s1 / n)
        coeff[1, b * groups + gi] = np.float32(s2 / n)


@njit(cache=True, inline="always", error_model="numpy")
def _dx_span(recompute, gs, ss, ds, mean_c, ga_c, xa_c, ca_c, width):
    for i in range(width):
        e = ss[i] - mean_c[i] if recompute else ss[i]
        ds[i] = dx_group(gs[i], e, ga_c[i], ca_c[i], xa_c[i])


def _wide_dx_fn(layout: int, recompute: bool):
    """The wide-row ``dx`` of ``layout`` and ``recompute`` (:func:`lanes.map_rows`), a
    kernel of its own that :func:`_dx_body` calls through its address."""

    @njit(callee=True, cache=True, variant=f"{layout}_{int(recompute)}", error_model="numpy")
    def wide_dx(g, s, dx, stream, start, rows, ahead, mean_c, ga_c, xa_c, ca_c):
        """``dx`` on ``rows`` wide rows from ``start``."""
        if layout == TWO_QUADS:
            map_rows(DX, 2, g, s, dx, dx, recompute, stream, start, rows, ahead, mean_c, ga_c,
                     xa_c, ca_c)
        else:
            map_rows(DX, 1, g, s, dx, dx, recompute, stream, start, rows, ahead, mean_c, ga_c,
                     xa_c, ca_c)

    return wide_dx


def _dx_fn(recompute: bool):
    """The ``dx`` pass for ``recompute``, inlined into its serial driver (see
    :func:`_serial_fn`)."""

    @njit(cache=True, inline="always", error_model="numpy")
    def dx_body(g, s, dx, stream, b, r0, r1, d, stats, gamma, coeff, scratch, wide):
        """``dx`` on positions ``r0..r1`` of sample ``b`` with ``inv_std`` folded into
        per-channel coefficients (see :func:`formulas.dx_group`); ``scratch`` holds
        ``5 * reps * C`` floats; ``wide`` is ``(layout, ..., wide-row dx kernel's
        address)``."""
        layout = wide[0]
        channels = d.channels
        base = b * d.positions * channels
        reps = span_reps(channels)
        w = reps * channels
        mean_c = scratch[:w]
        ga_c = scratch[w:2 * w]
        xa_c = scratch[2 * w:3 * w]
        ca_c = scratch[3 * w:4 * w]
        inv_c = scratch[4 * w:5 * w]
        expand(stats[0], stats[1], b, channels, d.cpg, mean_c, inv_c)
        expand(coeff[0], coeff[1], b, channels, d.cpg, ca_c, xa_c)
        for c in range(channels):
            k = inv_c[c]
            ga_c[c] = k * gamma[c]                        # inv * gamma         (times g)
            ca_c[c] = k * ca_c[c]                         # inv * sum_g / n
            xa_c[c] = k * xa_c[c] * (k if recompute else np.float32(1.0))  # times e
        copies = copies_needed(layout, channels, reps)
        repeat(mean_c, channels, copies)
        repeat(ga_c, channels, copies)
        repeat(xa_c, channels, copies)
        repeat(ca_c, channels, copies)
        if layout != SPANS:
            per_row, rows = wide_rows(layout, r0, r1, channels)
            call_at(wide[2], (g, s, dx, stream, np.int64(base + r0 * channels),
                              np.int64(rows), np.int64(0), mean_c, ga_c, xa_c, ca_c))
            r0 += rows * per_row
        for q in range(span_count(r0, r1, reps)):
            row, width = span(q, base, r0, r1, reps, channels)
            _dx_span(recompute, g[row:row + width], s[row:row + width], dx[row:row + width],
                     mean_c, ga_c, xa_c, ca_c, width)

    return dx_body


@njit(cache=True, inline="always", error_model="numpy")
def _add_row(parts, t, u, v, channels, first):
    """Adds the block lanes ``u``, ``v`` to task row ``t`` of the float64 parameter
    partials; the ``first`` block of a row starts it (``0.0 + u``: the bits of an addition
    to a zeroed row, without a zeroing pass over all rows before the kernel)."""
    pu = parts[0, t]
    pv = parts[1, t]
    for c in range(channels):
        pu[c] = (0.0 if first else pu[c]) + np.float64(u[c])
        pv[c] = (0.0 if first else pv[c]) + np.float64(v[c])


_WIDE_GRADS = {(layout, recompute): _wide_grad_fn(layout, recompute)
               for layout in (HALF_ROWS, QUAD_ROWS, TWO_QUADS) for recompute in (False, True)}
_WIDE_DXS = {(layout, recompute): _wide_dx_fn(layout, recompute)
             for layout in (HALF_ROWS, QUAD_ROWS, TWO_QUADS) for recompute in (False, True)}
_grad_given, _grad = _grad_fn(False), _grad_fn(True)
_dx_given, _dx = _dx_fn(False), _dx_fn(True)


def _serial_fn(recompute: bool):
    """The serial driver of ``recompute``, for every layout: the one compiled body of the
    backward, which the parallel driver calls for each task's share (see
    :func:`backward_kernel`)."""

    @njit(cache=True, variant=int(recompute), error_model="numpy")
    def group_backward_serial(g, s, dx, d, affine_only, stream, gamma, stats, gp, coeff,
                              parts, wide):
        w = span_reps(d.channels) * d.channels
        lanes = np.empty(2 * w, dtype=np.float32)
        scratch = np.empty(5 * w, dtype=np.float32)
        u = lanes[:w]
        v = lanes[w:]
        r0 = d.k0 * d.block
        r1 = min(d.k1 * d.block, d.positions)
        for b in range(d.lo, d.hi):
            if d.passes & STATS_PASS:
                for k in range(d.k0, d.k1):
                    p1 = min((k + 1) * d.block, d.positions)
                    # the blocks are globals, not captured, as in the forward
                    if recompute:
                        _grad(g, s, b, k * d.block, p1, d, stats, gamma, scratch, u, v, gp,
                              k, wide)
                    else:
                        _grad_given(g, s, b, k * d.block, p1, d, stats, gamma, scratch, u,
                                    v, gp, k, wide)
                    # task rows: the first sample of each chunk of spc starts its rows
                    _add_row(parts, (b // d.spc) * d.nblk + k, u, v, d.channels,
                             b % d.spc == 0)
            if d.passes & FINISH_PASS:
                _coefficients(b, d, gp, affine_only, coeff)
            if d.passes & APPLY_PASS:
                if recompute:
                    _dx(g, s, dx, stream, b, r0, r1, d, stats, gamma, coeff, scratch, wide)
                else:
                    _dx_given(g, s, dx, stream, b, r0, r1, d, stats, gamma, coeff, scratch,
                              wide)

    return group_backward_serial


_serial_given, _serial = _serial_fn(False), _serial_fn(True)
_SERIAL_DRIVERS = {False: _serial_given, True: _serial}


def backward_kernel(layout: int, mode: int, recompute: bool):
    """The backward driver of one layout, mode and ``recompute`` (its kernels compiled on
    first use).

    The driver is ``kernel(g, s, dx, d, affine_only, stream, gamma, stats, gp, coeff,
    parts)``: flat float32 ``g``, ``s`` (the input when ``recompute``, else ``xn``),
    ``dx``; ``d`` the plan's ``Dims`` (the share: all of it from Python);
    ``stats[2, batch * groups]`` mean and inv_std; ``gp[2, batch, nblk, groups]`` float64
    block partials; ``coeff[2, batch * groups]`` float32 per-group coefficients;
    ``parts[2, ntasks, C]`` float64 parameter partials. As in :func:`forward.forward_kernel`,
    one serial driver per ``recompute`` holds the body of every layout and calls the
    layout's wide-row kernels (the gradient sums and ``dx``) through their addresses,
    passed in its last argument ``wide = (layout, gradient-sums address, dx address)``;
    ``CHUNKS`` and ``BLOCKS`` run :func:`group_backward_parallel`, which calls the serial
    driver through its address on each task's share.
    """
    return functools.partial(_run, layout, mode != SERIAL, recompute)


_WIDE: dict = {}  # (layout, recompute, argument types) -> the driver's ``wide`` argument


def _wide(layout: int, recompute: bool, g, s, dx, stream) -> tuple:
    """The serial driver's ``wide`` argument for ``layout`` and these arrays: the layout
    and the addresses of its wide-row kernels (:func:`layout.wide_argument`)."""
    if layout == SPANS:
        return (SPANS, 0, 0)
    return wide_argument(
        _WIDE, (layout, recompute, _key(g), _key(s), _key(dx), type(stream)),
        lambda: ((_WIDE_GRADS[layout, recompute], (g, s, I64, I64, VEC, VEC, VEC, VEC)),
                 (_WIDE_DXS[layout, recompute], (g, s, dx, stream, I64, I64, I64, VEC, VEC,
                                                 VEC, VEC))))


def backward_bound(layout: int, parallel: bool, recompute: bool, args: tuple) -> Callable:
    """The driver of :func:`backward_kernel` bound to ``args`` (``g, s, dx, d,
    affine_only, stream, gamma, stats, gp, coeff, parts``): ``run(g, s, dx, affine_only,
    stream, gamma, stats, gp, coeff, parts)``, as :func:`forward.forward_bound`."""
    g, s, dx, _, _, stream = args[:6]
    return bound_driver(_PARALLEL, layout, recompute,
                        lambda: _wide(layout, recompute, g, s, dx, stream),
                        _SERIAL_DRIVERS[recompute], group_backward_parallel, parallel, args)


_PARALLEL: dict = {}  # (layout, recompute, the arguments' types) -> (wide, address)


def _run(layout, parallel, recompute, g, s, dx, d, affine_only, stream, gamma, stats, gp,
         coeff, parts):
    """The driver on the arguments (bound to their types for this call only)."""
    backward_bound(layout, parallel, recompute, (g, s, dx, d, affine_only, stream, gamma,
                                                 stats, gp, coeff, parts))(
        g, s, dx, affine_only, stream, gamma, stats, gp, coeff, parts)


@njit(cache=True, parallel=True, error_model="numpy")
def group_backward_parallel(addr, g, s, dx, dims, affine_only, stream, gamma, stats, gp,
                            coeff, parts, wide):
    """The backward over Numba's threads: each task runs the serial driver at ``addr``
    (:func:`tinynet.kernels.address.entry_address`) on its share of ``dims`` (the plan's
    ``Dims`` as a plain tuple, see :func:`forward.group_forward_parallel`); the
    coefficients' merges run on this thread between the phases of the blocks split."""
    d = Dims(*dims)
    for phase in range(3 if (d.passes & BY_BLOCKS) != 0 else 1):
        if phase == 1:  # the merges: a few sums per sample, on this thread
            for b in range(d.batch):
                _coefficients(b, d, gp, affine_only, coeff)
        else:
            for t in prange(task_count(d, phase)):  # int64 t: one task_share compile
                call_at(addr, (g, s, dx, task_share(d, phase, np.int64(t)), affine_only,
                               stream, gamma, stats, gp, coeff, parts, wide))
