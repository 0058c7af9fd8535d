"""``MultiHeadAttention``: Keras 3.15's multi-head scaled dot-product attention.

The four projections are Keras's ``EinsumDense`` sub-layers ``query``, ``key``,
``value`` and ``attention_output`` (kernels ``[dim, heads, key_dim]``, ...,
``[heads, value_dim, *output_shape]``), computed here as flat products on tinynet's
fixed-order GEMM; the per-head products are batched items of the same GEMM
(:mod:`tinynet.ops.arrays.attention`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tinynet import regularizers
from tinynet.layers.attention import calls
from tinynet.layers.hooks import weights_changed
from tinynet.layers.layer import Layer, check_bool, check_positive_int
from tinynet.layers.recurrent.base_rnn import check_rate
from tinynet.layers.seeded import OwnGenerator
from tinynet.layers.validation import check_initializer, check_seed
from tinynet.ops.arrays import attention as A
from tinynet.ops.arrays.matmul import matmul
from tinynet.ops.fused import bias_act_forward
from tinynet.tensor import Tensor

__all__ = ["MultiHeadAttention"]


class _Projection(Layer):
    """The weights of one projection (Keras's ``EinsumDense`` sub-layer of that name);
    :class:`MultiHeadAttention` computes with them."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name)


def _check_output_shape(value: Any, owner: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    dims = (value,) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
        else value
    if not isinstance(dims, (list, tuple)) or not dims or any(
            isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d <= 0 for d in dims):
        raise ValueError(f"{owner}: output_shape must be None, a positive int or a tuple of "
                         f"positive ints, got {value!r}")
    return tuple(int(d) for d in dims)


def _check_axes(value: Any, owner: str) -> tuple[int, ...] | None:
    if value is None:
        return None
    axes = (value,) if isinstance(value, (int, np.integer)) and not isinstance(value, bool) \
        else value
    if not isinstance(axes, (list, tuple)) or any(
            isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in axes):
        raise ValueError(f"{owner}: attention_axes must be None, an int, or a list or tuple "
                         f"of ints, got {value!r}")
    return tuple(int(a) for a in axes)


class MultiHeadAttention(OwnGenerator, Layer):
    """Multi-head attention (Keras 3.15's ``MultiHeadAttention``).

    Each head projects the query, key and value (``query``, ``key``, ``value``
    sub-layers), computes ``softmax(q k^T / sqrt(key_dim))`` over the key steps
    (masked), weights the values with it, and the heads' results are projected back
    (``attention_output``).

    Called as ``layer(query, value, key=None, *, query_mask=None, value_mask=None,
    key_mask=None, attention_mask=None, return_attention_scores=False, training=None,
    use_causal_mask=False)`` (or with a list ``[query, value]`` / ``[query, value,
    key]``). The masks of the inputs (``Embedding(mask_zero=True)``, ``Masking``) are
    taken on as in Keras: the query's mask ``[B, T, 1]``, the value's and the key's
    ``[B, 1, S]``, the causal mask and ``attention_mask [B, T, S]`` are combined with
    AND. As in Keras, an explicit ``query_mask`` is ignored (only the query's own mask
    counts), and a query row masked everywhere gets zero attention weights when the
    scores are returned or dropout is on, else uniform ones.

    Args:
        num_heads: Number of heads.
        key_dim: Size of each head's query and key.
        value_dim: Size of each head's value; ``None`` means ``key_dim``.
        dropout: Dropout rate on the attention weights (training only).
        use_bias: Whether the projections have biases.
        output_shape: The last axes of the output; ``None`` means the query's last axis.
        attention_axes: ``None`` (or ``(1,)``/``(-2,)``, the same for rank-3 inputs):
            attention over the steps axis. Other axes are not supported.
        kernel_initializer, bias_initializer: Initializer names.
        kernel_regularizer, bias_regularizer: Optional weight regularizers.
        seed: Seed of the dropout draws (``None``: from the global seed).
        name: Optional layer name.

    Shape:
        Inputs: query ``[batch, T, dq]``, value ``[batch, S, dv]``, key ``[batch, S, dk]``
        (default: the value). Output: ``[batch, T, *output_shape]`` (``[batch, T, dq]``
        by default); with ``return_attention_scores`` also the weights
        ``[batch, num_heads, T, S]``.
    """

    multiple_inputs = True
    supports_masking = True

    def __init__(self, num_heads: int, key_dim: int, value_dim: int | None = None,
                 dropout: float = 0.0, use_bias: bool = True,
                 output_shape: int | tuple | None = None, attention_axes: Any = None,
                 sliding_window: int | None = None, flash_attention: bool | None = None,
                 kernel_initializer: str = "glorot_uniform", bias_initializer: str = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 use_gate: bool = False, seed: int | None = None, *, name: str | None = None,
                 trainable: bool = True, input_shape: tuple | None = None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = "MultiHeadAttention"
        self.num_heads = check_positive_int(num_heads, "num_heads", owner)
        self.key_dim = check_positive_int(key_dim, "key_dim", owner)
        self.value_dim = (self.key_dim if value_dim is None
                          else check_positive_int(value_dim, "value_dim", owner))
        self.dropout = check_rate(dropout, "dropout", owner)
        self.use_bias = check_bool(use_bias, "use_bias", owner)
        self.output_shape_arg = _check_output_shape(output_shape, owner)
        self.attention_axes = _check_axes(attention_axes, owner)
        if self.attention_axes not in (None, (1,), (-2,)):
            raise ValueError(f"{owner}: attention_axes must be None, 1 or -2 (attention over "
                             f"the steps of rank-3 inputs), got {attention_axes!r}")
        if sliding_window is not None:
            raise ValueError(f"{owner}: sliding_window is not supported, got "
                             f"{sliding_window!r}; expected None")
        if flash_attention not in (None, False):
            raise ValueError(f"{owner}: flash_attention is not supported on the CPU, got "
                             f"{flash_attention!r}; expected None or False")
        if check_bool(use_gate, "use_gate", owner):
            raise ValueError(f"{owner}: use_gate=True is not supported, got use_gate=True")
        self.kernel_initializer = check_initializer(kernel_initializer, owner)
        self.bias_initializer = check_initializer(bias_initializer, owner, "bias_initializer")
        check = regularizers.check_layer_regularizer
        self.kernel_regularizer = check(kernel_regularizer, "kernel_regularizer", owner)
        self.bias_regularizer = check(bias_regularizer, "bias_regularizer", owner)
        self.seed = check_seed(seed, owner)
        self._rng = None
        self._options = calls.CallOptions()

    def _owner(self) -> str:
        return f"MultiHeadAttention {self.name!r}"

    # -- shapes -------------------------------------------------------------------------
    def _shapes(self, input_shape: Any) -> tuple[tuple, tuple, tuple]:
        """``(query, value, key)`` shapes from a list of 2 or 3, checked."""
        owner = self._owner()
        shapes = calls.rank3_shapes(input_shape, owner, "expects the shapes of [query, value] "
                                    "or [query, value, key]")
        for arg, shape in zip(("query", "value", "key"), shapes):
            if shape[-1] is None or shape[-1] == 0:
                raise ValueError(f"{owner}: the last axis of {arg} must be known and "
                                 f"non-empty, got shape {shape}")
        query, value = shapes[0], shapes[1]
        key = shapes[2] if len(shapes) == 3 else value
        if key[1] is not None and value[1] is not None and key[1] != value[1]:
            raise ValueError(f"{owner}: All dimensions of `value` and `key`, except the last "
                             f"one, must be equal. Received: value_shape={value} and "
                             f"key_shape={key}")
        return query, value, key

    def _out_dims(self, query_dim: int) -> tuple[int, ...]:
        return self.output_shape_arg if self.output_shape_arg else (query_dim,)

    def output_shape(self, input_shape: Any) -> Any:
        query, value, key = self._shapes(input_shape)
        out = (query[0], query[1], *self._out_dims(query[2]))
        if self._options.return_attention_scores:
            return [out, (query[0], self.num_heads, query[1], key[1])]
        return out

    def build(self, input_shape: Any) -> None:
        query, value, key = self._shapes(input_shape)
        h, dk, dv = self.num_heads, self.key_dim, self.value_dim
        subs = {}
        for sub, fan_in, width in (("query", query[2], dk), ("key", key[2], dk),
                                   ("value", value[2], dv)):
            layer = _Projection(sub)
            layer.add_weight("kernel", (fan_in, h, width), self.kernel_initializer,
                             regularizer=self.kernel_regularizer)
            if self.use_bias:
                layer.add_weight("bias", (h, width), self.bias_initializer,
                                 regularizer=self.bias_regularizer)
            subs[sub] = layer
        out = _Projection("attention_output")
        out_dims = self._out_dims(query[2])
        out.add_weight("kernel", (h, dv, *out_dims), self.kernel_initializer,
                       regularizer=self.kernel_regularizer)
        if self.use_bias:
            out.add_weight("bias", out_dims, self.bias_initializer,
                           regularizer=self.bias_regularizer)
        subs["attention_output"] = out
        for layer in subs.values():
            layer.trainable = self.trainable
            layer.built = True
        self.__dict__["_sublayers"] = {k: [v] for k, v in subs.items()}
        weights_changed()
        super().build([query, value] if len(input_shape) == 2 else [query, value, key])

    def _weights_of(self, sub: str) -> tuple[Any, Any]:
        params = self.__dict__["_sublayers"][sub][0]._params
        return params[0], (params[1] if len(params) > 1 else None)

    # -- calling --------------------------------------------------------------------------
    def __call__(self, query: Any, value: Any = None, key: Any = None, **kwargs: Any) -> Any:
        """``layer(query, value, key=None, ...)`` as in Keras (see the class doc), or
        ``layer([query, value(, key)])``."""
        return calls.call(self, query, value, key, kwargs, keras_query_mask=True)

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The query's mask for the output (its steps are the query's); the scores,
        with ``return_attention_scores``, get none (as in Keras)."""
        mask = previous_mask[0] if isinstance(previous_mask, (list, tuple)) else previous_mask
        if self._options.return_attention_scores:
            return [mask, None]
        return mask

    def forward(self, inputs: Any, training: bool = False, mask: Any = None,
                **options: Any) -> Any:
        """The attention output (and the weights with ``return_attention_scores``) for
        ``inputs = [query, value(, key)]``; ``mask`` holds the inputs' own masks and
        ``options`` the call arguments (default: those of the model's call)."""
        opts = calls.CallOptions().merged(options, self._owner()) if options else self._options
        arrays, masks, with_key = calls.arrays_and_masks(self, inputs, mask, opts)
        q_in, v_in, k_in = arrays
        b, t, _ = q_in.shape
        s = v_in.shape[1]
        amask = calls.combined_mask(self._owner(), masks, opts, b, t, s, query_mask=True)
        if amask is None and not (training and self.dropout > 0.0) and min(b, t, s) > 0:
            y, p = self._forward_fused(arrays, with_key, opts.return_attention_scores)
        else:
            y, p = self._forward_general(arrays, with_key, amask, training, opts)
        if opts.return_attention_scores:
            return [Tensor(y), Tensor(np.ascontiguousarray(p))]
        return Tensor(y)

    def _output(self, o_flat: np.ndarray, b: int, t: int) -> np.ndarray:
        """The ``attention_output`` projection of the heads' context ``[B * T, H * dv]``."""
        w_o, b_o = self._weights_of("attention_output")
        y, _ = bias_act_forward(matmul(o_flat, w_o.value.reshape(o_flat.shape[1], -1)),
                                None if b_o is None else b_o.value.reshape(-1), None)
        return y.reshape(b, t, *w_o.value.shape[2:])

    def _forward_fused(self, arrays: list, with_key: bool, with_scores: bool
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Unmasked attention without dropout: the heads stay in the projections'
        ``[B * N, H * width]`` layout and each (batch, head) runs in one fused pass
        (:func:`tinynet.ops.arrays.attention.attend`). Without an explicit key, the key and
        value projections are one product (their kernels side by side)."""
        q_in, v_in, k_in = arrays
        b, t, _ = q_in.shape
        h, dk, dv = self.num_heads, self.key_dim, self.value_dim
        scale = np.float32(1.0 / math.sqrt(float(dk)))
        q2 = self._project_flat(("query",), q_in)
        if with_key:
            k2, v2 = self._project_flat(("key",), k_in), self._project_flat(("value",), v_in)
            offsets = (0, 0, 0)
        else:
            k2 = v2 = self._project_flat(("key", "value"), v_in)
            offsets = (0, 0, h * dk)
        p, o_flat = A.attend(q2, k2, v2, offsets, b, h, dk, dv, scale)
        self._cache = ("fused", arrays, with_key, o_flat, with_scores, scale, q2, k2, v2, offsets,
                       p)
        return self._output(o_flat, b, t), p

    def _forward_general(self, arrays: list, with_key: bool, amask: np.ndarray | None,
                         training: bool, opts: calls.CallOptions
                         ) -> tuple[np.ndarray, np.ndarray]:
        """Masks or dropout: the heads as ``[B, H, N, width]`` arrays, batched products
        and NumPy's masked softmax."""
        q_in, v_in, k_in = arrays
        b, t, _ = q_in.shape
        h, dk, dv = self.num_heads, self.key_dim, self.value_dim
        zero_masked = opts.return_attention_scores or self.dropout > 0.0
        q = self._project("query", q_in, dk)                       # [B, H, T, dk]
        scale = np.float32(1.0 / math.sqrt(float(dk)))
        qs = q * scale
        k = self._project("key", k_in, dk)                         # [B, H, S, dk]
        v = self._project("value", v_in, dv)                       # [B, H, S, dv]
        scores = A.bmm(qs, k, trans_b=True)                        # [B, H, T, S]
        m4 = None if amask is None else amask[:, None, :, :]
        p_soft, p = A.masked_softmax(scores, m4, replace=True, zero_masked=zero_masked)
        keep = None
        pd = p
        if training and self.dropout > 0.0:
            keep = calls.dropout_keep(self, p.shape)
            pd = p * keep
        o = A.bmm(pd, v)                                           # [B, H, T, dv]
        o_flat = np.ascontiguousarray(o.transpose(0, 2, 1, 3)).reshape(b * t, h * dv)
        self._cache = ("general", arrays, with_key, o_flat, opts.return_attention_scores, scale,
                       qs, k, v, p_soft, pd, keep, m4, zero_masked)
        return self._output(o_flat, b, t), p

    def _project_flat(self, subs: tuple[str, ...], x: np.ndarray) -> np.ndarray:
        """``x [B, N, d]`` through the projections ``subs`` as one product: ``[B * N,
        sum of H * width]``, each projection a column band in ``subs``' order."""
        pairs = [self._weights_of(sub) for sub in subs]
        b, n, d = x.shape
        kernels = [kernel.value.reshape(d, -1) for kernel, _ in pairs]
        y = matmul(x.reshape(b * n, d),
                   kernels[0] if len(kernels) == 1 else np.concatenate(kernels, axis=1))
        bias = (None if pairs[0][1] is None
                else np.concatenate([bias.value.reshape(-1) for _, bias in pairs]))
        return bias_act_forward(y, bias, None)[0]

    def _project_flat_back(self, subs: tuple[str, ...], x: np.ndarray, g: np.ndarray
                           ) -> np.ndarray:
        """Fills the gradients of :meth:`_project_flat`'s projections from ``g`` (its
        output's gradient); returns dL/dx."""
        pairs = [self._weights_of(sub) for sub in subs]
        b, n, d = x.shape
        dw = matmul(x.reshape(b * n, d), g, trans_a=True)
        db = A.col_sum(g) if pairs[0][1] is not None else None
        kernels, start = [], 0
        for kernel, bias in pairs:
            width = kernel.value.size // d
            kernel.grad = np.ascontiguousarray(dw[:, start:start + width]).reshape(
                kernel.value.shape)
            if bias is not None:
                bias.grad = db[start:start + width].reshape(bias.value.shape)
            kernels.append(kernel.value.reshape(d, -1))
            start += width
        w = kernels[0] if len(kernels) == 1 else np.concatenate(kernels, axis=1)
        return matmul(g, w, trans_b=True).reshape(b, n, d)

    def _project(self, sub: str, x: np.ndarray, width: int) -> np.ndarray:
        """``x [B, N, d] @ kernel [d, H, width] + bias`` as ``[B, H, N, width]``."""
        kernel, bias = self._weights_of(sub)
        b, n, d = x.shape
        y, _ = bias_act_forward(matmul(x.reshape(b * n, d), kernel.value.reshape(d, -1)),
                                None if bias is None else bias.value.reshape(-1), None)
        return np.ascontiguousarray(y.reshape(b, n, self.num_heads, width).transpose(0, 2, 1, 3))

    def _project_back(self, sub: str, x: np.ndarray, grad: np.ndarray) -> np.ndarray:
        """Fills ``sub``'s gradients from ``grad [B, H, N, width]``; returns dL/dx."""
        kernel, bias = self._weights_of(sub)
        b, n, d = x.shape
        g = np.ascontiguousarray(grad.transpose(0, 2, 1, 3)).reshape(b * n, -1)
        kernel.grad = matmul(x.reshape(b * n, d), g, trans_a=True).reshape(kernel.value.shape)
        if bias is not None:
            bias.grad = A.col_sum(g).reshape(bias.value.shape)
        return matmul(g, kernel.value.reshape(d, -1), trans_b=True).reshape(b, n, d)

    def backward(self, grad_output: Any) -> list[Tensor]:
        cache = self._require_cache()
        kind, arrays, _, o_flat, with_scores = cache[:5]
        q_in = arrays[0]
        b, t, _ = q_in.shape
        h, dv = self.num_heads, self.value_dim
        g_y, g_p = calls.split_grads(self._owner(), grad_output, with_scores)
        w_o, b_o = self._weights_of("attention_output")
        g_flat = np.ascontiguousarray(g_y, dtype=np.float32).reshape(b * t, -1)
        if g_flat.shape[1] != w_o.value.size // (h * dv):
            raise ValueError(f"{self._owner()}: grad_output has shape {np.shape(g_y)}, "
                             f"expected the output's shape")
        w_o.grad = matmul(o_flat, g_flat, trans_a=True).reshape(w_o.value.shape)
        if b_o is not None:
            b_o.grad = A.col_sum(g_flat).reshape(b_o.value.shape)
        d_o = matmul(g_flat, w_o.value.reshape(h * dv, -1), trans_b=True)   # [B * T, H * dv]
        if kind == "fused":
            return self._backward_fused(cache, d_o, g_p)
        return self._backward_general(cache, d_o, g_p)

    def _backward_fused(self, cache: tuple, d_o: np.ndarray, g_p: np.ndarray | None
                        ) -> list[Tensor]:
        _, arrays, with_key, _, _, scale, q2, k2, v2, offsets, p = cache
        q_in, v_in, k_in = arrays
        d_q2, d_k2, d_v2 = A.attend_backward(q2, k2, v2, offsets, self.num_heads, self.key_dim,
                                             scale, p, d_o, g_p)
        dq_in = self._project_flat_back(("query",), q_in, d_q2)
        if not with_key:  # key and value: one product, one gradient (their sum)
            return [Tensor(dq_in), Tensor(self._project_flat_back(("key", "value"), v_in,
                                                                  d_k2))]
        dk_in = self._project_flat_back(("key",), k_in, d_k2)
        dv_in = self._project_flat_back(("value",), v_in, d_v2)
        return [Tensor(dq_in), Tensor(dv_in), Tensor(dk_in)]

    def _backward_general(self, cache: tuple, d_o: np.ndarray, g_p: np.ndarray | None
                          ) -> list[Tensor]:
        (_, arrays, with_key, _, _, scale, qs, k, v, p_soft, pd, keep, m4,
         zero_masked) = cache
        q_in, v_in, k_in = arrays
        b, t, _ = q_in.shape
        h, dv = self.num_heads, self.value_dim
        d_o = np.ascontiguousarray(d_o.reshape(b, t, h, dv).transpose(0, 2, 1, 3))
        d_pd = A.bmm(d_o, v, trans_b=True)                         # [B, H, T, S]
        d_v = A.bmm(pd, d_o, trans_a=True)                         # [B, H, S, dv]
        d_p = d_pd * keep if keep is not None else d_pd
        if g_p is not None:
            d_p = d_p + g_p
        d_s = A.masked_softmax_backward(p_soft, d_p, m4, replace=True, zero_masked=zero_masked)
        d_qs = A.bmm(d_s, k)                                       # [B, H, T, dk]
        d_k = A.bmm(d_s, qs, trans_a=True)                         # [B, H, S, dk]
        dq_in = self._project_back("query", q_in, d_qs * scale)
        dk_in = self._project_back("key", k_in, d_k)
        dv_in = self._project_back("value", v_in, d_v)
        if with_key:
            return [Tensor(dq_in), Tensor(dv_in), Tensor(dk_in)]
        return [Tensor(dq_in), Tensor(dv_in + dk_in)]

    # -- config ---------------------------------------------------------------------------
    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "num_heads": self.num_heads,
            "key_dim": self.key_dim,
            "value_dim": self.value_dim,
            "dropout": self.dropout,
            "use_bias": self.use_bias,
            "output_shape": (None if self.output_shape_arg is None
                             else list(self.output_shape_arg)),
            "attention_axes": None if self.attention_axes is None else list(self.attention_axes),
            "kernel_initializer": self.kernel_initializer,
            "bias_initializer": self.bias_initializer,
            "seed": self.seed,
        })
        owner = "MultiHeadAttention"
        for arg in ("kernel_regularizer", "bias_regularizer"):
            config[arg] = regularizers.config_entry(getattr(self, arg), arg, owner)
        saved = calls.options_config(self)
        if saved:
            config["call_options"] = saved
        return config

    @classmethod
    def from_config(cls, config: dict) -> "MultiHeadAttention":
        config = dict(config)
        saved = config.pop("call_options", None)
        layer = super().from_config(config)
        calls.restore_options(layer, saved)
        return layer
