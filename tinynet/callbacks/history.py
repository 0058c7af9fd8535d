"""``History``: the record of each epoch's logs that ``fit`` returns."""

from __future__ import annotations

from tinynet.callbacks.base import Callback

__all__ = ["History"]


class History(Callback):
    """Records each epoch's logs; ``fit`` returns it (and sets ``model.history``).

    Attributes:
        history: ``{"loss": [...], "<metric>": [...], "val_loss": [...], ...}``.
        epoch: The 0-based indices of the epochs run.
    """

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        self.model.history = self
