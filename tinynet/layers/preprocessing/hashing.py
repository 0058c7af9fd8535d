"""``Hashing``: values to hash bins, as ``keras.layers.Hashing`` (FarmHash
``Fingerprint64``, or SipHash-2-4 keyed by ``salt``, of each value's string)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import check_positive_int
from tinynet.layers.preprocessing.base import (PreprocessingLayer, as_values, check_choice,
                                               encode_categorical)
from tinynet.layers.preprocessing.index_lookup import salt_arg
from tinynet.layers.preprocessing.string_hash import fingerprint64, siphash24

__all__ = ["Hashing"]


def _key_bytes(v: Any) -> bytes:
    """What TensorFlow hashes: a string's UTF-8 bytes, a number's decimal string (floats
    truncated to int64 first)."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, (float, np.floating)):
        return str(int(np.int64(v))).encode()
    return str(int(v)).encode()


class Hashing(PreprocessingLayer):
    """Hashes strings or integers into ``num_bins`` bins, as ``keras.layers.Hashing``:
    bin ``Fingerprint64(s) % num_bins`` of each value's string ``s`` (UTF-8 bytes for
    strings, the decimal digits for numbers; floats are truncated to integers first), or
    keyed SipHash-2-4 with ``salt``. With ``mask_value``, that value goes to bin 0 and
    the others to ``1 + hash % (num_bins - 1)``.

    Args:
        num_bins: The number of bins (mask bin included).
        mask_value: A value (str or int) sent to bin 0.
        salt: An int or a pair of ints: hash with SipHash-2-4 under that key.
        output_mode: ``"int"``, ``"one_hot"``, ``"multi_hot"`` or ``"count"``.
        sparse: Only ``False``.
        name: Layer name.

    Shape:
        Input: any shape of strings, ints or floats. Output: ``"int"`` the input's
        shape, int64; the encodings as in ``CategoryEncoding`` (``num_bins`` wide),
        float32.
    """

    def __init__(self, num_bins: int, mask_value: Any = None, salt: Any = None,
                 output_mode: str = "int", sparse: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        owner = "Hashing"
        self.num_bins = check_positive_int(num_bins, "num_bins", owner)
        if mask_value is not None and (isinstance(mask_value, bool) or not isinstance(
                mask_value, (str, bytes, int, np.integer))):
            raise TypeError(f"{owner}: mask_value must be None, a str or an int, got "
                            f"{mask_value!r}")
        self.mask_value = (mask_value.decode() if isinstance(mask_value, bytes) else
                           int(mask_value) if isinstance(mask_value, np.integer) else mask_value)
        self.salt = salt_arg(salt, owner)
        self.output_mode = check_choice(output_mode, "output_mode", owner,
                                        ("int", "one_hot", "multi_hot", "count"))
        if sparse is not False:
            raise ValueError(f"{owner}: sparse=True is not supported (tinynet has no sparse "
                             f"tensors), got sparse={sparse!r}")
        self.sparse = False

    def _bins(self, values: np.ndarray) -> np.ndarray:
        bins = self.num_bins
        masked = None
        if self.mask_value is not None and bins > 1:
            bins -= 1
            masked = np.array([_equal(v, self.mask_value) for v in values.reshape(-1)], bool)
        keys = [_key_bytes(v) for v in values.reshape(-1)]
        if self.salt is not None:
            key = (self.salt[0], self.salt[1])
            hashed = [siphash24(key, k) % bins for k in keys]
        else:
            hashed = [fingerprint64(k) % bins for k in keys]
        out = np.array(hashed, dtype=np.int64)
        if masked is not None:
            out = np.where(masked, 0, out + 1)
        return out.reshape(values.shape)

    def _compute(self, x: Any) -> np.ndarray:
        owner = f"Hashing {self.name!r}"
        arr = as_values(x, owner)
        if arr.dtype.kind not in "iufUSO" or arr.dtype.kind == "b":
            raise TypeError(f"{owner}: inputs must be strings or numbers, got dtype "
                            f"{arr.dtype}")
        if arr.dtype.kind == "O" and not all(isinstance(v, (str, bytes, int, float, np.number))
                                             and not isinstance(v, bool) for v in arr.flat):
            raise TypeError(f"{owner}: inputs must be strings or numbers")
        values = arr.astype(object)
        if self.output_mode == "one_hot" and values.ndim and values.shape[-1] == 1:
            values = values.reshape(values.shape[:-1])
        bins = self._bins(values)
        if self.output_mode == "int":
            return bins
        return encode_categorical(bins, self.output_mode, self.num_bins)

    def output_shape(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        if self.output_mode == "one_hot":
            return (shape[:-1] if shape and shape[-1] == 1 else shape) + (self.num_bins,)
        if len(shape) <= 1:
            return (self.num_bins,)
        return (shape[0], *shape[2:], self.num_bins)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_bins=self.num_bins, salt=self.salt, mask_value=self.mask_value,
                      output_mode=self.output_mode, sparse=False)
        return config


def _equal(value: Any, mask: Any) -> bool:
    """``value == mask`` as TensorFlow compares them (a str with a str, a number with a
    number)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(mask, str) != isinstance(value, str):
        return False
    return bool(value == mask)
