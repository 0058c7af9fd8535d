"""Datasets: load_digits (scikit-learn) and load_idx on IDX files generated here."""

import gzip
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.datasets import load_digits, load_idx


# -- load_digits -------------------------------------------------------------------------------
def test_load_digits_shapes_values_and_stratification():
    pytest.importorskip("sklearn")
    (x_train, y_train), (x_test, y_test) = load_digits()
    assert x_train.shape == (1347, 8, 8, 1) and x_test.shape == (450, 8, 8, 1)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    assert x_train.flags.c_contiguous
    assert x_train.min() == 0.0 and x_train.max() == 1.0
    assert np.array_equal(np.unique(x_train * 16), np.arange(17))  # pixel / 16, exactly
    counts_train = np.bincount(y_train) / len(y_train)
    counts_test = np.bincount(y_test) / len(y_test)
    assert np.abs(counts_train - counts_test).max() < 0.01
    assert tn.datasets.load_digits is load_digits


def test_load_digits_is_deterministic_per_seed():
    pytest.importorskip("sklearn")
    a = load_digits(test_size=0.2, seed=1)
    b = load_digits(test_size=0.2, seed=1)
    c = load_digits(test_size=0.2, seed=2)
    assert np.array_equal(a[0][1], b[0][1]) and np.array_equal(a[0][0], b[0][0])
    assert not np.array_equal(a[0][1], c[0][1])
    assert a[1][0].shape[0] == 360


@pytest.mark.parametrize("kwargs, error, message", [
    ({"test_size": 1.5}, ValueError, "load_digits: test_size must be a float in (0, 1) or a "
                                     "positive int, got 1.5"),
    ({"test_size": "half"}, TypeError, "load_digits: test_size must be a float in (0, 1)"),
    ({"test_size": 0}, ValueError, "load_digits: test_size must be a float in (0, 1)"),
    ({"seed": -1}, ValueError, "load_digits: seed must be None or a non-negative int, got -1"),
    ({"seed": "1"}, TypeError, "load_digits: seed must be None or a non-negative int, got '1'"),
])
def test_load_digits_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        load_digits(**kwargs)


def test_load_digits_without_sklearn(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("sklearn"):
            raise ImportError("No module named 'sklearn'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match=re.escape('pip install "tinynet[examples]"')):
        load_digits()


# -- load_idx ----------------------------------------------------------------------------------
def _idx(magic: int, dims, payload: bytes) -> bytes:
    return magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in dims) + payload


def _write(path, data: bytes, compress: bool):
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _pair(tmp_path, compress, n=5, h=3, w=2, n_labels=None, image_payload=None,
          label_payload=None, image_magic=0x803, label_magic=0x801, image_dims=None):
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (n, h, w), dtype=np.uint8)
    labels = rng.integers(0, 10, n if n_labels is None else n_labels, dtype=np.uint8)
    images = _idx(image_magic, image_dims or (n, h, w),
                  pixels.tobytes() if image_payload is None else image_payload)
    label_bytes = _idx(label_magic, (labels.size,),
                       labels.tobytes() if label_payload is None else label_payload)
    suffix = ".gz" if compress else ""
    return (_write(tmp_path / f"images{suffix}", images, compress),
            _write(tmp_path / f"labels{suffix}", label_bytes, compress), pixels, labels)


@pytest.mark.parametrize("compress", [False, True])
def test_load_idx_round_trip(tmp_path, compress):
    images_path, labels_path, pixels, labels = _pair(tmp_path, compress)
    images, y = load_idx(images_path, labels_path)
    assert images.shape == (5, 3, 2, 1) and images.dtype == np.float32
    assert y.dtype == np.int64 and np.array_equal(y, labels)
    assert np.array_equal(images[..., 0], pixels.astype(np.float32) / np.float32(255))
    assert images.min() >= 0.0 and images.max() <= 1.0


@pytest.mark.parametrize("compress", [False, True])
def test_load_idx_bad_magic(tmp_path, compress):
    images_path, labels_path, _, _ = _pair(tmp_path, compress, image_magic=0x801)
    msg = (f"load_idx: images file {str(images_path)!r}: bad magic number 0x00000801, "
           f"expected 0x00000803 (IDX images: uint8, 3 dimensions)")
    with pytest.raises(ValueError, match=re.escape(msg)):
        load_idx(images_path, labels_path)
    images_path, labels_path, _, _ = _pair(tmp_path, compress, label_magic=0x0D01)
    with pytest.raises(ValueError, match=re.escape("bad magic number 0x00000d01, expected "
                                                   "0x00000801 (IDX labels: uint8, 1 dimension)")):
        load_idx(images_path, labels_path)


@pytest.mark.parametrize("compress", [False, True])
def test_load_idx_wrong_dims(tmp_path, compress):
    images_path, labels_path, _, _ = _pair(tmp_path, compress, image_dims=(5, 0, 2),
                                           image_payload=b"")
    with pytest.raises(ValueError, match=re.escape("dimensions (5, 0, 2) must all be positive")):
        load_idx(images_path, labels_path)
    # claims 5 x 3 x 3 but holds 5 x 3 x 2 bytes
    images_path, labels_path, _, _ = _pair(tmp_path, compress, image_dims=(5, 3, 3))
    with pytest.raises(ValueError, match=re.escape(
            "is truncated: the header claims 45 bytes of data (5 x 3 x 3), the file holds 30")):
        load_idx(images_path, labels_path)


@pytest.mark.parametrize("compress", [False, True])
def test_load_idx_truncated_and_overlong_payload(tmp_path, compress):
    rng = np.random.default_rng(1)
    short = rng.integers(0, 256, 29, dtype=np.uint8).tobytes()
    images_path, labels_path, _, _ = _pair(tmp_path, compress, image_payload=short)
    with pytest.raises(ValueError, match=re.escape("the header claims 30 bytes of data")):
        load_idx(images_path, labels_path)
    long = rng.integers(0, 256, 31, dtype=np.uint8).tobytes()
    images_path, labels_path, _, _ = _pair(tmp_path, compress, image_payload=long)
    with pytest.raises(ValueError, match=re.escape(
            "has data after the 30 bytes its header claims (5 x 3 x 2)")):
        load_idx(images_path, labels_path)
    images_path, labels_path, _, _ = _pair(tmp_path, compress)
    data = labels_path.read_bytes() if not compress else gzip.decompress(labels_path.read_bytes())
    _write(labels_path, data[:6], compress)
    with pytest.raises(ValueError, match=re.escape("is truncated: the header needs 8 bytes, "
                                                   "the file has 6")):
        load_idx(images_path, labels_path)


def test_load_idx_lying_header_is_not_read(tmp_path):
    images_path, labels_path, _, _ = _pair(tmp_path, False, image_dims=(2**31, 2**16, 2**16))
    with pytest.raises(ValueError, match="is truncated: the header claims"):
        load_idx(images_path, labels_path)
    images_path, labels_path, _, _ = _pair(tmp_path, True, image_dims=(2**31, 2**16, 2**16))
    with pytest.raises(ValueError, match="more than deflate can expand"):
        load_idx(images_path, labels_path)


def test_load_idx_corrupt_gzip(tmp_path):
    images_path, labels_path, _, _ = _pair(tmp_path, True)
    data = images_path.read_bytes()
    images_path.write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="not a valid gzip stream or is truncated"):
        load_idx(images_path, labels_path)
    images_path.write_bytes(data[:10] + b"\xff" * (len(data) - 10))
    with pytest.raises(ValueError, match="not a valid gzip stream or is truncated"):
        load_idx(images_path, labels_path)


@pytest.mark.parametrize("compress", [False, True])
def test_load_idx_count_mismatch(tmp_path, compress):
    images_path, labels_path, _, _ = _pair(tmp_path, compress, n_labels=4)
    msg = f"load_idx: {str(images_path)!r} holds 5 images but {str(labels_path)!r} holds 4 labels"
    with pytest.raises(ValueError, match=re.escape(msg)):
        load_idx(images_path, labels_path)


def test_load_idx_empty_file_and_bad_path(tmp_path):
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match=re.escape("is too short (0 bytes) to hold an IDX magic")):
        load_idx(empty, empty)
    with pytest.raises(TypeError, match="images path must be a str or os.PathLike, got int"):
        load_idx(3, empty)


def test_load_idx_refuses_gzip_claims_beyond_deflate(tmp_path):
    """A gzip header claiming more than deflate's 1032:1 can hold is refused up front."""
    import gzip
    import struct

    import pytest

    from tinynet.datasets import load_idx

    header = struct.pack(">IIII", 0x00000803, 10**6, 28, 28)  # claims 784 MB
    images = tmp_path / "img.gz"
    images.write_bytes(gzip.compress(header + bytes(100)))
    labels = tmp_path / "lab"
    labels.write_bytes(struct.pack(">II", 0x00000801, 1) + bytes(1))
    with pytest.raises(ValueError, match="more than deflate can expand"):
        load_idx(images, labels)
