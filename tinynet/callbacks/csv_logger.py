"""``CSVLogger``: each epoch's logs as a row of a CSV file."""

from __future__ import annotations

import collections
import csv
import os
from typing import Any

import numpy as np

from tinynet.callbacks.base import Callback
from tinynet.layers.layer import check_bool

__all__ = ["CSVLogger"]


def _cell(value: Any) -> Any:
    """Keras's cell: a str as is, a 1-D iterable as ``"[a, b]"``, anything else as is."""
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Iterable) and not (isinstance(value, np.ndarray)
                                                            and value.ndim == 0):
        return f'"[{", ".join(map(str, value))}]"'
    return value


class CSVLogger(Callback):
    """Writes each epoch's logs to a CSV file, as ``keras.callbacks.CSVLogger``.

    The header is ``epoch`` and the logs' keys in sorted order (the first epoch's keys),
    with a ``val_<key>`` column for each key when the logs have no validation entries
    (filled with ``NA``); values are written with ``csv``'s ``str`` of each number. The
    file is flushed after every row and closed at the end of training.

    Args:
        filename: The CSV file's path.
        separator: The field separator. Defaults to ``","``.
        append: Append to an existing file (no second header when it already has one)
            instead of overwriting it. Defaults to ``False``.

    Raises:
        TypeError: ``filename`` is not a str or path, ``separator`` not a one-character
            str, or ``append`` not a bool.
        ValueError: ``separator`` is a line break or ``"``.
    """

    def __init__(self, filename: str | os.PathLike, separator: str = ",",
                 append: bool = False) -> None:
        super().__init__()
        if not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"CSVLogger: filename must be a str or a path, got {filename!r}")
        if not isinstance(separator, str) or len(separator) != 1:
            raise TypeError(f"CSVLogger: separator must be a one-character str, got "
                            f"{separator!r}")
        if separator in '\r\n"':  # it would split rows or start quoted fields
            raise ValueError(f"CSVLogger: separator must not be a line break or the quote "
                             f"character '\"', got {separator!r}")
        self.filename = os.fspath(filename)
        self.sep = separator
        self.append = check_bool(append, "append", "CSVLogger")
        self.keys: list[str] | None = None
        self._file: Any = None
        self._writer: Any = None
        self._header = True

    def on_train_begin(self, logs: dict | None = None) -> None:
        self._header = True
        if self.append and os.path.exists(self.filename):
            with open(self.filename, encoding="utf-8") as fh:
                self._header = not fh.readline()
        if self._file is not None and not self._file.closed:
            self._file.close()
        self._file = open(self.filename, "a" if self.append else "w", newline="",
                          encoding="utf-8")
        self._writer = None
        self.keys = None

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys += [f"val_{k}" for k in self.keys]
        if self._writer is None:
            dialect = type("Dialect", (csv.excel,), {"delimiter": self.sep})
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch", *self.keys],
                                          dialect=dialect)
            if self._header:
                self._writer.writeheader()
        row = {"epoch": epoch, **{k: _cell(logs.get(k, "NA")) for k in self.keys}}
        self._writer.writerow(row)
        self._file.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._file is not None and not self._file.closed:
            self._file.close()
        self._writer = None
