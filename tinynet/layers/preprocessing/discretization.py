"""``Discretization``: numbers to bucket indices by boundaries, given or learned as
approximate quantiles, as ``keras.layers.Discretization``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.preprocessing.base import (PreprocessingLayer, adapt_batches, as_values,
                                               check_choice, check_optional_int,
                                               encode_categorical)
from tinynet.scalars import float_array
from tinynet.tensor import Tensor

__all__ = ["Discretization", "summarize", "merge_summaries", "compress_summary"]


def summarize(values: np.ndarray, epsilon: float) -> np.ndarray:
    """A ``[2, k]`` float32 summary of ``values``: about ``1/epsilon`` evenly spaced order
    statistics (row 0) and the number of values each stands for (row 1)."""
    ordered = np.sort(np.asarray(values, dtype=np.float32).reshape(-1))
    stride = max(ordered.size / (1.0 / epsilon), 1)
    picked = ordered[int(stride - 1)::int(stride)]
    return np.stack([picked, np.ones_like(picked) * stride])


def compress_summary(summary: np.ndarray, epsilon: float) -> np.ndarray:
    """Re-samples a summary at the cumulative-weight fractions ``epsilon, 2*epsilon, ...,
    1`` (linear interpolation), when it has at least ``1/epsilon`` entries."""
    if summary.shape[1] * epsilon < 1:
        return summary
    fractions = epsilon + np.arange(0.0, 1.0, epsilon)
    cumulative = summary[1].cumsum()
    share = cumulative / cumulative[-1]
    points = np.interp(fractions, share, summary[0])
    at = np.interp(fractions, share, cumulative)
    weights = at - np.concatenate(([0.0], at[:-1]))
    return np.stack((points, weights)).astype(np.float32)


def merge_summaries(new: np.ndarray, old: np.ndarray, epsilon: float) -> np.ndarray:
    """Two summaries merged by value, then compressed."""
    merged = np.concatenate((new, old), axis=1)
    merged = merged[:, np.argsort(merged[0])]
    return compress_summary(merged, epsilon)


def _boundaries_arg(value: Any) -> list[float] | None:
    if value is None:
        return None
    try:
        arr = float_array(value)  # an int past the float range becomes inf (refused below)
    except (TypeError, ValueError):
        raise TypeError(f"Discretization: bin_boundaries must be a list of numbers, got "
                        f"{value!r}") from None
    if arr.ndim != 1 or not np.all(np.isfinite(arr)) or np.any(np.diff(arr) < 0):
        raise ValueError(f"Discretization: bin_boundaries must be a sorted 1-D list of "
                         f"finite numbers, got {value!r}")
    return [float(v) for v in arr]


class Discretization(PreprocessingLayer):
    """Buckets numbers, as ``keras.layers.Discretization``: ``x`` goes to bucket ``i``
    where ``bin_boundaries[i-1] <= x < bin_boundaries[i]`` (compared in float32), so
    ``len(bin_boundaries) + 1`` buckets. :meth:`adapt` learns ``num_bins - 1`` boundaries
    as approximate quantiles of the data (Keras's summary, error about ``epsilon``).

    Args:
        bin_boundaries: Sorted boundaries (give these or ``num_bins``).
        num_bins: The number of buckets :meth:`adapt` makes.
        epsilon: Quantile error tolerance of :meth:`adapt` (default 0.01).
        output_mode: ``"int"``, ``"one_hot"``, ``"multi_hot"`` or ``"count"``.
        sparse: Only ``False``.
        dtype: Layer dtype (Keras's argument; the computation is float32).
        name: Layer name.

    Shape:
        Input: any shape of numbers. Output: ``"int"`` the input's shape, int32; the
        encodings as in ``CategoryEncoding`` (``len(bin_boundaries) + 1`` wide), float32.
    """

    def __init__(self, bin_boundaries: Any = None, num_bins: int | None = None,
                 epsilon: float = 0.01, output_mode: str = "int", sparse: bool = False,
                 dtype: Any = None, name: str | None = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, **kwargs)
        owner = "Discretization"
        if sparse is not False:
            raise ValueError(f"{owner}: sparse=True is not supported (tinynet has no sparse "
                             f"tensors), got sparse={sparse!r}")
        self.sparse = False
        self.output_mode = check_choice(output_mode, "output_mode", owner,
                                        ("int", "one_hot", "multi_hot", "count"))
        self.num_bins = check_optional_int(num_bins, "num_bins", owner, 0)
        if self.num_bins is not None and bin_boundaries is not None:
            raise ValueError(f"{owner}: give num_bins or bin_boundaries, not both, got "
                             f"num_bins={num_bins} and bin_boundaries={bin_boundaries!r}")
        if self.num_bins is None and bin_boundaries is None:
            raise ValueError(f"{owner}: give num_bins (then adapt) or bin_boundaries, got "
                             f"neither")
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating)) \
                or not 0 < epsilon <= 1:
            raise ValueError(f"{owner}: epsilon must be a float in (0, 1], got {epsilon!r}")
        self.epsilon = float(epsilon)
        self.bin_boundaries = _boundaries_arg(bin_boundaries)
        self.reset_state()

    # -- adapt ---------------------------------------------------------------------------
    def reset_state(self) -> None:
        """Clears the summary an unfinished :meth:`adapt` gathered."""
        self._summary = np.zeros((2, 0), dtype=np.float32)

    def update_state(self, data: Any) -> None:
        """Adds one batch to the summary."""
        values = as_values(data, f"Discretization {self.name!r}: adapt data")
        if values.dtype.kind not in "iufb":
            raise TypeError(f"Discretization {self.name!r}: adapt() data must be numbers, got "
                            f"dtype {values.dtype}")
        batch = summarize(values.astype(np.float32), self.epsilon)
        self._summary = merge_summaries(batch, self._summary, self.epsilon)

    def finalize_state(self) -> None:
        """Turns the summary into ``num_bins - 1`` boundaries."""
        if self.num_bins is None:
            return
        edges = compress_summary(self._summary, 1.0 / self.num_bins)[0, :-1]
        self.bin_boundaries = [float(v) for v in edges]

    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Learns the boundaries from ``data``: an array (one batch) or an iterable of
        batches (a list too, as Keras reads it), of which ``steps`` are read.

        Raises:
            ValueError: the layer was given ``bin_boundaries``; bad ``steps``.
            TypeError: ``data`` is not numbers.
        """
        owner = f"Discretization {self.name!r}"
        if self.num_bins is None:
            raise ValueError(f"{owner}: adapt() needs num_bins; the layer was given "
                             f"bin_boundaries")
        steps = check_optional_int(steps, "steps", f"{owner}: adapt", 1)
        self.reset_state()
        # as Keras: an array is one batch, a list (or any other iterable) holds batches
        batches = ([data] if isinstance(data, (np.ndarray, Tensor))
                   else adapt_batches(iter(data) if isinstance(data, (list, tuple)) else data,
                                      owner))
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            self.update_state(batch)
        self.finalize_state()

    # -- call ----------------------------------------------------------------------------
    def _compute(self, x: Any) -> np.ndarray:
        owner = f"Discretization {self.name!r}"
        if self.bin_boundaries is None:
            raise ValueError(f"{owner}: no bin_boundaries yet: pass them or call adapt() "
                             f"before using the layer")
        arr = as_values(x, owner)
        if arr.dtype.kind not in "iufb":
            raise TypeError(f"{owner}: inputs must be numbers, got dtype {arr.dtype}")
        edges = np.asarray(self.bin_boundaries, dtype=np.float32)
        indices = np.searchsorted(edges, arr.astype(np.float32), side="right")
        if self.output_mode == "int":
            return indices.astype(np.int32)
        return encode_categorical(indices, self.output_mode, len(edges) + 1)

    def output_shape(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        depth = (len(self.bin_boundaries) + 1 if self.bin_boundaries is not None
                 else self.num_bins)
        if self.output_mode == "one_hot":
            return (shape[:-1] if shape and shape[-1] == 1 and len(shape) > 1 else shape) + (
                depth,)
        if len(shape) >= 2:
            return (shape[0], *shape[2:], depth)
        return (depth,)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(bin_boundaries=self.bin_boundaries, num_bins=self.num_bins,
                      epsilon=self.epsilon, output_mode=self.output_mode, sparse=False)
        return config

    @classmethod
    def from_config(cls, config: dict) -> "Discretization":
        config = dict(config)
        boundaries = config.get("bin_boundaries")
        if boundaries is not None and config.get("num_bins") is not None:
            config.pop("bin_boundaries")  # adapted: num_bins and the learned boundaries
            layer = super().from_config(config)
            layer.bin_boundaries = _boundaries_arg(boundaries)
            return layer
        return super().from_config(config)
