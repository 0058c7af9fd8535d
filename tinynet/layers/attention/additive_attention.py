"""``AdditiveAttention``: Keras 3.15's additive (Bahdanau-style) attention layer."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.attention.base_attention import BaseAttention
from tinynet.layers.layer import check_bool

__all__ = ["AdditiveAttention"]


class AdditiveAttention(BaseAttention):
    """Additive attention (Keras 3.15's ``AdditiveAttention``).

    The scores are ``sum(scale * tanh(q + k))`` over the features (``scale`` a learned
    ``[dim]`` vector with ``use_scale``, else 1); a softmax over the key steps then
    weights the values (see :class:`BaseAttention` for the call and the masks).

    Args:
        use_scale: Learn the ``[dim]`` weight ``scale`` (Glorot-uniform initialized).
        dropout: Dropout rate on the attention weights (training only).
        seed: Seed of the dropout draws (``None``: from the global seed).
        name: Optional layer name.

    Shape:
        Inputs: ``[query [batch, T, dim], value [batch, S, dv]]`` and optionally
        ``key [batch, S, dim]`` (default: the value). Output: ``[batch, T, dv]``; with
        ``return_attention_scores`` also the weights ``[batch, T, S]``.
    """

    def __init__(self, use_scale: bool = True, dropout: float = 0.0, **kwargs: Any) -> None:
        super().__init__(dropout=dropout, **kwargs)
        self.use_scale = check_bool(use_scale, "use_scale", "AdditiveAttention")
        self.scale = None

    def _build_scores(self, dim: int) -> None:
        if self.use_scale:
            self.scale = self.add_weight("scale", (dim,), "glorot_uniform")

    def _scores(self, q: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, Any]:
        th = np.tanh(q[:, :, None, :] + k[:, None, :, :])        # [B, T, S, d]
        weighted = th * self.scale.value if self.scale is not None else th
        return weighted.sum(axis=-1, dtype=np.float32), th

    def _scores_backward(self, d_s: np.ndarray, q: np.ndarray, k: np.ndarray,
                         state: Any) -> tuple[np.ndarray, np.ndarray]:
        th = state
        d_th = d_s[..., None]
        if self.scale is not None:
            rows = (d_th * th).reshape(-1, th.shape[-1])
            self.scale.grad = np.add.reduce(rows, axis=0, dtype=np.float64).astype(np.float32)
            d_th = d_th * self.scale.value
        d_u = d_th * (1.0 - th * th)
        return d_u.sum(axis=2, dtype=np.float32), d_u.sum(axis=1, dtype=np.float32)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({"use_scale": self.use_scale, "seed": self.seed})
        return config
