"""Small datasets that need no download.

* :func:`load_digits`: scikit-learn's bundled 8x8 handwritten digits (1797 images),
  split into stratified train and test sets;
* :func:`load_idx`: MNIST-format (IDX) image and label files you already have, such as
  MNIST or Fashion-MNIST (raw or gzip-compressed), read with bounded memory and checked.

Images come back channels-last float32 in ``[0, 1]``, shaped ``[N, H, W, 1]``; labels as
int64.
"""

from __future__ import annotations

import gzip
import numbers
import os
import zlib
from typing import Any, BinaryIO

import numpy as np

from tinynet.random import check_seed

__all__ = ["load_digits", "load_idx"]

_IDX_IMAGES = 0x00000803  # uint8, 3 dimensions
_IDX_LABELS = 0x00000801  # uint8, 1 dimension
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def load_digits(test_size: float = 0.25, seed: int | None = 0
                ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's digits as ``(x_train, y_train), (x_test, y_test)``.

    Uses ``sklearn.datasets.load_digits`` (bundled with scikit-learn, no download) and a
    stratified ``train_test_split``, so every class keeps its share in both sets.

    Args:
        test_size: Fraction of the samples in the test set (a float in ``(0, 1)``), or
            their number (an int).
        seed: ``random_state`` of the split (``None``: a different split each call).

    Returns:
        Images float32 ``[N, 8, 8, 1]`` in ``[0, 1]`` (pixel / 16) and labels int64 in
        ``0..9``, for the training and the test set.

    Raises:
        ImportError: scikit-learn is not installed.
        TypeError, ValueError: bad ``test_size`` or ``seed``.
    """
    if isinstance(test_size, bool) or not isinstance(test_size, numbers.Real):
        raise TypeError(f"load_digits: test_size must be a float in (0, 1) or a positive int, "
                        f"got {test_size!r}")
    if isinstance(test_size, numbers.Integral):
        if test_size < 1:
            raise ValueError(f"load_digits: test_size must be a float in (0, 1) or a positive "
                             f"int, got {test_size!r}")
        test_size = int(test_size)
    elif not 0.0 < float(test_size) < 1.0:
        raise ValueError(f"load_digits: test_size must be a float in (0, 1) or a positive int, "
                         f"got {test_size!r}")
    seed = check_seed(seed, "load_digits")
    try:
        from sklearn.datasets import load_digits as sk_load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as exc:
        raise ImportError('load_digits needs scikit-learn: pip install "tinynet[examples]" '
                          '(or pip install scikit-learn)') from exc
    digits = sk_load_digits()
    x = np.ascontiguousarray(digits.images[..., None] / 16.0, dtype=np.float32)
    y = np.asarray(digits.target, dtype=np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=test_size, stratify=y, random_state=seed)
    return ((np.ascontiguousarray(x_train), np.ascontiguousarray(y_train)),
            (np.ascontiguousarray(x_test), np.ascontiguousarray(y_test)))


# -- IDX ------------------------------------------------------------------------------------------
def _read_exact(stream: BinaryIO, n: int) -> bytes:
    """Up to ``n`` bytes, read in chunks so memory follows the data actually present."""
    parts, got = [], 0
    while got < n:
        part = stream.read(min(_CHUNK, n - got))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def _check_path(path: Any, what: str) -> None:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"load_idx: {what} path must be a str or os.PathLike, got "
                        f"{type(path).__name__}")


# deflate never expands data more than 1032:1, so a larger claim is a lie, refused up front
_DEFLATE_MAX_RATIO = 1032


def _read_idx(path: Any, magic: int, ndim: int, what: str) -> np.ndarray:
    _check_path(path, what)
    path = os.fspath(path)
    where = f"load_idx: {what} file {path!r}"
    with open(path, "rb") as raw:
        compressed = raw.read(2) == _GZIP_MAGIC
        raw.seek(0)
        stream: BinaryIO = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        try:
            header = _read_exact(stream, 4 + 4 * ndim)
            if len(header) < 4:
                raise ValueError(f"{where} is too short ({len(header)} bytes) to hold an IDX "
                                 f"magic number")
            found = int.from_bytes(header[:4], "big")
            if found != magic:
                raise ValueError(f"{where}: bad magic number 0x{found:08x}, expected "
                                 f"0x{magic:08x} (IDX {what}: uint8, {ndim} dimension"
                                 f"{'s' if ndim > 1 else ''})")
            if len(header) < 4 + 4 * ndim:
                raise ValueError(f"{where} is truncated: the header needs {4 + 4 * ndim} "
                                 f"bytes, the file has {len(header)}")
            dims = tuple(int.from_bytes(header[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim))
            if any(d == 0 for d in dims):
                raise ValueError(f"{where}: dimensions {dims} must all be positive")
            claimed = int(np.prod(dims, dtype=object))
            if compressed:
                size = os.fstat(raw.fileno()).st_size
                if claimed > _DEFLATE_MAX_RATIO * size:
                    raise ValueError(f"{where}: the header claims {claimed} bytes of data "
                                     f"({' x '.join(map(str, dims))}), more than deflate can "
                                     f"expand a {size}-byte file to (at most "
                                     f"{_DEFLATE_MAX_RATIO}x)")
            else:
                available = os.fstat(raw.fileno()).st_size - len(header)
                if available < claimed:
                    raise ValueError(f"{where} is truncated: the header claims {claimed} bytes "
                                     f"of data ({' x '.join(map(str, dims))}), the file holds "
                                     f"{available}")
            payload = _read_exact(stream, claimed)
            if len(payload) < claimed:
                raise ValueError(f"{where} is truncated: the header claims {claimed} bytes of "
                                 f"data ({' x '.join(map(str, dims))}), the file holds "
                                 f"{len(payload)}")
            if stream.read(1):
                raise ValueError(f"{where} has data after the {claimed} bytes its header "
                                 f"claims ({' x '.join(map(str, dims))})")
        except (EOFError, OSError, zlib.error) as exc:
            if not compressed:
                raise
            raise ValueError(f"{where} is not a valid gzip stream or is truncated: "
                             f"{exc}") from None
    return np.frombuffer(payload, dtype=np.uint8).reshape(dims)


def load_idx(images_path: str | os.PathLike, labels_path: str | os.PathLike
             ) -> tuple[np.ndarray, np.ndarray]:
    """Reads an IDX image file and its IDX label file (MNIST, Fashion-MNIST, ...).

    Each file may be raw or gzip-compressed (detected from its first bytes). The images
    file must have magic number ``0x00000803`` (uint8, ``N x H x W``), the labels file
    ``0x00000801`` (uint8, ``N``); the data must be exactly as long as the header says,
    and both files must hold the same number of samples. Nothing beyond what the header
    claims is read.

    Args:
        images_path: e.g. ``train-images-idx3-ubyte.gz``.
        labels_path: e.g. ``train-labels-idx1-ubyte.gz``.

    Returns:
        ``(images, labels)``: float32 ``[N, H, W, 1]`` in ``[0, 1]`` (pixel / 255) and
        int64 ``[N]``.

    Raises:
        ValueError: a bad magic number, dimensions, truncated or over-long data, a
            corrupt gzip stream, or different counts; the message names the file.
    """
    _check_path(labels_path, "labels")  # both arguments before any file is opened
    pixels = _read_idx(images_path, _IDX_IMAGES, 3, "images")
    labels = _read_idx(labels_path, _IDX_LABELS, 1, "labels")
    if pixels.shape[0] != labels.shape[0]:
        raise ValueError(f"load_idx: {os.fspath(images_path)!r} holds {pixels.shape[0]} images "
                         f"but {os.fspath(labels_path)!r} holds {labels.shape[0]} labels")
    images = pixels[..., None].astype(np.float32) / np.float32(255.0)
    return images, labels.astype(np.int64)
