"""Built-in layers call one operation a pass (docs/architecture.md, "The route"): a forward,
a backward and a parameters-only backward of Dense, of each convolution layer and of the
recurrent layers make
exactly one call from layer code (tinynet/layers/) into tinynet/ops/, the pass's entry
in tinynet.ops.arrays. The padding rule (tinynet/ops/arrays/windows.py), which sizes the
output from the shapes, touches no array and is not counted."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tinynet
from tinynet.layers import (GRU, LSTM, Conv1D, Conv2D, Conv2DTranspose, Dense,
                            DepthwiseConv2D, SeparableConv2D, SimpleRNN)

_ROOT = os.path.dirname(os.path.abspath(tinynet.__file__))
_LAYERS = os.path.join(_ROOT, "layers") + os.sep
_OPS = os.path.join(_ROOT, "ops") + os.sep
_SHAPE_RULE = os.path.join(_ROOT, "ops", "arrays", "windows.py")


def _calls_into_ops(run) -> list[str]:
    """The ops functions that layer code calls while ``run()`` runs, in call order."""
    calls = []

    def profile(frame, event, arg):
        if event != "call" or frame.f_back is None:
            return
        callee = os.path.abspath(frame.f_code.co_filename)
        caller = os.path.abspath(frame.f_back.f_code.co_filename)
        if callee.startswith(_OPS) and callee != _SHAPE_RULE and caller.startswith(_LAYERS):
            calls.append(f"{frame.f_globals['__name__']}.{frame.f_code.co_name}")

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(previous)
    return calls


_CONV = "tinynet.ops.arrays.convolution."
# (layer, input shape, the ops.arrays module and name prefix of its pass entries)
CASES = {
    "Dense": (lambda: Dense(5, activation="gelu"), (4, 3), "tinynet.ops.arrays.dense.dense"),
    "Conv2D 3x3": (lambda: Conv2D(4, 3, padding="same", activation="gelu"), (2, 6, 6, 3),
                   _CONV + "conv"),
    "Conv2D 1x1": (lambda: Conv2D(4, 1, activation="relu"), (2, 6, 6, 3), _CONV + "conv"),
    "Conv1D causal": (lambda: Conv1D(4, 3, padding="causal", activation="gelu"), (2, 9, 3),
                      _CONV + "conv"),
    "Conv2DTranspose": (lambda: Conv2DTranspose(4, 3, strides=2, padding="same",
                                                activation="gelu"), (2, 4, 4, 3),
                        _CONV + "conv_transpose"),
    "DepthwiseConv2D": (lambda: DepthwiseConv2D(3, depth_multiplier=2, activation="gelu"),
                        (2, 6, 6, 3), _CONV + "depthwise_conv"),
    "SeparableConv2D": (lambda: SeparableConv2D(4, 3, padding="same", activation="gelu"),
                        (2, 6, 6, 3), _CONV + "separable_conv"),
}


@pytest.mark.parametrize("name", CASES)
def test_each_pass_is_one_ops_call(name):
    make, shape, entry = CASES[name]
    layer = make()
    layer.build((None, *shape[1:]))
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    out = []
    assert _calls_into_ops(lambda: out.append(layer.forward(x, training=True))) == [
        entry + "_forward"]
    g = np.ones(np.asarray(out[0]).shape, dtype=np.float32)
    assert _calls_into_ops(lambda: layer.backward(g)) == [entry + "_backward"]
    assert _calls_into_ops(lambda: layer.backward_params(g)) == [entry + "_backward"]
    assert all(p.grad is not None for p in layer.parameters())


_RNN = "tinynet.ops.arrays.recurrent_layer.rnn"
RECURRENT = {
    "SimpleRNN": lambda: SimpleRNN(4, go_backwards=True),
    "LSTM with dropout": lambda: LSTM(4, return_sequences=True, dropout=0.2,
                                      recurrent_dropout=0.3, seed=1),
    "GRU reset_after=False": lambda: GRU(4, reset_after=False, return_state=True),
}


@pytest.mark.parametrize("name", RECURRENT)
def test_each_recurrent_pass_is_one_ops_call(name):
    layer = RECURRENT[name]()
    layer.build((None, 5, 3))
    x = np.random.default_rng(0).standard_normal((2, 5, 3)).astype(np.float32)
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    out = []
    assert _calls_into_ops(
        lambda: out.append(layer.forward(x, training=True, mask=mask))) == [_RNN + "_forward"]
    outs = out[0] if isinstance(out[0], list) else [out[0]]
    grads = [np.ones(np.asarray(o).shape, dtype=np.float32) for o in outs]
    g = grads if isinstance(out[0], list) else grads[0]
    assert _calls_into_ops(lambda: layer.backward(g)) == [_RNN + "_backward"]
    assert all(p.grad is not None for p in layer.parameters())


def test_the_counter_sees_calls_from_layer_code():
    # a layer that composes two operations in its forward is counted twice
    from tinynet.layers.layer import Layer
    from tinynet.ops.arrays.matmul import matmul
    from tinynet.ops.fused import bias_act_forward

    class TwoOps(Layer):
        def forward(self, x, training=False):
            return bias_act_forward(matmul(x, np.eye(3, dtype=np.float32)), None, None)[0]

    x = np.ones((2, 3), dtype=np.float32)
    layer = TwoOps()
    code = TwoOps.forward.__code__
    TwoOps.forward.__code__ = code.replace(co_filename=os.path.join(_LAYERS, "two_ops.py"))
    assert _calls_into_ops(lambda: layer.forward(x)) == [
        "tinynet.ops.arrays.matmul.matmul", "tinynet.ops.fused.bias_act_forward"]


def test_depthwise_forward_builds_an_unbuilt_layer():
    x = np.random.default_rng(1).standard_normal((2, 5, 5, 3)).astype(np.float32)
    layer = DepthwiseConv2D(3, padding="same")
    y = np.asarray(layer.forward(x))
    assert layer.built and y.shape == (2, 5, 5, 3)
    assert np.array_equal(y, np.asarray(layer(x)))
