"""Argument checks the layers share: each raises ``TypeError`` or ``ValueError`` naming the
layer, the argument, the value received and what was expected (docs/errors.md)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import initializers
from tinynet.random import check_seed

__all__ = ["check_pair", "check_padding", "check_seed", "check_initializer", "check_margins",
           "check_data_format", "check_size_limit", "check_name", "MAX_SIZE"]
# check_seed is tinynet.random's (the seed's one check), listed here with the others.

_PADDINGS = ("valid", "same")
#: The largest window size, stride, dilation or repeat count: an axis of that length is
#: the most NumPy can allocate and index on any machine; larger ones only fail later.
MAX_SIZE = 2**31 - 1


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
    check_size_limit(pair, arg, owner)
    return int(pair[0]), int(pair[1])


def check_size_limit(values: tuple, arg: str, owner: str) -> None:
    """Each of ``values`` (positive ints) at most :data:`MAX_SIZE`."""
    if any(v > MAX_SIZE for v in values):
        shown = values if len(values) > 1 else values[0]
        raise ValueError(f"{owner}: {arg} must be at most 2**31 - 1 (a size NumPy can "
                         f"allocate), got {shown!r}")


def check_padding(padding: Any, owner: str, allowed: tuple[str, ...] = _PADDINGS) -> str:
    """``padding`` lower-cased; it must be one of ``allowed`` (any case; by default
    ``"valid"`` or ``"same"``)."""
    names = " or ".join(", ".join(repr(a) for a in allowed).rsplit(", ", 1))
    what = f"{owner}: padding must be {names}, got {padding!r}"
    if not isinstance(padding, str):
        raise TypeError(what)
    value = padding.lower()
    if value not in allowed:
        raise ValueError(what)
    return value


def check_initializer(value: Any, owner: str, arg: str = "kernel_initializer") -> str:
    """An initializer name (Keras string) given as argument ``arg``."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {arg} must be an initializer name (str), got {value!r}")
    try:
        initializers.get(value)
    except ValueError as exc:
        raise ValueError(f"{owner}: {arg}: {exc}") from None
    return value


def check_margins(value: Any, arg: str, owner: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """Keras's 2-D padding or cropping: an int (every side), a pair of ints (symmetric
    height, symmetric width) or a pair of pairs ((top, bottom), (left, right)), each a
    non-negative int; as ``((top, bottom), (left, right))``."""
    what = (f"{owner}: {arg} must be an int, a tuple of 2 ints (symmetric height, symmetric "
            f"width) or a tuple of 2 tuples of 2 ints ((top, bottom), (left, right)), each "
            f">= 0, got {value!r}")
    if _is_int(value):
        sides = ((value, value), (value, value))
    elif isinstance(value, (list, tuple)) and len(value) == 2:
        pairs = []
        for v in value:
            if _is_int(v):
                pairs.append((v, v))
            elif isinstance(v, (list, tuple)):
                if len(v) != 2:
                    raise ValueError(what)
                pairs.append(tuple(v))
            else:
                raise TypeError(what)
        sides = tuple(pairs)
    elif isinstance(value, (list, tuple)):
        raise ValueError(what)
    else:
        raise TypeError(what)
    if not all(_is_int(v) for pair in sides for v in pair):
        raise TypeError(what)
    if any(v < 0 for pair in sides for v in pair):
        raise ValueError(what)
    return tuple((int(a), int(b)) for a, b in sides)  # type: ignore[return-value]


def check_data_format(value: Any, owner: str) -> str:
    """Keras's ``data_format``: ``None`` or ``"channels_last"`` (tinynet's only layout)."""
    if value is None or value == "channels_last":
        return "channels_last"
    raise ValueError(f"{owner}: data_format must be None or 'channels_last' (tinynet is "
                     f"channels-last), got {value!r}")


def check_name(name: Any, owner: str, *, or_none: bool = False) -> str | None:
    """A layer's, model's, weight's or optimizer's ``name``, or ``None`` (a default name):
    a non-empty str without "/", the separator of saved weight paths (``<layer>/<weight>``;
    Keras refuses it too). ``or_none`` names ``None`` in the message.

    Raises:
        TypeError: ``name`` is not a non-empty str.
        ValueError: ``name`` contains "/".
    """
    if name is None:
        return None
    if not isinstance(name, str) or not name:
        raise TypeError(f"{owner}: name must be a non-empty str{' or None' if or_none else ''}, "
                        f"got {name!r}")
    if "/" in name:
        raise ValueError(f"{owner}: name must not contain '/' (it separates the parts of "
                         f"saved weight paths, as in Keras), got {name!r}")
    return name
