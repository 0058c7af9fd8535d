"""The export contract: every class of ``tinynet.layers.__all__`` that computes something
has an ONNX converter and a case in tests/export/cases.py (runs without onnx installed)."""

from __future__ import annotations

from tests.export.cases import CASES, NO_EXPORT, NOT_COMPUTING

from tinynet import layers as L


def test_every_layer_has_an_export_and_a_case():
    """The contract: each class of tinynet.layers.__all__ that computes something has a
    converter and a case in cases.py (a new layer without both fails here, named)."""
    from tinynet.export import exported_names

    computing = [n for n in L.__all__ if n not in NOT_COMPUTING and n not in NO_EXPORT]
    no_export = [n for n in computing if n not in exported_names()]
    no_case = [n for n in computing if n not in CASES]
    assert no_export == [] and no_case == [], (
        f"layers without an ONNX export: {no_export}; without a case in "
        f"tests/export/cases.py: {no_case}")


def test_a_lambda_layer_gets_a_clear_export_error(tmp_path):
    """A Lambda (NO_EXPORT) is refused before onnx is imported, the message naming the
    layer and why."""
    import pytest

    import tinynet as tn
    from tinynet import ops

    model = tn.Sequential([tn.Input((3,)), L.Dense(2), L.Lambda(lambda t: ops.tanh(t))])
    with pytest.raises(ValueError, match=r"layer 'lambda' \(Lambda\) has no ONNX export.*"
                                         r"runs Python code, which has no ONNX form"):
        model.export(tmp_path / "m.onnx")
