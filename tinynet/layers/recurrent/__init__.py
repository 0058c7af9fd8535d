"""Recurrent layers (Keras 3 names, arguments, weights and gate order): SimpleRNN, LSTM
and GRU, one per file, sharing :mod:`.base_rnn`."""

from tinynet.layers.recurrent.gru import GRU
from tinynet.layers.recurrent.lstm import LSTM
from tinynet.layers.recurrent.simple_rnn import SimpleRNN

__all__ = ["SimpleRNN", "LSTM", "GRU"]
