"""Data helpers of ``keras.utils`` on NumPy arrays: :func:`set_random_seed`,
:func:`normalize`, :func:`pad_sequences`, :func:`split_dataset` and
:func:`timeseries_dataset_from_array`.

They take Keras 3.15's arguments and defaults and return Keras's values. Where Keras
returns a ``tf.data.Dataset``, tinynet returns NumPy: :func:`split_dataset` gives two
arrays (or two tuples of arrays), and :func:`timeseries_dataset_from_array` gives a
re-iterable :class:`TimeseriesDataset` of NumPy batches.
"""

from __future__ import annotations

import math
import random as _pyrandom
from typing import Any, Iterator

import numpy as np

from tinynet import random as _tnrandom

__all__ = ["set_random_seed", "normalize", "pad_sequences", "split_dataset",
           "timeseries_dataset_from_array", "TimeseriesDataset"]


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _check_int(fn: str, name: str, value: Any, low: int, allow_none: bool = False) -> Any:
    """A ``value >= low`` int (or ``None`` where allowed), else a TypeError/ValueError."""
    if value is None and allow_none:
        return None
    expect = f"{'None or ' if allow_none else ''}an int >= {low}"
    if not _is_int(value):
        raise TypeError(f"{fn}: {name} must be {expect}, got {value!r}")
    if value < low:
        raise ValueError(f"{fn}: {name} must be {expect}, got {value!r}")
    return int(value)


def set_random_seed(seed: int) -> None:
    """Seeds everything random, as ``keras.utils.set_random_seed``: tinynet's global seed
    (``tn.set_seed``: weights, dropout, shuffling), Python's ``random`` and NumPy's
    legacy global generator (``np.random.seed``).

    Args:
        seed: A non-negative int.

    Raises:
        TypeError: ``seed`` is not an int.
        ValueError: ``seed`` is negative.
    """
    seed = _tnrandom.check_seed(seed, "set_random_seed", allow_none=False)
    _tnrandom.set_seed(seed)
    _pyrandom.seed(seed)
    np.random.seed(seed % (2 ** 32))


def normalize(x: Any, axis: int = -1, order: Any = 2) -> np.ndarray:
    """Divides ``x`` by its ``order``-norm along ``axis``, as ``keras.utils.normalize``
    does for NumPy arrays; a zero norm divides by 1 (the slice stays zeros).

    Unlike Keras 3.15's NumPy path: an array-like (a list) also gives a NumPy array; a
    1-D ``x`` keeps its shape (Keras returns ``[1, n]``); and ``axis=0`` divides each
    slice along axis 0 by its own norm (Keras treats a falsy ``axis`` as ``-1`` when it
    divides, which mixes the norms up or fails to broadcast).

    Args:
        x: Array-like of numbers.
        axis: The axis of the norm.
        order: The norm's order, as ``np.linalg.norm``'s ``ord`` for vectors (``2`` for
            L2, ``1`` for L1, ``np.inf`` for the max).

    Returns:
        A float array of ``x``'s shape.

    Raises:
        TypeError: ``x`` is not numeric, ``axis`` is not an int, or ``order`` not a number.
        ValueError: ``axis`` is out of range for ``x``.
    """
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer)
                                     or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"normalize: x must be a numeric array, got dtype {arr.dtype}")
    if not _is_int(axis):
        raise TypeError(f"normalize: axis must be an int, got {axis!r}")
    if not -max(arr.ndim, 1) <= axis < max(arr.ndim, 1):
        raise ValueError(f"normalize: axis must be in [-{max(arr.ndim, 1)}, "
                         f"{max(arr.ndim, 1)}) for x of shape {arr.shape}, got {axis}")
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, float, np.number)):
        raise TypeError(f"normalize: order must be a number (e.g. 1, 2 or np.inf), got "
                        f"{order!r}")
    if arr.ndim == 0:
        arr = arr.reshape(1)
    norm = np.atleast_1d(np.linalg.norm(arr, order, axis, keepdims=True))
    norm[norm == 0] = 1
    return arr / norm


def pad_sequences(sequences: Any, maxlen: int | None = None, dtype: Any = "int32",
                  padding: str = "pre", truncating: str = "pre", value: Any = 0.0) -> np.ndarray:
    """Pads (or truncates) sequences to one length, as ``keras.utils.pad_sequences``.

    Each sequence longer than ``maxlen`` loses values at its start (``truncating="pre"``)
    or end (``"post"``); each shorter one gets ``value`` before (``padding="pre"``) or
    after (``"post"``) it. ``maxlen=None`` takes the longest sequence. An empty sequence
    gives a row of ``value``. Elements may themselves be arrays (all of one shape), giving
    ``[num_samples, maxlen, *sample_shape]``. For strings, pass ``dtype=object``.

    Args:
        sequences: A list (or other sized iterable) of sequences (lists or arrays).
        maxlen: The output length; ``None`` is the longest sequence's length.
        dtype: The output dtype (``"int32"``, ``"float32"``, ``object``, ...).
        padding: ``"pre"`` or ``"post"``: where padding goes.
        truncating: ``"pre"`` or ``"post"``: which end is cut from long sequences.
        value: The padding value.

    Returns:
        ``[len(sequences), maxlen, ...]`` of ``dtype``.

    Raises:
        TypeError: ``sequences`` is not sized or holds a non-sequence, ``maxlen`` is not
            an int, or ``dtype`` is not a dtype.
        ValueError: ``maxlen`` is negative, ``padding``/``truncating`` is unknown, a
            string ``value`` meets a non-string ``dtype``, or a sample's element shape
            differs from the first one's.
    """
    fn = "pad_sequences"
    if isinstance(sequences, (str, bytes)) or not hasattr(sequences, "__len__"):
        raise TypeError(f"{fn}: sequences must be a list of sequences, got "
                        f"{type(sequences).__name__}")
    maxlen = _check_int(fn, "maxlen", maxlen, 0, allow_none=True)
    for name, mode in (("padding", padding), ("truncating", truncating)):
        if not isinstance(mode, str) or mode not in ("pre", "post"):
            raise ValueError(f"{fn}: {name} must be 'pre' or 'post', got {mode!r}")
    try:
        np_dtype = np.dtype(dtype)
    except TypeError as err:
        raise TypeError(f"{fn}: dtype must be a NumPy dtype (e.g. 'int32' or object), got "
                        f"{dtype!r}") from err
    lengths, sample_shape, found = [], (), False
    for idx, seq in enumerate(sequences):
        try:
            lengths.append(len(seq))
        except TypeError as err:
            raise TypeError(f"{fn}: sequences must be a list of sequences; the one at "
                            f"position {idx} is {seq!r}") from err
        if not found and len(seq):
            sample_shape = np.asarray(seq).shape[1:]
            found = True
    if maxlen is None:
        maxlen = max(lengths) if lengths else 0
    is_str = np.issubdtype(np_dtype, np.str_) or np.issubdtype(np_dtype, np.bytes_)
    if isinstance(value, str) and np_dtype != object and not is_str:
        raise ValueError(f"{fn}: value {value!r} is a string but dtype is {np_dtype}; use "
                         f"dtype=object for variable-length strings")
    out = np.full((len(lengths), maxlen) + sample_shape, value, dtype=np_dtype)
    if maxlen == 0:
        return out
    for idx, seq in enumerate(sequences):
        if not len(seq):
            continue
        cut = seq[-maxlen:] if truncating == "pre" else seq[:maxlen]
        cut = np.asarray(cut, dtype=np_dtype)
        if cut.shape[1:] != sample_shape:
            raise ValueError(f"{fn}: the elements of the sequence at position {idx} have "
                             f"shape {cut.shape[1:]}, expected {sample_shape} (the first "
                             f"non-empty sequence's)")
        if padding == "post":
            out[idx, :len(cut)] = cut
        else:
            out[idx, -len(cut):] = cut
    return out


def _check_size(fn: str, name: str, size: Any, total: int) -> None:
    if size is None:
        return
    if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, float, np.integer,
                                                                   np.floating)):
        raise TypeError(f"{fn}: {name} must be an int, a float or None, got {size!r}")
    if _is_int(size):
        if not 0 < size < total:
            raise ValueError(f"{fn}: {name} must be an int in (0, {total}) (the dataset "
                             f"has {total} samples) or a float in (0, 1), got {size!r}")
    elif not 0 < size < 1:
        raise ValueError(f"{fn}: {name} must be a float in (0, 1) or an int in "
                         f"(0, {total}), got {size!r}")


def split_dataset(dataset: Any, left_size: int | float | None = None,
                  right_size: int | float | None = None, shuffle: bool = False,
                  seed: int | None = None) -> tuple[Any, Any]:
    """Splits a dataset in two, as ``keras.utils.split_dataset``, for NumPy data.

    ``dataset`` is an array (split along axis 0) or a tuple/list of arrays of one length
    (split together, sample by sample). A float size is a fraction of the samples (rounded
    as Keras rounds), an int a count; a missing size is the rest. The left part is the
    first ``left_size`` samples, the right part the last ``right_size`` samples (so when
    both are given and sum to less than the whole, the middle is dropped). ``shuffle``
    permutes the samples first, with the same permutation as Keras for the same ``seed``
    (Python's ``random.Random(seed).shuffle``).

    Unlike Keras, which returns two ``tf.data.Dataset`` objects, tinynet returns the data
    itself: two arrays, or two tuples of arrays; pass them straight to ``fit``.

    Args:
        dataset: An array, or a tuple/list of arrays with a common first dimension.
        left_size: An int count in ``(0, n)``, a float fraction in ``(0, 1)``, or ``None``.
        right_size: The same, for the right part.
        shuffle: Whether to shuffle the samples before splitting.
        seed: The shuffle's seed; ``None`` draws one from tinynet's global stream
            (reproducible after ``tn.set_seed``).

    Returns:
        ``(left, right)``: arrays, or tuples of arrays.

    Raises:
        TypeError: ``dataset`` is not an array or a tuple/list of arrays, a size is not
            an int/float/None, ``shuffle`` is not a bool, or ``seed`` is not an int.
        ValueError: ``dataset`` is empty or its arrays differ in length, both sizes are
            ``None``, a size is out of range, the sizes add up to more than the dataset,
            or a part would be empty.
    """
    fn = "split_dataset"
    if isinstance(dataset, np.ndarray):
        arrays, as_tuple = [dataset], False
    elif isinstance(dataset, (tuple, list)):
        if not dataset:
            raise ValueError(f"{fn}: dataset must be a non-empty tuple of arrays, got an "
                             f"empty {type(dataset).__name__}")
        for i, arr in enumerate(dataset):
            if not isinstance(arr, np.ndarray):
                raise TypeError(f"{fn}: dataset must be an array or a tuple/list of arrays; "
                                f"element {i} is a {type(arr).__name__}")
        arrays, as_tuple = list(dataset), True
    else:
        raise TypeError(f"{fn}: dataset must be a NumPy array or a tuple/list of arrays, "
                        f"got {type(dataset).__name__}")
    for i, arr in enumerate(arrays):
        if arr.ndim == 0:
            raise ValueError(f"{fn}: dataset arrays must have a sample axis, got a scalar "
                             f"at element {i}")
        if arr.shape[0] != arrays[0].shape[0]:
            raise ValueError(f"{fn}: dataset arrays must have the same length; element {i} "
                             f"has {arr.shape[0]} samples, expected {arrays[0].shape[0]}")
    total = arrays[0].shape[0]
    if total == 0:
        raise ValueError(f"{fn}: dataset must have at least one sample, got 0")
    if left_size is None and right_size is None:
        raise ValueError(f"{fn}: at least one of left_size and right_size must be given, "
                         f"got left_size=None and right_size=None")
    _check_size(fn, "left_size", left_size, total)
    _check_size(fn, "right_size", right_size, total)
    if not isinstance(shuffle, (bool, np.bool_)):
        raise TypeError(f"{fn}: shuffle must be a bool, got {shuffle!r}")
    seed = _tnrandom.check_seed(seed, fn)
    both_float = (left_size is not None and right_size is not None
                  and not _is_int(left_size) and not _is_int(right_size))
    if both_float and left_size + right_size > 1:
        raise ValueError(f"{fn}: left_size + right_size must be <= 1 for fractions, got "
                         f"{left_size} + {right_size}")

    def count(size: Any) -> int | None:
        if size is None:
            return None
        return int(size) if _is_int(size) else round(float(size) * total)

    left, right = count(left_size), count(right_size)
    if left is None:
        left = total - right
    elif right is None:
        right = total - left
    if left + right > total:
        raise ValueError(f"{fn}: left_size and right_size add up to {left + right} "
                         f"samples, more than the dataset's {total}")
    for n, side in ((left, "left"), (right, "right")):
        if n == 0:
            raise ValueError(f"{fn}: the {side} part would be empty (dataset of {total} "
                             f"samples, left_size={left_size!r}, right_size={right_size!r})")
    order = list(range(total))
    if shuffle:
        if seed is None:
            seed = int(_tnrandom.make_rng().integers(0, 1_000_000))
        _pyrandom.Random(seed).shuffle(order)
    index = np.asarray(order, dtype=np.int64)
    lefts = tuple(arr[index[:left]] for arr in arrays)
    rights = tuple(arr[index[total - right:]] for arr in arrays)
    if as_tuple:
        return lefts, rights
    return lefts[0], rights[0]


class TimeseriesDataset:
    """The windows of :func:`timeseries_dataset_from_array`: iterate it (any number of
    times) for batches, take ``len()`` for the number of batches, or index a batch.

    Each item is ``(x_batch, y_batch)`` (``x_batch`` alone when there are no targets);
    with ``batch_size=None`` each item is one window (and its target).
    """

    def __init__(self, data: np.ndarray, targets: np.ndarray | None, starts: np.ndarray,
                 sequence_length: int, sampling_rate: int, batch_size: int | None,
                 start_index: int, shuffle: bool, seed: int | None) -> None:
        self._data = data
        self._targets = targets
        self._starts = starts
        self._offsets = np.arange(sequence_length, dtype=np.int64) * sampling_rate
        self._batch_size = batch_size
        self._start_index = start_index
        self._shuffle = shuffle
        self._rng = np.random.default_rng(seed) if shuffle else None
        self._passes = 0

    @property
    def num_windows(self) -> int:
        """The number of windows (samples) per pass."""
        return len(self._starts)

    def __len__(self) -> int:
        if self._batch_size is None:
            return self.num_windows
        return math.ceil(self.num_windows / self._batch_size)

    def _item(self, starts: np.ndarray) -> Any:
        x = self._data[self._start_index + starts[..., None] + self._offsets]
        if self._targets is None:
            return x
        return x, self._targets[self._start_index + starts]

    def _slice(self, starts: np.ndarray, i: int) -> Any:
        if self._batch_size is None:
            item = self._item(starts[i:i + 1])
            return item[0] if self._targets is None else (item[0][0], item[1][0])
        return self._item(starts[i * self._batch_size:(i + 1) * self._batch_size])

    def __getitem__(self, i: int) -> Any:
        """Batch ``i`` of the first pass's order."""
        if not _is_int(i):
            raise TypeError(f"TimeseriesDataset: index must be an int, got {i!r}")
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"TimeseriesDataset: index {i} is out of range for {n} items")
        return self._slice(self._starts, int(i) % n)

    def __iter__(self) -> Iterator[Any]:
        starts = self._starts
        if self._shuffle and self._passes:
            starts = starts[self._rng.permutation(len(starts))]
        self._passes += 1
        for i in range(len(self)):
            yield self._slice(starts, i)


def timeseries_dataset_from_array(data: Any, targets: Any, sequence_length: int,
                                  sequence_stride: int = 1, sampling_rate: int = 1,
                                  batch_size: int | None = 128, shuffle: bool = False,
                                  seed: int | None = None, start_index: int | None = None,
                                  end_index: int | None = None) -> TimeseriesDataset:
    """Sliding windows over a time series, as ``keras.utils.timeseries_dataset_from_array``.

    Window ``k`` starts at ``start_index + p_k`` with ``p_k = k * sequence_stride`` and
    holds ``data[start_index + p_k + j * sampling_rate]`` for ``j < sequence_length``; its
    target is ``targets[start_index + p_k]``. Windows lie inside
    ``data[start_index:end_index]``; with targets there are at most ``len(targets)``
    start positions, as in Keras. Same windows, batches and targets as Keras.

    Unlike Keras, which returns a ``tf.data.Dataset``, this returns a
    :class:`TimeseriesDataset`: a re-iterable Python object yielding NumPy
    ``(x_batch, y_batch)`` (just ``x_batch`` when ``targets`` is ``None``), with ``len()``
    (the number of batches) and indexing. With ``shuffle``, the first pass has Keras's
    shuffled window order for the same ``seed`` before its ``tf.data`` shuffle buffer (so
    batches hold different windows than Keras's); later passes reshuffle, reproducibly
    from ``seed``.

    Args:
        data: An array-like of time steps (axis 0 is time).
        targets: An array-like of targets, one per start time step, or ``None``.
        sequence_length: The window length, in samples.
        sequence_stride: The step between consecutive windows' starts.
        sampling_rate: The step between time steps within a window.
        batch_size: Windows per batch; ``None`` yields single windows.
        shuffle: Whether to shuffle the windows.
        seed: The shuffle's seed; ``None`` draws one from tinynet's global stream.
        start_index: The first time step used (default 0).
        end_index: One past the last time step used (default ``len(data)``; as in Keras
            an explicit value must be below ``len(data)``).

    Returns:
        A :class:`TimeseriesDataset`.

    Raises:
        TypeError: an argument has the wrong type (``data`` not an array-like, an int
            argument not an int, ``shuffle`` not a bool).
        ValueError: an int argument out of range (Keras's rules: ``sampling_rate`` and
            ``sequence_stride`` in ``[1, len(data))``, ``start_index`` in
            ``[0, len(data))``, ``end_index`` in ``(max(start_index, 0), len(data))``), or
            ``targets`` too short for the windows.
    """
    fn = "timeseries_dataset_from_array"
    try:
        arr = np.asarray(data)
    except Exception as err:  # ragged input
        raise TypeError(f"{fn}: data must be an array-like of time steps, got "
                        f"{type(data).__name__}") from err
    if arr.ndim == 0 or arr.dtype == object:
        raise TypeError(f"{fn}: data must be an array-like with a time axis, got "
                        f"{type(data).__name__} of shape {arr.shape} and dtype {arr.dtype}")
    n = len(arr)
    tgt = None
    if targets is not None:
        tgt = np.asarray(targets)
        if tgt.ndim == 0:
            raise TypeError(f"{fn}: targets must be an array-like or None, got {targets!r}")
    sequence_length = _check_int(fn, "sequence_length", sequence_length, 1)
    sequence_stride = _check_int(fn, "sequence_stride", sequence_stride, 1)
    sampling_rate = _check_int(fn, "sampling_rate", sampling_rate, 1)
    batch_size = _check_int(fn, "batch_size", batch_size, 1, allow_none=True)
    start_index = _check_int(fn, "start_index", start_index, 0, allow_none=True)
    end_index = _check_int(fn, "end_index", end_index, 1, allow_none=True)
    if not isinstance(shuffle, (bool, np.bool_)):
        raise TypeError(f"{fn}: shuffle must be a bool, got {shuffle!r}")
    seed = _tnrandom.check_seed(seed, fn)
    if start_index is not None and start_index >= n:
        raise ValueError(f"{fn}: start_index must be lower than the length of data "
                         f"({n}), got {start_index}")
    if end_index is not None:
        if start_index and end_index <= start_index:
            raise ValueError(f"{fn}: end_index must be higher than start_index "
                             f"({start_index}), got {end_index}")
        if end_index >= n:
            raise ValueError(f"{fn}: end_index must be lower than the length of data "
                             f"({n}), got {end_index}")
    if sampling_rate >= n:
        raise ValueError(f"{fn}: sampling_rate must be lower than the length of data "
                         f"({n}), got {sampling_rate}")
    if sequence_stride >= n:
        raise ValueError(f"{fn}: sequence_stride must be lower than the length of data "
                         f"({n}), got {sequence_stride}")
    start = start_index or 0
    end = n if end_index is None else end_index
    num_seqs = end - start - (sequence_length - 1) * sampling_rate
    if tgt is not None:
        num_seqs = min(num_seqs, len(tgt))
    starts = np.arange(0, max(num_seqs, 0), sequence_stride, dtype=np.int64)
    if tgt is not None and len(starts) and start + starts[-1] >= min(len(tgt), end):
        raise ValueError(f"{fn}: targets has {len(tgt)} entries, too few for the window "
                         f"starting at time step {start + int(starts[-1])} (targets[i] is "
                         f"the target of the window starting at data[i])")
    if shuffle:
        if seed is None:
            seed = int(_tnrandom.make_rng().integers(0, 1_000_000))
        np.random.RandomState(seed).shuffle(starts)
    return TimeseriesDataset(arr, tgt, starts, sequence_length, sampling_rate, batch_size,
                             start, shuffle, seed)
