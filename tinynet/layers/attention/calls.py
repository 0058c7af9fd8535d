"""How the attention layers are called: the call arguments, the inputs and the masks.

Shared by ``MultiHeadAttention`` (``layer(query, value, key=None, ...)``) and
``Attention``/``AdditiveAttention`` (``layer([query, value(, key)], mask=[...], ...)``).
The call arguments that are not tensors (``return_attention_scores``,
``use_causal_mask``, an array ``attention_mask``) are kept as :class:`CallOptions`: per
call on data, and, for a call on symbolic tensors, on the layer, where the model's runs
find them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tinynet.layers.layer import check_bool
from tinynet.layers.mask_flow import as_mask
from tinynet.layers.node import is_symbolic
from tinynet.tensor import as_array

__all__ = ["CallOptions", "call", "arrays_and_masks", "combined_mask", "split_grads",
           "dropout_keep", "options_config", "restore_options"]

_ARRAY_OPTIONS = ("attention_mask", "query_mask", "value_mask", "key_mask")


@dataclasses.dataclass(frozen=True)
class CallOptions:
    """The non-tensor arguments of one call (arrays for the explicit masks)."""

    return_attention_scores: bool = False
    use_causal_mask: bool = False
    attention_mask: Any = None
    query_mask: Any = None
    value_mask: Any = None
    key_mask: Any = None

    def merged(self, options: dict, owner: str) -> "CallOptions":
        """These options with ``options`` (``None`` values ignored) put over them."""
        fields = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(options) - fields)
        if unknown:
            raise TypeError(f"{owner}: unexpected call arguments {unknown}; expected some of "
                            f"{sorted(fields)}")
        given = {k: v for k, v in options.items() if v is not None}
        for flag in ("return_attention_scores", "use_causal_mask"):
            if flag in given:
                given[flag] = check_bool(given[flag], flag, owner)
        return dataclasses.replace(self, **given)


def rank3_shapes(input_shape: Any, owner: str, not_a_list: str) -> list[tuple]:
    """The shapes of ``[query, value]`` or ``[query, value, key]``, each checked to have
    rank 3; ``not_a_list`` is the message (after ``owner``) for anything else."""
    if not isinstance(input_shape, (list, tuple)) or not all(
            isinstance(s, (list, tuple)) for s in input_shape) or not 2 <= len(
            input_shape) <= 3:
        raise ValueError(f"{owner}: {not_a_list}, got {input_shape!r}")
    shapes = [tuple(s) for s in input_shape]
    for arg, shape in zip(("query", "value", "key"), shapes):
        if len(shape) != 3:
            raise ValueError(f"{owner}: {arg} must have rank 3 [batch, steps, features], "
                             f"got shape {shape}")
    return shapes


def call(layer: Any, first: Any, value: Any, key: Any, kwargs: dict, *,
         keras_query_mask: bool) -> Any:
    """Runs ``layer`` on ``[query, value(, key)]`` (given as ``first, value, key``, or as
    one list in ``first``) with the call arguments ``kwargs``.

    ``keras_query_mask``: an explicit ``query_mask`` is accepted and ignored, as in
    Keras's ``MultiHeadAttention`` (only the query's own mask counts).
    """
    owner = layer._owner()
    training = kwargs.pop("training", None)
    mask = kwargs.pop("mask", None)
    if keras_query_mask:
        kwargs.pop("query_mask", None)
        if mask is not None:
            raise TypeError(f"{owner}: unexpected call argument 'mask'; pass query_mask, "
                            f"value_mask, key_mask or attention_mask")
    if isinstance(first, (list, tuple)):
        if value is not None or key is not None:
            raise ValueError(f"{owner}: pass the inputs either as a list or as query, value "
                             f"and key, not both")
        inputs = list(first)
    else:
        if value is None:
            raise ValueError(f"{owner}: expects query and value (layer(query, value)), got "
                             f"only one input")
        inputs = [first, value] + ([] if key is None else [key])
    if not 2 <= len(inputs) <= 3:
        raise ValueError(f"{owner}: expects [query, value] or [query, value, key], got "
                         f"{len(inputs)} inputs")
    if mask is not None:
        if not isinstance(mask, (list, tuple)) or not 2 <= len(mask) <= 3:
            what = (f"{type(mask).__name__} of shape {np.shape(mask)}"
                    if not isinstance(mask, (list, tuple)) else f"a list of {len(mask)}")
            raise ValueError(f"{owner}: mask must be a list [query_mask, value_mask] (or with "
                             f"a key_mask), got {what}")
        kwargs.update(zip(("query_mask", "value_mask", "key_mask"), mask))
    options = CallOptions().merged(kwargs, owner)
    if is_symbolic(inputs):
        for arg in _ARRAY_OPTIONS:
            if is_symbolic(getattr(options, arg)):
                raise ValueError(f"{owner}: {arg} as a symbolic tensor is not supported; "
                                 f"pass it as an array when calling the layer on data")
        saved = layer.__dict__.pop("_saved_options", None)
        if saved is not None and options == CallOptions():
            options = saved  # a model rebuilt from its config: the saved call arguments
        if layer.inbound_nodes and layer._options != options:
            raise ValueError(f"{owner}: a layer called on symbolic tensors keeps its call "
                             f"arguments; this call's differ from the first call's ({options} "
                             f"vs {layer._options}): use another layer")
        layer._options = options
        return layer._call_symbolic(inputs)
    if not layer.built:
        layer._build_on(inputs)
    from tinynet.ops.autodiff import current

    explicit = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
    if current() is not None:
        from tinynet.layers import traced

        return traced.record_builtin(layer, inputs, bool(training), **explicit)
    return layer.forward(inputs, training=bool(training), **explicit)


def arrays_and_masks(layer: Any, inputs: Any, mask: Any, opts: CallOptions
                     ) -> tuple[list[np.ndarray], list[Any], bool]:
    """``([query, value, key], [query_mask, value_mask, key_mask], key_given)``: the
    inputs as float32 arrays (the key is the value when not given) and their masks as
    bool arrays (each ``None`` when absent: the inputs' own masks from ``mask``, the
    explicit ones from ``opts`` taking precedence)."""
    owner = layer._owner()
    if not isinstance(inputs, (list, tuple)) or not 2 <= len(inputs) <= 3:
        raise ValueError(f"{owner}: expects a list [query, value] or [query, value, key], got "
                         f"{type(inputs).__name__}")
    arrays = [np.ascontiguousarray(as_array(x, f"{owner}: input {i}"), dtype=np.float32)
              for i, x in enumerate(inputs)]
    layer._shapes([(None, *a.shape[1:]) for a in arrays])
    if len({a.shape[0] for a in arrays}) > 1:
        raise ValueError(f"{owner}: query, value and key must hold one batch size, got shapes "
                         f"{[a.shape for a in arrays]}")
    key_given = len(arrays) == 3
    if not key_given:
        arrays.append(arrays[1])
    own = list(mask) if isinstance(mask, (list, tuple)) else [mask, None, None]
    own += [None] * (3 - len(own))
    masks = []
    for i, arg in enumerate(("query_mask", "value_mask", "key_mask")):
        m = getattr(opts, arg)
        m = own[i] if m is None else m
        if m is not None:
            m = as_mask(m, arrays[i].shape[:2], f"{owner}: {arg}")
        masks.append(m)
    return arrays, masks, key_given


def combined_mask(owner: str, masks: list[Any], opts: CallOptions, b: int, t: int, s: int,
                  *, query_mask: bool) -> np.ndarray | None:
    """The ``[B, T, S]`` attention mask (AND of the query's ``[B, T, 1]`` when
    ``query_mask``, the value's and the key's ``[B, 1, S]``, the causal ``[1, T, S]`` and
    ``attention_mask``), or ``None`` when nothing is masked."""
    out = None

    def both(a: np.ndarray | None, m: np.ndarray) -> np.ndarray:
        return m if a is None else a & m

    q_mask, v_mask, k_mask = masks
    if query_mask and q_mask is not None:
        out = both(out, q_mask[:, :, None])
    if v_mask is not None:
        out = both(out, v_mask[:, None, :])
    if k_mask is not None:
        out = both(out, k_mask[:, None, :])
    if opts.use_causal_mask:
        out = both(out, np.tril(np.ones((t, s), dtype=bool))[None])
    if opts.attention_mask is not None:
        am = np.asarray(as_array(opts.attention_mask) if not isinstance(
            opts.attention_mask, np.ndarray) else opts.attention_mask)
        if am.ndim != 3 or am.shape[1:] != (t, s) or am.shape[0] not in (1, b):
            raise ValueError(f"{owner}: attention_mask must have shape {(b, t, s)} "
                             f"[batch, query steps, key steps], got {am.shape}")
        out = both(out, am.astype(bool))
    if out is None:
        return None
    return np.ascontiguousarray(np.broadcast_to(out, (b, t, s)))


def split_grads(owner: str, grad_output: Any, with_scores: bool
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(d output, d scores or None)`` from a backward's ``grad_output``."""
    if not with_scores:
        return as_array(grad_output, f"{owner}: grad_output"), None
    if not isinstance(grad_output, (list, tuple)) or len(grad_output) != 2:
        raise ValueError(f"{owner}: called with return_attention_scores=True, so "
                         f"grad_output must be a list [d_output, d_scores]")
    g_y, g_p = grad_output
    g_p = None if g_p is None else np.asarray(as_array(g_p, f"{owner}: grad_output[1]"),
                                              dtype=np.float32)
    return as_array(g_y, f"{owner}: grad_output[0]"), g_p


def dropout_keep(layer: Any, shape: tuple) -> np.ndarray:
    """The scaled keep-mask of the attention weights' dropout (``1 / (1 - rate)`` where
    kept, 0 where dropped), drawn from the layer's own generator."""
    keep = np.float32(1.0 - layer.dropout)
    kept = layer.rng.random(shape, dtype=np.float32) < keep
    return kept.astype(np.float32) / keep


def options_config(layer: Any) -> dict | None:
    """The call arguments of the layer's calls on symbolic tensors, JSON-able, for its
    config (``None`` when they are the defaults)."""
    opts = layer._options
    if opts == CallOptions():
        return None
    out: dict[str, Any] = {}
    for f in dataclasses.fields(opts):
        value = getattr(opts, f.name)
        if value is None or value is False:
            continue
        out[f.name] = value if isinstance(value, bool) else np.asarray(value).astype(
            bool).tolist()
    return out


def restore_options(layer: Any, config: Any) -> None:
    """Keeps the call arguments from a config (:func:`options_config`) for the layer's
    first call on symbolic tensors (a model rebuilding itself)."""
    if not config:
        return
    if not isinstance(config, dict):
        raise ValueError(f"{type(layer).__name__}: call_options must be a dict, got "
                         f"{config!r:.80}")
    values = {k: (np.asarray(v, dtype=bool) if k in _ARRAY_OPTIONS else v)
              for k, v in config.items()}
    layer._saved_options = CallOptions().merged(values, type(layer).__name__)
