"""Utilities: training-curve plots (``plot_history``), one-hot labels
(``to_categorical``); the summary text lives in :mod:`tinynet.utils.summary`."""

from tinynet.utils.numerical import to_categorical
from tinynet.utils.plots import plot_history

__all__ = ["plot_history", "to_categorical"]
