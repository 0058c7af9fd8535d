"""Every example runs end to end (on a tiny budget where it has one); the ones that write
files write them to --out (default outputs/<example>/, git-ignored)."""

import os
import pathlib
import runpy
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(os.path.abspath(EXAMPLES))


# The examples that write files (a model, a log, a plot, an ONNX file), and what in an
# example's source marks it as one that writes.
WRITING = ("augmented_cnn", "custom_kernel_layer", "custom_layer", "export_onnx", "residual_cnn",
           "to_keras", "train_digits_cnn")
WRITERS = (".save(", ".export(", "plot_history(", "savefig(", "CSVLogger(", "ModelCheckpoint(",
           "BackupAndRestore(", "open(", "write_text(", "write_bytes(", "np.save")


def test_the_examples_that_write_files_are_the_listed_ones():
    scripts = sorted(pathlib.Path(EXAMPLES).glob("*.py"))
    writing = [s.stem for s in scripts if any(w in s.read_text() for w in WRITERS)]
    assert writing == list(WRITING), (
        "an example that writes files takes --out DIR (default outputs/<example>) and is "
        "listed in WRITING")


@pytest.mark.parametrize("name", WRITING)
def test_example_writes_to_out_under_outputs_by_default(name):
    """``--out DIR`` is documented, its default is outputs/<example> (relative to the
    working folder, git-ignored), not the working folder itself."""
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
    env.update(COLUMNS="200", NO_COLOR="1")  # one line per option; no colours (3.14)
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, f"{name}.py"), "--help"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "--out OUT" in proc.stdout
    assert f"(created if missing; default: {os.path.join('outputs', name)})" in proc.stdout


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
