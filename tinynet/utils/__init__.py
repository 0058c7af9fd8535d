"""Utilities, as ``keras.utils``: :func:`set_random_seed`, one-hot labels
(:func:`to_categorical`), :func:`normalize`, :func:`pad_sequences`,
:func:`split_dataset`, :func:`timeseries_dataset_from_array`, :class:`PyDataset` (a dataset
written in Python, batch by batch), and training-curve plots
(``plot_history``); the summary text lives in :mod:`tinynet.utils.summary`.

Where Keras returns a ``tf.data.Dataset`` (``split_dataset``,
``timeseries_dataset_from_array``), tinynet returns NumPy arrays or a Python iterable of
NumPy batches; see each function.
"""

from tinynet.utils.data import (TimeseriesDataset, normalize, pad_sequences, set_random_seed,
                                split_dataset, timeseries_dataset_from_array)
from tinynet.utils.numerical import to_categorical
from tinynet.utils.plots import plot_history
from tinynet.utils.py_dataset import PyDataset

__all__ = ["plot_history", "to_categorical", "set_random_seed", "normalize", "pad_sequences",
           "split_dataset", "timeseries_dataset_from_array", "TimeseriesDataset",
           "PyDataset"]
