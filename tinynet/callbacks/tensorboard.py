"""``TensorBoard``: named for Keras code, refused with what to use instead."""

from __future__ import annotations

from typing import Any

from tinynet.callbacks.base import Callback

__all__ = ["TensorBoard"]


class TensorBoard(Callback):
    """Keras's ``TensorBoard`` callback is not available: writing event files needs
    TensorBoard's protocol-buffer writer, which no tinynet dependency provides.
    Constructing one raises ``NotImplementedError`` naming the replacements:
    :class:`~tinynet.callbacks.CSVLogger` (each epoch's logs in a CSV file) and the
    :class:`~tinynet.callbacks.History` that ``fit`` returns (plotted by
    :func:`tinynet.utils.plot_history`).

    Raises:
        NotImplementedError: always.
    """

    def __init__(self, log_dir: Any = "logs", *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError(
            f"TensorBoard: tinynet cannot write TensorBoard event files (got "
            f"log_dir={log_dir!r}); log each epoch with "
            f"tinynet.callbacks.CSVLogger('training.csv'), or use the History that fit "
            f"returns (history.history) and tinynet.utils.plot_history(history)")
