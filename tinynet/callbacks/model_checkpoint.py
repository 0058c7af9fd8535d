"""``ModelCheckpoint``: saves the model (or its weights) during ``fit``, as Keras 3 does."""

from __future__ import annotations

import math
import numbers
import os
import warnings

from tinynet.callbacks.base import Callback
from tinynet.callbacks.monitor import finite, monitor_direction
from tinynet.saving.files import check_suffix

__all__ = ["ModelCheckpoint"]


class ModelCheckpoint(Callback):
    """Saves the model at the end of each epoch, or every ``save_freq`` batches.

    Keras 3 semantics: ``filepath`` is formatted with ``epoch`` (1-based), ``batch``
    (1-based, when saving on batches) and the logs, e.g.
    ``"ckpt_{epoch:02d}_{val_loss:.3f}.safetensors"``; missing folders are created.
    Files are written atomically with ``model.save`` (or ``model.save_weights``), so an
    interrupted run never leaves a half-written checkpoint.

    Args:
        filepath: Path template ending in a suffix ``model.save`` accepts (``.safetensors``
            or ``.keras``; with ``save_weights_only``, one ``model.save_weights`` accepts:
            ``.safetensors`` or ``.weights.h5``); :func:`tinynet.saving.files.check_suffix`
            holds the one list.
        monitor: The logs key compared when ``save_best_only`` is set.
        verbose: 1 prints a message at each save (or skipped save).
        save_best_only: Only save when ``monitor`` improves on the best value so far
            (the file is overwritten unless ``filepath`` varies with the epoch).
        save_weights_only: Save the weights alone (``save_weights``) instead of the
            whole model with optimizer state.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (losses decrease; accuracies, and
            other metrics the model knows to grow, increase).
        save_freq: ``"epoch"``, or an int: save after every ``save_freq`` batches
            (counted across epochs), with the running logs of the current epoch.
        initial_value_threshold: Initial "best" value; only better values save
            (``save_best_only`` only).

    Attributes:
        best: The best monitored value so far.
    """

    def __init__(self, filepath: str | os.PathLike, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: str | int = "epoch",
                 initial_value_threshold: float | None = None) -> None:
        super().__init__()
        owner = "ModelCheckpoint"
        if not isinstance(filepath, (str, os.PathLike)):
            raise TypeError(f"{owner}: filepath must be a str or os.PathLike, got "
                            f"{type(filepath).__name__}")
        if not isinstance(monitor, str) or not monitor:
            raise TypeError(f"{owner}: monitor must be a non-empty str, got {monitor!r}")
        if isinstance(verbose, bool) or not isinstance(verbose, numbers.Integral) or verbose < 0:
            raise ValueError(f"{owner}: verbose must be a non-negative int, got {verbose!r}")
        for arg, value in (("save_best_only", save_best_only),
                           ("save_weights_only", save_weights_only)):
            if not isinstance(value, bool):
                raise TypeError(f"{owner}: {arg} must be a bool, got {value!r}")
        # the names model.save (or save_weights) accepts: one list, in tinynet.saving
        filepath = check_suffix(os.fspath(filepath), owner, "filepath",
                                weights=save_weights_only)
        if mode not in ("auto", "min", "max"):
            raise ValueError(f"{owner}: mode must be one of 'auto', 'min', 'max', got {mode!r}")
        if save_freq != "epoch" and (isinstance(save_freq, bool)
                                     or not isinstance(save_freq, numbers.Integral)
                                     or save_freq < 1):
            raise ValueError(f"{owner}: save_freq must be 'epoch' or a positive int, got "
                             f"{save_freq!r}")
        if initial_value_threshold is not None and (
                isinstance(initial_value_threshold, bool)
                or not isinstance(initial_value_threshold, numbers.Real)):
            raise TypeError(f"{owner}: initial_value_threshold must be None or a float, got "
                            f"{initial_value_threshold!r}")
        if initial_value_threshold is not None and not finite(initial_value_threshold):
            raise ValueError(f"{owner}: initial_value_threshold must be None or a finite "
                             f"float, got {initial_value_threshold!r}")
        self.filepath = filepath
        self.monitor = monitor
        self.verbose = int(verbose)
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.mode = mode
        self.save_freq = save_freq if save_freq == "epoch" else int(save_freq)
        self.initial_value_threshold = initial_value_threshold
        self.best: float | None = (None if initial_value_threshold is None
                                   else float(initial_value_threshold))
        self._lower_is_better: bool | None = None
        self._current_epoch = 0
        self._batches_seen_since_last_saving = 0
        self._last_batch_seen = 0

    # -- direction ----------------------------------------------------------------------------
    def _resolve_mode(self) -> None:
        direction = monitor_direction(self.model, self.monitor, self.mode)
        if direction is None:  # Keras's guess from the name
            direction = "up" if ("acc" in self.monitor
                                 or self.monitor.startswith("fmeasure")) else "down"
        self._lower_is_better = direction == "down"
        if self.best is None:
            self.best = math.inf if self._lower_is_better else -math.inf

    def _improved(self, current: float) -> bool:
        return current < self.best if self._lower_is_better else current > self.best

    # -- hooks ------------------------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        if self._lower_is_better is None:
            self._resolve_mode()

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._current_epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if self._should_save_on_batch(batch):
            self._save_model(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if self.save_freq == "epoch":
            self._save_model(epoch, None, logs)

    # -- saving ------------------------------------------------------------------------------------
    def _should_save_on_batch(self, batch: int) -> bool:
        if self.save_freq == "epoch":
            return False
        if batch <= self._last_batch_seen:  # a new epoch
            add_batches = batch + 1
        else:
            add_batches = batch - self._last_batch_seen
        self._batches_seen_since_last_saving += add_batches
        self._last_batch_seen = batch
        if self._batches_seen_since_last_saving >= self.save_freq:
            self._batches_seen_since_last_saving = 0
            return True
        return False

    def _get_file_path(self, epoch: int, batch: int | None, logs: dict) -> str:
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as exc:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {exc}") from None

    def _save_model(self, epoch: int, batch: int | None, logs: dict | None) -> None:
        if self._lower_is_better is None:
            self._resolve_mode()
        logs = dict(logs or {})
        filepath = self._get_file_path(epoch, batch, logs)
        if os.path.isdir(filepath):
            raise IsADirectoryError(f"Please specify a non-directory filepath for "
                                    f"ModelCheckpoint. Filepath used is an existing directory: "
                                    f"{filepath}")
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"Can save best model only with {self.monitor} available, "
                              f"skipping.", stacklevel=2)
                return
            current = float(current)
            if not self._improved(current):
                if self.verbose > 0:
                    print(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from "
                          f"{self.best:.5f}")
                return
            if self.verbose > 0:
                print(f"\nEpoch {epoch + 1}: {self.monitor} improved from {self.best:.5f} to "
                      f"{current:.5f}, saving model to {filepath}")
            self.best = current
        elif self.verbose > 0:
            print(f"\nEpoch {epoch + 1}: saving model to {filepath}")
        folder = os.path.dirname(filepath)
        if folder:
            os.makedirs(folder, exist_ok=True)
        if self.save_weights_only:  # as Keras: through the model's own methods
            self.model.save_weights(filepath)
        else:
            self.model.save(filepath)
