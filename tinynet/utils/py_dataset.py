"""``PyDataset``: a dataset written in Python, batch by batch, as ``keras.utils.PyDataset``."""

from __future__ import annotations

import numbers
from typing import Any

__all__ = ["PyDataset"]


def _check_args(workers: Any, use_multiprocessing: Any, max_queue_size: Any) -> None:
    owner = "PyDataset"
    for arg, value in (("workers", workers), ("max_queue_size", max_queue_size)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{owner}: {arg} must be a positive int, got {value!r}")
        if value < 1:
            raise ValueError(f"{owner}: {arg} must be a positive int, got {value!r}")
    if not isinstance(use_multiprocessing, bool):
        raise TypeError(f"{owner}: use_multiprocessing must be a bool, got "
                        f"{use_multiprocessing!r}")


class PyDataset:
    """Base class of a dataset that makes its batches in Python, as
    ``keras.utils.PyDataset``.

    A subclass defines ``__len__`` (the number of batches per epoch) and
    ``__getitem__(index)`` returning one batch: ``(x, y)``, ``(x, y, sample_weight)`` or
    ``x`` alone (for ``predict``), where ``x`` and ``y`` are arrays, lists of arrays or
    dicts of arrays keyed by input or output name. ``on_epoch_begin`` and ``on_epoch_end``
    run around each epoch (e.g. to reshuffle). ``fit``, ``evaluate`` and ``predict`` take
    an instance as ``x`` (with ``y=None``), and ``fit`` as ``validation_data``.

    tinynet reads the batches in the calling thread, in order (or in the order
    ``fit(shuffle=True)`` draws from the model's seeded generator), so a fit on a
    ``PyDataset`` is as reproducible as one on arrays. ``workers``,
    ``use_multiprocessing`` and ``max_queue_size`` are accepted and checked, for Keras
    code, and change nothing.

    Args:
        workers: Keras's number of loading workers (a positive int). Defaults to 1.
        use_multiprocessing: Keras's process-based loading. Defaults to ``False``.
        max_queue_size: Keras's prefetch queue length (a positive int). Defaults to 10.

    Raises:
        TypeError, ValueError: a bad argument (the message names it).
    """

    def __init__(self, workers: int = 1, use_multiprocessing: bool = False,
                 max_queue_size: int = 10) -> None:
        _check_args(workers, use_multiprocessing, max_queue_size)
        self.workers = int(workers)
        self.use_multiprocessing = use_multiprocessing
        self.max_queue_size = int(max_queue_size)

    def __getitem__(self, index: int) -> Any:
        """The batch at ``index`` (``0 <= index < len(self)``)."""
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index), "
                                  f"returning one batch")

    def __len__(self) -> int:
        """The number of batches per epoch."""
        raise NotImplementedError(f"{type(self).__name__} must define __len__(), the number "
                                  f"of batches per epoch")

    @property
    def num_batches(self) -> int:
        """The number of batches per epoch (``len(self)``), as Keras names it."""
        return len(self)

    def on_epoch_begin(self) -> None:
        """Called before each epoch; override to prepare it."""

    def on_epoch_end(self) -> None:
        """Called after each epoch; override to reshuffle or change the data."""
