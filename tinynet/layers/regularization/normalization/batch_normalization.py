"""``BatchNormalization``: per channel over the batch and every position."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.regularization.normalization._base import NormalizationLayer, check_axis_int
from tinynet.ops.arrays.normalization import gn_backward, gn_forward
from tinynet.tensor import Tensor

__all__ = ["BatchNormalization"]

_GATE = "bn_parallel_min_elems"


class BatchNormalization(NormalizationLayer):
    """Batch normalization (Ioffe & Szegedy, 2015), Keras 3 arguments and defaults.

    Training (``training=True`` on a trainable layer) normalizes with the batch mean and
    biased variance per channel and updates
    ``moving = moving * momentum + batch * (1 - momentum)``; inference uses the moving
    statistics. A frozen layer (``trainable = False``) always runs in inference mode, as
    in Keras. PyTorch's ``momentum`` is ``1 - momentum`` here (0.99 here = 0.01 there).

    The training pass is the group-norm core on the ``[1, M, C]`` view with one group per
    channel (M = batch x positions), so BN shares its shifted-sum statistics and
    fixed-block folds.

    Args:
        axis: The channel axis (default last).
        momentum: Moving-average momentum in [0, 1].
        epsilon: Added to the variance; a finite number > 0.
        center: Learn ``beta``.
        scale: Learn ``gamma``.
        **kwargs: ``name``, ``trainable``, ``input_shape``.

    Shape:
        Input: ``[batch, *spatial, C]`` (rank >= 2); output: same shape.
        gamma, beta, moving_mean, moving_variance: ``[C]``.
    """

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, **kwargs: Any) -> None:
        super().__init__(epsilon=epsilon, center=center, scale=scale, **kwargs)
        owner = type(self).__name__
        self.axis = check_axis_int(axis, owner)
        if isinstance(momentum, bool) or not isinstance(momentum, (int, float, np.floating)):
            raise TypeError(f"{owner}: momentum must be a number in [0, 1], got {momentum!r}")
        if not 0.0 <= momentum <= 1.0:  # also rejects NaN
            raise ValueError(f"{owner}: momentum must be a number in [0, 1], got {momentum!r}")
        self.momentum = float(momentum)

    def build(self, input_shape: tuple) -> None:
        axis, channels = self._channel_axis(input_shape)
        self._axis, self._channels = axis, channels
        self._add_affine((channels,))
        self.moving_mean = self.add_weight("moving_mean", (channels,), "zeros", trainable=False)
        self.moving_variance = self.add_weight("moving_variance", (channels,), "ones",
                                               trainable=False)
        super().build(input_shape)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = self._input(x)
        self._check_channels(x, self._axis, self._channels)
        xc = self._move_last(x, self._axis)
        c = self._channels
        view = xc.reshape(1, -1, c)
        gamma, beta = self._gamma_beta()
        if training and self.trainable:
            out, _, mean, var, inv_std = gn_forward(view, c, gamma, beta, self.epsilon,
                                                    gate=_GATE, want_xn=False)
            if view.shape[1]:
                m = self.momentum
                for moving, batch in ((self.moving_mean.value, mean),
                                      (self.moving_variance.value, var)):
                    moving *= m  # moving * m + batch * (1 - m), in place (same roundings)
                    moving += batch * (1.0 - m)
            affine_only = False
        else:
            mean = self.moving_mean.value.copy()
            inv_std = (1.0 / np.sqrt(self.moving_variance.value.astype(np.float64)
                                     + self.epsilon)).astype(np.float32)
            out = gn_forward(view, c, gamma, beta, self.epsilon, gate=_GATE, want_xn=False,
                             stats=(mean, inv_std))[0]
            affine_only = True
        self._cache = (view, mean, inv_std, affine_only, xc.shape, x.shape)
        return Tensor(self._move_back(out.reshape(xc.shape), self._axis))

    def backward(self, grad_output: Any) -> Tensor:
        view, mean, inv_std, affine_only, shape, x_shape = self._require_cache()
        g = self._move_last(self._grad(grad_output, x_shape), self._axis)
        gamma, _ = self._gamma_beta()
        dx, grad_gamma, grad_beta = gn_backward(
            g.reshape(view.shape), view, inv_std, self._channels, gamma, mean=mean,
            affine_only=affine_only, row_gate=_GATE, param_gate=_GATE)
        self._set_param_grads(grad_gamma, grad_beta)
        return Tensor(self._move_back(dx.reshape(shape), self._axis))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(axis=self.axis, momentum=self.momentum)
        return config
