"""Regression tests for the API half of issue 49 (Hardening III): what the bad-input
matrix (tests/hardening/test_bad_inputs.py, section "issue 49") cannot pin because it is
behaviour, not an error: merging layers still merge lists, top-k accuracy never wraps a
label around, convolutions take an empty batch, weight-decay patterns still match, and a
refused name leaves no half-made object behind.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import (Add, Average, Concatenate, Conv1D, Conv2D, Conv2DTranspose, Dense,
                            DepthwiseConv2D, Dot, Input, Maximum, Minimum, Multiply,
                            SeparableConv2D, Subtract)

MERGING = [Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate]


# -- finding 4: merging layers called on one array --------------------------------------------
@pytest.mark.parametrize("cls", [*MERGING, lambda: Dot(1)],
                         ids=[*(c.__name__ for c in MERGING), "Dot"])
@pytest.mark.parametrize("wrap", [np.asarray, tn.Tensor], ids=["ndarray", "Tensor"])
def test_merging_layers_refuse_one_array_even_after_a_list_call(cls, wrap):
    layer = cls()
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    with pytest.raises(ValueError, match=re.escape(
            f"expects a list of inputs (layer([a, b])), got one {type(wrap(x)).__name__} of "
            f"shape (2, 3, 4)")):
        layer(wrap(x))
    out = np.asarray(layer([x, x + 1]))  # a list still merges, and one array still fails
    assert out.shape[0] == 2
    with pytest.raises(ValueError, match="expects a list of inputs"):
        layer(wrap(x))


def test_merging_layers_refuse_one_symbolic_tensor():
    for cls in MERGING:
        with pytest.raises(ValueError, match="expects a list of input tensors, got one tensor"):
            cls()(Input((3, 4)))


# -- finding 8: top-k accuracy and labels outside the classes ------------------------------
@pytest.mark.parametrize("label, expected", [(2, 1.0), (1, 0.0), (3, 0.0), (5, 0.0), (-1, 0.0),
                                             (-3, 0.0)])
def test_sparse_top_k_counts_a_label_outside_the_classes_as_a_miss(label, expected):
    """Keras 3.15 gives 0.0 for a label past the last class; -1 never wraps around to it."""
    metric = tn.metrics.SparseTopKCategoricalAccuracy(k=1)
    metric.update_state(np.array([label]), np.array([[0.0, 0.0, 1.0]], np.float32))
    assert float(metric.result()) == expected


def test_sparse_top_k_mixed_batch_with_k_at_least_the_classes():
    metric = tn.metrics.SparseTopKCategoricalAccuracy(k=5)
    metric.update_state(np.array([5, -1, 1, 0]), np.full((4, 3), 1 / 3, np.float32))
    assert float(metric.result()) == 0.5


# -- finding 9: convolutions on an empty batch -----------------------------------------------
@pytest.mark.parametrize("make, x_shape, y_shape", [
    (lambda: DepthwiseConv2D(3), (0, 5, 5, 2), (0, 3, 3, 2)),
    (lambda: DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2), (0, 5, 5, 2),
     (0, 3, 3, 4)),
    (lambda: SeparableConv2D(4, 3), (0, 5, 5, 2), (0, 3, 3, 4)),
    (lambda: Conv2DTranspose(4, 3, strides=2, padding="same"), (0, 5, 5, 2), (0, 10, 10, 4)),
    (lambda: Conv2D(4, 3), (0, 5, 5, 2), (0, 3, 3, 4)),
    (lambda: Conv1D(3, 2), (0, 5, 2), (0, 4, 3)),
], ids=["depthwise", "depthwise-same-strided", "separable", "transpose", "conv2d", "conv1d"])
def test_convolutions_take_an_empty_batch(make, x_shape, y_shape):
    """As in Keras: an empty output; the backward gives an empty input gradient and zero
    weight gradients."""
    layer = make()
    y = layer(np.ones(x_shape, np.float32), training=True)
    assert y.shape == y_shape
    dx = layer.backward(np.zeros(y_shape, np.float32))
    assert dx.shape == x_shape
    for p in layer.parameters():
        assert p.grad.shape == p.value.shape and not p.grad.any()


# -- finding 10: names with "/" --------------------------------------------------------------
def test_a_refused_slash_name_keeps_two_layers_from_sharing_a_saved_path():
    """``Dense(name="a/b")`` inside a model named "a" would have saved its kernel as
    ``a/b/kernel``, the path of layer "b" of a nested model "a"."""
    with pytest.raises(ValueError, match="name must not contain '/'"):
        tn.Sequential([Input((2,)), Dense(2, name="a/b")])
    model = tn.Sequential([Input((2,)), Dense(2, name="a_b")])
    assert [name for name, _ in model.named_parameters()] == ["a_b/kernel", "a_b/bias"]


# -- finding 3 (API): weight-decay patterns --------------------------------------------------
def test_exclude_from_weight_decay_patterns_each_compile_on_their_own():
    """Each pattern is its own regular expression: a valid one keeps working next to any
    other (a joined pattern broke on a second global flag such as ``(?i)``)."""
    opt = tn.optimizers.AdamW(weight_decay=0.1)
    opt.exclude_from_weight_decay(var_names=["(?i)BIAS", "gam+a"])
    names = {"kernel": True, "bias": False, "gamma": False, "beta": True}
    for name, decayed in names.items():
        p = tn.layers.Parameter(np.ones(2, np.float32), name)
        assert opt._use_weight_decay(p) is decayed
    with pytest.raises(ValueError, match=re.escape("got '[': unterminated character set")):
        opt.exclude_from_weight_decay(var_names=["bias", "["])
