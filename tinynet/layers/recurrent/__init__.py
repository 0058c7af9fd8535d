"""Recurrent layers (Keras 3 names, arguments, weights and gate order): SimpleRNN, LSTM
and GRU, one per file, sharing :mod:`.base_rnn`; the wrappers Bidirectional and
TimeDistributed."""

from tinynet.layers.recurrent.bidirectional import Bidirectional
from tinynet.layers.recurrent.gru import GRU
from tinynet.layers.recurrent.lstm import LSTM
from tinynet.layers.recurrent.simple_rnn import SimpleRNN
from tinynet.layers.recurrent.time_distributed import TimeDistributed

__all__ = ["SimpleRNN", "LSTM", "GRU", "Bidirectional", "TimeDistributed"]
