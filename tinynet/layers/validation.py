"""Argument checks the layers share: each raises ``TypeError`` or ``ValueError`` naming the
layer, the argument, the value received and what was expected (docs/errors.md)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import initializers
from tinynet.random import check_seed

__all__ = ["check_pair", "check_padding", "check_seed", "check_initializer"]
# check_seed is tinynet.random's (the seed's one check), listed here with the others.

_PADDINGS = ("valid", "same")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_pair(value: Any, arg: str, owner: str) -> tuple[int, int]:
    """An int or a pair of positive ints (kernel sizes, strides, dilations, pool sizes),
    as a 2-tuple."""
    shown = tuple(value) if isinstance(value, (list, tuple)) else value
    what = f"{owner}: {arg} must be a positive int or a tuple of 2 positive ints, got {shown!r}"
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(what)
        pair = tuple(value)
    elif _is_int(value):
        pair = (value, value)
    else:
        raise TypeError(what)
    if not all(_is_int(v) for v in pair):
        raise TypeError(what)
    if any(v <= 0 for v in pair):
        raise ValueError(what)
    return int(pair[0]), int(pair[1])


def check_padding(padding: Any, owner: str) -> str:
    """``padding`` lower-cased; it must be ``"valid"`` or ``"same"`` (any case)."""
    what = f"{owner}: padding must be 'valid' or 'same', got {padding!r}"
    if not isinstance(padding, str):
        raise TypeError(what)
    value = padding.lower()
    if value not in _PADDINGS:
        raise ValueError(what)
    return value


def check_initializer(value: Any, owner: str) -> str:
    """An initializer name (Keras string)."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}: kernel_initializer must be an initializer name (str), "
                        f"got {value!r}")
    try:
        initializers.get(value)
    except ValueError as exc:
        raise ValueError(f"{owner}: kernel_initializer: {exc}") from None
    return value
