"""Resampling of channels-last image batches and its exact adjoint: the sampler the
augmentation layers share (``RandomTranslation``, ``RandomRotation``, ``RandomZoom``, and
``RandomCrop``'s resize).

It computes what Keras 3's PyTorch backend computes in ``keras.ops.image.affine_transform``
(``map_coordinates`` of order 0 or 1): each output pixel ``(x, y)`` (column, row) reads
the input at ``(a0 x + a1 y + a2, b0 x + b1 y + b2)``, the coordinates in float32 as
``(y * b1 + x * b0) + b2`` and ``(y * a1 + x * a0) + a2``. A coordinate gives source
*nodes* along each axis: ``"nearest"`` one node, ``round(c)`` (half to even) with weight
1; ``"bilinear"`` two, ``floor(c)`` with weight ``1 - t`` and ``floor(c) + 1`` with weight
``t = c - floor(c)``. The output is the sum over the node pairs, in the order
``(y0, x0), (y0, x1), (y1, x0), (y1, x1)``, of ``(wy * wx) * value`` in float32. A node
outside the image is moved inside by the fill mode:

- ``"reflect"``: ``(d c b a | a b c d | d c b a)``, mirrored about the edge;
- ``"wrap"``: ``(a b c d | a b c d | a b c d)``;
- ``"nearest"``: ``(a a a a | a b c d | d d d d)``, clipped to the edge;
- ``"constant"``: ``(k k k k | a b c d | k k k k)``: the value is ``fill_value`` (its
  weight still counts).

A sampling is a fixed list of (source pixel, weight) pairs per output pixel, so the
backward pass (the adjoint) adds each output gradient, times the same weights, into the
same source pixels (constant fill: the nodes outside get none). The sums run in a fixed
order in float64 (``np.bincount``) and round once to float32: the same bits at any
thread count.

Everything is vectorized over the batch and the pixels (pure NumPy).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["FILL_MODES", "INTERPOLATIONS", "Sampling", "affine_coordinates", "plan",
           "sample", "sample_backward", "resize_plan", "transform", "crop_resize"]

FILL_MODES = ("reflect", "wrap", "constant", "nearest")
INTERPOLATIONS = ("nearest", "bilinear")


class Sampling(NamedTuple):
    """Where each output pixel reads its input, and with which weights.

    Attributes:
        index: ``[nodes, n_out]`` int64 flat source pixels ``(b * height + row) * width +
            col`` of the input, already moved inside by the fill mode.
        weight: ``[nodes, n_out]`` float32 weights (``None`` for ``"nearest"``
            interpolation: one node, weight 1).
        valid: ``[nodes, n_out]`` bool, ``False`` where a ``"constant"`` fill reads
            ``fill_value`` instead (``None`` for the other fill modes).
        input_shape: ``(batch, height, width)`` of the input.
        output_shape: ``(batch, out_height, out_width)`` of the output.
    """

    index: np.ndarray
    weight: np.ndarray | None
    valid: np.ndarray | None
    input_shape: tuple
    output_shape: tuple


def affine_coordinates(transforms: np.ndarray, height: int,
                       width: int) -> tuple[np.ndarray, np.ndarray]:
    """The input coordinates each output pixel reads, for one transform per sample.

    Args:
        transforms: ``[batch, 6]`` or ``[batch, 8]`` rows ``(a0, a1, a2, b0, b1, b2[, c0,
            c1])`` (Keras's layout; the projective ``c0, c1`` must be 0 and are ignored),
            mapping output ``(x, y)`` to input ``(a0 x + a1 y + a2, b0 x + b1 y + b2)``.
        height: Output (and input) height.
        width: Output (and input) width.

    Returns:
        ``(rows, cols)``: two ``[batch, height, width]`` float32 arrays, computed in
        float32 as Keras on PyTorch does.

    Raises:
        ValueError: ``transforms`` is not ``[batch, 6]`` or ``[batch, 8]``.
    """
    t = np.asarray(transforms, dtype=np.float32)
    if t.ndim != 2 or t.shape[1] not in (6, 8):
        raise ValueError(f"affine_coordinates: transforms must have shape [batch, 6] or "
                         f"[batch, 8], got {t.shape}")
    a0, a1, a2, b0, b1, b2 = (t[:, k, None, None] for k in range(6))
    y = np.arange(height, dtype=np.float32)[None, :, None]
    x = np.arange(width, dtype=np.float32)[None, None, :]
    rows = (y * b1 + x * b0) + b2
    cols = (y * a1 + x * a0) + a2
    return rows.astype(np.float32, copy=False), cols.astype(np.float32, copy=False)


def _mirror(index: np.ndarray, size: int) -> np.ndarray:
    """PyTorch backend's ``_mirror_index_fixer``: ``|(i + s) mod 2s - s|``, ``s = size - 1``."""
    s = size - 1
    return np.abs((index + s) % (2 * s) - s)


def _fix(index: np.ndarray, size: int, fill_mode: str) -> np.ndarray:
    """Source indices moved inside ``[0, size)`` by ``fill_mode`` (Keras's index fixers)."""
    if fill_mode == "reflect":
        return (_mirror(2 * index + 1, 2 * size + 1) - 1) // 2
    if fill_mode == "wrap":
        return index % size
    return np.clip(index, 0, size - 1)  # "nearest", and "constant" (masked by `valid`)


def _nodes(coord: np.ndarray, interpolation: str) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """The (index, weight) nodes of one axis (Keras's ``_*_indices_and_weights``)."""
    if interpolation == "nearest":
        return [(np.round(coord).astype(np.int64), None)]  # half to even, as torch.round
    lower = np.floor(coord)
    upper_weight = (coord - lower).astype(np.float32)
    lower_weight = (np.float32(1.0) - upper_weight).astype(np.float32)
    index = lower.astype(np.int64)
    return [(index, lower_weight), (index + 1, upper_weight)]


def _check_modes(interpolation: str, fill_mode: str) -> None:
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"affine sampler: interpolation must be one of {INTERPOLATIONS}, "
                         f"got {interpolation!r}")
    if fill_mode not in FILL_MODES:
        raise ValueError(f"affine sampler: fill_mode must be one of {FILL_MODES}, "
                         f"got {fill_mode!r}")


def plan(rows: np.ndarray, cols: np.ndarray, height: int, width: int,
         interpolation: str = "bilinear", fill_mode: str = "constant") -> Sampling:
    """The sampling that reads an input of ``height x width`` at ``(rows, cols)``.

    Args:
        rows: ``[batch, out_height, out_width]`` float32 source rows.
        cols: Source columns, the same shape.
        height: The input's height.
        width: The input's width.
        interpolation: ``"nearest"`` or ``"bilinear"``.
        fill_mode: ``"reflect"``, ``"wrap"``, ``"constant"`` or ``"nearest"``.

    Returns:
        The :class:`Sampling`, for :func:`sample` and :func:`sample_backward`.
    """
    _check_modes(interpolation, fill_mode)
    rows = np.asarray(rows, dtype=np.float32)
    cols = np.asarray(cols, dtype=np.float32)
    batch = rows.shape[0]
    base = (np.arange(batch, dtype=np.int64) * height)[:, None, None]
    constant = fill_mode == "constant"
    # each axis's nodes: (index moved inside, weight, inside the image), computed once
    y_nodes = [(_fix(i, height, fill_mode), w, (i >= 0) & (i < height) if constant else None)
               for i, w in _nodes(rows, interpolation)]
    x_nodes = [(_fix(i, width, fill_mode), w, (i >= 0) & (i < width) if constant else None)
               for i, w in _nodes(cols, interpolation)]
    index, weight, valid = [], [], []
    for iy, wy, vy in y_nodes:
        row_base = (base + iy) * width
        for ix, wx, vx in x_nodes:
            index.append((row_base + ix).reshape(-1))
            if wy is not None:
                weight.append((wy * wx).reshape(-1))
            if constant:
                valid.append((vy & vx).reshape(-1))
    return Sampling(np.stack(index), np.stack(weight) if weight else None,
                    np.stack(valid) if valid else None, (batch, height, width),
                    tuple(rows.shape))


def resize_plan(input_shape: tuple, window: tuple, size: tuple) -> Sampling:
    """Bilinear resize of a window of the input, as PyTorch's ``interpolate(mode=
    "bilinear", align_corners=False, antialias=False)`` (Keras's ``ops.image.resize`` on
    PyTorch) applied to ``x[:, top:top + height, left:left + width]``.

    Along each axis, output ``o`` reads source ``s = max(scale * (o + 0.5) - 0.5, 0)`` in
    float32 (``scale = in / out``): index ``i0 = min(floor(s), in - 1)``, ``i1 = i0 + 1``
    inside the window (else ``i0``), weights ``1 - t`` and ``t = clip(s - i0, 0, 1)``; an
    axis whose size does not change is copied.

    Args:
        input_shape: ``(batch, in_height, in_width)`` of the whole input.
        window: ``(top, left, height, width)``, inside the input.
        size: ``(out_height, out_width)``.

    Returns:
        The :class:`Sampling` (four nodes, float32 weights ``wy * wx``).
    """
    batch, in_h, in_w = (int(v) for v in input_shape)
    top, left, height, width = (int(v) for v in window)
    out_height, out_width = (int(v) for v in size)
    if top < 0 or left < 0 or top + height > in_h or left + width > in_w:
        raise ValueError(f"resize_plan: window {tuple(window)} is not inside the input "
                         f"{tuple(input_shape)}")

    def taps(size_in: int, size_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                   np.ndarray]:
        o = np.arange(size_out)
        if size_in == size_out:
            return o, o, np.ones(size_out, np.float32), np.zeros(size_out, np.float32)
        scale = np.float32(size_in) / np.float32(size_out)
        src = np.maximum(scale * (o.astype(np.float32) + np.float32(0.5)) - np.float32(0.5),
                         np.float32(0.0)).astype(np.float32)
        i0 = np.minimum(np.floor(src).astype(np.int64), size_in - 1)
        lam1 = np.clip(src - i0.astype(np.float32), np.float32(0.0),
                       np.float32(1.0)).astype(np.float32)
        i1 = i0 + (i0 < size_in - 1)
        return i0, i1, (np.float32(1.0) - lam1).astype(np.float32), lam1

    h0, h1, lh0, lh1 = taps(height, out_height)
    w0, w1, lw0, lw1 = taps(width, out_width)
    base = (np.arange(batch, dtype=np.int64) * in_h)[:, None, None]
    index, weight = [], []
    for iy, wy in ((h0, lh0), (h1, lh1)):
        for ix, wx in ((w0, lw0), (w1, lw1)):
            flat = (base + (top + iy)[None, :, None]) * in_w + (left + ix)[None, None, :]
            index.append(flat.reshape(-1))
            weight.append(np.broadcast_to(wy[:, None] * wx[None, :],
                                          (batch, out_height, out_width)).reshape(-1))
    return Sampling(np.stack(index), np.stack(weight).astype(np.float32), None,
                    (batch, in_h, in_w), (batch, out_height, out_width))


def sample(x: np.ndarray, sampling: Sampling, fill_value: float = 0.0) -> np.ndarray:
    """The resampled batch: ``sum over nodes of (weight * value)`` in node order, float32.

    Args:
        x: ``[batch, height, width, channels]`` float32, the sampling's input shape.
        sampling: From :func:`plan` or :func:`resize_plan`.
        fill_value: The value of the nodes outside the image (``"constant"`` fill).

    Returns:
        ``[batch, out_height, out_width, channels]`` float32.
    """
    x = np.asarray(x, dtype=np.float32)
    if tuple(x.shape[:3]) != tuple(sampling.input_shape):
        raise ValueError(f"affine sampler: input of shape {x.shape} does not match the "
                         f"sampling's input {sampling.input_shape}")
    channels = x.shape[3]
    flat = x.reshape(-1, channels)
    fill = np.float32(fill_value)
    out = None
    for k in range(sampling.index.shape[0]):
        v = flat[sampling.index[k]]
        if sampling.valid is not None:
            v = np.where(sampling.valid[k][:, None], v, fill)
        if sampling.weight is not None:
            v = sampling.weight[k][:, None] * v
        out = v if out is None else out + v
    return np.ascontiguousarray(out, dtype=np.float32).reshape(*sampling.output_shape,
                                                                 channels)


def sample_backward(grad: np.ndarray, sampling: Sampling) -> np.ndarray:
    """The adjoint of :func:`sample`: each output gradient times its node weights, added
    into its source pixels (none for ``"constant"`` nodes outside the image).

    Args:
        grad: ``[batch, out_height, out_width, channels]``, the output's gradient.
        sampling: The sampling of the forward pass.

    Returns:
        ``[batch, height, width, channels]`` float32, the input's gradient (sums in
        float64, in a fixed order, one rounding).
    """
    g = np.asarray(grad, dtype=np.float32)
    channels = g.shape[-1]
    g = g.reshape(-1, channels)
    b, h, w = sampling.input_shape
    index = sampling.index.reshape(-1)            # node by node, output pixels in order
    keep = None if sampling.valid is None else sampling.valid.reshape(-1)
    if keep is not None:
        index = index[keep]
    total = np.empty((b * h * w, channels), dtype=np.float64)
    for c in range(channels):
        if sampling.weight is None:
            v = np.broadcast_to(g[:, c], sampling.index.shape)
        else:
            v = sampling.weight * g[:, c]
        v = v.reshape(-1)
        total[:, c] = np.bincount(index, weights=v if keep is None else v[keep],
                                  minlength=b * h * w)
    return total.astype(np.float32).reshape(b, h, w, channels)


def transform(x: np.ndarray, transforms: np.ndarray, interpolation: str, fill_mode: str,
              fill_value: float = 0.0) -> tuple[np.ndarray, Sampling]:
    """Each image of ``x`` (``[batch, height, width, channels]``) sampled through its
    affine row (:func:`affine_coordinates`, :func:`plan`, :func:`sample`): the forward of
    the affine augmentation layers, one operation.

    Returns:
        ``(y, sampling)``; :func:`sample_backward` with ``sampling`` is the backward.
    """
    _, height, width, _ = x.shape
    rows, cols = affine_coordinates(transforms, height, width)
    sampling = plan(rows, cols, height, width, interpolation, fill_mode)
    return sample(x, sampling, fill_value), sampling


def crop_resize(x: np.ndarray, window: tuple, size: tuple) -> tuple[np.ndarray, Sampling]:
    """The window ``(top, left, height, width)`` of each image of ``x`` resized to ``size``
    (:func:`resize_plan`, :func:`sample`), one operation.

    Returns:
        ``(y, sampling)``; :func:`sample_backward` with ``sampling`` is the backward.
    """
    sampling = resize_plan(x.shape[:3], window, size)
    return sample(x, sampling), sampling
