"""Utilities: training-curve plots (``plot_history``); the summary text lives in
:mod:`tinynet.utils.summary`."""

from tinynet.utils.plots import plot_history

__all__ = ["plot_history"]
