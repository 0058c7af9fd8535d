"""``SimpleRNN``: a fully connected recurrence, ``h_t = activation(x_t W + h_{t-1} U + b)``
(Keras 3)."""

from __future__ import annotations

from typing import Any


from tinynet.layers.recurrent.base_rnn import BaseRNN

__all__ = ["SimpleRNN"]


class SimpleRNN(BaseRNN):
    """Fully connected RNN: ``h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel +
    bias)``, the output of each step its state.

    Args:
        units: State size (positive int).
        activation: ``"tanh"`` (default), ``"sigmoid"``, ``"relu"``, ``"hard_sigmoid"``,
            ``"linear"`` or ``None``.
        use_bias: Whether to add a bias.
        kernel_initializer, recurrent_initializer, bias_initializer: Initializer names
            (Keras's defaults ``"glorot_uniform"``, ``"orthogonal"``, ``"zeros"``).
        kernel_regularizer, recurrent_regularizer, bias_regularizer: Weight penalties.
        dropout: Input dropout rate in training, one mask per call for every step.
        recurrent_dropout: Dropout rate on the previous state in the recurrent product.
        seed: Seed of the dropout masks (``None``: the global seed stream).
        return_sequences: Return every step's output (else the last).
        return_state: Also return the final state (a list ``[output, state]``).
        go_backwards: Process the sequence in reverse (outputs in processing order).
        stateful: Only ``False`` (a ``ValueError`` otherwise).
        unroll: Accepted for Keras files; the compiled loop computes the same.
        name, input_shape, trainable: As for any layer.

    Called as ``layer(x, initial_state=h0)`` it starts from ``h0`` (``[batch, units]``)
    instead of zeros, and ``backward`` then returns ``[dL/dx, dL/dh0]``.

    Shape:
        Input: ``[batch, timesteps, features]``.
        Output: ``[batch, timesteps, units]`` with ``return_sequences``, else
        ``[batch, units]``; with ``return_state`` also the state ``[batch, units]``.
        Parameters: ``kernel [features, units]``, ``recurrent_kernel [units, units]``,
        ``bias [units]``.
    """

    _KIND = "simple"
    _GATES = 1
    _STATES = 1

    def __init__(self, units: int, activation: str | None = "tanh", *, use_bias: bool = True,
                 kernel_initializer: str = "glorot_uniform",
                 recurrent_initializer: str = "orthogonal", bias_initializer: str = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, seed: int | None = None,
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 name: str | None = None, input_shape: tuple | None = None,
                 trainable: bool = True) -> None:
        super().__init__(units, activation, None, use_bias=use_bias,
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
