"""``LayerNormalization``: per sample over the given axes (default the last)."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import numpy as np

from tinynet.layers.regularization.normalization._base import NormalizationLayer
from tinynet.ops.arrays.normalization import gn_backward, gn_forward
from tinynet.tensor import Tensor

__all__ = ["LayerNormalization"]

_GATE = "ln_parallel_min_elems"


class LayerNormalization(NormalizationLayer):
    """Layer normalization (Ba et al., 2016), Keras 3 arguments and defaults.

    Every slice over the normalized ``axis`` (an int or a tuple) is normalized with its
    own mean and biased variance, then scaled and shifted elementwise by ``gamma`` and
    ``beta`` shaped like the normalized axes. It runs on the group-norm core with one
    group, on the view that puts the normalized axes last.

    Args:
        axis: Axis or axes to normalize over (not the batch axis).
        epsilon: Added to the variance; a finite number > 0.
        center: Learn ``beta``.
        scale: Learn ``gamma``.
        **kwargs: ``name``, ``trainable``, ``input_shape``.

    Shape:
        Input: ``[batch, ...]`` (rank >= 2); output: same shape.
        gamma, beta: the input's sizes on ``axis`` (``[C]`` for the default).
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, axis: int | tuple[int, ...] = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, **kwargs: Any) -> None:
        super().__init__(epsilon=epsilon, center=center, scale=scale, **kwargs)
        owner = type(self).__name__
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        if not axes or any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in axes):
            raise TypeError(f"{owner}: axis must be an int or a non-empty tuple of ints, got {axis!r}")
        self.axis = int(axis) if isinstance(axis, (int, np.integer)) else tuple(int(a) for a in axes)
        self._axes_arg = tuple(int(a) for a in axes)

    def build(self, input_shape: tuple) -> None:
        owner = type(self).__name__
        rank = len(input_shape)
        if rank < 2:
            raise ValueError(f"{owner}: input must have rank >= 2, got shape {tuple(input_shape)}")
        axes = []
        for a in self._axes_arg:
            if not -rank <= a < rank:
                raise ValueError(f"{owner}: axis {a} is out of range for an input of rank {rank}")
            axes.append(a % rank)
        if len(set(axes)) != len(axes):
            raise ValueError(f"{owner}: axis {self.axis!r} repeats an axis (rank {rank})")
        if 0 in axes:
            raise ValueError(f"{owner}: axis {self.axis!r} includes the batch axis 0")
        axes.sort()
        dims = tuple(input_shape[a] for a in axes)
        if any(d is None for d in dims):
            raise ValueError(f"{owner}: the normalized axes {tuple(axes)} of input shape "
                             f"{tuple(input_shape)} must be known")
        self._check_nonempty(dims, input_shape)
        keep = [a for a in range(rank) if a not in axes]
        self._perm = keep + axes
        self._inverse = list(np.argsort(self._perm))
        self._moves = self._perm != list(range(rank))  # the normalized axes are not last
        self._axes, self._dims = tuple(axes), dims
        # the sizes on the normalized axes, read in one C call per forward (a generator
        # over the axes cost more than the rest of the shape checks on a cold cache)
        self._rank = rank
        self._sizes = itemgetter(*axes, 0)  # one more index, so it always returns a tuple
        self._features = int(np.prod(dims))
        self._add_affine(dims)
        super().build(input_shape)

    def _to_rows(self, x: np.ndarray) -> np.ndarray:
        if self._moves:
            x = np.ascontiguousarray(x.transpose(self._perm))
        return x.reshape(-1, 1, self._features)

    def _from_rows(self, y: np.ndarray, shape: tuple) -> np.ndarray:
        if not self._moves:
            return y.reshape(shape)
        permuted = tuple(shape[a] for a in self._perm)
        return np.ascontiguousarray(y.reshape(permuted).transpose(self._inverse))

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = self._input(x)
        if x.ndim != self._rank or self._sizes(x.shape)[:-1] != self._dims:
            raise ValueError(f"LayerNormalization {self.name!r}: expected sizes {self._dims} on "
                             f"axes {self._axes}, got input shape {x.shape}")
        gamma, beta = self._gamma_beta()
        rows = self._to_rows(x)
        out, _, mean, _var, inv_std = gn_forward(rows, 1, gamma, beta, self.epsilon,
                                                 gate=_GATE, want_xn=False)
        self._cache = (rows, mean, inv_std, x.shape)
        return Tensor(self._from_rows(out, x.shape))

    def backward(self, grad_output: Any) -> Tensor:
        rows, mean, inv_std, shape = self._require_cache()
        gamma, _ = self._gamma_beta()
        g = self._to_rows(self._grad(grad_output, shape))
        dx, grad_gamma, grad_beta = gn_backward(g, rows, inv_std, 1, gamma, mean=mean,
                                                row_gate=_GATE, param_gate=_GATE)
        self._set_param_grads(grad_gamma, grad_beta)
        return Tensor(self._from_rows(dx, shape))

    def get_config(self) -> dict:
        config = super().get_config()
        config["axis"] = list(self.axis) if isinstance(self.axis, tuple) else self.axis
        return config
