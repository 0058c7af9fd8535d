"""Layers written as ``call()``: forward records the ops, backward replays them.

A layer that defines ``call(inputs, ...)`` (Keras style) instead of ``forward`` and
``backward`` runs through here:

* :func:`forward` opens a :class:`~tinynet.ops.autodiff.Graph`, makes the input(s) tracked
  leaves, runs ``call`` and keeps the graph as the layer's forward state;
* :func:`backward` replays the graph from the output gradient(s), returns the input
  gradient(s) and fills ``.grad`` of every weight the layer owns (zeros for a weight the
  call did not use, so optimizers see one gradient per weight);
* inside another layer's ``call()``, a ``call()`` layer runs inline (its ops join the outer
  graph) and a built-in layer becomes one node whose VJP is its own hand-written
  ``backward`` (:func:`record_builtin`), so it gives the same bits as outside.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from tinynet.layers.hooks import check_allocation
from tinynet.layers.parameter import Parameter
from tinynet.ops import autodiff
from tinynet.tensor import Tensor, as_array

__all__ = ["forward", "backward", "record_builtin", "run_inline", "placeholder_output_shape",
           "call_kwargs", "name_sublayers", "unique_names"]


class Record:
    """What :func:`backward` needs from one :func:`forward`."""

    __slots__ = ("graph", "leaves", "outputs", "listed")

    def __init__(self, graph: autodiff.Graph, leaves: list[Tensor], outputs: list[Tensor],
                 listed: bool) -> None:
        self.graph = graph
        self.leaves = leaves
        self.outputs = outputs
        self.listed = listed


def call_kwargs(layer: Any, training: Any, extra: dict) -> dict:
    """The keyword arguments ``layer.call`` takes: ``training`` only where its signature
    names it (or takes ``**kwargs``), as Keras does."""
    cls = type(layer)
    takes = cls.__dict__.get("_call_takes_training")
    if takes is None:
        params = inspect.signature(cls.call).parameters
        takes = "training" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())
        cls._call_takes_training = takes
    if not takes or "training" in extra:
        return dict(extra)
    return {**extra, "training": training}


def _outputs(out: Any, layer: Any) -> tuple[list[Tensor], bool]:
    if type(out) is Tensor:
        return [out], False
    if isinstance(out, (list, tuple)):
        return [_as_tensor(o, layer) for o in out], True
    return [_as_tensor(out, layer)], False


def _as_tensor(o: Any, layer: Any) -> Tensor:
    if isinstance(o, Tensor):
        return o
    if isinstance(o, Parameter):  # a weight returned as it is (Keras returns the variable)
        graph = autodiff.current()
        if graph is not None and o.trainable:  # recorded: the gradient reaches the weight
            return autodiff.record(o.value.copy(), (graph.param_leaf(o),), lambda g: (g,),
                                   o.path)
        return Tensor._wrap(o.value.copy())  # its values now, not a view later updates
    if isinstance(o, np.ndarray) or np.isscalar(o):
        return Tensor._wrap(np.asarray(o))
    raise TypeError(f"{type(layer).__name__} {layer.name!r}: call() must return a tensor or "
                    f"a list of tensors, got {type(o).__name__}")


def _leaves(graph: autodiff.Graph, x: Any, listed: bool) -> Any:
    if listed:
        return [graph.leaf(_input_array(a)) for a in x]
    return graph.leaf(_input_array(x))


def _input_array(x: Any) -> np.ndarray:
    if type(x) is np.ndarray and x.dtype == np.float32 and x.flags.c_contiguous:
        return x
    if isinstance(x, Tensor):
        return x.data
    arr = np.asarray(x)
    if arr.dtype.kind == "f" and arr.dtype != np.float64:
        return np.ascontiguousarray(arr, dtype=np.float32)
    if arr.dtype.kind in "biu" or arr.dtype == np.float64:
        return arr
    return as_array(x)


def forward(layer: Any, x: Any, training: Any, args: tuple = (), kwargs: dict | None = None,
            call: Any = None) -> Any:
    """Runs ``layer.call`` on ``x`` under a fresh graph; keeps the record for
    :func:`backward`. Returns what ``call`` returned (Tensors).

    ``call``: a functional node's further arguments as ``(template, values)`` (see
    :mod:`tinynet.layers.call_args`); the values become tracked leaves after ``x``'s, and
    :func:`backward` returns one gradient per leaf (a list)."""
    keys = list(x) if isinstance(x, dict) else None  # a dict of inputs: leaves in its order
    if keys is not None:
        x = [x[k] for k in keys]
    listed = isinstance(x, (list, tuple))
    layer._clear_losses()  # a top-level call: its losses (and its layers') start afresh
    graph = autodiff.Graph(owner=layer._name or "")  # no name property lookups per step
    kwargs = kwargs or {}
    with graph:
        leaves = _leaves(graph, x, listed)
        all_leaves = leaves if listed else [leaves]
        if keys is not None:
            leaves = dict(zip(keys, leaves))
        if call is not None:  # no copies on the common path: only a node's arguments
            template, values = call
            extra = [graph.leaf(_input_array(v)) for v in values]
            more_args, more_kwargs = template.fill(extra)
            args, kwargs = (*args, *more_args), {**kwargs, **more_kwargs}
            all_leaves = [*all_leaves, *extra]
        out = layer.call(leaves, *args, **call_kwargs(layer, training, kwargs))
        outputs, out_listed = _outputs(out, layer)
    state = layer.__dict__  # plain writes (a call() layer's __setattr__ tracks sub-layers)
    state["_cache"] = Record(graph, all_leaves, outputs, listed or call is not None)
    if graph.losses:
        _report_added_losses(graph.losses)
    return out if out_listed else outputs[0]


def _report_added_losses(losses: list) -> None:
    """Hands each ``add_loss`` value (summed when not a scalar, as Keras's
    ``_aggregate_additional_loss``) to the training loop's collection."""
    from tinynet.regularizers import report_loss

    for loss in losses:
        data = loss.data if isinstance(loss, Tensor) else np.asarray(loss)
        report_loss(float(np.sum(np.asarray(data, dtype=np.float32))))


def _added_loss_roots(rec: Record) -> tuple[list[Tensor], list[np.ndarray]]:
    """The recorded ``add_loss`` tensors and their cotangents: 1 for each entry, as the
    training loss adds them unscaled (a value that does not depend on the inputs or the
    weights has no gradient)."""
    if not rec.graph.losses:
        return [], []
    roots = [t for t in rec.graph.losses if isinstance(t, Tensor) and t._node is not None
             and t.data.dtype.kind == "f"]
    return roots, [np.ones(t.shape, dtype=t.data.dtype) for t in roots]


def backward_params(layer: Any, grad_output: Any) -> None:
    """The weight gradients of the last :func:`forward`, without the input gradient (a
    model's first layer): the input leaves are detached before the replay, so the ops
    skip what only they needed (a matmul's input-gradient product)."""
    rec = layer._require_cache()
    nodes = [leaf._node for leaf in rec.leaves]
    for leaf in rec.leaves:
        leaf._node = None
    try:
        backward(layer, grad_output, inputs=False)
    finally:
        for leaf, node in zip(rec.leaves, nodes):
            leaf._node = node


def backward(layer: Any, grad_output: Any, inputs: bool = True) -> Any:
    """dL/d(input) of the last :func:`forward` (a list when the layer took a list); fills
    every weight's ``.grad``.

    Raises:
        RuntimeError: no forward ran, or ``call()`` cut the record by turning a tracked
            tensor into NumPy (the message names the layer and says to use ``tinynet.ops``).
    """
    rec = layer._require_cache()
    grads = list(grad_output) if len(rec.outputs) > 1 else [grad_output]
    if len(grads) != len(rec.outputs):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: backward got "
                         f"{len(grads)} gradients for {len(rec.outputs)} outputs")
    arrays = []
    for g, o in zip(grads, rec.outputs):
        if g is None:
            arrays.append(None)
            continue
        if not (type(g) is np.ndarray and g.dtype == o.data.dtype):
            g = np.asarray(g.data if isinstance(g, Tensor) else g, dtype=o.data.dtype)
        if g.shape != o.shape:
            raise ValueError(f"{type(layer).__name__} {layer.name!r}: grad_output must have "
                             f"shape {o.shape} (the last output's shape), got {g.shape}")
        arrays.append(g)
    _check_record(layer, rec)
    if rec.graph.sublayer_grads or "_sublayers" in layer.__dict__:
        for p in layer.parameters():  # a sub-layer's backward writes them: start clean
            p.grad = None
        rec.graph.sublayer_grads.clear()
    roots, cotangents = _added_loss_roots(rec)
    if roots:
        autodiff.backprop([*rec.outputs, *roots], [*arrays, *cotangents], rec.graph)
    else:
        autodiff.backprop(rec.outputs, arrays, rec.graph)
    _fill_param_grads(layer, rec.graph)
    if not inputs:
        return None
    dxs = []
    for leaf in rec.leaves:
        g = leaf._node.grad
        if g is None:
            g = np.zeros_like(leaf.data, dtype=np.float32 if leaf.data.dtype.kind != "f"
                              else leaf.data.dtype)
        dxs.append(Tensor._wrap(np.ascontiguousarray(g)))
    return dxs if rec.listed else dxs[0]


def _check_record(layer: Any, rec: Record) -> None:
    floats = [leaf for leaf in rec.leaves if leaf.data.dtype.kind == "f"
              and leaf._node is not None]
    if not floats:
        return
    cut = all(o._node is None for o in rec.outputs) or (
        rec.graph.escapes and not _reaches_inputs(rec))
    if cut:
        how = (f"it turned {rec.graph.escapes[0]} into a NumPy array" if rec.graph.escapes
               else "its output does not come from its inputs through tinynet ops")
        raise RuntimeError(
            f"{type(layer).__name__} {layer.name!r}: cannot run backward: {how} inside "
            f"call(), which cuts the record of the ops; write call() with tinynet.ops "
            f"(ops.matmul, ops.relu, ...) or Tensor operators, not NumPy")


def _reaches_inputs(rec: Record) -> bool:
    seen: set[int] = set()
    stack = [o._node for o in rec.outputs if o._node is not None]
    targets = {id(leaf._node) for leaf in rec.leaves}
    while stack:
        node = stack.pop()
        if id(node) in targets:
            return True
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.extend(p._node for p in node.parents if p is not None)
    return False


def _fill_param_grads(layer: Any, graph: autodiff.Graph) -> None:
    leaves = graph.param_leaves  # id(param) -> its leaf
    subs = graph.sublayer_grads
    for p in layer.parameters():
        t = leaves.get(id(p))
        g = None if t is None else t._node.grad
        if subs:
            sub = subs.get(id(p))
            if sub is not None:
                g = sub[1] if g is None else g + sub[1]
        if g is None:
            g = np.zeros_like(p.value)
        p.grad = np.ascontiguousarray(g, dtype=np.float32)


def run_inline(layer: Any, x: Any, training: Any, args: tuple, kwargs: dict) -> Any:
    """A ``call()`` layer inside another's ``call()``: its ops join the active graph (and
    its ``add_loss`` values the graph's losses, and its own ``losses``, which the
    top-level call cleared: a layer called twice lists both calls' losses, as Keras)."""
    return layer.call(x, *args, **call_kwargs(layer, training, kwargs))


def record_builtin(layer: Any, x: Any, training: bool, **extra: Any) -> Any:
    """A built-in layer (hand-written ``forward``/``backward``) called inside a ``call()``:
    one node whose VJP restores this call's state and runs the layer's ``backward``;
    the weights' gradients are summed per call into the graph. ``extra``: ``mask=``
    for a layer that takes one."""
    graph = autodiff.current()
    listed = isinstance(x, (list, tuple))
    inputs = list(x) if listed else [x]
    tracked = [t if isinstance(t, Tensor) else None for t in inputs]
    out = layer.forward(x, training=training, **extra)
    state = layer.forward_state()
    params = layer.parameters()

    def vjp(g):
        layer.restore_forward_state(state)
        dx = layer.backward(g)
        graph.add_sublayer_grads(params)
        dxs = list(dx) if listed else [dx]
        return tuple(None if d is None else as_array(d) for d in dxs)

    if isinstance(out, (list, tuple)):  # several outputs: not differentiated through
        return out
    return autodiff.record(as_array(out), tracked, vjp, layer.name)


def _trial(layer: Any, shapes: list, dtypes: list) -> list[Tensor]:
    """Zero batches of two samples for ``shapes`` (unknown sizes taken as 1)."""
    trial = [tuple(2 if i == 0 else (1 if d is None else d) for i, d in enumerate(s))
             for s in shapes]
    for shape in trial:  # load_model's budget first
        check_allocation(layer, "a trial batch (to find its output shape)", shape,
                         transient=True)
    return [Tensor._wrap(np.zeros(shape, dtype=dt)) for shape, dt in zip(trial, dtypes)]


def placeholder_output_shape(layer: Any, input_shape: Any, template: Any = None,
                             extra: list = ()) -> Any:
    """The output shape of a ``call()`` layer found by running ``call`` on a zero batch of
    two samples (unknown sizes taken as 1), nothing recorded, the batch axis reported as
    ``None``; ``template`` and ``extra``: a call's further arguments and the symbolic
    tensors among them (zero batches too)."""
    keys = list(input_shape) if isinstance(input_shape, dict) else None
    if keys is not None:
        input_shape = [input_shape[k] for k in keys]
    listed = isinstance(input_shape, list)
    shapes = input_shape if listed else [input_shape]
    dtypes = getattr(layer, "_input_dtypes", None) or [np.float32] * len(shapes)
    xs = _trial(layer, shapes, dtypes)
    if keys is not None:
        xs = dict(zip(keys, xs))
    args, kwargs = (), {}
    if template is not None:
        args, kwargs = template.fill(_trial(layer, [t.shape for t in extra],
                                            [t.dtype for t in extra]))
    state = layer._cache
    losses = [(sub, list(sub._call_losses)) for sub in layer._nested_layers()]
    with autodiff.no_record():
        out = layer.call(xs if listed or keys is not None else xs[0], *args,
                         **call_kwargs(layer, False, kwargs))
    layer._cache = state
    for sub, kept in losses:  # a shape query adds no loss and clears none
        sub.__dict__["_call_losses"] = kept
    if isinstance(out, (list, tuple)):
        return [(None, *np.shape(o)[1:]) for o in out]
    return (None, *np.shape(out)[1:])


def unique_names(layers: Any) -> None:
    """Makes the automatic names of ``layers`` unique among them (``dense``, ``dense_1``,
    ... in creation order, as Keras names layers in a fresh process); explicit names
    stay. A functional graph's layers and a ``call()`` layer's sub-layers get their
    names here."""
    ordered = sorted(layers, key=lambda s: s._created)
    taken = {s.name for s in ordered if not s._auto_name}
    first_free: dict[str, int] = {}  # per base name: no smaller suffix is free (taken only grows)
    for sub in ordered:
        if sub._auto_name:
            base = sub.default_name()
            k = first_free.get(base, 0)
            name = base if k == 0 else f"{base}_{k}"
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            first_free[base] = k
            sub.name = name
            taken.add(name)


def name_sublayers(layer: Any) -> None:
    """:func:`unique_names` of the layers ``layer`` holds."""
    unique_names(layer.sublayers())
