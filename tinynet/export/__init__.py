"""Export: a tinynet model's inference graph as an ONNX file (``model.export(path)``).

``model.export(path, format="onnx", opset=None)`` (:meth:`BaseModel.export
<tinynet.models.base.BaseModel.export>`) runs :func:`export_model`; :func:`to_onnx` returns
the ``onnx.ModelProto`` without writing it. The graph takes and returns channels-last
arrays exactly as the model does (an ``Input``'s integer dtype kept), with a dynamic
batch axis and symbolic sizes where the model's are ``None``, its inputs named after the
model's ``Input`` layers and its outputs after its output layers. Each tinynet layer
class has one converter (:mod:`.convert_basic`, :mod:`.convert_conv`,
:mod:`.convert_image`, :mod:`.convert_norm`, :mod:`.convert_recurrent`), built on :class:`.builder.OnnxBuilder` and
the ``onnx`` package's helper API; docs/export.md maps every layer to its operators.

The ``onnx`` package is an optional dependency (``pip install tinynet[onnx]``), imported
only when a model is exported.
"""

from tinynet.export.onnx_export import (DEFAULT_OPSET, MIN_OPSET, check_exportable,
                                        export_model, to_onnx, unsupported_layers)
from tinynet.export.registry import converter_for, exported_names

__all__ = ["DEFAULT_OPSET", "MIN_OPSET", "check_exportable", "converter_for", "export_model",
           "exported_names", "to_onnx", "unsupported_layers"]
