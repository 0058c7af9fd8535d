"""examples/to_keras.py runs end to end on a tiny budget: the .keras file is written and
read back; where Keras 3 (with JAX) is installed, Keras continues the training and its
file comes back to tinynet."""

import os
import sys

import pytest

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "examples"))


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(EXAMPLES)


def test_to_keras_short(tmp_path, examples_path, capsys):
    pytest.importorskip("h5py")
    pytest.importorskip("sklearn")
    import to_keras

    result = to_keras.main(["--epochs", "1", "--keras-epochs", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert "metadata.json, config.json, model.weights.h5" in out
    assert "tinynet reads it back: the same predictions, bit for bit" in out
    assert (tmp_path / "digits_cnn.keras").is_file()
    assert result["accuracy"] > 0.2
    keras_ready = "keras" in sys.modules or _importable("keras")
    if keras_ready:
        assert result["keras_gap"] < 1e-4
        assert (tmp_path / "digits_cnn_from_keras.keras").is_file()
        assert result["back_accuracy"] == pytest.approx(result["keras_accuracy"], abs=0.02)
    else:
        assert "Keras is not installed" in out


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True
