"""From a tinynet model to an ONNX ``ModelProto``: the arguments checked, the model's
graph walked (nested models inlined), the graph's inputs and outputs named after the
model's, the file written atomically.

Models are walked through their ``layer_graph()`` (one :class:`~tinynet.models.graph.
LayerGraph` for Sequential and functional models alike), so this package imports nothing
from ``tinynet.models`` (whose ``BaseModel.export`` calls it) and reads no private field.
"""

from __future__ import annotations

from typing import Any, Callable

from tinynet.export.builder import OnnxBuilder, unique_name
from tinynet.export.registry import converter_for, takes_integers, takes_unknown_sizes
from tinynet.saving.files import atomic_write, fspath

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "check_exportable", "export_model", "to_onnx",
           "unsupported_layers"]

DEFAULT_OPSET = 17  # LayerNormalization's first; run by every current ONNX Runtime
MIN_OPSET = 13
INSTALL_HINT = "pip install tinynet[onnx]"
# an Input's dtype -> onnx.TensorProto's element type
_ELEM_TYPES = {"float32": 1, "int32": 6, "int64": 7, "bool": 9}


# -- the model's structure ------------------------------------------------------------------
def _graph(layer: Any) -> Any:
    """The model's ``layer_graph()`` (the one walk of Sequential and functional models),
    or ``None``: a plain layer, or a subclassed model (Python code, no graph)."""
    walk = getattr(layer, "layer_graph", None)
    return walk() if walk is not None else None


def _layers(model: Any) -> list[Any]:
    """The layers the model calls, in execution order."""
    return [step.layer for step in _graph(model).steps]


#: The wrappers whose inner layers convert with them: attribute names of those layers.
_WRAPPED = {"TimeDistributed": ("layer",), "Bidirectional": ("forward_layer", "backward_layer")}


def _inner(layer: Any) -> list[Any]:
    """The layers a wrapper (``TimeDistributed``, ``Bidirectional``) converts with it."""
    return [getattr(layer, attr) for attr in _WRAPPED.get(type(layer).__name__, ())]


def unsupported_layers(model: Any, prefix: str = "") -> list[tuple[str, type]]:
    """``(path, class)`` of every layer inside ``model`` (nested models and the layers
    wrappers hold included) that has no ONNX converter."""
    missing: list[tuple[str, type]] = []
    seen: set[int] = set()

    def visit(layer: Any, path: str) -> None:
        if _graph(layer) is not None:
            missing.extend(unsupported_layers(layer, f"{path}/"))
        elif converter_for(layer) is None:
            missing.append((path, type(layer)))
        else:
            for inner in _inner(layer):
                visit(inner, f"{path}/{inner.name}")

    for layer in _layers(model):
        if id(layer) not in seen:
            seen.add(id(layer))
            visit(layer, f"{prefix}{layer.name}")
    return missing


def _mask_layers(model: Any, prefix: str = "") -> tuple[list[str], list[str]]:
    """The paths of the layers inside ``model`` that make a mask (``Masking``,
    ``Embedding(mask_zero=True)``) and of those whose computation takes one."""
    makers: list[str] = []
    takers: list[str] = []
    for layer in _layers(model):
        path = f"{prefix}{layer.name}"
        if _graph(layer) is not None:
            inner = _mask_layers(layer, f"{path}/")
            makers += inner[0]
            takers += inner[1]
        elif type(layer).__name__ == "Masking" or getattr(layer, "mask_zero", False):
            makers.append(path)
        elif layer._forward_takes_mask:
            takers.append(path)
    return makers, takers


# -- the graph walk ---------------------------------------------------------------------------
# A value is ``(name, shape, dtype)``: its ONNX name (``None`` in the checks), its shape
# (batch axis ``None``) and its dtype (``"float32"`` but for an integer or bool Input).
Value = tuple
Leaf = Callable[[Any, list, bool, str], list]


def _walk(graph: Any, args: list[Value], prefix: str, leaf: Leaf) -> list[Value]:
    """A model's ``graph`` on ``args`` (one value per model input), ``leaf(layer,
    values, listed, path)`` giving each layer call's output values; returns the model's
    outputs."""
    values = dict(zip(graph.inputs, args))
    for step in graph.steps:
        outs = _visit(step.layer, [values[key] for key in step.inputs], step.listed,
                      prefix + step.layer.name, leaf)
        for key, o in zip(step.outputs, outs):
            values[key] = o
    return [values[key] for key in graph.outputs]


def _visit(layer: Any, args: list[Value], listed: bool, path: str, leaf: Leaf) -> list[Value]:
    """One call of ``layer`` (a model: its whole graph, inlined)."""
    graph = _graph(layer)
    if graph is not None:
        return _walk(graph, args, f"{path}/", leaf)
    return leaf(layer, args, listed, path)


def _output_shapes(layer: Any, shapes: list[tuple], listed: bool) -> list[tuple]:
    out = layer.compute_output_shape(shapes if listed else shapes[0])
    return [tuple(s) for s in out] if isinstance(out, list) else [tuple(out)]


def _unknown(shape: tuple) -> bool:
    return any(d is None for d in tuple(shape)[1:])


def _check_leaf(owner: str) -> Leaf:
    """The check of one layer call: a ``None`` size beyond the batch axis only where the
    converter takes one (a wrapper's inner layer checked on its own input)."""

    def leaf(layer: Any, args: list, listed: bool, path: str) -> list:
        shapes = [a[1] for a in args]
        for shape in shapes:
            if _unknown(shape) and not takes_unknown_sizes(layer):
                raise ValueError(f"{owner}: layer {path!r} ({type(layer).__name__}) gets an "
                                 f"input of shape {tuple(shape)}, and its export needs every "
                                 f"size but the batch axis known; give the Input a fixed "
                                 f"shape (docs/export.md lists the layers that take unknown "
                                 f"sizes)")
        if type(layer).__name__ == "TimeDistributed":
            inner = layer.layer
            _visit(inner, [(None, (None, *tuple(shapes[0])[2:]), "float32")], False,
                   f"{path}/{inner.name}", leaf)
        return [(None, s, "float32") for s in _output_shapes(layer, shapes, listed)]

    return leaf


def _emit_leaf(b: OnnxBuilder) -> Leaf:
    """The conversion of one layer call: integer inputs cast to float32 first (but for
    the layers that take ids), then the layer's converter."""

    def leaf(layer: Any, args: list, listed: bool, path: str) -> list:
        shapes = [a[1] for a in args]
        with b.scope(path):
            xs = [x if dtype == "float32" or takes_integers(layer)
                  else b.op("Cast", [x], "to_float", to=b.FLOAT) for x, _, dtype in args]
            y = converter_for(layer)(b, layer, xs if listed else xs[0],
                                     shapes if listed else shapes[0])
        ys = y if isinstance(y, list) else [y]
        return [(name, shape, "float32")
                for name, shape in zip(ys, _output_shapes(layer, shapes, listed))]

    return leaf


def _rename(b: OnnxBuilder, old: str, new: str) -> None:
    for node in b.nodes:
        for names in (node.input, node.output):
            for i, value in enumerate(names):
                if value == old:
                    names[i] = new


def _refuse_string_inputs(model: Any, owner: str) -> None:
    """Refuses a model with a string ``Input``, naming it and the text layer that takes it:
    text becomes ids in NumPy, which an ONNX graph of numbers cannot hold."""
    inputs = [t for t in getattr(model, "inputs", []) if getattr(t, "dtype", None) == "string"]
    if not inputs:
        return
    readers = [layer for layer in model.layers if layer.inbound_nodes
               and any(t is inputs[0] for t in layer.inbound_nodes[0].inputs)]
    reader = (f"layer {readers[0].name!r} ({type(readers[0]).__name__})" if readers
              else "its text layer")
    raise ValueError(f"{owner}: input {inputs[0].name!r} has dtype string, and {reader} turns "
                     f"the text into ids in NumPy, which has no ONNX form; export the layers "
                     f"after it on an int Input (tn.Input(shape, dtype='int64')) and run the "
                     f"text layer on the data before the ONNX model")


def check_exportable(model: Any, owner: str = "export") -> tuple[list[str], list[tuple]]:
    """The model's input names and shapes, once it is known to export: built, a
    converter for every layer, and every size but the batch axis known wherever a
    layer's converter needs it (no ``onnx`` needed).

    Raises:
        ValueError: what keeps the model from exporting (the message names it).
    """
    graph = _graph(model)
    if graph is None:
        raise ValueError(f"{owner}: {type(model).__name__} {model.name!r} is a subclassed "
                         f"model: its call() runs Python code, which has no ONNX form; build "
                         f"it as a Sequential or functional Model of built-in layers to "
                         f"export it")
    if not graph.built:
        raise ValueError(f"{owner}: {type(model).__name__} model {model.name!r} is not built "
                         f"yet: call build(input_shape), or fit/predict on data, first")
    _refuse_string_inputs(model, owner)
    missing = unsupported_layers(model)
    if missing:
        listed = ", ".join(f"{path!r} ({cls.__name__})" for path, cls in missing)
        verb = "has" if len(missing) == 1 else "have"
        hint = ""
        if any(cls.__name__ == "Lambda" or getattr(cls, "_has_call", False)
               for _, cls in missing):  # code the exporter cannot read
            hint = ("; a Lambda or a layer written with call() runs Python code, which has "
                    "no ONNX form: rebuild the model from built-in layers to export it")
        raise ValueError(f"{owner}: layer{'s' if len(missing) > 1 else ''} {listed} {verb} "
                         f"no ONNX export; only the built-in layers of tinynet.layers export "
                         f"(docs/export.md lists them){hint}")
    makers, takers = _mask_layers(model)
    if makers and takers:
        raise ValueError(f"{owner}: layer {takers[0]!r} uses the mask {makers[0]!r} makes, "
                         f"and masks have no ONNX form yet; export the model without "
                         f"masking (mask_zero=False, no Masking layer)")
    shapes = [tuple(s) for s in graph.input_shapes]
    _walk(graph, [(None, s, d) for s, d in zip(shapes, graph.input_dtypes)], "",
          _check_leaf(owner))
    return list(graph.input_names), shapes


# -- the ModelProto ---------------------------------------------------------------------------
def to_onnx(model: Any, opset: int | None = None, owner: str = "export") -> Any:
    """The model's inference graph as an ``onnx.ModelProto`` (checked by
    ``onnx.checker.check_model``).

    Args:
        model: A built ``Sequential`` or functional ``Model``.
        opset: The default domain's operator set (from :data:`MIN_OPSET` to the ``onnx``
            package's newest); :data:`DEFAULT_OPSET` when ``None``.
        owner: The prefix of error messages.

    Raises:
        ValueError: the model is not built, a non-batch input size is unknown, a layer
            has no converter, or ``opset`` is out of range.
        TypeError: ``opset`` is not an int.
        ImportError: the ``onnx`` package is not installed.
    """
    opset = _check_opset(opset, owner)
    names, shapes = check_exportable(model, owner)
    onnx = _import_onnx(owner)
    from onnx import TensorProto, helper

    newest = onnx.defs.onnx_opset_version()
    if opset is None:
        opset = DEFAULT_OPSET
    elif opset > newest:
        raise ValueError(f"{owner}: opset {opset} is newer than the installed onnx package "
                         f"knows (up to {newest}); upgrade onnx or pass a lower opset")

    graph = _graph(model)
    dtypes = graph.input_dtypes
    b = OnnxBuilder(opset)
    leaf = _emit_leaf(b)
    b.emit_layer = lambda layer, x, shape, path: _visit(
        layer, [(x, tuple(shape), "float32")], False, path, leaf)[0][:2]
    outputs = list(model.output_names)
    taken: set[str] = set(names)
    final = [unique_name(name, taken) for name in outputs]
    for name in taken:
        b.reserve(name)
    results = _walk(graph, [(n, s, d) for n, s, d in zip(names, shapes, dtypes)], "", leaf)
    values = [r[0] for r in results]
    b.prune(values)
    produced = {out for node in b.nodes for out in node.output}
    renamed: dict[str, str] = {}
    for value, name in zip(values, final):
        if value in produced and value not in renamed:
            _rename(b, value, name)
            renamed[value] = name
        else:
            b.nodes.append(helper.make_node("Identity", [renamed.get(value, value)], [name],
                                            name=f"{name}/Identity"))

    def info(name: str, shape: tuple, dtype: str) -> Any:
        # an unknown size is a symbolic dimension named after the value and the axis
        dims = ["batch", *(f"{name}_axis{axis}" if d is None else d
                           for axis, d in enumerate(shape[1:], 1))]
        return helper.make_tensor_value_info(name, _ELEM_TYPES[dtype], dims)

    onnx_graph = helper.make_graph(
        b.nodes, model.name, [info(n, s, d) for n, s, d in zip(names, shapes, dtypes)],
        [info(n, r[1], r[2]) for n, r in zip(final, results)], initializer=b.initializers)
    opsets = [helper.make_opsetid("", opset)]
    import tinynet

    proto = helper.make_model(onnx_graph, opset_imports=opsets, producer_name="tinynet",
                              producer_version=tinynet.__version__,
                              doc_string=f"tinynet {type(model).__name__} {model.name!r}, "
                                         f"inference graph")
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    onnx.checker.check_model(proto)
    return proto


def _import_onnx(owner: str) -> Any:
    try:
        import onnx
    except ImportError as exc:
        raise ImportError(f"{owner}: exporting to ONNX needs the onnx package: "
                          f"{INSTALL_HINT}") from exc
    return onnx


def _check_opset(opset: Any, owner: str) -> int | None:
    what = f"{owner}: opset must be None or an int >= {MIN_OPSET}, got {opset!r}"
    if opset is None:
        return None
    if isinstance(opset, bool) or not isinstance(opset, int):
        raise TypeError(what)
    if opset < MIN_OPSET:
        raise ValueError(what)
    return int(opset)


def export_model(model: Any, path: Any, format: Any = "onnx", opset: Any = None) -> None:
    """Writes ``model``'s inference graph to ``path`` (what ``model.export`` runs).

    Args:
        model: A built ``Sequential`` or functional ``Model``.
        path: The file to write (a str or ``os.PathLike``); replaced atomically.
        format: ``"onnx"``, the only format.
        opset: The ONNX operator set version (>= 13); :data:`DEFAULT_OPSET` when ``None``.

    Raises:
        ValueError: ``format`` is not ``"onnx"``, a layer has no export (a custom layer),
            the model is not built, or ``opset`` is out of range.
        TypeError: ``path`` is not a str or ``os.PathLike``, or ``opset`` not an int.
        ImportError: the ``onnx`` package is missing (``pip install tinynet[onnx]``).
    """
    owner = f"{type(model).__name__}.export"
    if not (isinstance(format, str) and format == "onnx"):
        raise ValueError(f"{owner}: format must be 'onnx' (the only export format), got "
                         f"{format!r}")
    target = fspath(path, owner)
    _check_opset(opset, owner)
    check_exportable(model, owner)  # before onnx is imported: these errors need no onnx
    atomic_write(target, to_onnx(model, opset, owner).SerializeToString(), owner)
