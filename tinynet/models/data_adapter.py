"""The data of ``fit``, ``evaluate`` and ``predict`` as epochs of batches.

Every source becomes an adapter with ``steps`` (batches per epoch, ``None`` when only
the data know) and ``epoch()``, an iterator over one epoch's batches
``(xs, ys, sample_weight)`` (lists of arrays, one per model input and output; ``ys`` is
empty for ``predict``):

* :class:`ArrayAdapter`: arrays (or dicts/lists of them), converted and checked once;
  batches are views, or gathered into reused buffers in the order the model's seeded
  generator draws when shuffling (so array fits stay bitwise reproducible);
* :class:`StreamAdapter`: a :class:`~tinynet.utils.PyDataset` (indexed batches, its
  ``on_epoch_begin``/``on_epoch_end`` called around each epoch), a Python generator or
  iterator (read on across epochs, ``steps`` batches each, or until it runs out), or a
  re-iterable dataset with a length (e.g. ``timeseries_dataset_from_array``'s), read
  afresh each epoch. Each batch is ``(x, y)``, ``(x, y, sample_weight)`` or ``x`` and is
  converted and checked as it comes.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable, Iterator

import numpy as np

from tinynet.tensor import Tensor
from tinynet.utils.py_dataset import PyDataset

__all__ = ["ArrayAdapter", "StreamAdapter", "is_dataset", "unpack", "check_steps", "make_adapter",
           "split_validation"]

Batch = tuple[list[np.ndarray], list[np.ndarray], "np.ndarray | None"]
Rng = Callable[[], np.random.Generator]


def is_dataset(x: Any) -> bool:
    """Whether ``x`` is a dataset rather than arrays: a ``PyDataset``, an iterator (a
    generator), or an iterable with a length that is no array, list, tuple, dict or str."""
    if isinstance(x, PyDataset):
        return True
    if isinstance(x, (np.ndarray, Tensor, list, tuple, dict, str, bytes)) or x is None \
            or hasattr(x, "__array__"):
        return False
    if hasattr(x, "__next__") and hasattr(x, "__iter__"):
        return True
    return hasattr(x, "__iter__") and hasattr(x, "__len__")


def check_steps(value: Any, arg: str, owner: str) -> int | None:
    """``None`` or a positive int (``steps_per_epoch``, ``validation_steps``, ``steps``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{owner}: {arg} must be None or a positive int, got {value!r}")
    if value < 1:
        raise ValueError(f"{owner}: {arg} must be None or a positive int, got {value!r}")
    return int(value)


def unpack(item: Any, owner: str) -> tuple[Any, Any, Any]:
    """A dataset's batch as ``(x, y, sample_weight)``: a tuple or list of one, two or
    three entries, or ``x`` alone (an array or a dict of inputs), as Keras reads them."""
    if isinstance(item, (np.ndarray, Tensor, dict)):
        return item, None, None
    if isinstance(item, (tuple, list)) and 1 <= len(item) <= 3:
        return (*item, *([None] * (3 - len(item))))
    raise ValueError(f"{owner}: a dataset batch must be (x,), (x, y) or (x, y, "
                     f"sample_weight), or x alone; got {type(item).__name__}"
                     + (f" of length {len(item)}" if isinstance(item, (tuple, list)) else ""))


class ArrayAdapter:
    """Batches of arrays already converted (see the module docstring).

    Args:
        xs, ys: One array per input and per output (``ys`` empty for ``predict``).
        sw: One weight per sample, or ``None``.
        batch_size: Samples per batch (the last may be smaller).
        rng: Returns the generator that draws each epoch's order (the model's, read each
            epoch: a restored backup replaces it); ``None``: in order.
    """

    def __init__(self, xs: list[np.ndarray], ys: list[np.ndarray], sw: np.ndarray | None,
                 batch_size: int, rng: Rng | None = None) -> None:
        self.xs, self.ys, self.sw = xs, ys, sw
        self.n = xs[0].shape[0]
        self.batch_size = batch_size
        self.steps = -(-self.n // batch_size)
        self._rng = rng
        self._arrays = [*xs, *ys, *([] if sw is None else [sw])]
        self._bufs = None
        if rng is not None:
            rows = min(batch_size, self.n)
            self._bufs = [np.empty((rows, *a.shape[1:]), dtype=a.dtype) for a in self._arrays]

    def epoch(self) -> Iterator[Batch]:
        """One epoch's batches; the shuffled order is drawn now, not at the first batch."""
        order = None if self._rng is None else self._rng().permutation(self.n)
        return self._batches(order)

    def _batches(self, order: np.ndarray | None) -> Iterator[Batch]:
        n_x, n_xy = len(self.xs), len(self.xs) + len(self.ys)
        for step in range(self.steps):
            start = step * self.batch_size
            end = min(start + self.batch_size, self.n)
            if order is None:
                batch = [a[start:end] for a in self._arrays]
            else:
                idx = order[start:end]
                batch = [np.take(a, idx, axis=0, out=buf[:end - start], mode="clip")
                         for a, buf in zip(self._arrays, self._bufs)]
            yield batch[:n_x], batch[n_x:n_xy], (batch[n_xy] if self.sw is not None else None)

    def end_epoch(self) -> None:
        """Nothing to do for arrays."""


class StreamAdapter:
    """Batches read from a dataset as they come (see the module docstring).

    Args:
        source: A ``PyDataset``, an iterator, or a re-iterable dataset with a length.
        convert: Turns ``(x, y, sample_weight)`` into a :data:`Batch` (checks included).
        steps: Batches per epoch; ``None``: the dataset's length, or until an iterator
            runs out.
        rng: Returns the generator that shuffles a ``PyDataset``'s batch order each
            epoch; ``None``: in order.
        owner: The calling method, for messages.
    """

    def __init__(self, source: Any, convert: Callable[[Any, Any, Any], Batch],
                 steps: int | None, owner: str, rng: Rng | None = None) -> None:
        self.source = source
        self._convert = convert
        self._owner = owner
        self._rng = rng
        self._indexed = isinstance(source, PyDataset)
        self._iterator = hasattr(source, "__next__")
        length = None if self._iterator else len(source)
        if length is not None and (not isinstance(length, numbers.Integral) or length < 1):
            raise ValueError(f"{owner}: a dataset must have at least one batch, got "
                             f"len()={length!r}")
        self.steps = steps if steps is not None else length
        #: Whether the last epoch got fewer batches than ``steps`` (the data ran out).
        self.ran_out = False

    def epoch(self) -> Iterator[Batch]:
        """One epoch's batches (a ``PyDataset``'s ``on_epoch_begin`` runs now)."""
        self.ran_out = False
        if self._indexed:
            self.source.on_epoch_begin()
            order = np.arange(len(self.source))
            if self._rng is not None:
                order = self._rng().permutation(order)
            items: Iterator = (self.source[int(i)] for i in order)
        else:
            items = self.source if self._iterator else iter(self.source)
        return self._batches(items)

    def _batches(self, items: Iterator) -> Iterator[Batch]:
        step = 0
        while self.steps is None or step < self.steps:
            try:
                item = next(items)
            except StopIteration:
                self.ran_out = self.steps is not None or step == 0
                return
            yield self._convert(*unpack(item, self._owner))
            step += 1

    def end_epoch(self) -> None:
        """A ``PyDataset``'s ``on_epoch_end``."""
        if self._indexed:
            self.source.on_epoch_end()


def _stream_batches(model: Any, class_weight: Any, with_targets: bool,
                    owner: str) -> Callable[[Any, Any, Any], Batch]:
    """The conversion of one dataset batch for ``model``: checked arrays, and one weight
    per sample from the batch's ``sample_weight`` or from ``class_weight``."""
    from tinynet.models.weighting import sample_weights

    def convert(x: Any, y: Any, sw: Any) -> Batch:
        if not with_targets:
            return model._input_arrays(x, owner), [], None
        if y is None and model._needs_targets:
            raise ValueError(f"{owner}: a dataset batch must be (x, y) or (x, y, "
                             f"sample_weight); got x alone")
        xs, ys = model._data(x, y, owner)
        return xs, ys, sample_weights(sw, class_weight, ys, owner)
    return convert


def make_adapter(model: Any, x: Any, y: Any, sample_weight: Any, *, batch_size: int,
                 steps: int | None, steps_arg: str, owner: str, class_weight: Any = None,
                 rng: Rng | None = None,
                 with_targets: bool = True) -> ArrayAdapter | StreamAdapter:
    """The adapter of ``x`` (and ``y``, ``sample_weight``) for ``model``: a dataset as a
    :class:`StreamAdapter` (``y`` and ``sample_weight`` must then be ``None``, as in
    Keras), arrays as an :class:`ArrayAdapter` (checked and converted here)."""
    from tinynet.models.weighting import sample_weights

    if is_dataset(x):
        for arg, value in (("y", y), ("sample_weight", sample_weight)):
            if value is not None:
                raise ValueError(f"{owner}: {arg} must be None when x is a dataset (a "
                                 f"PyDataset or a generator yields its own), got "
                                 f"{type(value).__name__}")
        return StreamAdapter(x, _stream_batches(model, class_weight, with_targets, owner),
                             steps, owner, rng if isinstance(x, PyDataset) else None)
    if steps is not None:
        raise ValueError(f"{owner}: {steps_arg} is for a PyDataset or a generator; with "
                         f"arrays every batch of batch_size samples is used, got "
                         f"{steps_arg}={steps}")
    if not with_targets:
        xs = model._input_arrays(x, owner)
        if any(a.shape[0] != xs[0].shape[0] for a in xs):
            raise ValueError(f"{owner}: every input must hold the same number of samples, "
                             f"got shapes {[a.shape for a in xs]}")
        return ArrayAdapter(xs, [], None, batch_size)
    xs, ys = model._data(x, y, owner)
    return ArrayAdapter(xs, ys, sample_weights(sample_weight, class_weight, ys, owner),
                        batch_size, rng)


def split_validation(data: ArrayAdapter, validation_split: float, class_weight: Any,
                     rng: Rng | None,
                     owner: str) -> tuple[ArrayAdapter, ArrayAdapter]:
    """Keras's ``validation_split``: the last samples, before shuffling, validate; class
    weights weigh the training loss only."""
    n_all = data.n
    split_at = int(np.floor(n_all * (1.0 - validation_split)))
    if split_at == 0 or split_at == n_all:
        raise ValueError(f"{owner}: {n_all} samples are not enough to split into a "
                         f"training and a validation set with validation_split="
                         f"{validation_split}")
    sw = data.sw
    train = ArrayAdapter([a[:split_at] for a in data.xs], [a[:split_at] for a in data.ys],
                         None if sw is None else sw[:split_at], data.batch_size, rng)
    val = ArrayAdapter([a[split_at:] for a in data.xs], [a[split_at:] for a in data.ys],
                       None if sw is None or class_weight is not None else sw[split_at:],
                       data.batch_size)
    return train, val
