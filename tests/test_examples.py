"""Every example runs end to end (on a tiny budget where it has one)."""

import os
import runpy
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(os.path.abspath(EXAMPLES))


def test_normalization_tour(capsys):
    runpy.run_path(os.path.join(EXAMPLES, "normalization_tour.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "outputs and gradients bitwise identical across gates and threads: True" in out


def test_train_digits_cnn_short(tmp_path, examples_path, capsys):
    pytest.importorskip("sklearn")
    import train_digits_cnn

    accuracy = train_digits_cnn.main(["--epochs", "1", "--out", str(tmp_path), "--verbose", "0"])
    out = capsys.readouterr().out
    assert 'Model: "sequential"' in out and "reloaded test accuracy" in out
    assert accuracy > 0.2  # one epoch: BN moving statistics are still warming up
    assert (tmp_path / "digits_cnn.safetensors").is_file()


@pytest.mark.slow
def test_train_digits_cnn_reaches_097(tmp_path, examples_path):
    """The README's main command: 15 epochs reach at least 0.97 test accuracy."""
    pytest.importorskip("sklearn")
    import train_digits_cnn

    accuracy = train_digits_cnn.main(["--out", str(tmp_path), "--verbose", "0"])
    assert accuracy >= 0.97


def test_residual_cnn_short(tmp_path, examples_path, capsys):
    pytest.importorskip("sklearn")
    import residual_cnn

    accuracy = residual_cnn.main(["--epochs", "2", "--out", str(tmp_path), "--verbose", "0"])
    out = capsys.readouterr().out
    assert 'Model: "residual_cnn"' in out and "Connected to" in out
    assert "reloaded predictions bitwise identical: True" in out
    assert accuracy > 0.5


@pytest.mark.slow
def test_residual_cnn_reaches_097(tmp_path, examples_path):
    """docs/models.md's example: the default epochs reach at least 0.97 test accuracy."""
    pytest.importorskip("sklearn")
    import residual_cnn

    assert residual_cnn.main(["--out", str(tmp_path), "--verbose", "0"]) >= 0.97
