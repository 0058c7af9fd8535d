"""``tn.utils``'s Keras helpers against Keras 3.15.1: ``pad_sequences``, ``normalize``,
``to_categorical``, ``set_random_seed``, ``split_dataset`` and
``timeseries_dataset_from_array``. The pinned values were printed by Keras 3.15.1 (JAX
backend): ``split_dataset``'s sizes by its ``_rescale_dataset_split_sizes`` and its shuffle
by ``random.seed(42); random.shuffle``; the windows by
``timeseries_dataset_from_array``'s index code (its grain path, with a stub grain)."""

from __future__ import annotations

import random

import numpy as np
import pytest

import tinynet as tn
from tinynet.utils import (normalize, pad_sequences, set_random_seed, split_dataset,
                           timeseries_dataset_from_array, to_categorical)

SEQS = [[1, 2, 3], [4, 5], [], [6, 7, 8, 9, 10]]

PAD_CASES = [
    ({}, [[0, 0, 1, 2, 3], [0, 0, 0, 4, 5], [0, 0, 0, 0, 0], [6, 7, 8, 9, 10]]),
    (dict(maxlen=3), [[1, 2, 3], [0, 4, 5], [0, 0, 0], [8, 9, 10]]),
    (dict(maxlen=3, padding="post"), [[1, 2, 3], [4, 5, 0], [0, 0, 0], [8, 9, 10]]),
    (dict(maxlen=3, truncating="post"), [[1, 2, 3], [0, 4, 5], [0, 0, 0], [6, 7, 8]]),
    (dict(maxlen=3, padding="post", truncating="post"),
     [[1, 2, 3], [4, 5, 0], [0, 0, 0], [6, 7, 8]]),
    (dict(maxlen=6, value=-1), [[-1, -1, -1, 1, 2, 3], [-1, -1, -1, -1, 4, 5],
                                [-1, -1, -1, -1, -1, -1], [-1, 6, 7, 8, 9, 10]]),
]


@pytest.mark.parametrize("kwargs,expected", PAD_CASES, ids=lambda v: str(v)[:40])
def test_pad_sequences_matches_keras(kwargs, expected):
    out = pad_sequences(SEQS, **kwargs)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)


def test_pad_sequences_float_dtype_and_value():
    out = pad_sequences(SEQS, dtype="float32", value=0.5, maxlen=2)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[2, 3], [4, 5], [0.5, 0.5], [9, 10]])
    out = pad_sequences([[1, 2]], maxlen=3, dtype="float64", value=np.nan)
    np.testing.assert_array_equal(out, [[np.nan, 1, 2]])


def test_pad_sequences_empty_cases():
    out = pad_sequences([[], []])
    assert out.shape == (2, 0) and out.dtype == np.int32
    assert pad_sequences([], maxlen=3).shape == (0, 3)
    assert pad_sequences([]).shape == (0, 0)
    assert pad_sequences([[1, 2]], maxlen=0).shape == (1, 0)


def test_pad_sequences_strings_and_sample_shape():
    out = pad_sequences([["a", "bb"], ["c"]], dtype=object, value="<pad>")
    assert out.tolist() == [["a", "bb"], ["<pad>", "c"]]
    out = pad_sequences([np.ones((2, 2)), np.zeros((1, 2))], dtype="float32")
    np.testing.assert_array_equal(out, [[[1, 1], [1, 1]], [[0, 0], [0, 0]]])
    arrays = pad_sequences((np.array([1, 2]), np.array([3])), padding="post")
    np.testing.assert_array_equal(arrays, [[1, 2], [3, 0]])


@pytest.mark.parametrize("call,exc,match", [
    (lambda: pad_sequences([[1]], value="x"), ValueError, "value 'x' is a string.*dtype=object"),
    (lambda: pad_sequences([[1]], padding="left"), ValueError, "padding must be 'pre' or 'post', got 'left'"),
    (lambda: pad_sequences([[1]], truncating="mid"), ValueError, "truncating must be 'pre' or 'post', got 'mid'"),
    (lambda: pad_sequences([[1]], maxlen=-1), ValueError, "maxlen must be None or an int >= 0, got -1"),
    (lambda: pad_sequences([[1]], maxlen=2.0), TypeError, "maxlen must be None or an int >= 0, got 2.0"),
    (lambda: pad_sequences(5), TypeError, "sequences must be a list of sequences, got int"),
    (lambda: pad_sequences([[1], 2]), TypeError, "the one at position 1 is 2"),
    (lambda: pad_sequences([[[1, 2]], [[1, 2, 3]]]), ValueError, r"position 1 have shape \(3,\), expected \(2,\)"),
])
def test_pad_sequences_bad_inputs(call, exc, match):
    with pytest.raises(exc, match="pad_sequences: .*" + match):
        call()


X = np.array([[3., 4.], [0., 0.], [1., -1.]])


def test_normalize_matches_keras():
    np.testing.assert_allclose(normalize(X), [[0.6, 0.8], [0, 0], [0.7071067811865475, -0.7071067811865475]])
    np.testing.assert_allclose(normalize(X, order=1), [[0.42857142857142855, 0.5714285714285714], [0, 0], [0.5, -0.5]])
    np.testing.assert_allclose(normalize(X, order=np.inf), [[0.75, 1], [0, 0], [1, -1]])
    out = normalize(np.array([[3, 4]]))
    assert out.dtype == np.float64 and out.tolist() == [[0.6, 0.8]]
    np.testing.assert_allclose(normalize(np.arange(8.).reshape(2, 2, 2), axis=1),
                               [[[0.0, 0.31622776601683794], [1.0, 0.9486832980505138]],
                                [[0.5547001962252291, 0.5812381937190965],
                                 [0.8320502943378437, 0.813733471206735]]])


def test_normalize_axis0_and_lists():
    # Keras 3.15 gives [[0.6, 0.2], [4, 0]] here (a falsy axis divides as -1) and
    # shape (1, 2) for a 1-D x; tinynet normalizes columns and keeps the shape.
    np.testing.assert_allclose(normalize(np.array([[3., 1.], [4., 0.]]), axis=0), [[0.6, 1], [0.8, 0]])
    out = normalize([3, 4])
    assert isinstance(out, np.ndarray) and out.tolist() == [0.6, 0.8]


@pytest.mark.parametrize("call,exc,match", [
    (lambda: normalize(X, axis=2), ValueError, r"axis must be in \[-2, 2\) for x of shape \(3, 2\), got 2"),
    (lambda: normalize(X, axis=1.0), TypeError, "axis must be an int, got 1.0"),
    (lambda: normalize(X, order="l2"), TypeError, "order must be a number.*got 'l2'"),
    (lambda: normalize(["a"]), TypeError, "x must be a numeric array, got dtype <U1"),
])
def test_normalize_bad_inputs(call, exc, match):
    with pytest.raises(exc, match="normalize: " + match):
        call()


def test_to_categorical_matches_keras():
    out = to_categorical([[1], [0], [2]])
    assert out.shape == (3, 3)
    np.testing.assert_array_equal(out, [[0, 1, 0], [1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(to_categorical([1, 3], num_classes=5), [[0, 1, 0, 0, 0], [0, 0, 0, 1, 0]])
    assert to_categorical(np.array([[0, 1], [1, 0]])).shape == (2, 2, 2)


def test_set_random_seed_seeds_tinynet_python_and_numpy():
    set_random_seed(123)
    assert tn.random.get_seed() == 123
    a = (random.random(), np.random.rand(), tn.random.make_rng().random())
    set_random_seed(123)
    assert (random.random(), np.random.rand(), tn.random.make_rng().random()) == a
    with pytest.raises(TypeError, match="set_random_seed: seed must be a non-negative int, got 1.5"):
        set_random_seed(1.5)
    with pytest.raises(ValueError, match="set_random_seed: seed must be a non-negative int, got -1"):
        set_random_seed(-1)


@pytest.mark.parametrize("left,right,n,sizes", [
    (0.8, None, 10, (8, 2)), (None, 0.25, 10, (8, 2)), (3, None, 10, (3, 7)),
    (None, 4, 10, (6, 4)), (0.33, 0.5, 7, (2, 4)), (2, 3, 10, (2, 3)),
    (0.5, None, 5, (2, 3)), (0.25, None, 10, (2, 8)),
])
def test_split_dataset_sizes_match_keras(left, right, n, sizes):
    data = np.arange(n)
    lo, hi = split_dataset(data, left_size=left, right_size=right)
    assert (len(lo), len(hi)) == sizes
    np.testing.assert_array_equal(lo, data[:sizes[0]])
    np.testing.assert_array_equal(hi, data[n - sizes[1]:])


def test_split_dataset_tuples_and_shuffle():
    x, y = np.arange(20).reshape(10, 2), np.arange(10) * 10
    (xl, yl), (xr, yr) = split_dataset((x, y), left_size=0.7, shuffle=True, seed=42)
    perm = [7, 3, 2, 8, 5, 6, 9, 4, 0, 1]  # Keras: random.seed(42); random.shuffle
    np.testing.assert_array_equal(yl, np.array(perm[:7]) * 10)
    np.testing.assert_array_equal(yr, np.array(perm[7:]) * 10)
    np.testing.assert_array_equal(xl, x[perm[:7]])
    lists = split_dataset([x, y], right_size=2)
    assert isinstance(lists[0], tuple) and lists[1][1].tolist() == [80, 90]
    tn.set_seed(3)
    a = split_dataset(y, left_size=5, shuffle=True)
    tn.set_seed(3)
    b = split_dataset(y, left_size=5, shuffle=True)
    np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("call,exc,match", [
    (lambda: split_dataset(np.arange(10)), ValueError, "at least one of left_size and right_size"),
    (lambda: split_dataset(np.arange(10), left_size=0.01), ValueError, "the left part would be empty"),
    (lambda: split_dataset(np.arange(10), left_size=10), ValueError, r"left_size must be an int in \(0, 10\).*got 10"),
    (lambda: split_dataset(np.arange(10), left_size=1.5), ValueError, r"left_size must be a float in \(0, 1\).*got 1.5"),
    (lambda: split_dataset(np.arange(10), left_size=0.6, right_size=0.6), ValueError, "left_size \\+ right_size must be <= 1"),
    (lambda: split_dataset(np.arange(10), left_size=6, right_size=6), ValueError, "add up to 12 samples, more than the dataset's 10"),
    (lambda: split_dataset(np.arange(10), left_size="5"), TypeError, "left_size must be an int, a float or None, got '5'"),
    (lambda: split_dataset([1, 2, 3], left_size=1), TypeError, "element 0 is a int"),
    (lambda: split_dataset({"x": np.arange(3)}, left_size=1), TypeError, "got dict"),
    (lambda: split_dataset((np.arange(3), np.arange(4)), left_size=1), ValueError, "element 1 has 4 samples, expected 3"),
    (lambda: split_dataset(np.arange(0), left_size=1), ValueError, "at least one sample, got 0"),
    (lambda: split_dataset(np.arange(5), left_size=1, seed=-1), ValueError, "seed must be None or a non-negative int"),
])
def test_split_dataset_bad_inputs(call, exc, match):
    with pytest.raises(exc, match="split_dataset: .*" + match):
        call()


DATA, TARGETS = np.arange(20), np.arange(20) * 10

TS_CASES = [  # (kwargs, Keras's first window starts, in order)
    (dict(sequence_length=3), list(range(18))),
    (dict(sequence_length=4, sequence_stride=3), [0, 3, 6, 9, 12, 15]),
    (dict(sequence_length=3, sampling_rate=2), list(range(16))),
    (dict(sequence_length=3, sampling_rate=2, sequence_stride=2, start_index=2, end_index=15),
     [2, 4, 6, 8, 10]),
    (dict(sequence_length=5, shuffle=True, seed=7),
     [8, 5, 10, 2, 12, 0, 1, 14, 13, 7, 11, 3, 6, 9, 4, 15]),
]


@pytest.mark.parametrize("kwargs,starts", TS_CASES, ids=lambda v: str(v)[:50])
def test_timeseries_windows_match_keras(kwargs, starts):
    ds = timeseries_dataset_from_array(DATA, TARGETS, batch_size=4, **kwargs)
    rate, length = kwargs.get("sampling_rate", 1), kwargs["sequence_length"]
    expected_x = [[s + j * rate for j in range(length)] for s in starts]
    batches = list(ds)
    assert len(ds) == len(batches) == -(-len(starts) // 4)
    assert all(len(xb) == len(yb) <= 4 for xb, yb in batches)
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), expected_x)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), np.array(starts) * 10)
    np.testing.assert_array_equal(ds[0][0], expected_x[:4])


def test_timeseries_keras_pinned_windows():
    ds = timeseries_dataset_from_array(DATA, TARGETS, sequence_length=3, sampling_rate=2,
                                       sequence_stride=2, start_index=2, end_index=15,
                                       batch_size=4)
    (x0, y0), (x1, y1) = list(ds)
    assert x0.tolist() == [[2, 4, 6], [4, 6, 8], [6, 8, 10], [8, 10, 12]]
    assert y0.tolist() == [20, 40, 60, 80]
    assert x1.tolist() == [[10, 12, 14]] and y1.tolist() == [100]


def test_timeseries_no_targets_unbatched_and_features():
    data = np.arange(30, dtype=np.float32).reshape(10, 3)
    ds = timeseries_dataset_from_array(data, None, sequence_length=4, batch_size=None)
    items = list(ds)
    assert len(items) == len(ds) == 7
    assert isinstance(items[0], np.ndarray) and items[0].shape == (4, 3)
    np.testing.assert_array_equal(items[6], data[6:10])
    batched = list(timeseries_dataset_from_array(data, np.arange(10), 4, batch_size=None))
    assert batched[2][1] == 2 and batched[2][0].shape == (4, 3)
    assert list(timeseries_dataset_from_array(np.arange(5), None, 9)) == []


def test_timeseries_shuffle_is_reproducible_and_reshuffles():
    a = timeseries_dataset_from_array(DATA, TARGETS, 3, batch_size=5, shuffle=True, seed=1)
    b = timeseries_dataset_from_array(DATA, TARGETS, 3, batch_size=5, shuffle=True, seed=1)
    first = np.concatenate([y for _, y in a])
    assert np.array_equal(first, np.concatenate([y for _, y in b]))
    second = np.concatenate([y for _, y in a])
    assert sorted(second.tolist()) == sorted(first.tolist())
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("kwargs,exc,match", [
    (dict(sequence_length=0), ValueError, "sequence_length must be an int >= 1, got 0"),
    (dict(sequence_length=3.0), TypeError, "sequence_length must be an int >= 1, got 3.0"),
    (dict(sequence_length=3, sampling_rate=0), ValueError, "sampling_rate must be an int >= 1, got 0"),
    (dict(sequence_length=3, sampling_rate=20), ValueError, r"sampling_rate must be lower than the length of data \(20\), got 20"),
    (dict(sequence_length=3, sequence_stride=20), ValueError, r"sequence_stride must be lower than the length of data \(20\), got 20"),
    (dict(sequence_length=3, start_index=20), ValueError, r"start_index must be lower than the length of data \(20\), got 20"),
    (dict(sequence_length=3, start_index=-1), ValueError, "start_index must be None or an int >= 0, got -1"),
    (dict(sequence_length=3, start_index=5, end_index=5), ValueError, r"end_index must be higher than start_index \(5\), got 5"),
    (dict(sequence_length=3, end_index=20), ValueError, r"end_index must be lower than the length of data \(20\), got 20"),
    (dict(sequence_length=3, batch_size=0), ValueError, "batch_size must be None or an int >= 1, got 0"),
    (dict(sequence_length=3, shuffle=1), TypeError, "shuffle must be a bool, got 1"),
    (dict(sequence_length=3, seed="a"), TypeError, "seed must be None or a non-negative int, got 'a'"),
])
def test_timeseries_bad_inputs(kwargs, exc, match):
    with pytest.raises(exc, match="timeseries_dataset_from_array: " + match):
        timeseries_dataset_from_array(DATA, TARGETS, **kwargs)


def test_timeseries_bad_data_and_targets():
    with pytest.raises(TypeError, match="timeseries_dataset_from_array: data must be an array-like"):
        timeseries_dataset_from_array(5, None, 2)
    with pytest.raises(ValueError, match="timeseries_dataset_from_array: targets has 3 entries"):
        timeseries_dataset_from_array(DATA, np.arange(3), 2, start_index=5)
