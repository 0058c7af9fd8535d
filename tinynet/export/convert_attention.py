"""ONNX converters of the attention layers, in primitive operators.

* ``MultiHeadAttention``: each projection a ``MatMul`` on the flattened kernel plus the
  bias, ``Reshape``/``Transpose`` to ``[batch, heads, steps, size]``, the scaled scores a
  batched ``MatMul``, ``Softmax`` on the last axis, the values' ``MatMul``, then the
  output projection.
* ``Attention`` (``"dot"``: ``MatMul``; ``"concat"``: ``Unsqueeze``, ``Add``, ``Tanh``,
  ``ReduceSum``) and ``AdditiveAttention`` (``Tanh`` of the broadcast sum, times the
  scale, ``ReduceSum``), then ``Softmax`` and ``MatMul``.

``use_causal_mask`` becomes a constant lower-triangular mask (``Where``), the steps
being known. Masks from the data (``Embedding(mask_zero=True)``, ``Masking``) are
refused by the exporter, as for every layer; an ``attention_mask`` and
``return_attention_scores`` are refused here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet.export.builder import OnnxBuilder
from tinynet.export.registry import converts

__all__: list[str] = []


def _options(layer: Any, shapes: list[tuple]) -> Any:
    """The layer's call arguments, checked for an ONNX form."""
    opts = layer._options
    owner = f"{type(layer).__name__} {layer.name!r}"
    if opts.return_attention_scores:
        raise ValueError(f"{owner}: return_attention_scores=True has no ONNX export yet (the "
                         f"exporter writes one output per layer)")
    if any(getattr(opts, a) is not None for a in ("attention_mask", "query_mask",
                                                  "value_mask", "key_mask")):
        raise ValueError(f"{owner}: a mask given as a call argument has no ONNX export; "
                         f"use_causal_mask=True does")
    if opts.use_causal_mask and (shapes[0][1] is None or shapes[1][1] is None):
        raise ValueError(f"{owner}: use_causal_mask needs known steps to export, got shapes "
                         f"{shapes}")
    return opts


def _causal(b: OnnxBuilder, layer: Any, t: int, s: int, rank: int) -> str:
    mask = np.tril(np.ones((t, s), dtype=bool)).reshape((1,) * (rank - 2) + (t, s))
    return b.const(mask, "causal_mask", dtype=np.bool_, key=(id(layer), "causal", t, s))


def _project(b: OnnxBuilder, layer: Any, sub: str, x: str, width: int) -> str:
    """``x [B, N, d]`` projected and split into heads: ``[B, H, N, width]``."""
    kernel, bias = layer._weights_of(sub)
    w = kernel.value.reshape(kernel.value.shape[0], -1)
    y = b.op("MatMul", [x, b.const(w, f"{sub}_kernel", key=(id(layer), sub, "kernel"))])
    if bias is not None:
        y = b.add_bias(y, bias.value.reshape(-1), (id(layer), sub, "bias"), f"{sub}_bias")
    y = b.op("Reshape", [y, b.ints([0, 0, layer.num_heads, width], "heads_shape")])
    return b.transpose(y, [0, 2, 1, 3], f"{sub}_heads")


@converts("MultiHeadAttention")
def _multi_head_attention(b: OnnxBuilder, layer: Any, xs: list[str],
                          shapes: list[tuple]) -> str:
    opts = _options(layer, shapes)
    q_in, v_in = xs[0], xs[1]
    k_in = xs[2] if len(xs) == 3 else v_in
    h, dk, dv = layer.num_heads, layer.key_dim, layer.value_dim
    q = _project(b, layer, "query", q_in, dk)
    q = b.op("Mul", [q, b.const(np.float32(1.0 / math.sqrt(float(dk))), "inv_sqrt_key_dim")])
    k = _project(b, layer, "key", k_in, dk)
    v = _project(b, layer, "value", v_in, dv)
    scores = b.op("MatMul", [q, b.transpose(k, [0, 1, 3, 2], "key_t")], "scores")
    if opts.use_causal_mask:
        big = b.const(np.float32(-1e9), "masked_score")
        scores = b.op("Where", [_causal(b, layer, shapes[0][1], shapes[1][1], 4), scores,
                                big], "causal_scores")
    weights = b.op("Softmax", [scores], "attention_weights", axis=-1)
    o = b.transpose(b.op("MatMul", [weights, v], "attended"), [0, 2, 1, 3], "attended_t")
    o = b.op("Reshape", [o, b.ints([0, 0, h * dv], "merged_shape")])
    kernel, bias = layer._weights_of("attention_output")
    out_dims = kernel.value.shape[2:]
    w = kernel.value.reshape(h * dv, -1)
    y = b.op("MatMul", [o, b.const(w, "output_kernel", key=(id(layer), "out", "kernel"))])
    if bias is not None:
        y = b.add_bias(y, bias.value.reshape(-1), (id(layer), "out", "bias"), "output_bias")
    if len(out_dims) > 1:
        y = b.op("Reshape", [y, b.ints([0, 0, *out_dims], "output_shape")])
    return y


def _scalar(b: OnnxBuilder, layer: Any, param: Any, hint: str) -> str:
    return b.const(np.float32(param.value), hint, key=(id(layer), hint))


def _pairwise(b: OnnxBuilder, q: str, k: str) -> str:
    """``q[:, :, None, :] + k[:, None, :, :]``: ``[B, T, S, d]``."""
    return b.op("Add", [b.op("Unsqueeze", [q, b.ints([2], "axis2")]),
                        b.op("Unsqueeze", [k, b.ints([1], "axis1")])], "pairs")


@converts("Attention", "AdditiveAttention")
def _attention(b: OnnxBuilder, layer: Any, xs: list[str], shapes: list[tuple]) -> str:
    opts = _options(layer, shapes)
    q, v = xs[0], xs[1]
    k = xs[2] if len(xs) == 3 else v
    if type(layer).__name__ == "AdditiveAttention":
        th = b.op("Tanh", [_pairwise(b, q, k)])
        if layer.scale is not None:
            th = b.op("Mul", [th, b.const(layer.scale.value, "scale",
                                          key=(id(layer), "scale"))])
        scores = b.reduce("ReduceSum", th, [3], False, "scores")
    elif layer.score_mode == "dot":
        scores = b.op("MatMul", [q, b.transpose(k, [0, 2, 1], "key_t")], "scores")
        if layer.scale is not None:
            scores = b.op("Mul", [scores, _scalar(b, layer, layer.scale, "scale")])
    else:
        pairs = _pairwise(b, q, k)
        if layer.scale is not None:
            pairs = b.op("Mul", [pairs, _scalar(b, layer, layer.scale, "scale")])
        summed = b.reduce("ReduceSum", b.op("Tanh", [pairs]), [3], False, "summed")
        scores = b.op("Mul", [summed, _scalar(b, layer, layer.concat_score_weight,
                                              "concat_score_weight")], "scores")
    if opts.use_causal_mask:
        lowered = b.op("Sub", [scores, b.const(np.float32(1e9), "mask_offset")])
        scores = b.op("Where", [_causal(b, layer, shapes[0][1], shapes[1][1], 3), scores,
                                lowered], "causal_scores")
    weights = b.op("Softmax", [scores], "attention_weights", axis=-1)
    return b.op("MatMul", [weights, v], "attended")
