"""``LSTM``: long short-term memory (Hochreiter and Schmidhuber, 1997), Keras 3's
weights and gate order (i, f, c, o)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.recurrent.base_rnn import BaseRNN
from tinynet.layers.layer import check_bool

__all__ = ["LSTM"]


class _ForgetBias:
    """Keras's ``unit_forget_bias`` initializer: the bias initializer's values with the
    forget gate's block set to ones."""

    def __init__(self, layer: "LSTM") -> None:
        self.layer = layer

    def __call__(self, shape: tuple, dtype: Any = None) -> np.ndarray:
        from tinynet.initializers import get

        u = self.layer.units
        values = np.array(get(self.layer.bias_initializer, self.layer)(shape), dtype=np.float32)
        values[u:2 * u] = 1.0
        return values


class LSTM(BaseRNN):
    """Long short-term memory layer (Keras 3 semantics, weights and gate order).

    Each step: ``z = x_t @ kernel + h @ recurrent_kernel + bias`` split into gates
    i, f, c, o; ``i, f, o = recurrent_activation(...)``, ``g = activation(z_c)``,
    ``c_t = f * c + i * g``, ``h_t = o * activation(c_t)``.

    Args:
        units: State size (positive int).
        activation: ``"tanh"`` (default), ``"sigmoid"``, ``"relu"``, ``"hard_sigmoid"``,
            ``"linear"`` or ``None``.
        recurrent_activation: The gates' activation (default ``"sigmoid"``), same choices.
        use_bias: Whether to add a bias.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializer names
            (Keras's defaults ``"glorot_uniform"``, ``"orthogonal"``, ``"zeros"``).
        unit_forget_bias: Start the forget gate's bias at 1 (Keras's default ``True``).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Weight penalties.
        dropout: Input dropout rate in training (masks fixed over the steps; one per gate
            when ``recurrent_dropout`` is set, as Keras).
        recurrent_dropout: Dropout rate on the previous state in the recurrent products
            (one mask per gate).
        seed: Seed of the dropout masks (``None``: the global seed stream).
        return_sequences: Return every step's output (else the last).
        return_state: Also return the final ``h`` and ``c`` (``[output, h, c]``).
        go_backwards: Process the sequence in reverse (outputs in processing order).
        stateful: Only ``False`` (a ``ValueError`` otherwise).
        unroll: Accepted for Keras files; the compiled loop computes the same.
        use_cudnn: Accepted for Keras files (``"auto"``, ``True`` or ``False``); ignored.
        name, input_shape, trainable: As for any layer.

    Called as ``layer(x, initial_state=[h0, c0])`` it starts from those states, and
    ``backward`` then returns ``[dL/dx, dL/dh0, dL/dc0]``.

    Shape:
        Input: ``[batch, timesteps, features]``.
        Output: ``[batch, timesteps, units]`` with ``return_sequences``, else
        ``[batch, units]``; with ``return_state`` also ``h`` and ``c``, ``[batch, units]``.
        Parameters: ``kernel [features, 4 * units]``, ``recurrent_kernel
        [units, 4 * units]``, ``bias [4 * units]`` (gates i, f, c, o).
    """

    _KIND = "lstm"
    _GATES = 4
    _STATES = 2

    def __init__(self, units: int, activation: str | None = "tanh",
                 recurrent_activation: str | None = "sigmoid", *, use_bias: bool = True,
                 kernel_initializer: str = "glorot_uniform",
                 recurrent_initializer: str = "orthogonal", bias_initializer: str = "zeros",
                 unit_forget_bias: bool = True, kernel_regularizer: Any = None,
                 recurrent_regularizer: Any = None, bias_regularizer: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, seed: int | None = None,
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 use_cudnn: Any = "auto", name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(units, activation, recurrent_activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer,
                         recurrent_regularizer=recurrent_regularizer,
                         bias_regularizer=bias_regularizer, dropout=dropout,
                         recurrent_dropout=recurrent_dropout, seed=seed,
                         return_sequences=return_sequences, return_state=return_state,
                         go_backwards=go_backwards, stateful=stateful, unroll=unroll,
                         name=name, input_shape=input_shape, trainable=trainable)
        self.unit_forget_bias = check_bool(unit_forget_bias, "unit_forget_bias", "LSTM")
        self.use_cudnn = self._check_use_cudnn(use_cudnn)

    def _bias_init(self) -> Any:
        return _ForgetBias(self) if self.unit_forget_bias else self.bias_initializer

    def get_config(self) -> dict:
        config = super().get_config()
        config["unit_forget_bias"] = self.unit_forget_bias
        config["use_cudnn"] = self.use_cudnn
        return config
