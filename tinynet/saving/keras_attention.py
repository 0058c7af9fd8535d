"""The attention layers' call arguments in Keras's functional nodes, both ways.

tinynet keeps the non-tensor arguments of an attention layer's call on symbolic tensors
(``use_causal_mask``, ``return_attention_scores``) in the layer's ``call_options``; a
Keras functional node carries them as keyword arguments of the call. The tensors differ
by class: ``MultiHeadAttention`` takes ``(query, value, key=None)`` as separate
arguments, ``Attention`` and ``AdditiveAttention`` one list ``[query, value(, key)]``.
Masks that are tensors of the graph (or constants) in a Keras node have no place in
tinynet's layers, which take the masks their inputs carry: they are refused by name.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ATTENTION_CLASSES", "constant_masks", "keras_attention_entry",
           "tinynet_attention_node"]

#: The Keras classes whose call arguments travel in their functional nodes.
ATTENTION_CLASSES = ("MultiHeadAttention", "Attention", "AdditiveAttention")
#: The call arguments a Keras functional node carries as plain values.
CALL_FLAGS = ("use_causal_mask", "return_attention_scores")
#: MultiHeadAttention's mask arguments (tensors in a Keras node).
MHA_MASKS = ("attention_mask", "query_mask", "value_mask", "key_mask")
#: Attention's and AdditiveAttention's positional call arguments after the inputs.
_LIST_CALL_ARGS = ("mask", "training", "return_attention_scores", "use_causal_mask")


def constant_masks(layer: Any) -> list[str]:
    """The constant masks an attention layer keeps from its call (none, mostly)."""
    options = getattr(layer, "_options", None)
    return [k for k in MHA_MASKS if getattr(options, k, None) is not None]


def keras_attention_entry(out: dict, entry: dict, shapes: dict) -> tuple[dict, dict]:
    """An attention layer's Keras entry (its call arguments moved from the config to the
    nodes, its ``build_config`` the first call's shapes) and its nodes' keyword
    arguments.

    Args:
        out: The layer's Keras entry so far (``config`` still holding ``call_options``).
        entry: The layer's entry in tinynet's functional config (its ``inbound_nodes``).
        shapes: ``(layer, node, tensor) -> shape`` of the model's tensors.
    """
    config = dict(out["config"])
    flags = {k: v for k, v in (config.pop("call_options", None) or {}).items()
             if k in CALL_FLAGS and v}
    out = {**out, "config": config}
    nodes = entry.get("inbound_nodes") or []
    if nodes:
        inputs = [shapes.get(tuple(ref)) for ref in nodes[0]["inputs"]]
        if out["class_name"] == "MultiHeadAttention":
            names = ("query_shape", "value_shape", "key_shape")
            out["build_config"] = {"shapes_dict": dict(zip(names, inputs))}
        else:
            out["build_config"] = {"input_shape": inputs}
    return out, flags


def tinynet_attention_node(class_name: str, name: str, node: dict, kwargs: dict,
                           where: str) -> tuple[list, dict]:
    """A Keras attention node's ``(args, call flags)``: ``args`` as tinynet's node reads
    them (one list of the tensors), the flags its ``call_options`` (those set); the call
    arguments are taken off ``kwargs``.

    Raises:
        ValueError: naming the layer and the argument Keras's node holds that tinynet's
            layer does not take (a mask tensor or constant, a flag that is not a bool, an
            input given twice, a node without its inputs).
    """
    what = f"layer {name!r:.80} ({class_name})"
    if class_name == "MultiHeadAttention":
        tensors = _mha_tensors(what, node, kwargs, where)
    else:
        tensors = _list_tensors(what, node, kwargs, where)
    flags = {k: kwargs.pop(k) for k in CALL_FLAGS if k in kwargs}
    bad = {k: v for k, v in flags.items() if not isinstance(v, bool)}
    if bad:
        raise ValueError(f"{where}: {what} has call arguments {bad!r:.80}; expected True or "
                         f"False")
    return [tensors], {k: v for k, v in flags.items() if v}


def _mha_tensors(what: str, node: dict, kwargs: dict, where: str) -> list:
    """``[query, value(, key)]`` given positionally or as ``value=``/``key=``."""
    args = node.get("args")
    if not isinstance(args, list) or not args:
        raise ValueError(f"{where}: {what} has a node without its query")
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], list) else list(args)
    for arg in ("value", "key"):
        if kwargs.get(arg) is not None:
            if len(tensors) != (2 if arg == "value" else 3) - 1:
                raise ValueError(f"{where}: {what} is given its {arg} twice")
            tensors.append(kwargs.pop(arg))
    masks = sorted(k for k in MHA_MASKS if kwargs.get(k) is not None)
    if masks:
        raise ValueError(f"{where}: {what} is called with {masks}, which tinynet does not "
                         f"take from a .keras file; call it without them, or give the inputs "
                         f"their own masks")
    return tensors


def _list_tensors(what: str, node: dict, kwargs: dict, where: str) -> list:
    """``[query, value(, key)]``, the first positional argument; the call arguments given
    positionally after it are moved into ``kwargs`` (Keras's ``call(inputs, mask=None,
    training=None, return_attention_scores=False, use_causal_mask=False)``)."""
    args = node.get("args")
    if not isinstance(args, list) or not args:
        raise ValueError(f"{where}: {what} has a node without its inputs [query, value]")
    if len(args) > 1 + len(_LIST_CALL_ARGS):
        raise ValueError(f"{where}: {what} has a node with {len(args)} positional "
                         f"arguments; expected at most {1 + len(_LIST_CALL_ARGS)}")
    for key, value in zip(_LIST_CALL_ARGS, args[1:]):
        if key in kwargs:
            raise ValueError(f"{where}: {what} is given its {key} twice")
        kwargs[key] = value
    tensors = args[0]
    if not isinstance(tensors, list) or not 2 <= len(tensors) <= 3:
        got = f"a list of {len(tensors)}" if isinstance(tensors, list) else "one tensor"
        raise ValueError(f"{where}: {what} is called on {got}; expected a list [query, "
                         f"value] or [query, value, key]")
    mask = kwargs.pop("mask", None)
    given = [m for m in (mask if isinstance(mask, list) else [mask]) if m is not None]
    if given:
        constant = any(isinstance(m, dict) and m.get("class_name") == "__numpy__"
                       for m in given)
        kind = "a constant mask" if constant else "a mask tensor"
        raise ValueError(f"{where}: {what} is called with {kind} (mask=), which tinynet "
                         f"does not take from a .keras file; tinynet's layer takes the masks "
                         f"its inputs carry (e.g. from Embedding(mask_zero=True)): call it "
                         f"without mask=")
    return list(tensors)
