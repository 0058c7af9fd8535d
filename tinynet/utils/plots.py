"""Training curves: ``plot_history`` writes a PNG of each logged quantity per epoch."""

from __future__ import annotations

import math
import numbers
import os
from typing import Any

__all__ = ["plot_history"]


def _series(history: Any) -> tuple[dict[str, list[float]], list[int] | None]:
    """The per-epoch logs and the 1-based epoch numbers (when recorded)."""
    logs = getattr(history, "history", history)
    if not isinstance(logs, dict):
        raise TypeError(f"plot_history: history must be a History (as returned by fit) or a "
                        f"dict of per-epoch lists, got {type(history).__name__}")
    series: dict[str, list[float]] = {}
    for key, values in logs.items():
        if not isinstance(key, str) or not isinstance(values, (list, tuple)) or not all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values):
            raise ValueError(f"plot_history: history[{key!r}] must be a list of numbers, got "
                             f"{values!r:.100}")
        if values:
            series[key] = [float(v) for v in values]
    if not series:
        raise ValueError("plot_history: the history holds no epochs to plot")
    epochs = getattr(history, "epoch", None)
    if isinstance(epochs, list) and epochs:
        epochs = [int(e) + 1 for e in epochs]
    else:
        epochs = None
    return series, epochs


def plot_history(history: Any, path: str | os.PathLike) -> str:
    """Writes a PNG with one panel per quantity: loss first, then each metric.

    Each panel shows the training values per epoch and, when present, the validation
    values (``val_<name>``). Rendering uses matplotlib's Agg backend directly (no
    screen needed; pyplot's state and backend are left alone).

    Args:
        history: The :class:`~tinynet.callbacks.History` returned by ``fit``, or its
            ``.history`` dict.
        path: The PNG file to write.

    Returns:
        The path written, as a str.

    Raises:
        ImportError: matplotlib is not installed (``pip install "tinynet[examples]"``).
        TypeError, ValueError: ``history`` holds no per-epoch numbers.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"plot_history: path must be a str or os.PathLike, got "
                        f"{type(path).__name__}")
    series, epochs = _series(history)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise ImportError('plot_history needs matplotlib: pip install "tinynet[examples]" '
                          '(or pip install matplotlib)') from exc

    names = [k for k in series if not k.startswith("val_")]
    names += [k[4:] for k in series if k.startswith("val_") and k[4:] not in series]
    names.sort(key=lambda k: k != "loss")  # stable: loss first, then logged order
    cols = min(len(names), 3)
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(4.5 * cols, 3.4 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows, cols, i + 1)
        for key, label, style in ((name, "train", "-o"), (f"val_{name}", "validation", "--s")):
            values = series.get(key)
            if values is None:
                continue
            xs = epochs if epochs is not None and len(epochs) == len(values) \
                else list(range(1, len(values) + 1))
            ax.plot(xs, values, style, markersize=3, label=label)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(True, alpha=0.3)
        ax.legend()
    path = os.fspath(path)
    fig.savefig(path, format="png", dpi=100)
    return path
