"""The MNIST, normalization-zoo and custom-layer examples run end to end on a tiny budget."""

import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tinynet as tn

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "examples"))


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(EXAMPLES)


def write_idx(folder, prefix: str, n: int, size: int, compress: bool, seed: int) -> None:
    """Random ``n`` uint8 ``size x size`` images and labels as IDX files (MNIST names)."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, size=(n, size, size), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n, dtype=np.uint8)
    files = {
        f"{prefix}-images-idx3-ubyte": (np.array([0x803, n, size, size], ">u4").tobytes()
                                        + images.tobytes()),
        f"{prefix}-labels-idx1-ubyte": np.array([0x801, n], ">u4").tobytes() + labels.tobytes(),
    }
    for name, payload in files.items():
        if compress:
            (folder / (name + ".gz")).write_bytes(gzip.compress(payload))
        else:
            (folder / name).write_bytes(payload)


@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gz"])
def test_mnist_cnn_on_generated_idx_files(tmp_path, examples_path, capsys, compress):
    import mnist_cnn

    write_idx(tmp_path, "train", 40, 28, compress, seed=0)
    write_idx(tmp_path, "t10k", 24, 28, not compress, seed=1)  # the other format
    accuracy = mnist_cnn.main(["--data", str(tmp_path), "--epochs", "1", "--limit", "32",
                               "--verbose", "0"])
    out = capsys.readouterr().out
    assert "train: 32 images (28, 28, 1), test: 24 images" in out
    assert 'Model: "sequential"' in out and "group_normalization_1" in out
    assert re.search(r"test loss: \d+\.\d{4}  test accuracy: \d\.\d{4}", out)
    assert 0.0 <= accuracy <= 1.0


def test_mnist_cnn_adam_and_dotted_names(tmp_path, examples_path, capsys):
    import mnist_cnn

    write_idx(tmp_path, "train", 16, 12, True, seed=2)
    write_idx(tmp_path, "t10k", 8, 12, True, seed=3)
    for path in tmp_path.iterdir():  # train-images.idx3-ubyte.gz, as some mirrors name them
        path.rename(tmp_path / path.name.replace("-idx", ".idx"))
    mnist_cnn.main(["--data", str(tmp_path), "--epochs", "1", "--optimizer", "adam",
                    "--verbose", "0"])
    assert "train: 16 images (12, 12, 1)" in capsys.readouterr().out


def test_mnist_cnn_missing_files_say_where_to_put_them(tmp_path, examples_path):
    import mnist_cnn

    write_idx(tmp_path, "train", 4, 8, False, seed=0)
    with pytest.raises(SystemExit) as info:
        mnist_cnn.main(["--data", str(tmp_path)])
    message = str(info.value)
    assert f"missing IDX files in {str(tmp_path)!r}: t10k-images-idx3-ubyte, " \
           f"t10k-labels-idx1-ubyte." in message
    assert "train-images-idx3-ubyte.gz" in message and "never downloads" in message
    with pytest.raises(SystemExit, match="does not exist"):
        mnist_cnn.main(["--data", str(tmp_path / "nowhere")])


def test_normalization_zoo_tiny_budget(examples_path, capsys):
    pytest.importorskip("sklearn")
    import normalization_zoo

    results = normalization_zoo.main(["--epochs", "1", "--limit", "200"])
    out = capsys.readouterr().out
    assert list(results) == ["BN", "BN(m=0.9)", "GN(4)", "IN", "LN(1,2,3)"]
    for row in results.values():
        assert list(row) == [2, 8, 32]
        assert all(0.0 <= v <= 1.0 for v in row.values())
    assert "digits: 200 training and 450 test images, 1 epoch(s)" in out
    assert "(optimizer steps) (100)       (25)        (7)" in out
    assert "BN and BN(m=0.9) trained bitwise-identical weights at every batch size: True" in out
    for label in ("GN(4)", "IN", "LN(1,2,3)"):  # per-sample statistics: batch-independent
        assert re.search(rf"^  {re.escape(label)} +0  \(bitwise identical\)$", out, re.M)
    assert not re.search(r"^  BN +0  \(bitwise identical\)$", out, re.M)
    assert "What it shows." in out and "This run: BN's test accuracy spans" in out


def test_custom_layer_end_to_end(tmp_path):
    """A fresh process: the example registers its layer, loss and metric classes at import.
    Run in tmp_path without --out, it saves to the default folder, outputs/custom_layer
    there, and reloads the model, the loss and the metric from their registered names."""
    pytest.importorskip("sklearn")
    proc = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "custom_layer.py"), "--epochs", "2"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"worst error ratio \S+ \(<= 1 passes\)", out)
    assert "gated_residual (GatedResidual)" in out and "1,152" in out  # the norm's 64 too
    assert re.search(r"^Epoch 2/2 .* - loss: \d\.\d{4} - accuracy: \d\.\d{4} - "
                     r"top2_hit_rate: \d\.\d{4}$", out, re.M)
    assert re.search(r"^test: loss \d\.\d{4}, accuracy \d\.\d{4}, top2_hit_rate \d\.\d{4}$",
                     out, re.M)
    saved = os.path.join("outputs", "custom_layer", "custom_layer.safetensors")
    assert f"saved and reloaded {saved}" in out
    assert ("layers Flatten, Dense, GatedResidual, GatedResidual, Dense; loss "
            "SmoothedCrossentropy; metrics loss, accuracy, top2_hit_rate") in out
    assert "predictions bitwise identical: True" in out
    assert "metrics identical: True" in out
    assert (tmp_path / saved).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs"]


def test_custom_layer_pieces(examples_path):
    """The example's loss and metric by hand: the smoothed crossentropy with no smoothing
    is the built-in sparse crossentropy; the top-k hit rate counts labels among the k
    largest logits (ties do not push a label out)."""
    import custom_layer

    logits = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 0.0], [0.0, 1.0, 3.0]], np.float32)
    labels = np.array([0, 1, 1])  # the second sample's label ties for the largest logit
    plain = tn.losses.SparseCategoricalCrossentropy(from_logits=True)
    value, grad = custom_layer.SmoothedCrossentropy(0.0).value_and_grad(labels, logits)
    ref_value, ref_grad = plain.value_and_grad(labels, logits)
    assert value == pytest.approx(ref_value, rel=1e-6)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-5, atol=1e-7)
    for k, hits in ((1, 2), (2, 3), (3, 3)):
        metric = custom_layer.TopKHitRate(k=k)
        metric.update_state(labels, logits)
        assert float(metric.result()) == pytest.approx(hits / 3)
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_custom_kernel_layer_end_to_end(tmp_path):
    """A fresh process: the example registers its layer class at import. Run in tmp_path
    without --out, it saves to the default folder, outputs/custom_kernel_layer there."""
    pytest.importorskip("sklearn")
    proc = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "custom_kernel_layer.py"), "--epochs", "1"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"worst error ratio \S+ \(<= 1 passes\)", out)
    assert "check_gradients(ForgetfulPReLU 'forgetful_p_re_lu'): gradient mismatch at input[" \
        in out
    assert "channel_p_re_lu (ChannelPReLU)" in out
    saved = os.path.join("outputs", "custom_kernel_layer", "custom_prelu.safetensors")
    assert f"saved and reloaded {saved}: layer 1 is a ChannelPReLU again" in out
    assert "predictions bitwise identical: True" in out
    assert "one more epoch each, weights bitwise identical: True" in out
    assert (tmp_path / saved).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["outputs"]


def test_sequence_conv1d_example_learns_the_wave_shapes(examples_path, capsys):
    import sequence_conv1d

    x, y = sequence_conv1d.make_signals(8, seed=0)
    assert x.shape == (8, 128, 1) and x.dtype == np.float32 and set(y) <= {0, 1, 2, 3}
    accuracy = sequence_conv1d.main(["--epochs", "3", "--samples", "400", "--verbose", "0"])
    out = capsys.readouterr().out
    assert "conv1d" in out and "global_average_pooling1d" in out
    assert re.search(r"test accuracy: \d\.\d{4}", out) and "chirp" in out
    assert accuracy > 0.5  # four classes: chance is 0.25


def test_sequence_lstm_example_reads_digits_as_rows(examples_path, capsys):
    """The digits as 8 rows of 8 pixels through Bidirectional(LSTM): 8 epochs reach 0.87
    on the test images (0.90 with the default 15), asserted above 0.8 (chance is 0.1)."""
    import sequence_lstm

    rows = sequence_lstm.as_rows(np.full((2, 8, 8, 1), 16.0, dtype=np.float32))
    assert rows.shape == (2, 8, 8) and rows.dtype == np.float32 and np.all(rows == 1.0)
    accuracy = sequence_lstm.main(["--epochs", "8", "--verbose", "0"])
    out = capsys.readouterr().out
    assert "bidirectional (Bidirectional)" in out and "(None, 64)" in out
    assert re.search(r"test accuracy: \d\.\d{4}", out) and "9: " in out
    assert accuracy > 0.8


def test_augmented_cnn_example_logs_every_epoch_and_reloads(tmp_path, examples_path, capsys):
    import augmented_cnn

    accuracy = augmented_cnn.main(["--epochs", "3", "--out", str(tmp_path), "--verbose", "0"])
    out = capsys.readouterr().out
    for name in ("random_translation", "random_rotation", "random_zoom", "random_contrast"):
        assert name in out
    assert re.search(r"test loss: \d+\.\d{4}  test accuracy: \d\.\d{4}", out)
    assert "training_log.csv: 3 epochs, columns epoch, accuracy, learning_rate, loss, " \
           "val_accuracy, val_loss" in out
    assert "reloaded test accuracy" in out and 0.0 <= accuracy <= 1.0


def test_tiny_transformer_example_reads_digit_rows(examples_path, capsys):
    """The encoder (a custom positional-embedding layer on tinynet.ops, MultiHeadAttention)
    reaches 0.9 test accuracy on the digits read as 8 rows of 8 pixels (0.93 measured)."""
    import tiny_transformer

    accuracy = tiny_transformer.main(["--verbose", "0"])
    out = capsys.readouterr().out
    assert "(PositionalEmbeddi" in out and "(MultiHeadAttentio" in out  # cut as Keras
    assert re.search(r"test accuracy: \d\.\d{4}", out)
    assert accuracy > 0.9
