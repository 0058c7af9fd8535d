"""Shape ops (``keras.ops`` names): views, joins, splits, gathers and their VJPs."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tinynet.ops.autodiff import record
from tinynet.ops.core import OpError, axes, canon, unwrap
from tinynet.tensor import Tensor

__all__ = ["reshape", "transpose", "expand_dims", "squeeze", "concatenate", "stack", "split",
           "take", "take_along_axis", "tile", "repeat", "flip", "pad", "cumsum", "cumprod",
           "broadcast_to", "getitem", "swapaxes", "moveaxis", "ravel", "slice", "unstack",
           "diagonal", "tril", "triu"]


def _in(x: Any, op: str, arg: str = "x") -> tuple[np.ndarray, Any]:
    a, t = unwrap(x, op, arg)
    return np.asarray(a) if not isinstance(a, np.ndarray) else a, t


def reshape(x: Any, newshape: Any) -> Tensor:
    """``x`` with ``newshape`` (one entry may be -1)."""
    a, t = _in(x, "reshape")
    shape = (newshape,) if isinstance(newshape, (int, np.integer)) else tuple(
        -1 if d is None else int(d) for d in newshape)
    try:
        out = np.reshape(a, shape)
    except ValueError:
        raise OpError(f"reshape: cannot reshape x of shape {a.shape} ({a.size} entries) "
                      f"into {shape}") from None
    return record(np.asarray(out, order="C"), (t,), lambda g: (g.reshape(a.shape),), "reshape")


def ravel(x: Any) -> Tensor:
    """``x`` flattened to one axis."""
    return reshape(x, (-1,))


def transpose(x: Any, axes: Any = None) -> Tensor:  # noqa: A002 - Keras's name
    """Permutes the axes (reverses them when ``axes`` is ``None``)."""
    a, t = _in(x, "transpose")
    perm = tuple(range(a.ndim))[::-1] if axes is None else tuple(int(p) % max(a.ndim, 1)
                                                                  for p in axes)
    if sorted(perm) != list(range(a.ndim)):
        raise OpError(f"transpose: axes {axes!r} is not a permutation of the {a.ndim} axes "
                      f"of x {a.shape}")
    inv = tuple(np.argsort(perm))
    out = np.asarray(np.transpose(a, perm), order="C")
    return record(out, (t,), lambda g: (np.transpose(g, inv),), "transpose")


def swapaxes(x: Any, axis1: int, axis2: int) -> Tensor:
    """Exchanges two axes."""
    a, _ = _in(x, "swapaxes")
    axis1, axis2 = axes(axis1, a.ndim, "swapaxes")[0], axes(axis2, a.ndim, "swapaxes")[0]
    perm = list(range(a.ndim))
    perm[axis1], perm[axis2] = perm[axis2], perm[axis1]
    return transpose(x, perm)


def moveaxis(x: Any, source: Any, destination: Any) -> Tensor:
    """Moves axes to new positions."""
    a, _ = _in(x, "moveaxis")
    src = [source] if isinstance(source, (int, np.integer)) else list(source)
    dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
    if len(src) != len(dst):
        raise OpError(f"moveaxis: source {source!r} and destination {destination!r} must "
                      f"name as many axes")
    src = [axes(s, a.ndim, "moveaxis")[0] for s in src]
    dst = [axes(d, a.ndim, "moveaxis")[0] for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise OpError(f"moveaxis: source {source!r} and destination {destination!r} must "
                      f"not repeat an axis")
    perm = [i for i in range(a.ndim) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return transpose(x, perm)


def expand_dims(x: Any, axis: Any) -> Tensor:
    """Inserts axes of length 1 at ``axis``."""
    a, t = _in(x, "expand_dims")
    n_new = len(axis) if isinstance(axis, (tuple, list)) else 1
    out = np.expand_dims(a, axes(axis, a.ndim + n_new, "expand_dims"))
    return record(out, (t,), lambda g: (g.reshape(a.shape),), "expand_dims")


def squeeze(x: Any, axis: Any = None) -> Tensor:
    """Removes axes of length 1 (those of ``axis``, or all)."""
    a, t = _in(x, "squeeze")
    ax = axes(axis, a.ndim, "squeeze")
    if ax is not None and any(a.shape[i] != 1 for i in ax):
        raise OpError(f"squeeze: axis {axis!r} of x {a.shape} does not have length 1")
    out = np.squeeze(a, axis=ax)
    return record(out, (t,), lambda g: (g.reshape(a.shape),), "squeeze")


def _many(xs: Any, op: str) -> tuple[list[np.ndarray], list[Any]]:
    if not isinstance(xs, (list, tuple)) or not xs:
        got = f"an empty {type(xs).__name__}" if isinstance(xs, (list, tuple)) \
            else type(xs).__name__
        raise TypeError(f"{op}: xs must be a non-empty list or tuple of tensors, got {got}")
    pairs = [_in(x, op, f"xs[{i}]") for i, x in enumerate(xs)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def concatenate(xs: Any, axis: int = 0) -> Tensor:
    """Joins tensors along ``axis``."""
    arrays, ts = _many(xs, "concatenate")
    axis = axes(axis, arrays[0].ndim, "concatenate")[0]
    try:
        out = canon(np.concatenate(arrays, axis=axis), *arrays)
    except ValueError:
        shapes = ", ".join(str(a.shape) for a in arrays)
        raise OpError(f"concatenate: shapes {shapes} do not match outside axis {axis}") from None
    cuts = np.cumsum([a.shape[axis] for a in arrays])[:-1]
    return record(out, ts, lambda g: tuple(np.split(g, cuts, axis=axis)), "concatenate")


def stack(x: Any, axis: int = 0) -> Tensor:
    """Stacks tensors of one shape along a new ``axis``."""
    arrays, ts = _many(x, "stack")
    if len({a.shape for a in arrays}) != 1:
        raise OpError(f"stack: every tensor must have one shape, got "
                      f"{', '.join(str(a.shape) for a in arrays)}")
    axis = axes(axis, arrays[0].ndim + 1, "stack")[0]
    out = canon(np.stack(arrays, axis=axis), *arrays)
    n = len(arrays)
    return record(out, ts, lambda g: tuple(np.take(g, i, axis=axis) for i in range(n)), "stack")


def unstack(x: Any, num: int | None = None, axis: int = 0) -> list[Tensor]:
    """The slices of ``x`` along ``axis``, as a list."""
    a, _ = _in(x, "unstack")
    axis = axes(axis, a.ndim, "unstack")[0]
    return [take(x, i, axis=axis) for i in range(a.shape[axis])]


def split(x: Any, indices_or_sections: Any, axis: int = 0) -> list[Tensor]:
    """Splits ``x`` into equal sections (an int) or at the given indices (a list)."""
    a, t = _in(x, "split")
    axis = axes(axis, a.ndim, "split")[0]
    n = a.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or n % k:
            raise OpError(f"split: axis {axis} of length {n} does not split into {k} "
                          f"equal sections")
        cuts = [n // k * i for i in range(1, k)]
    else:
        cuts = [int(c) for c in indices_or_sections]
    bounds = [0, *cuts, n]
    out = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index = [np.s_[:]] * a.ndim
        index[axis] = np.s_[lo:hi]
        out.append(_slice_index(a, t, tuple(index), "split"))
    return out


def _slice_index(a: np.ndarray, t: Any, index: Any, op: str) -> Tensor:
    """``a[index]`` (basic or advanced indexing); VJP scatters ``g`` back with ``np.add.at``."""
    out = np.asarray(a[index], order="C")

    def vjp(g):
        full = np.zeros(a.shape, dtype=g.dtype)
        np.add.at(full, index, g)
        return (full,)

    return record(out, (t,), vjp, op)


def getitem(x: Any, index: Any) -> Tensor:
    """``x[index]`` with NumPy's basic and advanced indexing (tensor indices allowed)."""
    a, t = _in(x, "getitem")
    index = _plain_index(index)
    try:
        return _slice_index(a, t, index, "getitem")
    except IndexError as exc:
        raise IndexError(f"getitem: {exc} (x has shape {a.shape})") from None


def _plain_index(index: Any) -> Any:
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    if isinstance(index, Tensor):
        return index.data
    return index


def slice(inputs: Any, start_indices: Sequence[int], shape: Sequence[int]) -> Tensor:  # noqa: A001
    """The block of ``shape`` starting at ``start_indices`` (``keras.ops.slice``)."""
    a, t = _in(inputs, "slice")
    starts, sizes = tuple(int(s) for s in start_indices), tuple(int(n) for n in shape)
    if len(starts) != a.ndim or len(sizes) != a.ndim:
        raise OpError(f"slice: start_indices {starts} and shape {sizes} must have one entry "
                      f"per axis of x {a.shape}")
    if any(s < 0 or n < 0 or s + n > d for s, n, d in zip(starts, sizes, a.shape)):
        raise OpError(f"slice: start_indices {starts} and shape {sizes} reach past x {a.shape}")
    index = tuple(np.s_[int(s):int(s) + int(n)] for s, n in zip(start_indices, shape))
    return _slice_index(a, t, index, "slice")


def take(x: Any, indices: Any, axis: int | None = None) -> Tensor:
    """Gathers entries at ``indices`` along ``axis`` (of the flattened ``x`` when ``None``);
    negative indices count from the end. VJP: a scatter-add."""
    a, t = _in(x, "take")
    idx = np.asarray(unwrap(indices, "take", "indices")[0])
    if idx.dtype.kind not in "iu":
        raise TypeError(f"take: indices must be integers, got dtype {idx.dtype}")
    src = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axes(axis, a.ndim, "take")[0]
    size = src.shape[ax]
    if idx.size and (idx.max() >= size or idx.min() < -size):
        raise IndexError(f"take: indices must lie in [-{size}, {size}) for axis {ax} of "
                         f"length {size}, got values from {idx.min()} to {idx.max()}")
    out = np.take(src, idx, axis=ax)

    def vjp(g):
        full = np.zeros(src.shape, dtype=g.dtype)
        gm = np.moveaxis(g.reshape(src.shape[:ax] + idx.shape + src.shape[ax + 1:]),
                         list(range(ax, ax + idx.ndim)), list(range(idx.ndim)))
        fm = np.moveaxis(full, ax, 0)
        np.add.at(fm, idx % size, gm)
        return (full.reshape(a.shape),)

    return record(np.asarray(out, order="C"), (t,), vjp, "take")


def take_along_axis(x: Any, indices: Any, axis: int | None = None) -> Tensor:
    """Gathers with ``indices`` shaped like ``x`` along ``axis``."""
    a, t = _in(x, "take_along_axis")
    idx = np.asarray(unwrap(indices, "take_along_axis", "indices")[0])
    src = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axes(axis, a.ndim, "take_along_axis")[0]
    if idx.ndim != src.ndim:
        raise OpError(f"take_along_axis: indices must have the rank of x {src.shape}, got "
                      f"shape {idx.shape}")
    out = np.take_along_axis(src, idx, axis=ax)

    def vjp(g):
        full = np.zeros(src.shape, dtype=g.dtype)
        # indices broadcast against x on the other axes, as the gather did
        full_idx = np.broadcast_to(idx, out.shape)
        grid = list(np.indices(out.shape, sparse=True))
        grid[ax % src.ndim] = full_idx % src.shape[ax]
        np.add.at(full, tuple(grid), g)
        return (full.reshape(a.shape),)

    return record(np.asarray(out, order="C"), (t,), vjp, "take_along_axis")


def tile(x: Any, repeats: Any) -> Tensor:
    """Repeats the whole of ``x`` ``repeats`` times along each axis."""
    a, t = _in(x, "tile")
    reps = (int(repeats),) if isinstance(repeats, (int, np.integer)) else tuple(map(int, repeats))
    if any(r < 0 for r in reps):
        raise OpError(f"tile: repeats must be non-negative, got {reps}")
    out = np.tile(a, reps)
    nd = out.ndim
    src = (1,) * (nd - a.ndim) + a.shape
    full = (1,) * (nd - len(reps)) + reps

    def vjp(g):
        inter = []
        for r, s in zip(full, src):
            inter.extend((r, s))
        return (g.reshape(inter).sum(axis=tuple(range(0, 2 * nd, 2))).reshape(a.shape),)

    return record(out, (t,), vjp, "tile")


def repeat(x: Any, repeats: Any, axis: int | None = None) -> Tensor:
    """Repeats each entry ``repeats`` times along ``axis`` (flattened when ``None``)."""
    a, t = _in(x, "repeat")
    reps = np.asarray(unwrap(repeats, "repeat", "repeats")[0])
    src = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axes(axis, a.ndim, "repeat")[0]
    if reps.ndim > 1 or (reps.ndim == 1 and reps.size not in (1, src.shape[ax])):
        raise OpError(f"repeat: repeats must be an int or one count per entry of axis {ax} "
                      f"(length {src.shape[ax]}), got shape {reps.shape}")
    out = np.repeat(src, reps, axis=ax)
    owner = np.repeat(np.arange(src.shape[ax]), reps)

    def vjp(g):
        full = np.zeros(src.shape, dtype=g.dtype)
        fm = np.moveaxis(full, ax, 0)
        np.add.at(fm, owner, np.moveaxis(g, ax, 0))
        return (full.reshape(a.shape),)

    return record(out, (t,), vjp, "repeat")


def flip(x: Any, axis: Any = None) -> Tensor:
    """Reverses the order along ``axis`` (all axes when ``None``)."""
    a, t = _in(x, "flip")
    axis = axes(axis, a.ndim, "flip")
    out = np.asarray(np.flip(a, axis=axis), order="C")
    return record(out, (t,), lambda g: (np.flip(g, axis=axis),), "flip")


def pad(x: Any, pad_width: Any, mode: str = "constant", constant_values: Any = None) -> Tensor:
    """Pads ``x`` by ``pad_width`` (``[(before, after), ...]`` per axis, or one pair or
    int for all); modes ``constant``, ``reflect``, ``symmetric``, ``edge``."""
    a, t = _in(x, "pad")
    if mode not in ("constant", "reflect", "symmetric", "edge"):
        raise OpError(f"pad: mode must be 'constant', 'reflect', 'symmetric' or 'edge', "
                      f"got {mode!r}")
    try:
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64), (a.ndim, 2))
    except (ValueError, TypeError):
        raise OpError(f"pad: pad_width must be an int, one (before, after) pair or one pair "
                      f"per axis of x {a.shape}, got {pad_width!r}") from None
    if (widths < 0).any():
        raise OpError(f"pad: pad_width must be non-negative, got {pad_width!r}")
    kwargs = {"constant_values": constant_values or 0} if mode == "constant" else {}
    out = np.pad(a, widths, mode=mode, **kwargs)
    if mode == "constant":
        index = tuple(np.s_[lo:lo + n] for (lo, _), n in zip(widths, a.shape))
        return record(out, (t,), lambda g: (g[index],), "pad")
    # other modes copy entries: scatter each output position back to its source
    src = np.pad(np.arange(a.size).reshape(a.shape), widths, mode=mode)

    def vjp(g):
        full = np.zeros(a.size, dtype=g.dtype)
        np.add.at(full, src.reshape(-1), g.reshape(-1))
        return (full.reshape(a.shape),)

    return record(out, (t,), vjp, "pad")


def cumsum(x: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    """Running sum along ``axis`` (of the flattened ``x`` when ``None``). VJP: the
    reversed running sum of ``g``."""
    a, t = _in(x, "cumsum")
    src = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axes(axis, a.ndim, "cumsum")[0]
    out = canon(np.cumsum(src, axis=ax, dtype=dtype), a)
    if out.dtype == np.bool_:
        out = out.astype(np.int32)
    return record(out, (t,), lambda g: (
        np.flip(np.cumsum(np.flip(g, ax), axis=ax), ax).reshape(a.shape),), "cumsum")


def cumprod(x: Any, axis: int | None = None, dtype: Any = None) -> Tensor:
    """Running product along ``axis`` (VJP exact for inputs without zeros)."""
    a, t = _in(x, "cumprod")
    src = a.reshape(-1) if axis is None else a
    ax = 0 if axis is None else axes(axis, a.ndim, "cumprod")[0]
    out = canon(np.cumprod(src, axis=ax, dtype=dtype), a)
    return record(out, (t,), lambda g: (
        (np.flip(np.cumsum(np.flip(g * out, ax), axis=ax), ax) / src).reshape(a.shape),),
        "cumprod")


def broadcast_to(x: Any, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape``."""
    from tinynet.ops.core import unbroadcast

    a, t = _in(x, "broadcast_to")
    try:
        out = np.asarray(np.broadcast_to(a, tuple(shape)), order="C")
    except ValueError:
        raise OpError(f"broadcast_to: x of shape {a.shape} does not broadcast to "
                      f"{tuple(shape)}") from None
    return record(out, (t,), lambda g: (unbroadcast(g, a.shape),), "broadcast_to")


def diagonal(x: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Tensor:
    """The diagonal of the ``axis1``/``axis2`` planes."""
    a, t = _in(x, "diagonal")
    axis1, axis2 = axes(axis1, a.ndim, "diagonal")[0], axes(axis2, a.ndim, "diagonal")[0]
    out = np.asarray(np.diagonal(a, offset, axis1, axis2), order="C")

    def vjp(g):
        full = np.zeros(a.shape, dtype=g.dtype)
        plane = np.moveaxis(full, (axis1, axis2), (-2, -1))
        n = g.shape[-1]
        plane[..., np.arange(n) + max(-offset, 0), np.arange(n) + max(offset, 0)] = g
        return (full,)

    return record(out, (t,), vjp, "diagonal")


def tril(x: Any, k: int = 0) -> Tensor:
    """Zeros above the ``k``-th diagonal."""
    a, t = _in(x, "tril")
    if a.ndim < 2:
        raise OpError(f"tril: x must have rank >= 2, got shape {a.shape}")
    mask = np.tril(np.ones(a.shape[-2:], dtype=bool), k)
    return record(np.where(mask, a, 0).astype(a.dtype), (t,),
                  lambda g: (np.where(mask, g, 0).astype(g.dtype),), "tril")


def triu(x: Any, k: int = 0) -> Tensor:
    """Zeros below the ``k``-th diagonal."""
    a, t = _in(x, "triu")
    if a.ndim < 2:
        raise OpError(f"triu: x must have rank >= 2, got shape {a.shape}")
    mask = np.triu(np.ones(a.shape[-2:], dtype=bool), k)
    return record(np.where(mask, a, 0).astype(a.dtype), (t,),
                  lambda g: (np.where(mask, g, 0).astype(g.dtype),), "triu")
