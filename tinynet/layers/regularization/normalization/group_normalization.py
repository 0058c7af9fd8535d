"""``GroupNormalization``: per sample, per group of contiguous channels, over all positions."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.regularization.normalization._base import NormalizationLayer, check_axis_int
from tinynet.ops.arrays.normalization import gn_backward, gn_forward
from tinynet.tensor import Tensor

__all__ = ["GroupNormalization"]


class GroupNormalization(NormalizationLayer):
    """Group normalization (Wu & He, 2018), Keras 3 arguments and defaults.

    Each sample's channels split into ``groups`` contiguous runs; every run is normalized
    over all its positions and channels with the biased variance, then scaled and
    shifted per channel: ``y = (x - mean_g) / sqrt(var_g + epsilon) * gamma + beta``.
    Training and inference compute the same thing (no moving statistics).

    Args:
        groups: Number of groups; ``-1`` means one group per channel (instance norm).
            The channel count must be divisible by it.
        axis: The channel axis (default last).
        epsilon: Added to the variance; a finite number > 0.
        center: Learn ``beta``.
        scale: Learn ``gamma``.
        **kwargs: ``name``, ``trainable``, ``input_shape``.

    Shape:
        Input: ``[batch, *spatial, C]`` (rank >= 2); output: same shape.
        gamma, beta: ``[C]``.
    """

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, **kwargs: Any) -> None:
        super().__init__(epsilon=epsilon, center=center, scale=scale, **kwargs)
        owner = type(self).__name__
        if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
            raise TypeError(f"{owner}: groups must be an int (>= 1, or -1 for one group per "
                            f"channel), got {groups!r}")
        if groups == 0 or groups < -1:
            raise ValueError(f"{owner}: groups must be >= 1, or -1 for one group per channel, "
                             f"got {groups}")
        self.groups = int(groups)
        self.axis = check_axis_int(axis, owner)

    def build(self, input_shape: tuple) -> None:
        axis, channels = self._channel_axis(input_shape)
        groups = channels if self.groups == -1 else self.groups
        if channels % groups:
            raise ValueError(f"{type(self).__name__}: channels ({channels}) must be divisible "
                             f"by groups ({groups})")
        self._axis = axis
        self._channels = channels
        self._num_groups = groups
        self._add_affine((channels,))
        super().build(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = self._input(x)
        self._check_channels(x, self._axis, self._channels)
        gamma, beta = self._gamma_beta()
        xc = self._move_last(x, self._axis)
        out, _, mean, _var, inv_std = gn_forward(xc, self._num_groups, gamma, beta,
                                                 self.epsilon, want_xn=False)
        self._cache = (xc, mean, inv_std, x.shape)
        return Tensor(self._move_back(out, self._axis))

    def backward(self, grad_output: Any) -> Tensor:
        xc, mean, inv_std, x_shape = self._require_cache()
        g = self._move_last(self._grad(grad_output, x_shape), self._axis)
        gamma, _ = self._gamma_beta()
        dx, grad_gamma, grad_beta = gn_backward(g, xc, inv_std, self._num_groups, gamma,
                                                mean=mean)
        self._set_param_grads(grad_gamma, grad_beta)
        return Tensor(self._move_back(dx, self._axis))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(groups=self.groups, axis=self.axis)
        return config
