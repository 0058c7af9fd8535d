"""``BackupAndRestore``: an interrupted ``fit`` resumes where its last backup left it."""

from __future__ import annotations

import json
import os
import shutil

from tinynet.callbacks.base import Callback
from tinynet.layers.layer import check_bool

__all__ = ["BackupAndRestore"]

_MODEL = "latest.safetensors"
_META = "training_metadata.json"
_PREVIOUS = ".bkp"  # the previous backup's suffix (``double_checkpoint``)


def _scheduled(optimizer) -> bool:
    """Whether the rate is a schedule (its state is the optimizer's iterations)."""
    return callable(getattr(optimizer, "_learning_rate", None))


class BackupAndRestore(Callback):
    """Backs up the training state in ``backup_dir`` and, when a ``fit`` starts and a
    backup is there, restores it and resumes after the backed-up epoch, as
    ``keras.callbacks.BackupAndRestore``.

    A backup is the whole model file of :func:`tinynet.save_model` (weights, optimizer
    slots and iterations, the shuffling and dropout generators) with the epoch and the
    learning rate in force in its metadata, written in one atomic step; the same two go to
    ``training_metadata.json`` beside it for people to read (the model file is what a
    restore trusts). With
    ``save_freq="epoch"`` a backup follows every epoch, so a fit interrupted between
    epochs and run again with the same model, data and callback ends with bitwise the
    weights of an uninterrupted fit. With an int, every ``save_freq`` batches as well: a
    fit interrupted mid-epoch resumes at the start of that epoch from the weights of its
    last backup (as Keras; that run is not the uninterrupted one). ``False`` only
    restores.

    Args:
        backup_dir: The folder for the backup (created when needed); one per fit that may
            be interrupted.
        save_freq: ``"epoch"``, a positive int (batches) or ``False``.
        double_checkpoint: Keep the previous backup too and fall back to it when the
            latest cannot be read.
        delete_checkpoint: Remove the backup when training ends normally.

    Raises:
        TypeError, ValueError: a bad argument (the message names it).
    """

    def __init__(self, backup_dir: str | os.PathLike, save_freq: str | int | bool = "epoch",
                 double_checkpoint: bool = False, delete_checkpoint: bool = True) -> None:
        super().__init__()
        if not isinstance(backup_dir, (str, os.PathLike)) or not os.fspath(backup_dir):
            raise TypeError(f"BackupAndRestore: backup_dir must be a non-empty str or path, "
                            f"got {backup_dir!r}")
        if not (save_freq == "epoch" or save_freq is False
                or (isinstance(save_freq, int) and not isinstance(save_freq, bool)
                    and save_freq > 0)):
            raise ValueError(f"BackupAndRestore: save_freq must be 'epoch', a positive int or "
                             f"False, got {save_freq!r}")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = check_bool(double_checkpoint, "double_checkpoint",
                                            "BackupAndRestore")
        self.delete_checkpoint = check_bool(delete_checkpoint, "delete_checkpoint",
                                            "BackupAndRestore")
        self._epoch = 0
        self._batches = 0
        self._resume: int | None = None

    def _paths(self, suffix: str = "") -> tuple[str, str]:
        return (os.path.join(self.backup_dir, _MODEL + suffix),
                os.path.join(self.backup_dir, _META + suffix))

    # -- restoring ----------------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        self._batches = 0
        self._resume = None
        tries = [""] + ([_PREVIOUS] if self.double_checkpoint else [])
        last_error = None
        for suffix in tries:
            model_path = self._paths(suffix)[0]
            if not os.path.exists(model_path):
                continue
            try:
                self._restore(model_path)
                return
            except (ValueError, OSError) as exc:
                last_error = exc
        if last_error is not None:
            raise last_error

    def _restore(self, model_path: str) -> None:
        from tinynet.saving.api import restore_training

        meta = restore_training(self.model, model_path)
        epoch = meta.get("epoch")
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < -1:
            raise ValueError(f"BackupAndRestore: {model_path!r} holds no backup epoch (not "
                             f"written by BackupAndRestore)")
        rate = meta.get("learning_rate")
        if isinstance(rate, float) and not _scheduled(self.model.optimizer):
            self.model.optimizer.learning_rate = rate
        self._resume = epoch + 1

    def resume_epoch(self) -> int | None:
        """The epoch after the restored backup's (``fit`` resumes there), or ``None``."""
        return self._resume

    # -- backing up ---------------------------------------------------------------------------
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch
        if self.save_freq == "epoch":
            self._backup(epoch)

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._epoch = epoch

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if isinstance(self.save_freq, bool) or not isinstance(self.save_freq, int):
            return
        self._batches += 1
        if self._batches % self.save_freq == 0:
            self._backup(self._epoch - 1)  # the epoch under way starts again on restore

    def _backup(self, epoch: int) -> None:
        from tinynet.saving.api import save_training

        os.makedirs(self.backup_dir, exist_ok=True)
        model_path, meta_path = self._paths()
        if self.double_checkpoint and os.path.exists(model_path):
            previous = self._paths(_PREVIOUS)
            if os.path.exists(meta_path):
                os.replace(meta_path, previous[1])
            os.replace(model_path, previous[0])  # a kill now leaves the previous to restore
        optimizer = self.model.optimizer
        meta = {"epoch": int(epoch), "learning_rate": (None if _scheduled(optimizer)
                                                       else float(optimizer.learning_rate))}
        save_training(self.model, model_path, meta)
        temp = meta_path + ".tmp"
        with open(temp, "w", encoding="utf-8") as fh:
            json.dump(meta, fh)
        os.replace(temp, meta_path)

    def on_train_end(self, logs: dict | None = None) -> None:
        if not self.delete_checkpoint or not os.path.isdir(self.backup_dir):
            return
        for suffix in ("", _PREVIOUS):
            for path in self._paths(suffix):
                if os.path.exists(path):
                    os.remove(path)
        if not os.listdir(self.backup_dir):
            shutil.rmtree(self.backup_dir, ignore_errors=True)
