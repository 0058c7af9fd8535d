"""The text steps of ``TextVectorization`` as pure functions over Python strings, with
TensorFlow's exact rules: ``lower`` changes ASCII letters only (``tf.strings.lower``
without an encoding), punctuation is ASCII's 32 characters, ``"whitespace"`` splits on
ASCII whitespace runs, ``"character"`` on Unicode code points, and n-grams of each
width are joined by a space, widths in the order given."""

from __future__ import annotations

import re
import string
from typing import Sequence

__all__ = ["lower", "strip_punctuation", "split_whitespace", "split_characters", "ngrams"]

_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_WHITESPACE = re.compile(r"[ \t\n\v\f\r]+")


def lower(text: str) -> str:
    """ASCII letters to lower case; every other character as it is."""
    return text.translate(_ASCII_LOWER)


def strip_punctuation(text: str) -> str:
    """Drops ``!"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~``."""
    return text.translate(_PUNCTUATION)


def split_whitespace(text: str) -> list[str]:
    """Tokens between runs of ASCII whitespace (no empty tokens)."""
    # str.split() also splits on Unicode spaces and on \x1c-\x1f, TensorFlow does not:
    # it serves (faster) only ASCII text without those four separators
    if text.isascii() and not ("\x1c" in text or "\x1d" in text or "\x1e" in text
                               or "\x1f" in text):
        return text.split()
    return [t for t in _WHITESPACE.split(text) if t]


def split_characters(text: str) -> list[str]:
    """One token per Unicode code point."""
    return list(text)


def ngrams(tokens: Sequence[str], widths: Sequence[int]) -> list[str]:
    """All n-grams of each width in ``widths``, in order: for ``(1, 2)`` the tokens, then
    the pairs. A sequence shorter than a width gives none of that width."""
    out: list[str] = []
    for n in widths:
        out.extend(" ".join(tokens[i:i + n]) for i in range(len(tokens) - n + 1))
    return out
