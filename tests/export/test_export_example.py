"""examples/export_onnx.py runs end to end on a tiny budget (one epoch, two timed runs)."""

from __future__ import annotations

import os

import pytest

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def test_export_onnx_example(tmp_path, monkeypatch, capsys):
    pytest.importorskip("sklearn")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    monkeypatch.syspath_prepend(EXAMPLES)
    import export_onnx

    result = export_onnx.main(["--epochs", "1", "--repeats", "2", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert (tmp_path / "digits_cnn.onnx").is_file()
    assert "input 'input_layer' ['batch', 8, 8, 1], output 'dense_1' ['batch', 10]" in out
    assert "same predicted class 100.00%" in out and "tinynet / ONNX Runtime = " in out
    assert result["same_class"] == 1.0
    assert result["relative"] < 1e-5  # the largest difference, relative to the largest logit
    assert result["ratio"] > 0
