"""``Dense``: a fully connected layer on the last axis (Keras 3 semantics)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import activations, regularizers
from tinynet.layers.layer import Layer, check_bool, check_positive_int
from tinynet.layers.validation import check_initializer, check_seed
from tinynet.ops.arrays.dense import dense_backward, dense_forward
from tinynet.tensor import Tensor, as_array

__all__ = ["Dense"]


class Dense(Layer):
    """Densely connected layer: ``activation(x @ kernel + bias)`` over the last axis.

    The product is tinynet's deterministic GEMM; the bias add is fused into the
    activation pass.

    Args:
        units: Output size (positive int).
        activation: Activation name (see :func:`tinynet.activations.names`) or ``None``.
        use_bias: Whether to add a bias vector (zeros at start).
        kernel_initializer: Initializer name for the kernel (Keras names).
        seed: Seed of the kernel initializer; ``None`` draws from the global seed stream.
        name: Layer name (default ``dense``).
        input_shape: Optional input shape without the batch axis.
        kernel_regularizer: Penalty on the kernel added to the training loss (a
            ``tn.regularizers`` object such as ``L2(0.01)``, a name such as ``"l2"``, or a
            callable ``weight -> scalar``); only while the kernel is trainable.
        bias_regularizer: Penalty on the bias, likewise.
        activity_regularizer: Penalty on the layer's output, divided by the batch size
            (Keras 3), added to the training loss.
        trainable: ``False`` freezes the kernel and bias.

    Shape:
        Input: ``[batch, ..., in_features]`` (rank >= 2).
        Output: ``[batch, ..., units]``.
        Parameters: ``kernel`` ``[in_features, units]``, ``bias`` ``[units]``.
    """

    supports_masking = True  # a mask passes through (Keras)

    def __init__(self, units: int, activation: str | None = None, *, use_bias: bool = True,
                 kernel_initializer: str = "glorot_uniform", seed: int | None = None,
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        self.units = check_positive_int(units, "units", "Dense")
        self.activation = activations.get(activation, owner="Dense")
        self.use_bias = check_bool(use_bias, "use_bias", "Dense")
        self.kernel_initializer = check_initializer(kernel_initializer, "Dense")
        self.seed = check_seed(seed, "Dense")
        check = regularizers.check_layer_regularizer
        self.kernel_regularizer = check(kernel_regularizer, "kernel_regularizer", "Dense")
        self.bias_regularizer = check(bias_regularizer, "bias_regularizer", "Dense")
        self.activity_regularizer = check(activity_regularizer, "activity_regularizer", "Dense")
        self.kernel = None
        self.bias = None

    def _in_features(self, input_shape: tuple) -> int:
        shape = tuple(input_shape)
        if len(shape) < 2:
            raise ValueError(
                f"Dense {self.name!r}: input must have rank >= 2 (batch axis included), "
                f"got shape {shape}")
        if shape[-1] is None or shape[-1] == 0:
            raise ValueError(
                f"Dense {self.name!r}: the last input axis must be known and non-empty, "
                f"got shape {shape}")
        return int(shape[-1])

    def build(self, input_shape: tuple) -> None:
        fan_in = self._in_features(input_shape)
        self.kernel = self.add_weight("kernel", (fan_in, self.units), self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), "zeros",
                                        regularizer=self.bias_regularizer)
        super().build(input_shape)

    def output_shape(self, input_shape: tuple) -> tuple:
        self._in_features(input_shape)
        return (*tuple(input_shape)[:-1], self.units)

    def forward(self, x: Any, training: bool = False) -> Tensor:
        x = as_array(x)
        if not self.built:
            self.build((None, *x.shape[1:]))
        fan_in = self.kernel.value.shape[0]
        if x.ndim < 2 or x.shape[-1] != fan_in:
            raise ValueError(
                f"Dense {self.name!r}: expected input of shape (batch, ..., {fan_in}), "
                f"got shape {x.shape}")
        x2 = x.reshape(-1, fan_in)
        bias = self.bias.value if self.use_bias else None
        y, pre = dense_forward(x2, self.kernel.value, bias, self.activation)
        self._cache = (x2, x.shape, pre, y)
        if self.activity_regularizer is not None:
            regularizers.activity_loss(self, y, x.shape[0])
        return Tensor(y.reshape(*x.shape[:-1], self.units))

    def _grads(self, grad_output: Any, input_grad: bool) -> np.ndarray | None:
        """Fills kernel/bias gradients; returns dL/dx (``[rows, fan_in]``) when asked."""
        x2, x_shape, pre, y = self._require_cache()
        g = as_array(grad_output)
        if g.size != y.size:
            raise ValueError(
                f"Dense {self.name!r}: grad_output must have shape "
                f"{(*x_shape[:-1], self.units)}, got {g.shape}")
        g = g.reshape(y.shape)
        if self.activity_regularizer is not None:
            g = regularizers.activity_grad(self, y, x_shape[0], g)
        dx, dkernel, dbias = dense_backward(
            x2, self.kernel.value, pre, y, g, self.activation,
            want_kernel=self.kernel.trainable,
            want_bias=self.use_bias and self.bias.trainable, want_input=input_grad)
        self.kernel.grad = dkernel
        if self.use_bias:
            self.bias.grad = dbias
        return dx

    def backward(self, grad_output: Any) -> Tensor:
        return Tensor(self._grads(grad_output, True).reshape(self._cache[1]))

    def backward_params(self, grad_output: Any) -> None:
        self._grads(grad_output, False)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "units": self.units,
            "activation": self.activation.name if self.activation is not None else "linear",
            "use_bias": self.use_bias,
            "kernel_initializer": self.kernel_initializer,
            "seed": self.seed,
        })
        for arg in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
            config[arg] = regularizers.config_entry(getattr(self, arg), arg, "Dense")
        return config
