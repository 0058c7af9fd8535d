"""The attention layers' ONNX export beyond the one-layer cases: the causal mask as a
constant, a transformer encoder block, and the call arguments that have no export."""

from __future__ import annotations

import numpy as np
import pytest

from tests.export.common import check_export

import tinynet as tn
from tinynet import layers as L


def _inputs(*shapes):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((32, *s)).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("make", [lambda: L.MultiHeadAttention(2, 3),
                                  lambda: L.Attention(use_scale=True),
                                  lambda: L.Attention(score_mode="concat"),
                                  lambda: L.AdditiveAttention()],
                         ids=["mha", "dot", "concat", "additive"])
def test_causal_mask_exports_as_a_constant(make):
    tn.set_seed(0)
    x = tn.Input((6, 4))
    layer = make()
    y = layer(x, x, use_causal_mask=True) if isinstance(layer, L.MultiHeadAttention) \
        else layer([x, x], use_causal_mask=True)
    check_export(tn.Model(x, y), _inputs((6, 4)))


def test_encoder_block_exports():
    tn.set_seed(0)
    x = tn.Input((8, 8))
    a = L.MultiHeadAttention(4, 2, dropout=0.1)(x, x)
    h = L.LayerNormalization()(L.Add()([x, a]))
    h = L.LayerNormalization()(L.Add()([h, L.Dense(8)(L.Dense(16, activation="relu")(h))]))
    model = tn.Model(x, L.Dense(3, activation="softmax")(L.GlobalAveragePooling1D()(h)))
    check_export(model, _inputs((8, 8)))


def test_attention_scores_and_mask_arguments_are_refused(tmp_path):
    q = tn.Input((4, 6))
    out, scores = L.MultiHeadAttention(2, 3)(q, q, return_attention_scores=True)
    with pytest.raises(ValueError, match="return_attention_scores=True has no ONNX export"):
        tn.Model(q, out).export(str(tmp_path / "m.onnx"))
    masked = L.MultiHeadAttention(2, 3)(q, q, attention_mask=np.ones((1, 4, 4), bool))
    with pytest.raises(ValueError, match="a mask given as a call argument has no ONNX export"):
        tn.Model(q, masked).export(str(tmp_path / "m.onnx"))
