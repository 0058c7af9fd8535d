"""``Normalization``: feature-wise standardization by a fixed or adapted mean and variance
(the Keras 3 preprocessing layer; not to be confused with the learned normalization
layers of :mod:`tinynet.layers.regularization.normalization`)."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from tinynet.layers.hooks import check_allocation
from tinynet.layers.layer import Layer, check_bool
from tinynet.scalars import float_array
from tinynet.tensor import Tensor, as_array

__all__ = ["Normalization"]

EPSILON = 1e-7  # Keras's backend.epsilon(): the floor of the standard deviation


def _check_axis(axis: Any) -> tuple[int, ...]:
    what = f"Normalization: axis must be None, an int or a tuple of ints, got {axis!r}"
    if axis is None:
        return ()
    values = tuple(axis) if isinstance(axis, (list, tuple)) else (axis,)
    if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in values):
        raise TypeError(what)
    if len(set(int(a) for a in values)) != len(values):
        raise ValueError(f"Normalization: axis must not repeat an axis, got {axis!r}")
    return tuple(int(a) for a in values)


def _check_stats(mean: Any, variance: Any, axis: tuple) -> tuple:
    if (mean is None) != (variance is None):
        raise ValueError("Normalization: mean and variance must be given together, got "
                         f"mean={mean!r} and variance={variance!r}")
    if mean is None:
        return None, None
    try:
        m = float_array(mean)
        v = float_array(variance)
    except (TypeError, ValueError):
        raise TypeError("Normalization: mean and variance must be numbers or arrays of "
                        f"numbers, got mean={mean!r} and variance={variance!r}") from None
    if m.shape != v.shape:
        raise ValueError("Normalization: mean and variance must have the same shape, got "
                         f"{m.shape} and {v.shape}")
    if m.ndim > len(axis):
        raise ValueError(f"Normalization: mean must have at most {len(axis)} axes (one per "
                         f"kept axis {axis}), got shape {m.shape}")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(v)) and np.all(v >= 0)):
        raise ValueError("Normalization: mean must be finite and variance finite and >= 0, "
                         f"got mean={mean!r} and variance={variance!r}")
    return m, v


class Normalization(Layer):
    """Standardizes features as ``keras.layers.Normalization``:
    ``(x - mean) / max(sqrt(variance), 1e-7)``, or with ``invert=True`` the inverse,
    ``mean + x * max(sqrt(variance), 1e-7)``, in float32.

    ``mean`` and ``variance`` hold one value per position of the kept ``axis`` (the
    others are reduced), either given to the constructor or computed by :meth:`adapt`
    from data (population variance, in float64). Given ones are constants (no weights);
    otherwise the layer has Keras's three non-trainable weights ``mean`` (zeros until
    adapted), ``variance`` (ones) and ``count`` (kept at 0, as Keras keeps it), saved with
    the model. Training never changes them.

    Args:
        axis: The kept axis or axes (default ``-1``, the features); ``None`` keeps none
            (one mean and variance for everything).
        mean: Optional mean, broadcast to the kept axes (aligned from the right).
        variance: Optional variance, the same shape as ``mean``.
        invert: Map standardized values back (``mean + x * std``).
        name: Layer name (default ``normalization``).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, ...]``; output: the same shape, float32.
        Parameters (unless given): ``mean``, ``variance`` (the kept axes' sizes) and
        ``count`` ``()``.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, axis: int | tuple | None = -1, mean: Any = None, variance: Any = None,
                 invert: bool = False, *, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self.axis = _check_axis(axis)
        self.input_mean, self.input_variance = _check_stats(mean, variance, self.axis)
        self.invert = check_bool(invert, "invert", "Normalization")
        self._keep: tuple = ()
        self._reduce: tuple = ()
        self._broadcast: tuple = ()
        self._fixed: tuple | None = None

    # -- shapes ----------------------------------------------------------------------------
    def _axes(self, input_shape: tuple) -> tuple[tuple, tuple]:
        ndim = len(input_shape)
        if any(a < -ndim or a >= ndim for a in self.axis):
            raise ValueError(f"Normalization {self.name!r}: axis {self.axis} is out of range "
                             f"for inputs of rank {ndim} (shape {tuple(input_shape)})")
        keep = tuple(sorted(a % ndim for a in self.axis))
        if len(set(keep)) != len(keep):
            raise ValueError(f"Normalization {self.name!r}: axis {self.axis} names one axis "
                             f"twice for inputs of rank {ndim}")
        if 0 in keep:
            raise ValueError(f"Normalization {self.name!r}: axis must not keep the batch "
                             f"axis 0, got axis={self.axis}")
        if any(input_shape[a] is None for a in keep):
            raise ValueError(f"Normalization {self.name!r}: the kept axes {keep} must have "
                             f"known sizes, got shape {tuple(input_shape)}")
        return keep, tuple(d for d in range(ndim) if d not in keep)

    def output_shape(self, input_shape: tuple) -> tuple:
        return tuple(input_shape)

    def build(self, input_shape: tuple) -> None:
        input_shape = tuple(input_shape)
        self._keep, self._reduce = self._axes(input_shape)
        self._broadcast = tuple(input_shape[d] if d in self._keep else 1
                                for d in range(len(input_shape)))
        stats_shape = tuple(input_shape[d] for d in self._keep)
        if self.input_mean is None:
            self.add_weight("mean", stats_shape, "zeros", trainable=False)
            self.add_weight("variance", stats_shape, "ones", trainable=False)
            self.add_weight("count", (), "zeros", trainable=False)
        else:
            for what in ("mean", "variance"):  # broadcast below: load_model's budget first
                check_allocation(self, f"its fixed {what}", self._broadcast)
            expanded = [1] * len(input_shape)
            for i in range(1, self.input_mean.ndim + 1):
                expanded[self._keep[-i]] = self.input_mean.shape[-i]
            try:
                self._fixed = tuple(
                    np.broadcast_to(s.reshape(expanded), self._broadcast).astype(np.float32)
                    for s in (self.input_mean, self.input_variance))
            except ValueError:
                raise ValueError(
                    f"Normalization {self.name!r}: mean of shape {self.input_mean.shape} "
                    f"does not broadcast to the kept axes {stats_shape} of input shape "
                    f"{input_shape}") from None
        super().build(input_shape)

    # -- statistics ------------------------------------------------------------------------
    def _stats(self) -> tuple[np.ndarray, np.ndarray]:
        if self._fixed is not None:
            return self._fixed
        mean, variance = self._params[0].value, self._params[1].value
        return mean.reshape(self._broadcast), variance.reshape(self._broadcast)

    def adapt(self, data: np.ndarray | Iterable) -> None:
        """Sets ``mean`` and ``variance`` from ``data``: an array (reduced in one go) or an
        iterable of batches (merged batch by batch as Keras merges them), in float64.

        Raises:
            ValueError: The layer was given ``mean`` and ``variance``; the data is empty or
                its kept axes do not match the built shape.
            TypeError: ``data`` is not an array or an iterable of arrays.
        """
        if self.input_mean is not None:
            raise ValueError(f"Normalization {self.name!r}: adapt() needs a layer built "
                             "without mean and variance, but they were given")
        if isinstance(data, (np.ndarray, Tensor)):
            batches: Iterable = [data]
        elif hasattr(data, "__iter__") and not isinstance(data, (str, bytes)):
            batches = data
        else:
            raise TypeError(f"Normalization {self.name!r}: adapt() takes an array or an "
                            f"iterable of batches, got {type(data).__name__}")
        total_mean = total_var = None
        total = 0
        for batch in batches:
            arr = np.asarray(as_array(batch, f"Normalization {self.name!r}: adapt data"),
                             dtype=np.float64)
            if not self.built:
                self.build((None, *arr.shape[1:]))
            if arr.ndim != len(self._broadcast) or any(
                    arr.shape[d] != self._broadcast[d] for d in self._keep):
                raise ValueError(f"Normalization {self.name!r}: adapt() data of shape "
                                 f"{arr.shape} does not match the built input shape "
                                 f"{self.built_input_shape}")
            count = int(np.prod([arr.shape[d] for d in self._reduce])) if self._reduce else 1
            if count == 0:
                continue
            mean = arr.mean(axis=self._reduce)
            var = arr.var(axis=self._reduce)
            if total_mean is None:
                total_mean, total_var, total = mean, var, count
                continue
            total += count
            w_new = count / total
            w_old = 1.0 - w_new
            merged = total_mean * w_old + mean * w_new
            total_var = ((total_var + (total_mean - merged) ** 2) * w_old
                         + (var + (mean - merged) ** 2) * w_new)
            total_mean = merged
        if total_mean is None:
            raise ValueError(f"Normalization {self.name!r}: adapt() got no data")
        self._params[0].assign(total_mean)
        self._params[1].assign(total_var)

    # -- forward / backward ----------------------------------------------------------------
    def _std(self) -> np.ndarray:
        return np.maximum(np.sqrt(self._stats()[1]), np.float32(EPSILON))

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = as_array(x)
        if not self.built:
            self.build((None, *x.shape[1:]))
        if x.ndim != len(self._broadcast) or any(
                x.shape[d] != self._broadcast[d] for d in self._keep):
            raise ValueError(f"Normalization {self.name!r}: expected inputs of shape "
                             f"{self.built_input_shape}, got {x.shape}")
        mean = self._stats()[0]
        self._cache = x.shape
        if self.invert:
            return Tensor(mean + x * self._std())
        return Tensor((x - mean) / self._std())

    def backward(self, grad_output: Any) -> Tensor:
        g = self._check_grad(grad_output, self._require_cache())
        return Tensor(g * self._std() if self.invert else g / self._std())

    def backward_params(self, grad_output: Any) -> None:
        self._check_grad(grad_output, self._require_cache())

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(axis=list(self.axis), invert=self.invert,
                      mean=None if self.input_mean is None else self.input_mean.tolist(),
                      variance=(None if self.input_variance is None
                                else self.input_variance.tolist()))
        return config
