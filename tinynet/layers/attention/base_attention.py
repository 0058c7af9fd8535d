"""``BaseAttention``: what ``Attention`` and ``AdditiveAttention`` share (Keras 3.15's
dot-product and additive attention layers): the call, the masks, the softmax over the
key steps, the weighting of the values and the backward of all but the scores.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.attention import calls
from tinynet.layers.layer import Layer
from tinynet.layers.recurrent.base_rnn import check_rate
from tinynet.layers.seeded import OwnGenerator
from tinynet.layers.validation import check_seed
from tinynet.ops.arrays import attention as A
from tinynet.tensor import Tensor

__all__ = ["BaseAttention"]

_CALL_ARGS = ("training", "mask", "return_attention_scores", "use_causal_mask")


class BaseAttention(OwnGenerator, Layer):
    """Attention of a query ``[B, T, d]`` over a value ``[B, S, dv]`` keyed by a key
    ``[B, S, d]`` (default: the value); subclasses compute the scores ``[B, T, S]``
    (:meth:`_scores`, :meth:`_scores_backward`).

    Called as ``layer([query, value(, key)], mask=[query_mask, value_mask],
    training=None, return_attention_scores=False, use_causal_mask=False)``. The value's
    mask and the causal mask keep scores out of the softmax (1e9 is subtracted from the
    scores they mask, as in Keras); the output is zero at masked query steps.

    Args:
        dropout: Dropout rate on the attention weights (training only).
        seed: Seed of the dropout draws (``None``: from the global seed).

    Shape:
        Inputs: query ``[batch, T, dim]``, value ``[batch, S, dv]``, key
        ``[batch, S, dim]``. Output: ``[batch, T, dv]``; with ``return_attention_scores``
        also the weights ``[batch, T, S]``.
    """

    multiple_inputs = True
    supports_masking = True

    def __init__(self, dropout: float = 0.0, seed: int | None = None, *,
                 name: str | None = None, trainable: bool = True,
                 input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        self.dropout = check_rate(dropout, "dropout", owner)
        self.seed = check_seed(seed, owner)
        self._rng = None
        self._options = calls.CallOptions()

    def _owner(self) -> str:
        return f"{type(self).__name__} {self.name!r}"

    # -- shapes -------------------------------------------------------------------------
    def _shapes(self, input_shape: Any) -> tuple[tuple, tuple, tuple]:
        """``(query, value, key)`` shapes from a list of 2 or 3, checked."""
        owner = self._owner()
        shapes = calls.rank3_shapes(input_shape, owner, "must be called on a list of inputs, "
                                    "namely [query, value] or [query, value, key]")
        query, value = shapes[0], shapes[1]
        key = shapes[2] if len(shapes) == 3 else value
        if key[1] is not None and value[1] is not None and key[1] != value[1]:
            raise ValueError(f"{owner}: key and value must have the same number of steps, "
                             f"got value shape {value} and key shape {key}")
        if query[2] is not None and key[2] is not None and query[2] != key[2]:
            raise ValueError(f"{owner}: the last axes of query and key must be equal (the "
                             f"scores compare them), got query shape {query} and key shape "
                             f"{key}")
        return query, value, key

    def output_shape(self, input_shape: Any) -> Any:
        query, value, key = self._shapes(input_shape)
        out = (query[0], query[1], value[2])
        if self._options.return_attention_scores:
            return [out, (query[0], query[1], key[1])]
        return out

    def build(self, input_shape: Any) -> None:
        query, value, key = self._shapes(input_shape)
        self._build_scores(query[2])
        super().build([query, value] if len(input_shape) == 2 else [query, value, key])

    def _build_scores(self, dim: int) -> None:
        """Creates the score weights for query/key features ``dim``."""

    # -- the scores (subclasses) -----------------------------------------------------------
    def _scores(self, q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, Any]:
        """``(scores [B, T, S], what the backward needs)``."""
        raise NotImplementedError

    def _scores_backward(self, d_s: np.ndarray, q: np.ndarray, k: np.ndarray,
                         state: Any) -> tuple[np.ndarray, np.ndarray]:
        """Fills the score weights' gradients; returns ``(dL/dq, dL/dk)``."""
        raise NotImplementedError

    # -- calling --------------------------------------------------------------------------
    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """``layer([query, value(, key)], mask=None, training=None,
        return_attention_scores=False, use_causal_mask=False)`` (Keras's call)."""
        for name, value in zip(("mask", "training", "return_attention_scores",
                                "use_causal_mask"), args):
            if name in kwargs:
                raise TypeError(f"{self._owner()}: got two values for {name}")
            kwargs[name] = value
        unknown = sorted(set(kwargs) - set(_CALL_ARGS))
        if unknown:
            raise TypeError(f"{self._owner()}: unexpected call arguments {unknown}; expected "
                            f"some of {list(_CALL_ARGS)}")
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{self._owner()}: must be called on a list of inputs, namely "
                             f"[query, value] or [query, value, key], got "
                             f"{type(inputs).__name__}")
        return calls.call(self, inputs, None, None, kwargs, keras_query_mask=False)

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The query's mask for the output (its steps are the query's); the scores,
        with ``return_attention_scores``, get none (as in Keras)."""
        mask = previous_mask[0] if isinstance(previous_mask, (list, tuple)) else previous_mask
        if self._options.return_attention_scores:
            return [mask, None]
        return mask

    def forward(self, inputs: Any, training: bool = False, mask: Any = None,
                **options: Any) -> Any:
        """The output (and the weights with ``return_attention_scores``) for ``inputs =
        [query, value(, key)]``; ``mask``: the inputs' own masks; ``options``: the call
        arguments (default: those of the model's call)."""
        owner = self._owner()
        opts = calls.CallOptions().merged(options, owner) if options else self._options
        arrays, masks, with_key = calls.arrays_and_masks(self, inputs, mask, opts)
        q, v, k = arrays
        b, t, _ = q.shape
        s = v.shape[1]
        smask = calls.combined_mask(owner, [None, masks[1], None], opts, b, t, s,
                                    query_mask=False)
        scores, state = self._scores(q, k)
        p_soft, p = A.masked_softmax(scores, smask, replace=False)
        keep = None
        pd = p
        if training and self.dropout > 0.0:
            keep = calls.dropout_keep(self, p.shape)
            pd = p * keep
        out = A.bmm(pd, v)
        q_keep = None if masks[0] is None else masks[0][:, :, None]
        if q_keep is not None:
            out = np.where(q_keep, out, np.float32(0.0))
        self._cache = (arrays, with_key, state, p_soft, pd, keep, smask, q_keep,
                       opts.return_attention_scores)
        if opts.return_attention_scores:
            return [Tensor(out), Tensor(np.ascontiguousarray(p))]
        return Tensor(out)

    def backward(self, grad_output: Any) -> list[Tensor]:
        arrays, with_key, state, p_soft, pd, keep, smask, q_keep, with_scores = \
            self._require_cache()
        q, v, k = arrays
        g, g_p = calls.split_grads(self._owner(), grad_output, with_scores)
        g = np.ascontiguousarray(g, dtype=np.float32)
        if q_keep is not None:
            g = np.where(q_keep, g, np.float32(0.0))
        d_pd = A.bmm(g, v, trans_b=True)
        d_v = A.bmm(pd, g, trans_a=True)
        d_p = d_pd * keep if keep is not None else d_pd
        if g_p is not None:
            d_p = d_p + g_p
        d_s = A.masked_softmax_backward(p_soft, d_p, smask, replace=False)
        d_q, d_k = self._scores_backward(d_s, q, k, state)
        if with_key:
            return [Tensor(d_q), Tensor(d_v), Tensor(d_k)]
        return [Tensor(d_q), Tensor(d_v + d_k)]

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"dropout": self.dropout})
        saved = calls.options_config(self)
        if saved:
            config["call_options"] = saved
        return config

    @classmethod
    def from_config(cls, config: dict) -> "BaseAttention":
        config = dict(config)
        saved = config.pop("call_options", None)
        layer = super().from_config(config)
        calls.restore_options(layer, saved)
        return layer


def scalar_sum(x: np.ndarray) -> np.float32:
    """The sum of ``x`` accumulated in float64 (for a scalar weight's gradient)."""
    return np.float32(np.sum(x, dtype=np.float64))
