"""plot_history writes a PNG of the training curves (matplotlib, Agg)."""

import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import Dense, Input
from tinynet.utils import plot_history

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plot_from_fit_history(tmp_path):
    pytest.importorskip("matplotlib")
    tn.set_seed(0)
    model = tn.Sequential([Input((3,)), Dense(2)])
    model.compile("sgd", "sparse_categorical_crossentropy", metrics=["accuracy"])
    x = np.random.default_rng(0).random((12, 3), dtype=np.float32)
    y = np.arange(12) % 2
    history = model.fit(x, y, epochs=2, verbose=0, validation_split=0.25)
    path = tmp_path / "curves.png"
    assert plot_history(history, path) == str(path)
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_from_dict_without_validation(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    backend = matplotlib.get_backend()
    path = tmp_path / "loss.png"
    plot_history({"loss": [1.0, 0.5, 0.25], "mae": [0.9, 0.4, 0.2], "val_mae": [1.0]}, path)
    assert path.read_bytes()[:8] == PNG_MAGIC
    assert matplotlib.get_backend() == backend  # the user's backend is left alone


@pytest.mark.parametrize("history, error, message", [
    ({}, ValueError, "plot_history: the history holds no epochs to plot"),
    ({"loss": []}, ValueError, "plot_history: the history holds no epochs to plot"),
    ({"loss": ["a"]}, ValueError, "plot_history: history['loss'] must be a list of numbers"),
    ([1, 2], TypeError, "plot_history: history must be a History (as returned by fit) or a "
                        "dict of per-epoch lists, got list"),
])
def test_bad_history(tmp_path, history, error, message):
    with pytest.raises(error, match=re.escape(message)):
        plot_history(history, tmp_path / "x.png")


def test_missing_matplotlib(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match=re.escape('pip install "tinynet[examples]"')):
        plot_history({"loss": [1.0]}, tmp_path / "x.png")
