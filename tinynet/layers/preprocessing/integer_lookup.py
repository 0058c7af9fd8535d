"""``IntegerLookup``: integers to indices (or back), as ``keras.layers.IntegerLookup``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.preprocessing.base import as_values
from tinynet.layers.preprocessing.index_lookup import IndexLookup

__all__ = ["IntegerLookup"]


def _int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


class IntegerLookup(IndexLookup):
    """Maps integers to indices through a vocabulary, as ``keras.layers.IntegerLookup``.

    The layout is ``StringLookup``'s; with ``num_oov_indices > 1`` an unknown value ``v``
    goes to OOV slot ``v mod num_oov_indices`` (``oov_method="floormod"``) or to the
    FarmHash bucket of its decimal string (``"farmhash"``, keyed by ``salt``). Inputs are
    integers, or floats holding integers (as a model's float32 batches do).

    Args:
        max_tokens: Largest vocabulary size, special slots included.
        num_oov_indices: Slots for out-of-vocabulary values (0 makes them an error).
        mask_token: Value mapped to 0 (``None``: no mask slot).
        oov_token: What ``invert=True`` returns for an OOV index (default ``-1``).
        vocabulary: List/array of ints or a text file path (one a line).
        vocabulary_dtype: Only ``"int64"`` (as Keras).
        idf_weights: For ``output_mode="tf_idf"`` with a vocabulary.
        invert: Map indices back to values.
        output_mode: ``"int"``, ``"one_hot"``, ``"multi_hot"``, ``"count"`` or ``"tf_idf"``.
        sparse: Only ``False``.
        pad_to_max_tokens: Encodings are ``max_tokens`` wide.
        oov_method: ``"floormod"`` or ``"farmhash"``.
        salt: Key of the farmhash OOV method (an int or a pair of ints).
        name: Layer name.

    Shape:
        Input: any shape of integers. Output: see :class:`IndexLookup` (int64).
    """

    _kind = "int"

    def __init__(self, max_tokens: int | None = None, num_oov_indices: int = 1,
                 mask_token: int | None = None, oov_token: int = -1, vocabulary: Any = None,
                 vocabulary_dtype: str = "int64", idf_weights: Any = None, invert: bool = False,
                 output_mode: str = "int", sparse: bool = False, pad_to_max_tokens: bool = False,
                 oov_method: str = "floormod", salt: Any = None, name: str | None = None,
                 **kwargs: Any) -> None:
        if vocabulary_dtype != "int64":
            raise ValueError(f"IntegerLookup: vocabulary_dtype must be 'int64', got "
                             f"{vocabulary_dtype!r}")
        self.vocabulary_dtype = "int64"
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, pad_to_max_tokens, sparse, salt,
                         oov_method, name=name, **kwargs)

    def _convert(self, x: Any) -> np.ndarray:
        owner = f"IntegerLookup {self.name!r}"
        arr = as_values(x, owner)
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr) & (arr == np.round(arr))):
                raise ValueError(f"{owner}: inputs must be integers, got non-integer floats")
        elif arr.dtype.kind not in "iub" and not (
                arr.dtype.kind == "O" and all(_int(v) for v in arr.flat)):
            raise TypeError(f"{owner}: inputs must be integers, got dtype {arr.dtype}")
        out = np.empty(arr.shape, dtype=object)
        out.reshape(-1)[:] = [int(v) for v in arr.reshape(-1)]
        return out

    def _token(self, value: Any, arg: str) -> int:
        if not _int(value):
            raise TypeError(f"IntegerLookup: {arg} must be an int or None, got {value!r}")
        return int(value)

    def get_config(self) -> dict:
        config = super().get_config()
        config["vocabulary_dtype"] = self.vocabulary_dtype
        return config
