"""``StringLookup``: strings to integer indices (or back), as ``keras.layers.StringLookup``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.preprocessing.base import as_strings, string_symbolic_call
from tinynet.layers.preprocessing.index_lookup import IndexLookup

__all__ = ["StringLookup"]


class StringLookup(IndexLookup):
    """Maps strings to indices through a vocabulary, as ``keras.layers.StringLookup``.

    Index 0 is the ``mask_token``'s when one is set (``output_mode="int"``), then come
    ``num_oov_indices`` slots for unknown strings (with more than one, a string's slot is
    FarmHash ``Fingerprint64`` of its UTF-8 bytes modulo the count, or keyed SipHash-2-4
    with ``salt``, as TensorFlow buckets it), then the vocabulary. Inputs are ``str`` or
    ``bytes`` scalars, (nested) lists, or NumPy ``str`` / ``bytes`` / object arrays;
    bytes are decoded with ``encoding``.

    Args:
        max_tokens: Largest vocabulary size, special slots included (``None``: no limit).
        num_oov_indices: Slots for out-of-vocabulary strings (0 makes them an error).
        mask_token: String mapped to 0 (``None``: no mask slot).
        oov_token: What ``invert=True`` returns for an OOV index.
        vocabulary: List/array of strings or a text file path (one a line).
        idf_weights: For ``output_mode="tf_idf"`` with a vocabulary.
        invert: Map indices back to strings.
        output_mode: ``"int"``, ``"one_hot"``, ``"multi_hot"``, ``"count"`` or ``"tf_idf"``.
        pad_to_max_tokens: Encodings are ``max_tokens`` wide.
        sparse: Only ``False`` (no sparse tensors here).
        encoding: How bytes inputs are decoded.
        salt: Key of the OOV hash (an int or a pair of ints).
        name: Layer name.

    Shape:
        Input: any shape of strings. Output: see :class:`IndexLookup` (int64 indices,
        int64 encodings (float32 for ``"tf_idf"``), or a NumPy str array when inverted).
    """

    _kind = "string"

    def __init__(self, max_tokens: int | None = None, num_oov_indices: int = 1,
                 mask_token: str | None = None, oov_token: str = "[UNK]", vocabulary: Any = None,
                 idf_weights: Any = None, invert: bool = False, output_mode: str = "int",
                 pad_to_max_tokens: bool = False, sparse: bool = False, encoding: str = "utf-8",
                 name: str | None = None, salt: Any = None, **kwargs: Any) -> None:
        owner = kwargs.get("owner") or "StringLookup"
        if not isinstance(encoding, str):
            raise TypeError(f"{owner}: encoding must be a str, got {encoding!r}")
        try:
            "".encode(encoding)
        except LookupError:
            raise ValueError(f"{owner}: encoding must name a Python codec, got "
                             f"{encoding!r}") from None
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, pad_to_max_tokens, sparse, salt,
                         name=name, **kwargs)

    def _convert(self, x: Any) -> np.ndarray:
        return as_strings(x, self._label(), self.encoding)

    def _token(self, value: Any, arg: str) -> str:
        if isinstance(value, bytes):
            value = value.decode(self.encoding)
        if not isinstance(value, str):
            raise TypeError(f"{self._owner or 'StringLookup'}: {arg} must be a str or None, "
                            f"got {value!r}")
        return value

    def _call_symbolic(self, x: Any) -> Any:
        return string_symbolic_call(self, x, super()._call_symbolic)

    def get_config(self) -> dict:
        config = super().get_config()
        config["encoding"] = self.encoding
        return config
