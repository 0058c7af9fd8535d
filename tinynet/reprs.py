"""``plain_repr``: an object as error messages show it, without memory addresses.

A message that names a function or object by its default repr (``<function f at
0x7f...>``) changes from run to run; docs/errors.md, generated from the bad-input matrix,
would too. This module imports nothing from tinynet (the lowest floor).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["plain_repr"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def plain_repr(obj: Any, limit: int = 80) -> str:
    """``repr(obj)`` without `` at 0x...`` addresses, cut to ``limit`` characters."""
    text = _ADDRESS.sub("", repr(obj))
    return text if len(text) <= limit else f"{text[:limit]}..."
