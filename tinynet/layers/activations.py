"""Activation layers: ``Activation``, ``ReLU``, ``LeakyReLU``, ``ELU``, ``Sigmoid``, ``Tanh``,
``Softmax`` (Keras 3 arguments and defaults; ``Sigmoid``/``Tanh`` are tinynet additions).

Each is a thin wrapper over an :class:`tinynet.ops.fused.ActivationFn`; the forward
caches only what the backward reads (the input or the output).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet import activations
from tinynet.activations import ActivationFn
from tinynet.layers.layer import Layer
from tinynet.tensor import Tensor, as_array

__all__ = ["Activation", "ReLU", "LeakyReLU", "ELU", "Sigmoid", "Tanh", "Softmax"]


def _check_float(value: Any, arg: str, owner: str, *, allow_none: bool = False,
                 non_negative: bool = True, allow_inf: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    want = "a non-negative float" if non_negative else "a finite float"
    if allow_none:
        want = f"None or {want}"
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: {arg} must be {want}, got {value!r}")
    try:
        value = float(value)
    except OverflowError:  # an int beyond float range
        value = math.inf
    bad = (non_negative and value < 0) or (math.isinf(value) and not allow_inf)
    if math.isnan(value) or bad:
        raise ValueError(f"{owner}: {arg} must be {want}, got {value!r}")
    return value


class _ActivationLayer(Layer):
    """Shared forward/backward of the elementwise activation layers."""

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, fn: ActivationFn | None, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self._fn = fn

    def _check_input(self, x: np.ndarray) -> None:
        """Hook for layers with input requirements (Softmax's axis)."""

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = as_array(x)
        self._check_input(x)
        if self._fn is None:
            self._cache = (x.shape,)
            return Tensor(x)
        y = self._fn.forward(x)
        self._cache = (x.shape, x if self._fn.uses_input else None, y)
        return Tensor(y)

    def backward(self, grad_output: Any) -> Tensor:
        cache = self._require_cache()
        g = as_array(grad_output)
        if g.shape != cache[0]:
            raise ValueError(f"{type(self).__name__} {self.name!r}: grad_output must have "
                             f"shape {cache[0]}, got {g.shape}")
        if self._fn is None:
            return Tensor(g)
        return Tensor(self._fn.backward(cache[1], cache[2], g))


class Activation(_ActivationLayer):
    """Applies an activation function by name (Keras ``Activation``).

    Args:
        activation: One of :func:`tinynet.activations.names`, or ``None`` (identity).
        name: Layer name (default ``activation``).
        input_shape: Optional input shape without the batch axis.
        trainable: Accepted for symmetry; the layer has no weights.

    Shape:
        Input: any; output: same shape.
    """

    def __init__(self, activation: str | None, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        fn = activations.get(activation, owner="Activation")
        super().__init__(fn, name=name, trainable=trainable, input_shape=input_shape)
        self.activation = "linear" if fn is None else fn.name

    def get_config(self) -> dict:
        return {**super().get_config(), "activation": self.activation}


class ReLU(_ActivationLayer):
    """Rectified linear unit with Keras's optional slope, ceiling and threshold.

    ``f(x) = min(x, max_value)`` for ``x > threshold``, ``negative_slope * (x - threshold)``
    below the threshold; the defaults give ``max(x, 0)``.

    Args:
        max_value: ``None`` (unbounded) or a non-negative ceiling.
        negative_slope: Non-negative slope below the threshold.
        threshold: Non-negative threshold.
        name: Layer name (default ``re_lu``).
        input_shape: Optional input shape without the batch axis.
        trainable: Accepted for symmetry; the layer has no weights.

    Shape:
        Input: any; output: same shape.
    """

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        self.max_value = _check_float(max_value, "max_value", "ReLU", allow_none=True,
                                      allow_inf=True)
        self.negative_slope = _check_float(negative_slope, "negative_slope", "ReLU")
        self.threshold = _check_float(threshold, "threshold", "ReLU")
        fn = activations.relu_fn(self.negative_slope, self.max_value, self.threshold)
        super().__init__(fn, name=name, trainable=trainable, input_shape=input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


class LeakyReLU(_ActivationLayer):
    """Leaky ReLU: ``x`` for ``x >= 0``, ``negative_slope * x`` below (Keras default 0.3).

    Args:
        negative_slope: Non-negative slope for negative inputs.
        name: Layer name (default ``leaky_re_lu``).
        input_shape: Optional input shape without the batch axis.
        trainable: Accepted for symmetry; the layer has no weights.

    Shape:
        Input: any; output: same shape.
    """

    def __init__(self, negative_slope: float = 0.3, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        self.negative_slope = _check_float(negative_slope, "negative_slope", "LeakyReLU")
        fn = activations.relu_fn(self.negative_slope)
        super().__init__(fn, name=name, trainable=trainable, input_shape=input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "negative_slope": self.negative_slope}


class ELU(_ActivationLayer):
    """Exponential linear unit: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Args:
        alpha: Scale of the negative part (a finite float).
        name: Layer name (default ``elu``).
        input_shape: Optional input shape without the batch axis.
        trainable: Accepted for symmetry; the layer has no weights.

    Shape:
        Input: any; output: same shape.
    """

    def __init__(self, alpha: float = 1.0, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        self.alpha = _check_float(alpha, "alpha", "ELU", non_negative=False)
        super().__init__(activations.elu_fn(self.alpha), name=name, trainable=trainable,
                         input_shape=input_shape)

    def get_config(self) -> dict:
        return {**super().get_config(), "alpha": self.alpha}


class Sigmoid(_ActivationLayer):
    """Logistic sigmoid ``1 / (1 + exp(-x))``, computed stably (tinynet addition).

    Shape:
        Input: any; output: same shape.
    """

    def __init__(self, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(activations.get("sigmoid"), name=name, trainable=trainable,
                         input_shape=input_shape)


class Tanh(_ActivationLayer):
    """Hyperbolic tangent (tinynet addition).

    Shape:
        Input: any; output: same shape.
    """

    def __init__(self, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(activations.get("tanh"), name=name, trainable=trainable,
                         input_shape=input_shape)


class Softmax(_ActivationLayer):
    """Softmax along ``axis`` (stable: the row maximum is subtracted first).

    Args:
        axis: The axis normalized (an int; negative counts from the end).
        name: Layer name (default ``softmax``).
        input_shape: Optional input shape without the batch axis.
        trainable: Accepted for symmetry; the layer has no weights.

    Shape:
        Input: any with rank > ``axis``; output: same shape.
    """

    def __init__(self, axis: int = -1, *, name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"Softmax: axis must be an int, got {axis!r}")
        self.axis = int(axis)
        super().__init__(activations.get("softmax"), name=name, trainable=trainable,
                         input_shape=input_shape)

    def _check_input(self, x: np.ndarray) -> None:
        if not -x.ndim <= self.axis < x.ndim:
            raise ValueError(f"Softmax {self.name!r}: axis {self.axis} is out of range for "
                             f"input of shape {x.shape}")

    def _moved(self, arr: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(arr, self.axis, -1))

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = as_array(x)
        self._check_input(x)
        if self.axis in (-1, x.ndim - 1):
            return super().forward(x, training)
        y = self._fn.forward(self._moved(x))
        self._cache = (x.shape, None, y)
        return Tensor(np.moveaxis(y, -1, self.axis))

    def backward(self, grad_output: Any) -> Tensor:
        shape, _, y = self._require_cache()
        if self.axis in (-1, len(shape) - 1):
            return super().backward(grad_output)
        g = as_array(grad_output)
        if g.shape != shape:
            raise ValueError(f"Softmax {self.name!r}: grad_output must have shape {shape}, "
                             f"got {g.shape}")
        dx = self._fn.backward(None, y, self._moved(g))
        return Tensor(np.moveaxis(dx, -1, self.axis))

    def get_config(self) -> dict:
        return {**super().get_config(), "axis": self.axis}
