"""``Attention``: Keras 3.15's dot-product (Luong-style) attention layer."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.attention.base_attention import BaseAttention, scalar_sum
from tinynet.layers.layer import check_bool
from tinynet.ops.arrays import attention as A

__all__ = ["Attention"]

_MODES = ("dot", "concat")


class Attention(BaseAttention):
    """Dot-product attention (Keras 3.15's ``Attention``).

    The scores are ``q . k`` (``score_mode="dot"``, times the scalar weight ``scale``
    with ``use_scale``) or ``concat_score_weight * sum(tanh(scale * (q + k)))`` over the
    features (``score_mode="concat"``; ``scale`` only with ``use_scale``); a softmax over
    the key steps then weights the values (see :class:`BaseAttention` for the call and
    the masks).

    Args:
        use_scale: Learn a scalar ``scale`` (initialized to 1).
        score_mode: ``"dot"`` or ``"concat"`` (adds the scalar ``concat_score_weight``).
        dropout: Dropout rate on the attention weights (training only).
        seed: Seed of the dropout draws (``None``: from the global seed).
        name: Optional layer name.

    Shape:
        Inputs: ``[query [batch, T, dim], value [batch, S, dv]]`` and optionally
        ``key [batch, S, dim]`` (default: the value). Output: ``[batch, T, dv]``; with
        ``return_attention_scores`` also the weights ``[batch, T, S]``.
    """

    def __init__(self, use_scale: bool = False, score_mode: str = "dot", dropout: float = 0.0,
                 seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(dropout=dropout, seed=seed, **kwargs)
        self.use_scale = check_bool(use_scale, "use_scale", "Attention")
        if score_mode not in _MODES:
            raise ValueError(f"Attention: score_mode must be one of 'dot', 'concat', got "
                             f"{score_mode!r}")
        self.score_mode = score_mode
        self.scale = None
        self.concat_score_weight = None

    def _build_scores(self, dim: int) -> None:
        if self.use_scale:
            self.scale = self.add_weight("scale", (), "ones")
        if self.score_mode == "concat":
            self.concat_score_weight = self.add_weight("concat_score_weight", (), "ones")

    def _scores(self, q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, Any]:
        if self.score_mode == "dot":
            raw = A.bmm(q, k, trans_b=True)
            if self.scale is None:
                return raw, raw
            return raw * self.scale.value, raw
        u = q[:, :, None, :] + k[:, None, :, :]                  # [B, T, S, d]
        th = np.tanh(u * self.scale.value if self.scale is not None else u)
        r = th.sum(axis=-1, dtype=np.float32)
        return self.concat_score_weight.value * r, (u, th, r)

    def _scores_backward(self, d_s: np.ndarray, q: np.ndarray, k: np.ndarray,
                         state: Any) -> tuple[np.ndarray, np.ndarray]:
        if self.score_mode == "dot":
            raw = state
            if self.scale is not None:
                self.scale.grad = np.asarray(scalar_sum(d_s * raw), dtype=np.float32)
                d_s = d_s * self.scale.value
            return A.bmm(d_s, k), A.bmm(d_s, q, trans_a=True)
        u, th, r = state
        self.concat_score_weight.grad = np.asarray(scalar_sum(d_s * r), dtype=np.float32)
        d_a = (d_s * self.concat_score_weight.value)[..., None] * (1.0 - th * th)
        if self.scale is not None:
            self.scale.grad = np.asarray(scalar_sum(d_a * u), dtype=np.float32)
            d_a = d_a * self.scale.value
        return (d_a.sum(axis=2, dtype=np.float32), d_a.sum(axis=1, dtype=np.float32))

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"use_scale": self.use_scale, "score_mode": self.score_mode,
                       "seed": self.seed})
        return config
