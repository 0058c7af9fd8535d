"""Shared argument checks, parameters and axis handling of the normalization layers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.layers.hooks import check_allocation
from tinynet.layers.layer import Layer, check_bool
from tinynet.tensor import as_array

__all__ = ["NormalizationLayer", "check_epsilon", "check_axis_int"]


def check_epsilon(epsilon: Any, owner: str) -> float:
    """``epsilon`` must be a finite number > 0."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating, np.integer)):
        raise TypeError(f"{owner}: epsilon must be a finite number > 0, got {epsilon!r}")
    try:
        value = float(epsilon)
    except OverflowError:  # an int beyond float range
        value = math.inf
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{owner}: epsilon must be a finite number > 0, got {epsilon!r}")
    return value


def check_axis_int(axis: Any, owner: str) -> int:
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"{owner}: axis must be an int, got {axis!r}")
    return int(axis)


class NormalizationLayer(Layer):
    """Base of the four normalization layers: epsilon/center/scale, gamma/beta, axes.

    Subclasses set ``self._param_shape`` in ``build`` via :meth:`_add_affine` and use
    :meth:`_gamma_beta` to get flat float32 vectors (ones / zeros when disabled).
    """

    def __init__(self, *, epsilon: float = 1e-3, center: bool = True, scale: bool = True,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        owner = type(self).__name__
        self.epsilon = check_epsilon(epsilon, owner)
        self.center = check_bool(center, "center", owner)
        self.scale = check_bool(scale, "scale", owner)
        self.gamma = None
        self.beta = None

    def _add_affine(self, shape: tuple) -> None:
        if self.scale:
            self.gamma = self.add_weight("gamma", shape, "ones")
        if self.center:
            self.beta = self.add_weight("beta", shape, "zeros")
        size = math.prod(shape)
        for what in ("a buffer of ones", "a buffer of zeros"):  # load_model's budget first
            check_allocation(self, what, (size,))
        self._ones = np.ones(size, dtype=np.float32)
        self._zeros = np.zeros(size, dtype=np.float32)

    def _gamma_beta(self) -> tuple[np.ndarray, np.ndarray]:
        gamma = self.gamma.value.reshape(-1) if self.gamma is not None else self._ones
        beta = self.beta.value.reshape(-1) if self.beta is not None else self._zeros
        return gamma, beta

    def _set_param_grads(self, grad_gamma: np.ndarray | None, grad_beta: np.ndarray | None) -> None:
        if self.gamma is not None:
            self.gamma.grad = grad_gamma.reshape(self.gamma.shape)
        if self.beta is not None:
            self.beta.grad = grad_beta.reshape(self.beta.shape)

    def _input(self, x: Any) -> np.ndarray:
        x = as_array(x)
        self._check_rank(x, 2)
        if not self.built:
            self.build((None, *x.shape[1:]))
        return x

    def _grad(self, grad_output: Any, shape: tuple) -> np.ndarray:
        """``grad_output`` as float32, checked against the last forward input's ``shape``."""
        g = as_array(grad_output, "grad_output")
        if g.shape != tuple(shape):
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: grad_output must have shape "
                f"{tuple(shape)} (the last output's shape), got {g.shape}")
        return g

    def _channel_axis(self, input_shape: tuple) -> tuple[int, int]:
        """``(axis, channels)`` of ``self.axis`` in ``input_shape``, checked (rank >= 2, not
        the batch axis, a known and non-zero size)."""
        owner = type(self).__name__
        if len(input_shape) < 2:
            raise ValueError(f"{owner}: input must have rank >= 2, got shape {tuple(input_shape)}")
        axis = self._resolve_axis(self.axis, len(input_shape), owner)
        channels = input_shape[axis]
        if channels is None:
            raise ValueError(f"{owner}: the channel axis {self.axis} of input shape "
                             f"{tuple(input_shape)} must be known")
        self._check_nonempty((channels,), input_shape)
        return axis, channels

    def _check_nonempty(self, dims: tuple, input_shape: tuple) -> None:
        if 0 in dims:
            raise ValueError(
                f"{type(self).__name__}: the normalized axes of input shape "
                f"{tuple(input_shape)} must not be empty, got sizes {tuple(dims)}")

    @staticmethod
    def _resolve_axis(axis: int, rank: int, owner: str) -> int:
        if not -rank <= axis < rank:
            raise ValueError(f"{owner}: axis {axis} is out of range for an input of rank {rank}")
        axis %= rank
        if axis == 0:
            raise ValueError(f"{owner}: axis {axis} is the batch axis; expected an axis in 1..{rank - 1}")
        return axis

    @staticmethod
    def _move_last(x: np.ndarray, axis: int) -> np.ndarray:
        """``x`` with ``axis`` moved to the end, C-contiguous (a no-op when already last)."""
        if axis == x.ndim - 1:
            return x
        return np.ascontiguousarray(np.moveaxis(x, axis, -1))

    @staticmethod
    def _move_back(y: np.ndarray, axis: int) -> np.ndarray:
        if axis == y.ndim - 1:
            return y
        return np.ascontiguousarray(np.moveaxis(y, -1, axis))

    def _check_channels(self, x: np.ndarray, axis: int, expected: int) -> None:
        rank = len(self.built_input_shape)
        if x.ndim != rank or x.shape[axis] != expected:
            raise ValueError(
                f"{type(self).__name__} {self.name!r}: expected {expected} channels on axis "
                f"{axis} of a rank-{rank} input, got input shape {x.shape}")

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(epsilon=self.epsilon, center=self.center, scale=self.scale)
        return config
