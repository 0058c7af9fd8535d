"""``CategoryEncoding``: integer ids to one-hot, multi-hot or count vectors, as
``keras.layers.CategoryEncoding``."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.preprocessing.base import (PreprocessingLayer, as_values, check_choice,
                                               encode_categorical)
from tinynet.layers.layer import check_positive_int

__all__ = ["CategoryEncoding"]


def integer_values(x: Any, owner: str) -> np.ndarray:
    """``x`` as int64: integer arrays, or floats holding integers (a model's batches)."""
    arr = as_values(x, owner)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr) & (arr == np.round(arr))):
            raise ValueError(f"{owner}: inputs must be integers, got non-integer floats")
    elif arr.dtype.kind not in "iub":
        raise TypeError(f"{owner}: inputs must be integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


class CategoryEncoding(PreprocessingLayer):
    """Encodes integer ids in ``[0, num_tokens)`` as ``keras.layers.CategoryEncoding``.

    ``"one_hot"`` gives one vector per id (a last axis of size 1 is replaced by the
    ``num_tokens`` axis), ``"multi_hot"`` (alias ``"binary"``) and ``"count"`` one vector
    per sample (a 1-D input is one sample). ``count_weights`` (``"count"`` only, the
    input's shape) adds a weight per id instead of 1: ``layer(ids, count_weights=w)``.

    Args:
        num_tokens: The number of ids (the output width).
        output_mode: ``"one_hot"``, ``"multi_hot"`` or ``"count"``.
        sparse: Only ``False``.
        name: Layer name.

    Shape:
        Input: ``[batch]`` or ``[batch, n]`` ints (floats holding ints accepted).
        Output: ``"one_hot"`` ``[batch, num_tokens]`` (or ``[batch, n, num_tokens]``);
        ``"multi_hot"`` / ``"count"`` ``[batch, num_tokens]`` (``[num_tokens]`` for 1-D),
        float32.

    An id outside ``[0, num_tokens)`` adds nothing (Keras drops it silently too).
    """

    def __init__(self, num_tokens: int | None = None, output_mode: str = "multi_hot",
                 sparse: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        owner = "CategoryEncoding"
        if isinstance(output_mode, str) and output_mode == "binary":
            output_mode = "multi_hot"
        self.output_mode = check_choice(output_mode, "output_mode", owner,
                                        ("one_hot", "multi_hot", "count"))
        if num_tokens is None:
            raise ValueError(f"{owner}: num_tokens must be set (an int >= 1), got None; for an "
                             f"unknown number of ids use IntegerLookup")
        self.num_tokens = check_positive_int(num_tokens, "num_tokens", owner)
        if sparse is not False:
            raise ValueError(f"{owner}: sparse=True is not supported (tinynet has no sparse "
                             f"tensors), got sparse={sparse!r}")
        self.sparse = False
        self._count_weights: Any = None

    def __call__(self, x: Any, *args: Any, count_weights: Any = None, **kwargs: Any) -> Any:
        """``layer(ids)`` or ``layer(ids, count_weights=w)`` (``"count"`` only)."""
        if count_weights is not None and self.output_mode != "count":
            raise ValueError(f"CategoryEncoding {self.name!r}: count_weights needs "
                             f"output_mode='count', got output_mode={self.output_mode!r}")
        self._count_weights = count_weights
        try:
            return super().__call__(x, *args, **kwargs)
        finally:
            self._count_weights = None

    def _compute(self, x: Any) -> np.ndarray:
        owner = f"CategoryEncoding {self.name!r}"
        ids = integer_values(x, owner)
        weights = None
        if self._count_weights is not None:
            weights = np.asarray(self._count_weights, dtype=np.float32)
            if weights.shape != ids.shape:
                raise ValueError(f"{owner}: count_weights must have the inputs' shape "
                                 f"{ids.shape}, got {weights.shape}")
        return encode_categorical(ids, self.output_mode, self.num_tokens, weights)

    def output_shape(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if not shape:
            return (self.num_tokens,)
        if self.output_mode == "one_hot":
            return (shape[:-1] if shape[-1] == 1 and len(shape) > 1 else shape) + (
                self.num_tokens,)
        if len(shape) == 1:
            return (self.num_tokens,)
        return (shape[0], *shape[2:], self.num_tokens)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(num_tokens=self.num_tokens, output_mode=self.output_mode, sparse=False)
        return config
