"""``GRU``: the gated recurrent unit (Cho et al., 2014), Keras 3's weights and gate order
(z, r, h) in both of its forms (``reset_after=True``, Keras's default and cuDNN's, and
``False``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.recurrent.base_rnn import BaseRNN
from tinynet.layers.layer import check_bool
from tinynet.ops.arrays.recurrent_layer import Cell

__all__ = ["GRU"]


class GRU(BaseRNN):
    """Gated recurrent unit (Keras 3 semantics, weights and gate order z, r, h).

    Each step: ``z = recurrent_activation(x W_z + h U_z + b_z)``, ``r`` likewise, the
    candidate ``hh = activation(x W_h + r * (h U_h + b_h'))`` with ``reset_after`` (the
    reset gate applied after the product; two biases, input and recurrent) or
    ``activation(x W_h + (r * h) U_h + b_h)`` without, and ``h_t = z * h + (1 - z) * hh``.

    Args:
        units: State size (positive int).
        activation: ``"tanh"`` (default), ``"sigmoid"``, ``"relu"``, ``"hard_sigmoid"``,
            ``"linear"`` or ``None``.
        recurrent_activation: The gates' activation (default ``"sigmoid"``), same choices.
        use_bias: Whether to add biases.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializer names
            (Keras's defaults ``"glorot_uniform"``, ``"orthogonal"``, ``"zeros"``).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Weight penalties.
        dropout: Input dropout rate in training (masks fixed over the steps; one per gate
            when ``recurrent_dropout`` is set, as Keras).
        recurrent_dropout: Dropout rate on the previous state in the recurrent products
            (one mask per gate).
        seed: Seed of the dropout masks (``None``: the global seed stream).
        return_sequences: Return every step's output (else the last).
        return_state: Also return the final state (``[output, h]``).
        go_backwards: Process the sequence in reverse (outputs in processing order).
        stateful: Only ``False`` (a ``ValueError`` otherwise).
        unroll: Accepted for Keras files; the compiled loop computes the same.
        reset_after: Where the reset gate applies (Keras's default ``True``; PyTorch's
            ``nn.GRU`` is this form).
        use_cudnn: Accepted for Keras files (``"auto"``, ``True`` or ``False``); ignored.
        name, input_shape, trainable: As for any layer.

    Called as ``layer(x, initial_state=h0)`` it starts from ``h0``, and ``backward`` then
    returns ``[dL/dx, dL/dh0]``.

    Shape:
        Input: ``[batch, timesteps, features]``.
        Output: ``[batch, timesteps, units]`` with ``return_sequences``, else
        ``[batch, units]``; with ``return_state`` also the state ``[batch, units]``.
        Parameters: ``kernel [features, 3 * units]``, ``recurrent_kernel
        [units, 3 * units]``, ``bias [2, 3 * units]`` (input and recurrent biases) with
        ``reset_after``, else ``[3 * units]``.
    """

    _KIND = "gru"
    _GATES = 3
    _STATES = 1

    def __init__(self, units: int, activation: str | None = "tanh",
                 recurrent_activation: str | None = "sigmoid", *, use_bias: bool = True,
                 kernel_initializer: str = "glorot_uniform",
                 recurrent_initializer: str = "orthogonal", bias_initializer: str = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, seed: int | None = None,
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 reset_after: bool = True, use_cudnn: Any = "auto", name: str | None = None,
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
        self.reset_after = check_bool(reset_after, "reset_after", "GRU")
        self.use_cudnn = self._check_use_cudnn(use_cudnn)

    def _bias_shape(self) -> tuple:
        width = 3 * self.units
        return (2, width) if self.reset_after else (width,)

    def _input_bias(self) -> np.ndarray | None:
        if not self.use_bias:
            return None
        return self.bias.value[0] if self.reset_after else self.bias.value

    def _recurrent_bias(self) -> np.ndarray:
        if self.use_bias and self.reset_after:
            return self.bias.value[1]
        return np.zeros(3 * self.units, dtype=np.float32)

    def _cell(self) -> Cell:
        return Cell("gru", 3, self.units, self._act, self._ract, self.reset_after)

    def get_config(self) -> dict:
        config = super().get_config()
        config["reset_after"] = self.reset_after
        config["use_cudnn"] = self.use_cudnn
        return config
