"""Every layer exports: a one-layer model per class of ``tinynet.layers.__all__`` that
computes something (a few argument variants for the convolutions, poolings, resizing and
normalizations), checked by ``onnx.checker`` and run by ONNX Runtime, whose outputs must
equal ``model.predict`` (``rtol=1e-5, atol=1e-6``) at batch sizes 1, 7 and 32, at opsets
13, 17 (the default) and 21 (the cases are in tests/export/cases.py)."""

from __future__ import annotations

import pytest

from tests.export.cases import CASES, one_layer_model
from tests.export.common import check_export

OPSETS = (13, 17, 21)

PARAMS = [pytest.param(name, *case, id=f"{name}-{case[0]}")
          for name, cases in CASES.items() for case in cases]


@pytest.mark.parametrize("name, variant, factory, shape", PARAMS)
def test_layer_exports(name, variant, factory, shape):
    model, xs = one_layer_model(name, factory, shape)
    for opset in OPSETS:
        check_export(model, xs, opset=opset)
