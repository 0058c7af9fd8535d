"""im2col / col2im Numba kernels for channels-last 2-D convolution, one sample tile at a time.

The convolution (:mod:`tinynet.ops.arrays.conv2d`) works in tiles of whole samples or of one
sample's output pixels. A sample is first copied into a zero-padded buffer
``[Hp, Wp, C]``, so every tap of
every patch lies inside it and the patch rows need no boundary tests: for dilation 1 the
``KW * C`` values of one kernel row are one contiguous span of the padded row.

A patch row of output pixel ``q = oy * OW + ox`` holds the receptive field in
``(i, j, c)`` order, matching a kernel ``[KH, KW, C, F]`` reshaped to
``[KH * KW * C, F]``. :func:`col2im_tile` adds patch gradients back into a padded
gradient buffer row by row in order, taps in ``(i, j, c)`` order, and copies its
interior out when the sample is complete; so every input gradient is summed in a
fixed order. The whole passes run the tasks of a range of slots (each slot its own padded
buffer and patch matrix); the parallel ones (:func:`conv_forward_parallel`,
:func:`conv_backward_parallel`) run the serial pass one slot a task over Numba's threads
through its address (:func:`tinynet.kernels.address.run_parallel`), so no parallel copy
of a pass is compiled. The kernels also release the GIL (``nogil``).

Copies index views from 0 (``d = dst[o:o + n]; d[t] = s[t]``): a computed flat index
(``dst[o + t]``) carries Numba's negative-index wraparound and does not vectorize.
"""

from __future__ import annotations

import numpy as np

from tinynet.kernels._jit import njit
from tinynet.kernels.address import run_parallel
from tinynet.kernels.sgemm import gemm

__all__ = ["pad_sample", "im2col_tile", "col2im_tile", "conv_forward_serial",
           "conv_forward_parallel", "conv_backward_serial", "conv_backward_parallel"]


@njit(cache=True, inline="always", error_model="numpy")
def pad_sample(x, b, pt, pl, xp):
    """Copies ``x[b]`` (``[H, W, C]``) into the zero-padded ``xp`` (``[Hp, Wp, C]``) at
    offset ``(pt, pl)``; the rest of ``xp`` becomes zero."""
    _, height, width, ch = x.shape
    hp, wp, _ = xp.shape
    flat = xp.reshape(-1)
    zero = np.float32(0.0)
    for r in range(hp):
        row = flat[r * wp * ch:(r + 1) * wp * ch]
        iy = r - pt
        if iy < 0 or iy >= height:
            for t in range(wp * ch):
                row[t] = zero
            continue
        for t in range(pl * ch):
            row[t] = zero
        for t in range((pl + width) * ch, wp * ch):
            row[t] = zero
        d = row[pl * ch:(pl + width) * ch]
        s = x[b, iy].reshape(-1)
        for t in range(width * ch):
            d[t] = s[t]


@njit(cache=True, inline="always", error_model="numpy")
def _crop_sample(xp, pt, pl, dx, b, bias, add_bias):
    """Copies the ``[H, W, C]`` interior of ``xp`` at ``(pt, pl)`` into ``dx[b]``, plus
    ``bias`` (``[C]``) on every pixel if ``add_bias``: one rounded add to each finished
    sum, the bits of a separate bias pass."""
    _, height, width, ch = dx.shape
    wp = xp.shape[1]
    flat = xp.reshape(-1)
    for iy in range(height):
        s = flat[((iy + pt) * wp + pl) * ch:((iy + pt) * wp + pl + width) * ch]
        d = dx[b, iy].reshape(-1)
        if add_bias:
            for ix in range(width):
                sp = s[ix * ch:(ix + 1) * ch]
                dp = d[ix * ch:(ix + 1) * ch]
                for c in range(ch):
                    dp[c] = sp[c] + bias[c]
        else:
            for t in range(width * ch):
                d[t] = s[t]


@njit(cache=True, inline="always", error_model="numpy")
def _patch_walk(flat, wp, ch, rflat, rbase, q0, q1, kh, kw, sh, sw, dh, dw, ow, gather):
    """Walks the patch rows of output pixels ``q0..q1`` of one padded sample (``flat``,
    ``[Hp * Wp * C]``), the rows stored from ``rflat[rbase]`` on: ``gather`` copies each
    tap run into the rows (im2col), otherwise the rows are added back into ``flat``
    (col2im), rows in order, taps in ``(i, j, c)`` order. ``gather`` is a constant at
    every call site. Indices are unsigned, so no wraparound test blocks vectorization
    and no view is built per run (runs can be as short as 3 floats)."""
    span = kw * ch
    width = kh * span
    run = np.uint64(span if dw == 1 else ch)  # dilation 1: a kernel row is one run
    runs = 1 if dw == 1 else kw
    oy = q0 // ow
    ox = q0 - oy * ow
    for q in range(q0, q1):
        if ox == ow:  # next output row (no division per patch row)
            ox = 0
            oy += 1
        prow = rbase + (q - q0) * width
        for i in range(kh):
            off = ((oy * sh + i * dh) * wp + ox * sw) * ch
            for j in range(runs):
                a0 = np.uint64(off + j * dw * ch)
                p0 = np.uint64(prow + i * span + j * ch)
                if gather:
                    for t in range(run):
                        rflat[p0 + t] = flat[a0 + t]
                else:
                    for t in range(run):
                        flat[a0 + t] += rflat[p0 + t]
        ox += 1


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def im2col_tile(x, b0, b1, q0, q1, pt, pl, kh, kw, sh, sw, dh, dw, oh, ow, xp, cols):
    """Patch rows of output pixels ``q0..q1`` of samples ``b0..b1``, sample after sample,
    into ``cols[:(b1 - b0) * (q1 - q0)]``.

    Each sample is first padded into ``xp`` (``[Hp, Wp, C]``) when ``q0 == 0``; a later
    tile of the same sample (``q0 > 0``, one sample) reuses the padded copy.
    """
    wp, ch = xp.shape[1], xp.shape[2]
    n = q1 - q0
    rflat = cols.reshape(-1)
    for b in range(b0, b1):
        if q0 == 0:
            pad_sample(x, b, pt, pl, xp)
        _patch_walk(xp.reshape(-1), wp, ch, rflat, (b - b0) * n * cols.shape[1], q0, q1, kh,
                    kw, sh, sw, dh, dw, ow, True)


@njit(callee=True, cache=True, nogil=True, error_model="numpy")
def col2im_tile(dcols, b0, b1, q0, q1, pt, pl, kh, kw, sh, sw, dh, dw, oh, ow, dxp, dx,
                bias, add_bias):
    """Adds the patch gradients of output pixels ``q0..q1`` of samples ``b0..b1`` (laid
    out as :func:`im2col_tile` lays out patches) into the padded gradient ``dxp``, rows
    in order, taps in ``(i, j, c)`` order.

    ``dxp`` is zeroed when a sample starts (``q0 == 0``) and its interior is copied to
    ``dx[b]`` (plus ``bias`` if ``add_bias``: a transposed convolution's) when the sample
    ends (``q1 == oh * ow``).
    """
    wp, ch = dxp.shape[1], dxp.shape[2]
    flat = dxp.reshape(-1)
    n = q1 - q0
    rflat = dcols.reshape(-1)
    for b in range(b0, b1):
        if q0 == 0:
            for t in range(flat.size):
                flat[t] = np.float32(0.0)
        _patch_walk(flat, wp, ch, rflat, (b - b0) * n * dcols.shape[1], q0, q1, kh, kw, sh,
                    sw, dh, dw, ow, False)
        if q1 == oh * ow:
            _crop_sample(dxp, pt, pl, dx, b, bias, add_bias)


# ------------------------------------------------------------- whole convolution passes
# ``tasks[t] = (b0, b1)``: a group of whole samples forming one tile, or one sample whose
# output pixels are cut into tiles of ``step`` rows. Task ``t`` runs on slot
# ``t % slots``, each slot with its own scratch (padded sample, patch tile); every task
# writes only its own output rows, input-gradient samples and kernel-gradient partial, so
# which slot runs it never changes a bit.
@njit(cache=True, inline="always", error_model="numpy")
def _pixel_step(b0, b1, per, step):
    return per if (b1 - b0 > 1 or per <= step) else step


@njit(cache=True, nogil=True, error_model="numpy")
def conv_forward_serial(x, w2, bias, add_bias, z, tasks, per, step, pt, pl, kh, kw, sh, sw, dh,
                        dw, oh, ow, xps, colss, s0, s1):
    """``z = im2col(x) @ w2 (+ bias)``, tile by tile (see :mod:`tinynet.ops.arrays.conv2d`),
    for the tasks of slots ``s0..s1`` (of ``len(xps)``). The slot loop is written here, not
    in a helper: Numba would optimize a helper's code again in this kernel."""
    filters = z.shape[1]
    slots = xps.shape[0]
    for s in range(s0, s1):
        xp = xps[s]
        cols = colss[s]
        for t in range(s, tasks.shape[0], slots):
            b0 = tasks[t, 0]
            b1 = tasks[t, 1]
            qs = _pixel_step(b0, b1, per, step)
            for q0 in range(0, per, qs):
                q1 = min(q0 + qs, per)
                rows = (b1 - b0) * (q1 - q0)
                r0 = b0 * per + q0
                im2col_tile(x, b0, b1, q0, q1, pt, pl, kh, kw, sh, sw, dh, dw, oh, ow, xp, cols)
                # every flag spelled out: the three calls compile one gemm between them
                gemm(cols[:rows], w2, z[r0:r0 + rows], False, False, 0.0)
                if add_bias:  # while the tile's outputs are in cache
                    for r in range(r0, r0 + rows):
                        zr = z[r]
                        for f in range(filters):
                            zr[f] += bias[f]


def conv_forward_parallel(x, w2, bias, add_bias, z, tasks, per, step, pt, pl, kh, kw, sh, sw,
                          dh, dw, oh, ow, xps, colss) -> None:
    """:func:`conv_forward_serial` with one slot a task over threads (same bits)."""
    run_parallel(conv_forward_serial, xps.shape[0], x, w2, bias, add_bias, z, tasks, per, step,
                 pt, pl, kh, kw, sh, sw, dh, dw, oh, ow, xps, colss)


@njit(cache=True, nogil=True, error_model="numpy")
def conv_backward_serial(x, w2, dz, dx, dx_bias, add_dx_bias, parts, bparts, want_dx, want_dw,
                         want_db, tasks, per, step, pt, pl, kh, kw, sh, sw, dh, dw, oh, ow, xps,
                         dxps, colss, s0, s1):
    """``dx = col2im(dz @ w2^T) (+ dx_bias)`` and per-task kernel and bias gradients
    ``parts[t]``, ``bparts[t]``, tile by tile, for the tasks of slots ``s0..s1`` (of
    ``len(xps)``). ``dx_bias`` (``[C]``, added to each finished ``dx`` element if
    ``add_dx_bias``) is a transposed convolution's bias: its forward is this ``dx``. The
    slot loop is written here, as in :func:`conv_forward_serial`."""
    filters = dz.shape[1]
    slots = xps.shape[0]
    for s in range(s0, s1):
        xp = xps[s]
        dxp = dxps[s]
        cols = colss[s]
        for t in range(s, tasks.shape[0], slots):
            b0 = tasks[t, 0]
            b1 = tasks[t, 1]
            qs = _pixel_step(b0, b1, per, step)
            db = bparts[t]
            if want_db:
                for f in range(filters):
                    db[f] = np.float32(0.0)
            for q0 in range(0, per, qs):
                q1 = min(q0 + qs, per)
                rows = (b1 - b0) * (q1 - q0)
                r0 = b0 * per + q0
                g = dz[r0:r0 + rows]
                if want_db:  # bparts[t] = sum of the task's dz rows, in row order
                    for r in range(rows):
                        gr = g[r]
                        for f in range(filters):
                            db[f] += gr[f]
                if want_dw:  # parts[t] (+)= cols^T @ dz, tiles added in order
                    im2col_tile(x, b0, b1, q0, q1, pt, pl, kh, kw, sh, sw, dh, dw, oh, ow, xp,
                                cols)
                    gemm(cols[:rows], g, parts[t], True, False, 0.0 if q0 == 0 else 1.0)
                if want_dx:  # dcols = dz @ w2^T, scattered back into the sample
                    gemm(g, w2, cols[:rows], False, True, 0.0)
                    col2im_tile(cols, b0, b1, q0, q1, pt, pl, kh, kw, sh, sw, dh, dw, oh, ow,
                                dxp, dx, dx_bias, add_dx_bias)


def conv_backward_parallel(x, w2, dz, dx, dx_bias, add_dx_bias, parts, bparts, want_dx,
                           want_dw, want_db, tasks, per, step, pt, pl, kh, kw, sh, sw, dh, dw,
                           oh, ow, xps, dxps, colss) -> None:
    """:func:`conv_backward_serial` with one slot a task over threads (same bits)."""
    run_parallel(conv_backward_serial, xps.shape[0], x, w2, dz, dx, dx_bias, add_dx_bias, parts,
                 bparts, want_dx, want_dw, want_db, tasks, per, step, pt, pl, kh, kw, sh, sw, dh,
                 dw, oh, ow, xps, dxps, colss)
