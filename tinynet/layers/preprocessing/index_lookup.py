"""``IndexLookup``: the vocabulary machinery ``StringLookup``, ``IntegerLookup`` and
``TextVectorization`` share (Keras's ``IndexLookup``), over a Python dict.

Index layout (Keras's): ``[mask] + [OOV] * num_oov_indices + tokens``, the mask slot only
in ``output_mode="int"`` with a ``mask_token``. ``adapt`` ranks tokens by count, ties by
the token itself (high to low: larger strings / ints first), keeps the first
``max_tokens`` minus the special slots and, for ``"tf_idf"``, learns
``idf = log(1 + documents / (1 + documents containing the token))``.
"""

from __future__ import annotations

import collections
import itertools
import os
from typing import Any

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.layers.preprocessing.base import (PreprocessingLayer, adapt_batches, as_values,
                                               check_choice, check_optional_int,
                                               encode_categorical)
from tinynet.layers.preprocessing.string_hash import hash_bucket_fast, hash_bucket_strong

__all__ = ["IndexLookup"]

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")
_DROPPED = np.iinfo(np.int64).max  # a masked token's index outside int mode: never counted


def output_mode_arg(value: Any, owner: str, choices: tuple = OUTPUT_MODES) -> str:
    """Keras's output modes, with its aliases ``"binary"`` and ``"tf-idf"``."""
    value = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(value, value) \
        if isinstance(value, str) else value
    return check_choice(value, "output_mode", owner, choices)


def salt_arg(salt: Any, owner: str) -> list[int] | None:
    """``None``, an int (used twice) or a pair of ints: the SipHash key."""
    if salt is None:
        return None
    if isinstance(salt, (int, np.integer)) and not isinstance(salt, bool):
        return [int(salt), int(salt)]
    if (isinstance(salt, (list, tuple)) and len(salt) == 2 and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in salt)):
        return [int(v) for v in salt]
    raise ValueError(f"{owner}: salt must be None, an int or a pair of ints, got {salt!r}")


def refuse_vocabulary_file(config: Any, owner: str) -> None:
    """A config (a saved file's) never names a vocabulary file: loading reads nothing but
    the file itself, as Keras's safe mode refuses such paths."""
    if isinstance(config, dict) and isinstance(config.get("vocabulary"), str):
        raise ValueError(f"{owner}.from_config: the config names a vocabulary file "
                         f"{config['vocabulary']!r}; a config must hold the vocabulary itself "
                         f"(loading never reads other files)")


class IndexLookup(PreprocessingLayer):
    """Maps tokens to indices (or back, with ``invert=True``) through a vocabulary that is
    given, set with :meth:`set_vocabulary` or learned with :meth:`adapt`. Subclasses fix
    the token kind (``_convert`` and ``_kind``).

    Shape:
        Input: any shape. Output: ``"int"`` the input's shape (int64 indices, or tokens
        when inverted); ``"one_hot"`` the input's shape (a last axis of 1 dropped) plus
        ``[depth]`` (int64, as Keras; ``"tf_idf"`` is float32); ``"multi_hot"`` /
        ``"count"`` / ``"tf_idf"`` ``[depth]`` for a 1-D
        input, ``[batch, depth]`` for a 2-D one. ``depth`` is :meth:`vocabulary_size`, or
        ``max_tokens`` with ``pad_to_max_tokens``.
    """

    _kind = "string"

    def __init__(self, max_tokens: int | None, num_oov_indices: int, mask_token: Any,
                 oov_token: Any, vocabulary: Any = None, idf_weights: Any = None,
                 invert: bool = False, output_mode: str = "int", pad_to_max_tokens: bool = False,
                 sparse: bool = False, salt: Any = None, oov_method: str = "floormod", *,
                 has_input_vocabulary: bool | None = None, vocabulary_size: int | None = None,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None, dtype: Any = None,
                 owner: str | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape, dtype=dtype)
        # ``owner``: the class messages name (TextVectorization for the lookup it holds)
        self._owner = owner
        owner = owner or type(self).__name__
        self.max_tokens = check_optional_int(max_tokens, "max_tokens", owner, 2)
        self.num_oov_indices = check_optional_int(num_oov_indices, "num_oov_indices", owner, 0)
        # the size a saved vocabulary will have (Keras's config field), so a loaded
        # model knows its output width before the vocabulary is set
        self._saved_size = check_optional_int(vocabulary_size, "vocabulary_size", owner, 0)
        if self.num_oov_indices is None:
            raise TypeError(f"{owner}: num_oov_indices must be an int >= 0, got None")
        self.pad_to_max_tokens = check_bool(pad_to_max_tokens, "pad_to_max_tokens", owner)
        if self.pad_to_max_tokens and self.max_tokens is None:
            raise ValueError(f"{owner}: pad_to_max_tokens=True needs max_tokens, got "
                             f"max_tokens=None")
        self.output_mode = output_mode_arg(output_mode, owner)
        self.invert = check_bool(invert, "invert", owner)
        if self.invert and self.output_mode != "int":
            raise ValueError(f"{owner}: invert=True needs output_mode='int', got "
                             f"output_mode={self.output_mode!r}")
        if check_bool(sparse, "sparse", owner):
            raise ValueError(f"{owner}: sparse=True is not supported (tinynet has no sparse "
                             f"tensors), got sparse=True")
        self.sparse = False
        self.oov_method = check_choice(oov_method, "oov_method", owner, ("floormod", "farmhash"))
        self.salt = salt_arg(salt, owner)
        if self.salt is not None and self._kind == "int" and self.oov_method != "farmhash":
            raise ValueError(f"{owner}: salt needs oov_method='farmhash', got "
                             f"oov_method={self.oov_method!r}")
        self.mask_token = None if mask_token is None else self._token(mask_token, "mask_token")
        self.oov_token = None if oov_token is None else self._token(oov_token, "oov_token")
        if idf_weights is not None and self.output_mode != "tf_idf":
            raise ValueError(f"{owner}: idf_weights needs output_mode='tf_idf', got "
                             f"output_mode={self.output_mode!r}")
        if isinstance(vocabulary, str) and not os.path.isfile(vocabulary):
            raise ValueError(f"{owner}: vocabulary file {vocabulary!r} does not exist")
        given = vocabulary is not None
        self._has_input_vocabulary = (given if has_input_vocabulary is None
                                      else check_bool(has_input_vocabulary,
                                                      "has_input_vocabulary", owner))
        if self.output_mode == "tf_idf" and given and idf_weights is None:
            raise ValueError(f"{owner}: output_mode='tf_idf' with a vocabulary needs "
                             f"idf_weights too, got idf_weights=None")
        self._tokens: list = []
        self._index: dict = {}
        self._idf: np.ndarray | None = None
        self._vocab_set = False
        self.reset_state()
        if given:
            self.set_vocabulary(vocabulary, idf_weights)

    # -- tokens --------------------------------------------------------------------------
    def _convert(self, x: Any) -> np.ndarray:
        """Input data as an object array of tokens (str or int)."""
        raise NotImplementedError

    def _token(self, value: Any, arg: str) -> Any:
        """One token argument (``mask_token``, ``oov_token``) checked for the kind."""
        raise NotImplementedError

    def _label(self) -> str:
        """How messages name the layer: its class and name, or its owner's."""
        return self._owner or f"{type(self).__name__} {self.name!r}"

    def _oov_start(self) -> int:
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start(self) -> int:
        return self._oov_start() + self.num_oov_indices

    def _special_tokens(self) -> list:
        return [self.mask_token] * self._oov_start() + [self.oov_token] * self.num_oov_indices

    # -- vocabulary ----------------------------------------------------------------------
    def vocabulary_size(self) -> int:
        """The number of indices: the special slots plus the tokens."""
        return self._token_start() + len(self._tokens)

    def get_vocabulary(self, include_special_tokens: bool = True) -> list:
        """The vocabulary in index order; ``include_special_tokens=False`` drops the mask
        and OOV slots."""
        vocab = self._special_tokens() + list(self._tokens)
        return vocab if include_special_tokens else vocab[self._token_start():]

    def _read_vocabulary_file(self, path: str) -> list:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        while lines and lines[-1] == "":
            lines.pop()
        return lines if self._kind == "string" else [int(v) for v in lines]

    def set_vocabulary(self, vocabulary: Any, idf_weights: Any = None) -> None:
        """Replaces the vocabulary (and, for ``"tf_idf"``, the idf weights, one per term).

        ``vocabulary`` is a list or 1-D array of unique tokens, optionally starting with
        the special tokens in layout order, or the path of a text file (one token a
        line). Without the special tokens, their idf weights are the mean of the given
        ones.

        Raises:
            ValueError: empty or repeated vocabulary, a special token in the middle, more
                than ``max_tokens`` entries, idf weights missing, unexpected or of another
                length.
        """
        owner = f"{self._label()}: set_vocabulary"
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError(f"{owner}: output_mode='tf_idf' needs idf_weights, got None")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError(f"{owner}: idf_weights needs output_mode='tf_idf', got "
                             f"output_mode={self.output_mode!r}")
        if isinstance(vocabulary, str):
            if self.output_mode == "tf_idf":
                raise ValueError(f"{owner}: output_mode='tf_idf' cannot read the vocabulary "
                                 f"from a file, got {vocabulary!r}")
            if not os.path.isfile(vocabulary):
                raise ValueError(f"{owner}: vocabulary file {vocabulary!r} does not exist")
            vocabulary = self._read_vocabulary_file(vocabulary)
        if np.ndim(vocabulary) != 1:
            raise ValueError(f"{owner}: vocabulary must be a 1-D list or array of tokens, got "
                             f"shape {np.shape(vocabulary)}")
        if np.size(vocabulary) == 0:
            raise ValueError(f"{owner}: vocabulary must not be empty")
        vocab = list(self._convert(vocabulary).reshape(-1))
        start = self._token_start()
        special = self._special_tokens()
        found_special = vocab[:start] == special and len(vocab) >= start
        tokens = vocab[start:] if found_special else vocab
        repeated = [t for t, c in collections.Counter(tokens).items() if c > 1]
        if repeated:
            raise ValueError(f"{owner}: vocabulary has repeated tokens {repeated}")
        for arg, token in (("mask_token", self.mask_token), ("oov_token", self.oov_token)):
            if token is not None and token in tokens and (arg == "mask_token" or self.invert):
                raise ValueError(
                    f"{owner}: the {arg} {token!r} is at index {vocab.index(token)} of the "
                    f"vocabulary; give the special tokens only at the start, in the order "
                    f"{special}, or not at all")
        size = start + len(tokens)
        if self.max_tokens is not None and size > self.max_tokens:
            raise ValueError(f"{owner}: a vocabulary of {size} entries (special tokens "
                             f"included) exceeds max_tokens={self.max_tokens}")
        idf = None
        if idf_weights is not None:
            weights = np.asarray(idf_weights, dtype=np.float64)
            if weights.ndim != 1 or len(weights) != len(vocab):
                raise ValueError(f"{owner}: idf_weights must be 1-D with one weight per "
                                 f"vocabulary entry ({len(vocab)}), got shape {weights.shape}")
            if not found_special:
                weights = np.concatenate([np.full(start, np.average(weights)), weights])
            idf = self._pad_idf(weights.astype(np.float32))
        self._set_tokens(tokens, idf)

    def _pad_idf(self, idf: np.ndarray) -> np.ndarray:
        if self.pad_to_max_tokens and self.max_tokens is not None and len(idf) < self.max_tokens:
            idf = np.concatenate([idf, np.zeros(self.max_tokens - len(idf), np.float32)])
        return idf.astype(np.float32)

    def _set_tokens(self, tokens: list, idf: np.ndarray | None) -> None:
        start = self._token_start()
        self._tokens = list(tokens)
        self._index = {t: start + i for i, t in enumerate(self._tokens)}
        self._idf = idf
        self._vocab_set = True

    # -- adapt ---------------------------------------------------------------------------
    def reset_state(self) -> None:
        """Clears the token counts an unfinished :meth:`adapt` gathered."""
        self._counts: collections.Counter = collections.Counter()
        self._doc_counts: collections.Counter = collections.Counter()
        self._num_docs = 0

    def _rows(self, data: Any) -> list:
        """A batch as documents (lists of tokens): a scalar is one document of one token,
        a 1-D array one document, a higher-rank array one document per row."""
        arr = self._convert(data)
        if arr.ndim == 0:
            return [[arr.item()]]
        if arr.ndim == 1:
            return [list(arr)]
        return [list(r) for r in arr.reshape(arr.shape[0], -1)]

    def update_state(self, data: Any) -> None:
        """Counts the tokens of one batch (see :meth:`adapt`)."""
        self._update_rows(self._rows(data))

    def _update_rows(self, rows: list) -> None:
        if self._has_input_vocabulary:
            raise ValueError(f"{self._label()}: cannot adapt a layer "
                             f"given a vocabulary (the vocabulary argument or "
                             f"set_vocabulary())")
        for row in rows:
            self._counts.update(row)
            if self.output_mode == "tf_idf":
                self._doc_counts.update(set(row))
        self._num_docs += len(rows)

    def finalize_state(self) -> None:
        """Turns the gathered counts into the vocabulary (and idf weights)."""
        if self._has_input_vocabulary or not self._counts:
            return
        counts = dict(self._counts)
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        ranked = sorted(counts, key=lambda t: (counts[t], t), reverse=True)
        if self.max_tokens:
            ranked = ranked[:max(self.max_tokens - self._token_start(), 0)]
        idf = None
        if self.output_mode == "tf_idf":
            docs = np.array([self._doc_counts[t] for t in ranked], dtype=np.float64)
            learned = np.log(1.0 + self._num_docs / (1.0 + docs)).astype(np.float32)
            front = np.float32(learned.mean(dtype=np.float32)) if learned.size else 0.0
            idf = self._pad_idf(np.concatenate(
                [np.full(self._token_start(), front, np.float32), learned]))
        self._set_tokens(ranked, idf)
        self.reset_state()

    def adapt(self, data: Any, steps: int | None = None) -> None:
        """Learns the vocabulary from ``data``: a list or array (one batch; a 1-D one holds
        one token per sample) or an iterable of batches, of which ``steps`` are read.

        Raises:
            ValueError: the layer was given a vocabulary; ``steps`` is not a positive int.
            TypeError: ``data`` is neither a list/array nor an iterable of batches, or
                holds the wrong kind of token.
        """
        owner = self._label()
        steps = check_optional_int(steps, "steps", f"{owner}: adapt", 1)
        self.reset_state()
        single = isinstance(data, (list, tuple, np.ndarray))
        for i, batch in enumerate(adapt_batches(data, owner)):
            if steps is not None and i >= steps:
                break
            if single:
                arr = self._convert(batch)
                batch = arr.reshape(-1, 1) if arr.ndim == 1 else arr
            self.update_state(batch)
        self.finalize_state()

    # -- call ----------------------------------------------------------------------------
    def _depth(self) -> int:
        if self.pad_to_max_tokens:
            return int(self.max_tokens)
        if not self._vocab_set:
            raise RuntimeError(
                f"{self._label()}: output_mode={self.output_mode!r} "
                f"without pad_to_max_tokens needs a vocabulary before the call: pass "
                f"vocabulary= or call adapt()")
        return self.vocabulary_size()

    def _oov_buckets(self, values: list) -> np.ndarray:
        """The OOV slot (from 0) of each out-of-vocabulary value, Keras's way."""
        n = self.num_oov_indices
        if self._kind == "int" and self.oov_method == "floormod":
            return np.mod(np.asarray(values, dtype=np.int64), n)
        keys = [(str(v) if self._kind == "int" else v).encode("utf-8") for v in values]
        if self.salt is not None:
            key = (self.salt[0], self.salt[1])
            return np.array([hash_bucket_strong(k, n, key) for k in keys], dtype=np.int64)
        return np.array([hash_bucket_fast(k, n) for k in keys], dtype=np.int64)

    def lookup(self, tokens: np.ndarray) -> np.ndarray:
        """Indices (int64) of an object array of tokens; the mask token maps to 0 in
        ``"int"`` mode (outside the encoding otherwise), unknown tokens to the OOV slots.

        Raises:
            ValueError: an unknown token while ``num_oov_indices=0``.
        """
        flat = tokens.reshape(-1)
        out = np.array(list(map(self._index.get, flat, itertools.repeat(-1, flat.size))),
                       dtype=np.int64).reshape(flat.shape)
        if self.mask_token is not None:
            out[np.array([t == self.mask_token for t in flat], dtype=bool)] = (
                0 if self.output_mode == "int" else _DROPPED)
        missing = np.nonzero(out == -1)[0]
        if missing.size:
            if self.num_oov_indices == 0:
                shown = [flat[i] for i in missing[:10]]
                raise ValueError(f"{self._label()}: with "
                                 f"num_oov_indices=0 every input must be in the vocabulary, "
                                 f"got unknown values {shown}")
            slots = (np.zeros(missing.size, np.int64) if self.num_oov_indices == 1
                     else self._oov_buckets([flat[i] for i in missing]))
            out[missing] = self._oov_start() + slots
        return out.reshape(tokens.shape)

    def _invert(self, indices: np.ndarray) -> np.ndarray:
        start = self._token_start()
        flat = indices.reshape(-1)
        out = []
        for i in flat:
            i = int(i)
            if self.mask_token is not None and i == 0:
                out.append(self.mask_token)
            elif start <= i < start + len(self._tokens):
                out.append(self._tokens[i - start])
            else:
                out.append(self.oov_token)
        kind = str if self._kind == "string" else np.int64
        return np.array(out, dtype=kind).reshape(indices.shape)

    def _encode(self, indices: np.ndarray) -> np.ndarray:
        if self.output_mode == "int":
            return indices
        depth = self._depth()
        mode = "count" if self.output_mode == "tf_idf" else self.output_mode
        out = encode_categorical(indices, mode, depth, dtype=np.int64)
        if self.output_mode == "tf_idf":  # Keras: int64 counts, float32 tf-idf
            return (out.astype(np.float32) * self._idf[:depth]).astype(np.float32)
        return out

    def _compute(self, x: Any) -> np.ndarray:
        if self.invert:
            return self._invert(self._indices(x))
        return self._encode(self.lookup(self._convert(x)))

    def _indices(self, x: Any) -> np.ndarray:
        """Inputs of an inverted layer as int64 indices."""
        arr = as_values(x, self._label())
        if arr.dtype.kind not in "iuf" or (arr.dtype.kind == "f" and not np.all(
                np.isfinite(arr) & (arr == np.round(arr)))):
            raise TypeError(f"{self._label()}: invert=True takes integer "
                            f"indices, got dtype {arr.dtype}")
        return arr.astype(np.int64)

    def output_shape(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if self.output_mode == "int":
            return shape
        depth = self.max_tokens if self.pad_to_max_tokens else (
            self.vocabulary_size() if self._vocab_set else self._saved_size)
        if self.output_mode == "one_hot":
            return (shape[:-1] if shape and shape[-1] == 1 else shape) + (depth,)
        if len(shape) <= 1:
            return (depth,)
        return (shape[0], *shape[2:], depth)

    # -- config --------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: dict) -> "IndexLookup":
        refuse_vocabulary_file(config, cls.__name__)
        return super().from_config(config)

    def _vocabulary_config(self) -> dict:
        """The vocabulary as saved: the full one (special tokens first) once there is one,
        so an adapted layer survives save and load; ``has_input_vocabulary`` keeps whether
        it was given (only then is ``adapt`` refused)."""
        vocab = self.get_vocabulary() if self._vocab_set else None
        idf = None
        if self._idf is not None:
            idf = [float(v) for v in self._idf[:self.vocabulary_size()]]
        return {"vocabulary": vocab, "idf_weights": idf,
                "vocabulary_size": self.vocabulary_size() if self._vocab_set else None,
                "has_input_vocabulary": self._has_input_vocabulary}

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(max_tokens=self.max_tokens, num_oov_indices=self.num_oov_indices,
                      mask_token=self.mask_token, oov_token=self.oov_token,
                      invert=self.invert, output_mode=self.output_mode,
                      pad_to_max_tokens=self.pad_to_max_tokens, sparse=self.sparse,
                      oov_method=self.oov_method, salt=self.salt, **self._vocabulary_config())
        return config
