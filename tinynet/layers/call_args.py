"""The arguments of a ``call()`` layer's call on symbolic tensors beyond its first input.

Keras records every argument of a layer's call in the node: ``Endpoint()(logits, targets,
sample_weight)`` makes ``targets`` and ``sample_weight`` inputs of the node (the graph
reaches the model's inputs through them), and ``Scale()(x, scale=2.0)`` runs with
``scale=2.0`` whenever the model runs. A :class:`CallTemplate` keeps those arguments with
each symbolic tensor replaced by a :class:`Slot`, the tensor's place among the node's
extra inputs; :meth:`CallTemplate.fill` puts values (arrays, or a ``call()`` record's
tracked tensors) back in those places for a run. Tensors are found in the arguments
themselves and inside lists, tuples and dicts, as Keras finds them.
"""

from __future__ import annotations

import inspect
from typing import Any

from tinynet.layers.node import SymbolicTensor

__all__ = ["Slot", "CallTemplate", "split_call", "first_argument", "template_from_config",
           "NODE_INPUT"]

NODE_INPUT = "__node_input__"  # a slot in a saved node: {"__node_input__": index}


class Slot:
    """The place of one symbolic argument among a node's extra inputs."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Slot) and other.index == self.index

    def __hash__(self) -> int:
        return hash(("Slot", self.index))

    def __repr__(self) -> str:
        return f"Slot({self.index})"


def _replace(value: Any, leaf: Any, tuples: bool = True) -> Any:
    """``value`` with each entry that ``leaf(entry)`` answers (not ``None``) replaced by
    that answer, walking lists, tuples (kept as tuples, or lists when not ``tuples``) and
    dicts in order."""
    new = leaf(value)
    if new is not None:
        return new
    if isinstance(value, (list, tuple)):
        items = [_replace(v, leaf, tuples) for v in value]
        return tuple(items) if tuples and isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {k: _replace(v, leaf, tuples) for k, v in value.items()}
    return value


def _hollow(value: Any, tensors: list[SymbolicTensor]) -> Any:
    """``value`` with every symbolic tensor in it replaced by a :class:`Slot` (appended to
    ``tensors``)."""
    def leaf(entry: Any) -> Slot | None:
        if not isinstance(entry, SymbolicTensor):
            return None
        tensors.append(entry)
        return Slot(len(tensors) - 1)
    return _replace(value, leaf)


class CallTemplate:
    """A call's arguments after its first input, symbolic tensors as :class:`Slot` s.

    Attributes:
        args: The positional arguments after the first.
        kwargs: The keyword arguments (``training`` is never kept: fit, evaluate and
            predict set it).
        count: How many symbolic tensors the arguments hold (the node's extra inputs).
    """

    __slots__ = ("args", "kwargs", "count")

    def __init__(self, args: tuple, kwargs: dict, count: int) -> None:
        self.args = tuple(args)
        self.kwargs = dict(kwargs)
        self.count = count

    def fill(self, values: list) -> tuple[tuple, dict]:
        """``(args, kwargs)`` with ``values[i]`` in the place of ``Slot(i)``."""
        def leaf(entry: Any) -> Any:
            return values[entry.index] if isinstance(entry, Slot) else None
        return _replace(self.args, leaf), _replace(self.kwargs, leaf)

    def get_config(self, encode: Any) -> dict:
        """``{"args": [...], "kwargs": {...}}`` with each slot as ``encode(index)`` and
        tuples as lists (JSON-able when the plain values are)."""
        def leaf(entry: Any) -> Any:
            return encode(entry.index) if isinstance(entry, Slot) else None
        return {"args": _replace(list(self.args), leaf, tuples=False),
                "kwargs": _replace(self.kwargs, leaf, tuples=False)}

    def __repr__(self) -> str:
        return f"CallTemplate(args={self.args!r}, kwargs={self.kwargs!r})"


def template_from_config(config: Any, take: Any = None, owner: str = "") -> CallTemplate:
    """The template :meth:`CallTemplate.get_config` wrote: ``take(entry)`` returns the
    slot index of an entry that stands for a tensor, else ``None`` (default: tinynet's
    ``{"__node_input__": index}``).

    Raises:
        ValueError: ``config`` is not ``{"args": [...], "kwargs": {...}}``.
    """
    if take is None:
        def take(entry: Any) -> Any:
            if isinstance(entry, dict) and set(entry) == {NODE_INPUT}:
                index = entry[NODE_INPUT]
                if isinstance(index, int) and not isinstance(index, bool) and index >= 0:
                    return index
                raise ValueError(f"{owner}: a call argument's input index must be an int "
                                 f">= 0, got {index!r}")
            return None
    slots: set[int] = set()

    def walk(value: Any) -> Any:
        def leaf(entry: Any) -> Slot | None:
            index = take(entry)
            if index is None:
                return None
            slots.add(index)
            return Slot(index)
        return _replace(value, leaf)
    if (not isinstance(config, dict) or not isinstance(config.get("args", []), list)
            or not isinstance(config.get("kwargs", {}), dict)):
        raise ValueError(f"{owner}: a node's call arguments must be {{'args': [...], "
                         f"'kwargs': {{...}}}}, got {type(config).__name__}")
    args, kwargs = walk(config.get("args", [])), walk(config.get("kwargs", {}))
    if slots != set(range(len(slots))):
        raise ValueError(f"{owner}: a node's call arguments must number their inputs 0, 1, "
                         f"2, ..., got {sorted(slots)}")
    return CallTemplate(tuple(args), kwargs, len(slots))


def split_call(args: tuple, kwargs: dict) -> tuple[CallTemplate | None, list[SymbolicTensor]]:
    """The template of a symbolic call's extra arguments and the symbolic tensors in them,
    in the order of the slots; ``(None, [])`` when there are none."""
    kwargs = {k: v for k, v in kwargs.items() if k != "training"}
    if not args and not kwargs:
        return None, []
    tensors: list[SymbolicTensor] = []
    template = CallTemplate(_hollow(tuple(args), tensors), _hollow(kwargs, tensors),
                            len(tensors))
    return template, tensors


def first_argument(layer: Any, kwargs: dict) -> Any:
    """A call's first input given by name, taken out of ``kwargs``: Keras allows
    ``layer(inputs=x)`` and, for ``call(self, logits, ...)``, ``layer(logits=x)``.

    Raises:
        TypeError: no input given at all.
    """
    cls = type(layer)
    first = list(inspect.signature(cls.call if cls._has_call else cls.forward)
                 .parameters)[1:2]
    names = [*first, "inputs"] if cls._has_call else ["inputs", *first]
    for name in names:
        if name in kwargs:
            return kwargs.pop(name)
    raise TypeError(f"{cls.__name__} {layer.name!r}: called without an input; pass it "
                    f"first (layer(x)) or by name ({names[0]}=x)")
