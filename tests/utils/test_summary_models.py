"""Summaries of functional and nested models: Keras 3's text, byte for byte.

The ``GOLDEN_*`` texts are what Keras 3.15.1 (PyTorch backend) printed for the same
models, each in a fresh process with stdout redirected (``shared/reference``; compared
with those files when they are present): ``*_76`` with ``COLUMNS`` unset (80 columns),
``*_88`` with ``COLUMNS=200`` (Keras caps a plain table at 88 and one with the
``Connected to`` column at 108).
"""

from __future__ import annotations

import pathlib

import pytest

import tinynet as tn
from tinynet.layers import (BatchNormalization, Concatenate, Conv2D, Dense, Flatten,
                            GlobalAveragePooling2D, MaxPooling2D, ReLU)

REFERENCE = pathlib.Path(__file__).resolve().parents[2] / ".." / "shared" / "reference"

GOLDEN_FUNCTIONAL_TWO_INPUTS_76 = """\
Model: "two_inputs"
┏━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)        ┃ Output Shape      ┃    Param # ┃ Connected to      ┃
┡━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━┩
│ image (InputLayer)  │ (None, 8, 8, 1)   │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ conv2d (Conv2D)     │ (None, 8, 8, 8)   │         80 │ image[0][0]       │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ meta (InputLayer)   │ (None, 4)         │          0 │ -                 │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ global_average_poo… │ (None, 8)         │          0 │ conv2d[0][0]      │
│ (GlobalAveragePool… │                   │            │                   │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ dense (Dense)       │ (None, 8)         │         40 │ meta[0][0]        │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ concatenate         │ (None, 16)        │          0 │ global_average_p… │
│ (Concatenate)       │                   │            │ dense[0][0]       │
├─────────────────────┼───────────────────┼────────────┼───────────────────┤
│ dense_1 (Dense)     │ (None, 3)         │         51 │ concatenate[0][0] │
└─────────────────────┴───────────────────┴────────────┴───────────────────┘
 Total params: 171 (684.00 B)
 Trainable params: 171 (684.00 B)
 Non-trainable params: 0 (0.00 B)
"""

GOLDEN_FUNCTIONAL_TWO_INPUTS_88 = """\
Model: "two_inputs"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                  ┃ Output Shape              ┃         Param # ┃ Connected to               ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ image (InputLayer)            │ (None, 8, 8, 1)           │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ conv2d (Conv2D)               │ (None, 8, 8, 8)           │              80 │ image[0][0]                │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ meta (InputLayer)             │ (None, 4)                 │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ global_average_pooling2d      │ (None, 8)                 │               0 │ conv2d[0][0]               │
│ (GlobalAveragePooling2D)      │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense (Dense)                 │ (None, 8)                 │              40 │ meta[0][0]                 │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ concatenate (Concatenate)     │ (None, 16)                │               0 │ global_average_pooling2d[… │
│                               │                           │                 │ dense[0][0]                │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense_1 (Dense)               │ (None, 3)                 │              51 │ concatenate[0][0]          │
└───────────────────────────────┴───────────────────────────┴─────────────────┴────────────────────────────┘
 Total params: 171 (684.00 B)
 Trainable params: 171 (684.00 B)
 Non-trainable params: 0 (0.00 B)
"""

GOLDEN_NESTED_BLOCKS_76 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━┓
┃ Layer (type)                    ┃ Output Shape           ┃       Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━┩
│ block (Sequential)              │ (None, 8, 8, 8)        │           256 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ max_pooling2d (MaxPooling2D)    │ (None, 4, 4, 8)        │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ flatten (Flatten)               │ (None, 128)            │             0 │
├─────────────────────────────────┼────────────────────────┼───────────────┤
│ dense (Dense)                   │ (None, 5)              │           645 │
└─────────────────────────────────┴────────────────────────┴───────────────┘
 Total params: 901 (3.52 KB)
 Trainable params: 885 (3.46 KB)
 Non-trainable params: 16 (64.00 B)
"""

GOLDEN_NESTED_BLOCKS_88 = """\
Model: "sequential"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                         ┃ Output Shape                ┃         Param # ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━┩
│ block (Sequential)                   │ (None, 8, 8, 8)             │             256 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ max_pooling2d (MaxPooling2D)         │ (None, 4, 4, 8)             │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ flatten (Flatten)                    │ (None, 128)                 │               0 │
├──────────────────────────────────────┼─────────────────────────────┼─────────────────┤
│ dense (Dense)                        │ (None, 5)                   │             645 │
└──────────────────────────────────────┴─────────────────────────────┴─────────────────┘
 Total params: 901 (3.52 KB)
 Trainable params: 885 (3.46 KB)
 Non-trainable params: 16 (64.00 B)
"""

GOLDEN = {"functional_two_inputs_76": GOLDEN_FUNCTIONAL_TWO_INPUTS_76,
          "functional_two_inputs_88": GOLDEN_FUNCTIONAL_TWO_INPUTS_88,
          "nested_blocks_76": GOLDEN_NESTED_BLOCKS_76,
          "nested_blocks_88": GOLDEN_NESTED_BLOCKS_88}


def two_inputs() -> tn.Model:
    image, meta = tn.Input((8, 8, 1), name="image"), tn.Input((4,), name="meta")
    x = GlobalAveragePooling2D()(Conv2D(8, 3, padding="same", activation="relu")(image))
    y = Dense(8, activation="relu")(meta)
    return tn.Model([image, meta], Dense(3)(Concatenate()([x, y])), name="two_inputs")


def nested_blocks() -> tn.Sequential:
    block = tn.Sequential([tn.Input((8, 8, 3)), Conv2D(8, 3, padding="same"),
                           BatchNormalization(), ReLU()], name="block")
    return tn.Sequential([block, MaxPooling2D(2), Flatten(), Dense(5)])


MODELS = {"functional_two_inputs": two_inputs, "nested_blocks": nested_blocks}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_pinned_golden_texts_equal_reference_files(name):
    path = REFERENCE / f"keras_summary_{name}.txt"
    if not path.exists():
        pytest.skip("shared/reference is not beside the repository")
    assert path.read_bytes() == GOLDEN[name].encode("utf-8")


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_summary_matches_keras(name, monkeypatch, capsys):
    model_name, width = name.rsplit("_", 1)
    monkeypatch.setenv("COLUMNS", "80" if width == "76" else "200")
    model = MODELS[model_name]()
    model.summary()
    assert capsys.readouterr().out == GOLDEN[name]
    calls: list[str] = []
    model.summary(print_fn=calls.append)
    assert calls == [GOLDEN[name]]


def test_a_chain_built_functionally_has_no_connected_to_column(monkeypatch):
    """Keras prints a functional model that is a plain chain like a Sequential one."""
    monkeypatch.setenv("COLUMNS", "80")
    i = tn.Input((4,))
    model = tn.Model(i, Dense(2)(Dense(3)(i)))
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    assert "Connected to" not in lines[0] and "input_layer (InputLayer)" in lines[0]
    assert len(lines[0].splitlines()[1]) == 76


def test_a_shared_layer_lists_both_calls(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    a, b = tn.Input((3,), name="a"), tn.Input((3,), name="b")
    shared = Dense(2, name="shared")
    model = tn.Model([a, b], Concatenate()([shared(a), shared(b)]))
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    row = [l for l in lines[0].splitlines() if l.startswith("│ shared (Dense)")][0]
    assert "a[0][0], b[0][0]" in row
    concat = [l for l in lines[0].splitlines() if l.startswith("│ concatenate")][0]
    assert "shared[0][0], shared[1][0]" in concat


# Printed by Keras 3.15.1 (PyTorch backend, COLUMNS=200) for the same two models: the
# residual CNN of examples/residual_cnn.py, and a graph with a shared layer, a nested
# Sequential called twice and two outputs (built as below, with keras.layers for tinynet's).
KERAS_RESIDUAL_CNN = """\
Model: "residual_cnn"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                  ┃ Output Shape              ┃         Param # ┃ Connected to               ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ digits (InputLayer)           │ (None, 8, 8, 1)           │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ conv2d (Conv2D)               │ (None, 8, 8, 16)          │             160 │ digits[0][0]               │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ conv2d_1 (Conv2D)             │ (None, 8, 8, 16)          │           2,320 │ conv2d[0][0]               │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ batch_normalization           │ (None, 8, 8, 16)          │              64 │ conv2d_1[0][0]             │
│ (BatchNormalization)          │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ activation (Activation)       │ (None, 8, 8, 16)          │               0 │ batch_normalization[0][0]  │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ conv2d_2 (Conv2D)             │ (None, 8, 8, 16)          │           2,320 │ activation[0][0]           │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ batch_normalization_1         │ (None, 8, 8, 16)          │              64 │ conv2d_2[0][0]             │
│ (BatchNormalization)          │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ add (Add)                     │ (None, 8, 8, 16)          │               0 │ conv2d[0][0],              │
│                               │                           │                 │ batch_normalization_1[0][… │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ activation_1 (Activation)     │ (None, 8, 8, 16)          │               0 │ add[0][0]                  │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ max_pooling2d (MaxPooling2D)  │ (None, 4, 4, 16)          │               0 │ activation_1[0][0]         │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ conv2d_3 (Conv2D)             │ (None, 4, 4, 16)          │           2,320 │ max_pooling2d[0][0]        │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ batch_normalization_2         │ (None, 4, 4, 16)          │              64 │ conv2d_3[0][0]             │
│ (BatchNormalization)          │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ activation_2 (Activation)     │ (None, 4, 4, 16)          │               0 │ batch_normalization_2[0][… │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ conv2d_4 (Conv2D)             │ (None, 4, 4, 16)          │           2,320 │ activation_2[0][0]         │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ batch_normalization_3         │ (None, 4, 4, 16)          │              64 │ conv2d_4[0][0]             │
│ (BatchNormalization)          │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ add_1 (Add)                   │ (None, 4, 4, 16)          │               0 │ max_pooling2d[0][0],       │
│                               │                           │                 │ batch_normalization_3[0][… │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ activation_3 (Activation)     │ (None, 4, 4, 16)          │               0 │ add_1[0][0]                │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ group_normalization           │ (None, 4, 4, 16)          │              32 │ activation_3[0][0]         │
│ (GroupNormalization)          │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ global_average_pooling2d      │ (None, 16)                │               0 │ group_normalization[0][0]  │
│ (GlobalAveragePooling2D)      │                           │                 │                            │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ dense (Dense)                 │ (None, 10)                │             170 │ global_average_pooling2d[… │
└───────────────────────────────┴───────────────────────────┴─────────────────┴────────────────────────────┘
 Total params: 9,898 (38.66 KB)
 Trainable params: 9,770 (38.16 KB)
 Non-trainable params: 128 (512.00 B)
"""

KERAS_SHARED_NESTED_TWO_OUTPUTS = """\
Model: "multi"
┏━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ Layer (type)                  ┃ Output Shape              ┃         Param # ┃ Connected to               ┃
┡━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ a (InputLayer)                │ (None, 5)                 │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ b (InputLayer)                │ (None, 5)                 │               0 │ -                          │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ shared (Dense)                │ (None, 4)                 │              24 │ a[0][0], b[0][0]           │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ block (Sequential)            │ (None, 3)                 │              15 │ shared[0][0], shared[1][0] │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ subtract (Subtract)           │ (None, 3)                 │               0 │ block[0][0], block[1][0]   │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ concatenate (Concatenate)     │ (None, 6)                 │               0 │ block[0][0], block[1][0]   │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ p (Dense)                     │ (None, 2)                 │               8 │ subtract[0][0]             │
├───────────────────────────────┼───────────────────────────┼─────────────────┼────────────────────────────┤
│ q (Dense)                     │ (None, 1)                 │               7 │ concatenate[0][0]          │
└───────────────────────────────┴───────────────────────────┴─────────────────┴────────────────────────────┘
 Total params: 54 (216.00 B)
 Trainable params: 54 (216.00 B)
 Non-trainable params: 0 (0.00 B)
"""


def test_residual_cnn_summary_matches_keras(monkeypatch, capsys):
    import sys
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.syspath_prepend(str(pathlib.Path(__file__).resolve().parents[2] / "examples"))
    import residual_cnn

    residual_cnn.build_model().summary()
    assert capsys.readouterr().out == KERAS_RESIDUAL_CNN
    sys.modules.pop("residual_cnn", None)


def test_shared_nested_two_outputs_summary_matches_keras(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    a, b = tn.Input((5,), name="a"), tn.Input((5,), name="b")
    shared = Dense(4, activation="tanh", name="shared")
    block = tn.Sequential([tn.Input((4,)), Dense(3)], name="block")
    u, v = block(shared(a)), block(shared(b))
    tn.Model([a, b], [Dense(2, name="p")(tn.layers.Subtract()([u, v])),
                      Dense(1, name="q")(Concatenate()([u, v]))], name="multi").summary()
    assert capsys.readouterr().out == KERAS_SHARED_NESTED_TWO_OUTPUTS
