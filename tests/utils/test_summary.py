"""``Sequential.summary()`` / ``tinynet.utils.summary``: Keras 3's text, byte for byte.

The ``GOLDEN_*`` texts are the files in ``shared/reference`` (what Keras 3.15.1 printed;
checked against those files when they are present). The other expected texts were
rendered by Keras 3's ``print_summary`` logic on ``rich`` for the same rows (wrapped and
unbuilt rows, the optimizer line, narrow widths, cropping), and are pinned here.
"""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import (BatchNormalization, Conv2D, Dense, Dropout, Flatten, Input,
                            MaxPooling2D)
from tinynet.utils import summary as summary_module
from tinynet.utils.summary import column_widths, readable_memory_size, summary_text

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "reference"

GOLDEN_MLP_76 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ dense (Dense)                   │ (None, 64)             │         1,344 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dropout (Dropout)               │ (None, 64)             │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense_1 (Dense)                 │ (None, 64)             │         4,160 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense_2 (Dense)                 │ (None, 3)              │           195 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 5,699 (22.26 KB)
 Trainable params: 5,699 (22.26 KB)
 Non-trainable params: 0 (0.00 B)
"""

GOLDEN_MNIST_CONVNET_76 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ conv2d (Conv2D)                 │ (None, 26, 26, 32)     │           320 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ max_pooling2d (MaxPooling2D)    │ (None, 13, 13, 32)     │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ conv2d_1 (Conv2D)               │ (None, 11, 11, 64)     │        18,496 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ max_pooling2d_1 (MaxPooling2D)  │ (None, 5, 5, 64)       │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ flatten (Flatten)               │ (None, 1600)           │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dropout (Dropout)               │ (None, 1600)           │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 10)             │        16,010 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 34,826 (136.04 KB)
 Trainable params: 34,826 (136.04 KB)
 Non-trainable params: 0 (0.00 B)
"""

GOLDEN_MNIST_CONVNET_88 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ conv2d (Conv2D)                      │ (None, 26, 26, 32)          │             320 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ max_pooling2d (MaxPooling2D)         │ (None, 13, 13, 32)          │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ conv2d_1 (Conv2D)                    │ (None, 11, 11, 64)          │          18,496 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ max_pooling2d_1 (MaxPooling2D)       │ (None, 5, 5, 64)            │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ flatten (Flatten)                    │ (None, 1600)                │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dropout (Dropout)                    │ (None, 1600)                │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense (Dense)                        │ (None, 10)                  │          16,010 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 34,826 (136.04 KB)
 Trainable params: 34,826 (136.04 KB)
 Non-trainable params: 0 (0.00 B)
"""

BN_76 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ conv2d (Conv2D)                 │ (None, 6, 6, 4)        │           112 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ batch_normalization             │ (None, 6, 6, 4)        │            16 │
│ (BatchNormalization)            │                        │               │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ flatten (Flatten)               │ (None, 144)            │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 10)             │         1,450 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 1,578 (6.16 KB)
 Trainable params: 1,570 (6.13 KB)
 Non-trainable params: 8 (32.00 B)
"""

UNBUILT_76 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ conv2d (Conv2D)                 │ ?                      │   0 (unbuilt) │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ batch_normalization             │ ?                      │   0 (unbuilt) │
│ (BatchNormalization)            │                        │               │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ flatten (Flatten)               │ ?                      │   0 (unbuilt) │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ ?                      │   0 (unbuilt) │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 0 (0.00 B)
 Trainable params: 0 (0.00 B)
 Non-trainable params: 0 (0.00 B)
"""

MLP_ADAM_76 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ dense (Dense)                   │ (None, 64)             │         1,344 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dropout (Dropout)               │ (None, 64)             │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense_1 (Dense)                 │ (None, 64)             │         4,160 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense_2 (Dense)                 │ (None, 3)              │           195 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 17,099 (66.79 KB)
 Trainable params: 5,699 (22.26 KB)
 Non-trainable params: 0 (0.00 B)
 Optimizer params: 11,400 (44.53 KB)
"""

CONV_40 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━┓
┃                 ┃ Output     ┃ Param ┃
┃ Layer (type)    ┃ Shape      ┃     # ┃
┡━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━┩
│ conv2d (Conv2D) │ (None, 26, │   320 │
│                 │ 26, 32)    │       │
├─────────────────┼────────────┼───────┤
│ max_pooling2d   │ (None, 13, │     0 │
│ (MaxPooling2D)  │ 13, 32)    │       │
├─────────────────┼────────────┼───────┤
│ conv2d_1        │ (None, 11, │ 18,4… │
│ (Conv2D)        │ 11, 64)    │       │
├─────────────────┼────────────┼───────┤
│ max_pooling2d_1 │ (None, 5,  │     0 │
│ (MaxPooling2D)  │ 5, 64)     │       │
├─────────────────┼────────────┼───────┤
│ flatten         │ (None,     │     0 │
│ (Flatten)       │ 1600)      │       │
├─────────────────┼────────────┼───────┤
│ dropout         │ (None,     │     0 │
│ (Dropout)       │ 1600)      │       │
├─────────────────┼────────────┼───────┤
│ dense (Dense)   │ (None, 10) │ 16,0… │
└─────────────────┴────────────┴───────┘
 Total params: 34,826 (136.04 KB)
 Trainable params: 34,826 (136.04 KB)
 Non-trainable params: 0 (0.00 B)
"""

LONG_NAME_76 = """\
Model: "my_model"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ a_really_long_layer_name_that_… │ (None, 3)              │            15 │
│ (Dense)                         │                        │               │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 15 (60.00 B)
 Trainable params: 15 (60.00 B)
 Non-trainable params: 0 (0.00 B)
"""

CROP_100_AT_80 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳
┃ Layer (type)                               ┃ Output Shape                    ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇
│ dense (Dense)                              │ (None, 64)                      │
├────────────────────────────────────────────┼─────────────────────────────────┼
│ dropout (Dropout)                          │ (None, 64)                      │
├────────────────────────────────────────────┼─────────────────────────────────┼
│ dense_1 (Dense)                            │ (None, 64)                      │
├────────────────────────────────────────────┼─────────────────────────────────┼
│ dense_2 (Dense)                            │ (None, 3)                       │
└────────────────────────────────────────────┴─────────────────────────────────┴
 Total params: 5,699 (22.26 KB)
 Trainable params: 5,699 (22.26 KB)
 Non-trainable params: 0 (0.00 B)
"""

def convnet() -> tn.Sequential:
    return tn.Sequential([
        Input((28, 28, 1)), Conv2D(32, 3, activation="relu"), MaxPooling2D(2),
        Conv2D(64, 3, activation="relu"), MaxPooling2D(2), Flatten(), Dropout(0.5),
        Dense(10, activation="softmax")])


def mlp() -> tn.Sequential:
    return tn.Sequential([
        Input((20,)), Dense(64, activation="relu"), Dropout(0.2), Dense(64, activation="relu"),
        Dense(3, activation="softmax")])


def bn_layers() -> list:
    return [Conv2D(4, 3), BatchNormalization(), Flatten(), Dense(10)]


def captured(model: tn.Sequential, **kwargs) -> str:
    calls: list[str] = []
    model.summary(print_fn=calls.append, **kwargs)
    assert len(calls) == 1, "Keras 3 hands the whole text to print_fn in one call"
    return calls[0]


@pytest.fixture
def columns(monkeypatch):
    def set_columns(value: int) -> None:
        monkeypatch.setenv("COLUMNS", str(value))
    set_columns(80)
    return set_columns


@pytest.mark.parametrize("name, text", [
    ("mlp_76", GOLDEN_MLP_76), ("mnist_convnet_76", GOLDEN_MNIST_CONVNET_76),
    ("mnist_convnet_88", GOLDEN_MNIST_CONVNET_88)])
def test_pinned_golden_texts_equal_reference_files(name, text):
    path = REFERENCE / f"keras_summary_{name}.txt"
    if not path.exists():
        pytest.skip("shared/reference is not beside the repository")
    assert path.read_bytes() == text.encode("utf-8")


def test_golden_convnet_76_default_width(columns, capsys):
    model = convnet()
    model.summary()
    assert capsys.readouterr().out == GOLDEN_MNIST_CONVNET_76
    assert captured(model) == GOLDEN_MNIST_CONVNET_76


def test_golden_convnet_88_wide_terminal(columns, capsys):
    columns(200)
    model = convnet()
    model.summary()
    assert capsys.readouterr().out == GOLDEN_MNIST_CONVNET_88
    assert captured(model) == GOLDEN_MNIST_CONVNET_88


def test_golden_with_explicit_line_length(columns):
    columns(200)
    assert captured(convnet(), line_length=76) == GOLDEN_MNIST_CONVNET_76
    columns(80)
    assert captured(mlp(), line_length=76) == GOLDEN_MLP_76


def test_golden_mlp_76(columns, capsys):
    mlp().summary()
    assert capsys.readouterr().out == GOLDEN_MLP_76


def test_wrapped_batch_normalization_name(columns):
    model = tn.Sequential([Input((8, 8, 3)), *bn_layers()])
    assert captured(model) == BN_76


def test_unbuilt_model(columns):
    model = tn.Sequential(bn_layers())
    assert captured(model) == UNBUILT_76
    model.build((None, 8, 8, 3))
    assert captured(model) == BN_76


def test_optimizer_params_line_after_first_step(columns):
    tn.set_seed(0)
    model = mlp()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert captured(model) == GOLDEN_MLP_76          # no optimizer state yet
    x = np.zeros((4, 20), dtype=np.float32)
    y = np.array([0, 1, 2, 1])
    model.train_on_batch(x, y)
    assert model.optimizer.count_params() == 2 * 5699 + 2
    assert captured(model) == MLP_ADAM_76


def test_narrow_width_wraps_shapes_and_cuts_numbers(columns):
    assert captured(convnet(), line_length=40) == CONV_40


def test_long_name_is_cut_with_ellipsis(columns):
    model = tn.Sequential([Input((4,)), Dense(3, name="a_really_long_layer_name_that_does_not_fit")],
                          name="my_model")
    assert captured(model) == LONG_NAME_76


def test_lines_wider_than_console_are_cropped(columns):
    assert captured(mlp(), line_length=100) == CROP_100_AT_80


def test_empty_model(columns):
    text = captured(tn.Sequential())
    lines = text.splitlines()
    assert lines[0] == 'Model: "sequential"'
    assert lines[3].startswith("┡") and lines[4].startswith("└")
    assert lines[5:] == [" Total params: 0 (0.00 B)", " Trainable params: 0 (0.00 B)",
                         " Non-trainable params: 0 (0.00 B)"]


def test_ascii_console_uses_ascii_box(columns, monkeypatch):
    monkeypatch.setattr(summary_module, "_ascii_only", lambda: True)
    text = captured(mlp())
    assert text.splitlines()[1] == "+" + "-" * 74 + "+"
    assert text.splitlines()[2].startswith("| Layer (type)")


def test_frozen_layer_params_are_non_trainable(columns):
    model = mlp()
    model.layers[0].trainable = False
    lines = captured(model).splitlines()
    assert lines[-3:] == [" Total params: 5,699 (22.26 KB)", " Trainable params: 4,355 (17.01 KB)",
                          " Non-trainable params: 1,344 (5.25 KB)"]


@pytest.mark.parametrize("size, text", [
    (0, "0.00 B"), (1023, "1023.00 B"), (1024, "1.00 KB"), (139304, "136.04 KB"),
    (5 * 1024 ** 2, "5.00 MB"), (3 * 1024 ** 6, "3.00 PB")])
def test_readable_memory_size(size, text):
    assert readable_memory_size(size) == text


def test_column_widths():
    assert column_widths(76) == [34, 26, 16]
    assert column_widths(88) == [39, 31, 18]
    with pytest.raises(ValueError, match=re.escape("Insufficient console width to print summary.")):
        column_widths(8)


def test_bad_line_length(columns):
    with pytest.raises(TypeError, match=re.escape("summary: line_length must be an int, got 7.5")):
        summary_text(mlp(), line_length=7.5)
    with pytest.raises(ValueError, match="Insufficient console width"):
        mlp().summary(line_length=8)
