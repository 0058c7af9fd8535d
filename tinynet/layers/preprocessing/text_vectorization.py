"""``TextVectorization``: strings to token indices or bag-of-words vectors, as
``keras.layers.TextVectorization`` (standardize, split, n-grams, then a ``StringLookup``
whose mask token is ``""``)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tinynet import custom_objects
from tinynet.layers.layer import check_bool
from tinynet.layers.preprocessing import text_ops
from tinynet.layers.preprocessing.base import (PreprocessingLayer, adapt_batches, as_strings,
                                               check_choice, check_optional_int,
                                               string_symbolic_call)
from tinynet.layers.preprocessing.index_lookup import output_mode_arg, refuse_vocabulary_file
from tinynet.layers.preprocessing.string_lookup import StringLookup
from tinynet.reprs import plain_repr

__all__ = ["TextVectorization"]

STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
SPLIT = ("whitespace", "character")


_MAX_NGRAM = 1024


def _ngrams_arg(ngrams: Any) -> tuple[int, ...] | None:
    what = f"TextVectorization: ngrams must be None, an int >= 1 or a tuple of them, got {ngrams!r}"
    if ngrams is None:
        return None
    values = tuple(ngrams) if isinstance(ngrams, (tuple, list)) else None
    if values is None:
        if isinstance(ngrams, bool) or not isinstance(ngrams, (int, np.integer)):
            raise ValueError(what)
        if ngrams < 1:
            raise ValueError(what)
        values = tuple(range(1, min(int(ngrams), _MAX_NGRAM + 1) + 1))
    if not values or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                             and v >= 1 for v in values):
        raise ValueError(what)
    if max(values) > _MAX_NGRAM:
        raise ValueError(f"TextVectorization: ngrams must be at most {_MAX_NGRAM} (wider "
                         f"than any text a model reads), got {plain_repr(ngrams)}")
    return tuple(int(v) for v in values)


def _function_config(fn: Callable | str | None, arg: str) -> Any:
    """A string option as it is; a callable as Keras's function entry, which must name a
    function registered with ``register_keras_serializable`` (a file never holds code)."""
    if fn is None or isinstance(fn, str):
        return fn
    name = custom_objects.get_registered_name(fn)
    if custom_objects.get_registered_object(name) is not fn:
        raise ValueError(f"TextVectorization: cannot save {arg}=the function "
                         f"{getattr(fn, '__qualname__', type(fn).__qualname__)!r}: register the "
                         f"function with @tinynet.saving.register_keras_serializable() so "
                         f"a config can name it")
    return {"module": None, "class_name": "function", "config": name, "registered_name": name}


def _function_from_config(value: Any, arg: str) -> Any:
    if isinstance(value, dict):
        return custom_objects.lookup(value.get("registered_name") or value.get("config"),
                                     f"TextVectorization.from_config: {arg}")
    return value


class TextVectorization(PreprocessingLayer):
    """Turns strings into token indices (``"int"``) or per-text vectors (``"multi_hot"``,
    ``"count"``, ``"tf_idf"``), as ``keras.layers.TextVectorization``.

    Each string is standardized (``"lower_and_strip_punctuation"``: ASCII letters lowered,
    ASCII punctuation dropped, as TensorFlow does), split into tokens (ASCII whitespace,
    or Unicode characters), optionally expanded to n-grams, then looked up in a vocabulary
    whose index 0 is padding (``""``) and index 1 the OOV token ``"[UNK]"`` (``"int"``;
    other modes have no padding slot). :meth:`adapt` learns the vocabulary: tokens by
    count, ties by the token (high to low), the first ``max_tokens`` kept.

    Inputs are a ``str``, a list of ``str``/``bytes``, or a NumPy array of them (``U``,
    ``S`` or object dtype), shaped ``[batch]`` or ``[batch, 1]``. A callable
    ``standardize`` gets a NumPy ``str`` array shaped like the input and returns one of
    the same shape; a callable ``split`` gets the ``[batch]`` array and returns one list
    of tokens per string. Models take numbers only, so vectorize first
    (``ids = layer(texts)``) and feed ``ids`` to the model.

    Args:
        max_tokens: Largest vocabulary, padding and OOV included (``None``: no limit).
        standardize: ``"lower_and_strip_punctuation"``, ``"lower"``,
            ``"strip_punctuation"``, ``None`` or a callable.
        split: ``"whitespace"``, ``"character"``, ``None`` (the whole string is one
            token) or a callable.
        ngrams: ``None``, an int ``n`` (widths 1..n) or a tuple of widths.
        output_mode: ``"int"``, ``"multi_hot"`` (alias ``"binary"``), ``"count"``,
            ``"tf_idf"`` or ``"one_hot"``.
        output_sequence_length: ``"int"`` only: pad or cut every row to this length
            (``None``: the longest row of the batch).
        pad_to_max_tokens: Vectors are ``max_tokens`` wide.
        vocabulary: List/array of strings or a file path; ``idf_weights`` with it for
            ``"tf_idf"``.
        idf_weights: One weight per vocabulary entry (``"tf_idf"``).
        sparse: Only ``False``.
        ragged: ``"int"`` only: return a list of 1-D int64 arrays (no padding).
        encoding: How bytes inputs are decoded.
        name: Layer name.

    Shape:
        Input: ``[batch]`` or ``[batch, 1]`` strings (or one string). Output: ``"int"``
        ``[batch, output_sequence_length or longest]`` int64; the other modes
        ``[batch, depth]``, int64 counts (float32 for ``"tf_idf"``; ``depth`` =
        :meth:`vocabulary_size`, or ``max_tokens`` with ``pad_to_max_tokens``).
    """

    def __init__(self, max_tokens: int | None = None,
                 standardize: str | Callable | None = "lower_and_strip_punctuation",
                 split: str | Callable | None = "whitespace", ngrams: int | tuple | None = None,
                 output_mode: str = "int", output_sequence_length: int | None = None,
                 pad_to_max_tokens: bool = False, vocabulary: Any = None,
                 idf_weights: Any = None, sparse: bool = False, ragged: bool = False,
                 encoding: str = "utf-8", name: str | None = None, *,
                 has_input_vocabulary: bool | None = None, vocabulary_size: int | None = None,
                 trainable: bool = True, input_shape: tuple | None = None,
                 dtype: Any = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape, dtype=dtype)
        owner = "TextVectorization"
        self.standardize = check_choice(standardize, "standardize", owner, STANDARDIZE,
                                        allow_none=True, allow_callable=True)
        self.split = check_choice(split, "split", owner, SPLIT, allow_none=True,
                                  allow_callable=True)
        self.ngrams = ngrams if not isinstance(ngrams, list) else tuple(ngrams)
        self._widths = _ngrams_arg(ngrams)
        self.output_mode = output_mode_arg(output_mode, owner)
        self.output_sequence_length = check_optional_int(
            output_sequence_length, "output_sequence_length", owner, 1)
        if self.output_mode != "int" and self.output_sequence_length is not None:
            raise ValueError(f"{owner}: output_sequence_length needs output_mode='int', got "
                             f"output_mode={self.output_mode!r}")
        self.ragged = check_bool(ragged, "ragged", owner)
        if self.ragged and self.output_mode != "int":
            raise ValueError(f"{owner}: ragged=True needs output_mode='int', got "
                             f"output_mode={self.output_mode!r}")
        self.encoding = encoding
        self._lookup = StringLookup(
            max_tokens=max_tokens, vocabulary=vocabulary, idf_weights=idf_weights,
            pad_to_max_tokens=pad_to_max_tokens, mask_token="", output_mode=self.output_mode,
            sparse=sparse, encoding=encoding, has_input_vocabulary=has_input_vocabulary,
            vocabulary_size=vocabulary_size, name=f"{self.name}_lookup",
            owner=f"TextVectorization {self.name!r}")

    # -- the text steps ------------------------------------------------------------------
    def _standardized(self, x: Any) -> np.ndarray:
        owner = f"TextVectorization {self.name!r}"
        strings = as_strings(x, owner, self.encoding)
        if callable(self.standardize):
            result = as_strings(self.standardize(strings.astype(str)), f"{owner}: standardize "
                                                                       f"result", self.encoding)
            if result.shape != strings.shape:
                raise ValueError(f"{owner}: standardize must keep the shape {strings.shape}, "
                                 f"returned {result.shape}")
            return result
        steps = {"lower": (text_ops.lower,), "strip_punctuation": (text_ops.strip_punctuation,),
                 "lower_and_strip_punctuation": (text_ops.lower, text_ops.strip_punctuation),
                 None: ()}[self.standardize]
        out = strings.copy()
        flat = out.reshape(-1)
        for i, s in enumerate(flat):
            for step in steps:
                s = step(s)
            flat[i] = s
        return out

    def _tokens(self, x: Any) -> tuple[Any, bool, bool]:
        """The token rows of ``x``, whether they are ragged (a list of token lists, after
        a split; else the standardized array itself, ``split=None``) and whether ``x``
        was one string."""
        owner = f"TextVectorization {self.name!r}"
        strings = self._standardized(x)
        if self.split is None:
            if self._widths is None:
                return strings, False, False
            # n-grams along the last axis (every row has as many tokens, so as many grams)
            rows = strings.reshape(-1, strings.shape[-1]) if strings.ndim else strings.reshape(1, 1)
            grams = [text_ops.ngrams(list(r), self._widths) for r in rows]
            out = np.empty((len(grams), len(grams[0]) if grams else 0), dtype=object)
            for i, g in enumerate(grams):
                out[i, :] = g
            lead = strings.shape[:-1] if strings.ndim else ()
            return out.reshape(*lead, out.shape[-1]), False, False
        if strings.ndim > 1:
            if strings.shape[-1] != 1 or strings.ndim > 2:
                raise ValueError(f"{owner}: to split strings the input must be [batch] or "
                                 f"[batch, 1], got shape {strings.shape}")
            strings = strings.reshape(-1)
        single = strings.ndim == 0
        texts = strings.reshape(-1)
        if callable(self.split):
            result = self.split(texts.astype(str))
            rows = [list(as_strings(list(r), f"{owner}: split result", self.encoding))
                    for r in result]
            if len(rows) != len(texts):
                raise ValueError(f"{owner}: split must return one token list per string "
                                 f"({len(texts)}), returned {len(rows)}")
        else:
            fn = (text_ops.split_whitespace if self.split == "whitespace"
                  else text_ops.split_characters)
            rows = [fn(s) for s in texts]
        if self._widths is not None:
            rows = [text_ops.ngrams(r, self._widths) for r in rows]
        return rows, True, single

    # -- vocabulary ----------------------------------------------------------------------
    def adapt(self, data: Any, batch_size: int | None = None, steps: int | None = None) -> None:
        """Learns the vocabulary (and idf weights) from ``data``: a list or array of
        strings (one batch) or an iterable of batches, of which ``steps`` are read.

        Raises:
            ValueError: the layer was given a vocabulary; bad ``steps``.
            TypeError: ``data`` is not strings or an iterable of batches.
        """
        owner = f"TextVectorization {self.name!r}"
        steps = check_optional_int(steps, "steps", f"{owner}: adapt", 1)
        check_optional_int(batch_size, "batch_size", f"{owner}: adapt", 1)
        lookup = self._lookup
        lookup.reset_state()
        single = isinstance(data, (list, tuple, np.ndarray))
        for i, batch in enumerate(adapt_batches(data, owner)):
            if steps is not None and i >= steps:
                break
            if single:
                arr = as_strings(batch, owner, self.encoding)
                batch = arr.reshape(-1, 1) if arr.ndim == 1 else arr
            rows, ragged, _ = self._tokens(batch)
            if ragged:
                lookup._update_rows(rows)
            else:
                lookup._update_rows(lookup._rows(rows))
        lookup.finalize_state()

    def get_vocabulary(self, include_special_tokens: bool = True) -> list[str]:
        """The vocabulary in index order (``""`` and ``"[UNK]"`` first unless
        ``include_special_tokens=False``)."""
        return self._lookup.get_vocabulary(include_special_tokens)

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Replaces the vocabulary (and idf weights for ``"tf_idf"``); see
        :meth:`StringLookup.set_vocabulary`."""
        self._lookup.set_vocabulary(vocabulary, idf_weights)

    def vocabulary_size(self) -> int:
        """The number of indices, padding and OOV included."""
        return self._lookup.vocabulary_size()

    # -- call ----------------------------------------------------------------------------
    def _compute(self, x: Any) -> Any:
        rows, ragged, single = self._tokens(x)
        lookup = self._lookup
        if not ragged:
            ids = lookup.lookup(rows)
            if self.output_mode != "int":
                return lookup._encode(ids)
            if self.output_sequence_length is not None and ids.ndim:
                ids = _fit_last_axis(ids, self.output_sequence_length)
            return ids
        batch = rows
        flat = np.array([t for r in batch for t in r], dtype=object)
        ids = lookup.lookup(flat)
        parts = np.split(ids, np.cumsum([len(r) for r in batch])[:-1]) if batch else []
        if self.output_mode == "int":
            if self.ragged:
                return parts[0] if single else parts
            width = self.output_sequence_length
            if width is None:
                width = max((len(p) for p in parts), default=0)
            out = np.zeros((len(parts), width), dtype=np.int64)
            for i, p in enumerate(parts):
                out[i, :min(len(p), width)] = p[:width]
            return out[0] if single else out
        width = max((len(p) for p in parts), default=0)
        padded = np.full((len(parts), width), -1, dtype=np.int64)
        for i, p in enumerate(parts):
            padded[i, :len(p)] = p
        if self.output_mode == "one_hot":
            raise ValueError(f"TextVectorization {self.name!r}: output_mode='one_hot' needs "
                             f"split=None (one token per string)")
        out = lookup._encode(padded)
        return out[0] if single else out

    def output_shape(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if self.output_mode == "int":
            if self.split is None:
                return shape if self.output_sequence_length is None or not shape else (
                    *shape[:-1], self.output_sequence_length)
            return (shape[0] if shape else None, self.output_sequence_length)
        if self.split is None:
            return self._lookup.output_shape(shape)
        return self._lookup.output_shape((shape[0] if shape else None, None))

    def _call_symbolic(self, x: Any) -> Any:
        return string_symbolic_call(self, x, super()._call_symbolic)

    def get_config(self) -> dict:
        config = super().get_config()
        lookup_config = self._lookup._vocabulary_config()
        config.update(
            max_tokens=self._lookup.max_tokens,
            standardize=_function_config(self.standardize, "standardize"),
            split=_function_config(self.split, "split"),
            ngrams=list(self.ngrams) if isinstance(self.ngrams, tuple) else self.ngrams,
            output_mode=self.output_mode, output_sequence_length=self.output_sequence_length,
            pad_to_max_tokens=self._lookup.pad_to_max_tokens, sparse=False, ragged=self.ragged,
            encoding=self.encoding, **lookup_config)
        config["vocabulary_size"] = self.vocabulary_size()
        return config

    @classmethod
    def from_config(cls, config: dict) -> "TextVectorization":
        refuse_vocabulary_file(config, "TextVectorization")
        config = dict(config)
        for arg in ("standardize", "split"):
            if arg in config:
                config[arg] = _function_from_config(config[arg], arg)
        if isinstance(config.get("ngrams"), list):
            config["ngrams"] = tuple(config["ngrams"])
        return super().from_config(config)


def _fit_last_axis(ids: np.ndarray, length: int) -> np.ndarray:
    """Cuts or zero-pads the last axis to ``length``."""
    ids = ids[..., :length]
    if ids.shape[-1] < length:
        pad = [(0, 0)] * (ids.ndim - 1) + [(0, length - ids.shape[-1])]
        ids = np.pad(ids, pad)
    return ids
