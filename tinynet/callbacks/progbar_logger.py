"""``ProgbarLogger``: the progress output of ``fit``, ``evaluate`` and ``predict``."""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

from tinynet.callbacks.base import Callback

__all__ = ["ProgbarLogger", "format_value", "format_logs"]


def format_value(value: Any) -> str:
    """Keras's progress-bar number format (an array metric, e.g. a per-class F1Score,
    as a list of them)."""
    if isinstance(value, np.ndarray) and value.ndim:
        return "[" + ", ".join(format_value(float(v)) for v in value.reshape(-1)) + "]"
    value = float(value)
    return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"


def format_logs(logs: dict) -> str:
    """The logs as the progress bar and the verbose=2 line show them."""
    return " - ".join(f"{k}: {format_value(v)}" for k, v in logs.items())


class ProgbarLogger(Callback):
    """Prints progress as ``keras.callbacks.ProgbarLogger`` does, by ``params["verbose"]``.

    ``fit``, ``evaluate`` and ``predict`` add one (unless ``callbacks`` holds one) when
    ``verbose`` is not 0. With ``verbose=1``: a tqdm bar per epoch (``Epoch 3/10``, the
    running loss and metrics after each batch, the epoch's logs with ``val_*`` at its
    end), one for ``evaluate`` (``Evaluate``, its logs at the end) and one for
    ``predict`` (``Predict``). With ``verbose=2``: one line per epoch
    (``Epoch 3/10 - 12/12 - 0s - 3ms/step - loss: ...``), and one at the end of
    ``evaluate`` and of ``predict``. ``fit``'s validation shows no bar of its own (its
    logs join the epoch's). With ``verbose=0``, nothing.
    """

    def __init__(self) -> None:
        super().__init__()
        self._bar: Any = None
        self._started = 0.0
        self._seen = 0
        self._in_fit = False
        self._desc = ""

    @property
    def _verbose(self) -> int:
        return int(self.params.get("verbose", 0) or 0)

    def _open(self, desc: str) -> None:
        self._desc, self._seen = desc, 0
        self._started = time.perf_counter()
        if self._verbose == 1:
            from tqdm import tqdm

            self._bar = tqdm(total=self.params.get("steps"), desc=desc, file=sys.stdout,
                             unit="step", leave=True)

    def _step(self, logs: dict | None) -> None:
        self._seen += 1
        if self._bar is not None:
            if logs:
                self._bar.set_postfix_str(format_logs(logs), refresh=False)
            self._bar.update(1)

    def _close(self, logs: dict | None, prefix: str) -> None:
        if self._bar is not None:
            if logs:
                self._bar.set_postfix_str(format_logs(logs), refresh=False)
            self._bar.close()
            self._bar = None
        elif self._verbose == 2:
            elapsed = time.perf_counter() - self._started
            steps = max(self._seen, 1)
            parts = [f"{prefix}{self._seen}/{self._seen}", f"{elapsed:.0f}s",
                     f"{1000 * elapsed / steps:.0f}ms/step"]
            if logs:
                parts.append(format_logs(logs))
            print(" - ".join(parts), file=sys.stdout, flush=True)

    # -- fit --------------------------------------------------------------------------------
    def on_train_begin(self, logs: dict | None = None) -> None:
        self._in_fit = True

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._open(f"Epoch {epoch + 1}/{self.params.get('epochs')}")

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._step(logs)

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self._close(logs, f"{self._desc} - ")

    def on_train_end(self, logs: dict | None = None) -> None:
        self._in_fit = False
        if self._bar is not None:  # an exception or a stop left it open
            self._bar.close()
            self._bar = None

    # -- evaluate (not fit's validation) and predict -------------------------------------
    def on_test_begin(self, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._open("Evaluate")

    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._step(None)

    def on_test_end(self, logs: dict | None = None) -> None:
        if not self._in_fit:
            self._close(logs, "")

    def on_predict_begin(self, logs: dict | None = None) -> None:
        self._open("Predict")

    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._step(None)

    def on_predict_end(self, logs: dict | None = None) -> None:
        self._close(None, "")
