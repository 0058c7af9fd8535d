"""The export contract: every class of ``tinynet.layers.__all__`` that computes something
has an ONNX converter and a case in tests/export/cases.py (runs without onnx installed)."""

from __future__ import annotations

from tests.export.cases import CASES, NOT_COMPUTING

from tinynet import layers as L


def test_every_layer_has_an_export_and_a_case():
    """The contract: each class of tinynet.layers.__all__ that computes something has a
    converter and a case in cases.py (a new layer without both fails here, named)."""
    from tinynet.export import exported_names

    computing = [n for n in L.__all__ if n not in NOT_COMPUTING]
    no_export = [n for n in computing if n not in exported_names()]
    no_case = [n for n in computing if n not in CASES]
    assert no_export == [] and no_case == [], (
        f"layers without an ONNX export: {no_export}; without a case in "
        f"tests/export/cases.py: {no_case}")
