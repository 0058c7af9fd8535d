"""From a tinynet model to an ONNX ``ModelProto``: the arguments checked, the model's
graph walked (nested models inlined), the graph's inputs and outputs named after the
model's, the file written atomically.

Models are walked through their ``layer_graph()`` (one :class:`~tinynet.models.graph.
LayerGraph` for Sequential and functional models alike), so this package imports nothing
from ``tinynet.models`` (whose ``BaseModel.export`` calls it) and reads no private field.
"""

from __future__ import annotations

from typing import Any

from tinynet.export.builder import OnnxBuilder, unique_name
from tinynet.export.registry import converter_for
from tinynet.saving.files import atomic_write, fspath

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "check_exportable", "export_model", "to_onnx",
           "unsupported_layers"]

DEFAULT_OPSET = 17  # LayerNormalization's first; run by every current ONNX Runtime
MIN_OPSET = 13
INSTALL_HINT = "pip install tinynet[onnx]"


# -- the model's structure ------------------------------------------------------------------
def _graph(layer: Any) -> Any:
    """The model's ``layer_graph()`` (the one walk of Sequential and functional models),
    or ``None``: a plain layer, or a subclassed model (Python code, no graph)."""
    walk = getattr(layer, "layer_graph", None)
    return walk() if walk is not None else None


def unsupported_layers(model: Any, prefix: str = "") -> list[tuple[str, type]]:
    """``(path, class)`` of every layer inside ``model`` (nested models included) that
    has no ONNX converter."""
    missing: list[tuple[str, type]] = []
    seen: set[int] = set()
    for step in _graph(model).steps:
        layer = step.layer
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        path = f"{prefix}{layer.name}"
        if _graph(layer) is not None:
            missing += unsupported_layers(layer, f"{path}/")
        elif converter_for(layer) is None:
            missing.append((path, type(layer)))
    return missing


def _mask_layers(model: Any, prefix: str = "") -> tuple[list[str], list[str]]:
    """The paths of the layers inside ``model`` that make a mask (``Masking``,
    ``Embedding(mask_zero=True)``) and of those whose computation takes one."""
    makers: list[str] = []
    takers: list[str] = []
    for step in _graph(model).steps:
        layer = step.layer
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


def _emit(b: OnnxBuilder, layer: Any, xs: list[str], shapes: list[tuple], listed: bool,
          path: str) -> tuple[list[str], list[tuple]]:
    """Appends one call of ``layer`` (a model: its whole graph) to ``b``."""
    graph = _graph(layer)
    if graph is not None:
        return _emit_graph(b, graph, xs, shapes, f"{path}/")
    arg_shape = shapes if listed else shapes[0]
    out_shape = tuple(layer.compute_output_shape(arg_shape))
    with b.scope(path):
        y = converter_for(layer)(b, layer, xs if listed else xs[0], arg_shape)
    return [y], [out_shape]


def _emit_graph(b: OnnxBuilder, graph: Any, xs: list[str], shapes: list[tuple],
                prefix: str) -> tuple[list[str], list[tuple]]:
    """A model's graph on the values ``xs``; returns its outputs' names and shapes."""
    values = dict(zip(graph.inputs, zip(xs, shapes)))
    for step in graph.steps:
        args = [values[key] for key in step.inputs]
        outs, out_shapes = _emit(b, step.layer, [a[0] for a in args], [a[1] for a in args],
                                 step.listed, prefix + step.layer.name)
        for key, o, s in zip(step.outputs, outs, out_shapes):
            values[key] = (o, s)
    results = [values[key] for key in graph.outputs]
    return [r[0] for r in results], [r[1] for r in results]


def _rename(b: OnnxBuilder, old: str, new: str) -> None:
    for node in b.nodes:
        for names in (node.input, node.output):
            for i, value in enumerate(names):
                if value == old:
                    names[i] = new


def check_exportable(model: Any, owner: str = "export") -> tuple[list[str], list[tuple]]:
    """The model's input names and shapes, once it is known to export: built, every
    non-batch input size known, a converter for every layer (no ``onnx`` needed).

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
    names, shapes = graph.input_names, graph.input_shapes
    for name, shape in zip(names, shapes):
        if any(d is None for d in shape[1:]):
            raise ValueError(f"{owner}: input {name!r} has shape {tuple(shape)}; export needs "
                             f"every size but the batch axis known")
    return names, [tuple(s) for s in shapes]


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

    b = OnnxBuilder(opset)
    outputs = list(model.output_names)
    taken: set[str] = set(names)
    final = [unique_name(name, taken) for name in outputs]
    for name in taken:
        b.reserve(name)
    values, out_shapes = _emit_graph(b, _graph(model), names, shapes, "")
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

    def info(name: str, shape: tuple) -> Any:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, ["batch", *shape[1:]])

    graph = helper.make_graph(b.nodes, model.name, [info(n, s) for n, s in zip(names, shapes)],
                              [info(n, s) for n, s in zip(final, out_shapes)],
                              initializer=b.initializers)
    opsets = [helper.make_opsetid("", opset)]
    import tinynet

    proto = helper.make_model(graph, opset_imports=opsets, producer_name="tinynet",
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
