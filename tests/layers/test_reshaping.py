"""Flatten and Reshape."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tinynet import Tensor
from tinynet.layers import Flatten, Reshape
from tinynet.testing import check_gradients


# ---------------------------------------------------------------------------------------
# Flatten
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (3, 7), (4, 2, 3), (5,), (0, 3, 2)])
def test_flatten_contract_and_values(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    layer = Flatten()
    y = layer(x)
    assert layer.output_shape(shape) == y.shape
    assert layer.output_shape((None, *shape[1:])) == (None, *y.shape[1:])
    expected = x.reshape(shape[0], int(np.prod(shape[1:])))
    np.testing.assert_array_equal(y.numpy(), expected)  # C order
    assert layer.count_params() == 0


def test_flatten_rank1_gives_column_like_keras():
    layer = Flatten()
    assert layer.output_shape((None,)) == (None, 1)
    y = layer(np.array([1.0, 2.0, 3.0], np.float32))
    assert y.shape == (3, 1)
    assert layer.backward(np.ones((3, 1), np.float32)).shape == (3,)


def test_flatten_unknown_dims():
    assert Flatten().output_shape((None, None, 4)) == (None, None)
    assert Flatten().output_shape((8, 2, 4)) == (8, 8)


def test_flatten_zero_copy_forward_and_backward():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    layer = Flatten()
    y = layer(x)
    assert np.shares_memory(y.numpy(), x)
    g = np.random.default_rng(1).standard_normal((2, 12)).astype(np.float32)
    gx = layer.backward(g)
    assert np.shares_memory(gx.numpy(), g)
    np.testing.assert_array_equal(gx.numpy(), g.reshape(2, 3, 4))


def test_flatten_gradcheck_and_config():
    check_gradients(Flatten(), (2, 3, 2, 2))
    layer = Flatten(name="flat", input_shape=(3, 4))
    cfg = layer.get_config()
    assert cfg == {"name": "flat", "trainable": True, "input_shape": [3, 4]}
    assert Flatten.from_config(cfg).get_config() == cfg
    assert Flatten().name == "flatten"


def test_flatten_errors():
    layer = Flatten()
    with pytest.raises(ValueError, match=re.escape(
            "Flatten 'flatten': input must have rank >= 1 (batch axis included), got shape ()")):
        layer.output_shape(())
    with pytest.raises(RuntimeError, match="backward called before forward"):
        Flatten().backward(np.zeros((1, 1), np.float32))
    layer(np.zeros((2, 3, 2), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "Flatten 'flatten': grad_output must have shape (2, 6) (the last output's shape), "
            "got (2, 3, 2)")):
        layer.backward(np.zeros((2, 3, 2), np.float32))


# ---------------------------------------------------------------------------------------
# Reshape
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_shape,target,out_shape", [
    ((2, 12), (3, 4), (2, 3, 4)),
    ((2, 12), (-1, 4), (2, 3, 4)),
    ((2, 3, 4), (2, -1, 3), (2, 2, 2, 3)),
    ((3, 2, 2, 2), (8,), (3, 8)),
    ((3, 2, 2, 2), (-1,), (3, 8)),
    ((1, 6), (1, 1, 6), (1, 1, 1, 6)),
])
def test_reshape_contract_and_values(in_shape, target, out_shape):
    x = np.arange(int(np.prod(in_shape)), dtype=np.float32).reshape(in_shape)
    layer = Reshape(target)
    y = layer(x)
    assert y.shape == out_shape
    assert layer.output_shape(in_shape) == out_shape
    assert layer.output_shape((None, *in_shape[1:])) == (None, *out_shape[1:])
    np.testing.assert_array_equal(y.numpy(), x.reshape(out_shape))
    assert np.shares_memory(y.numpy(), x)
    g = np.random.default_rng(2).standard_normal(out_shape).astype(np.float32)
    gx = layer.backward(g)
    assert np.shares_memory(gx.numpy(), g)
    np.testing.assert_array_equal(gx.numpy(), g.reshape(in_shape))
    assert layer.count_params() == 0


def test_reshape_unknown_input_dims():
    assert Reshape((-1, 2)).output_shape((None, None, 4)) == (None, None, 2)
    assert Reshape((3, 2)).output_shape((None, None)) == (None, 3, 2)


def test_reshape_accepts_tensor_and_int():
    y = Reshape(6)(Tensor(np.ones((2, 2, 3))))
    assert isinstance(y, Tensor) and y.shape == (2, 6)


def test_reshape_gradcheck_and_config():
    check_gradients(Reshape((-1, 3)), (2, 3, 2))
    layer = Reshape((4, -1), name="rs")
    cfg = layer.get_config()
    assert cfg == {"name": "rs", "trainable": True, "target_shape": [4, -1]}
    clone = Reshape.from_config(cfg)
    assert clone.target_shape == (4, -1) and clone.get_config() == cfg
    assert Reshape((2,)).name == "reshape"


@pytest.mark.parametrize("target,exc,msg", [
    ((-1, -1), ValueError,
     "Reshape: target_shape may contain at most one -1 (unknown dimension), got (-1, -1)"),
    ((2, 0), ValueError,
     "Reshape: target_shape must be a tuple of positive ints with at most one -1, got (2, 0)"),
    ((2, -3), ValueError,
     "Reshape: target_shape must be a tuple of positive ints with at most one -1, got (2, -3)"),
    ((2, 1.5), TypeError,
     "Reshape: target_shape must be a tuple of positive ints with at most one -1, got (2, 1.5)"),
    ("23", TypeError,
     "Reshape: target_shape must be a tuple of positive ints with at most one -1, got '23'"),
    (None, TypeError,
     "Reshape: target_shape must be a tuple of positive ints with at most one -1, got None"),
])
def test_reshape_bad_target(target, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        Reshape(target)


def test_reshape_size_mismatch_names_both_shapes():
    layer = Reshape((5, 2))
    with pytest.raises(ValueError, match=re.escape(
            "Reshape 'reshape': cannot reshape input shape (None, 3, 4) to target_shape (5, 2): "
            "12 elements per sample, target holds 10")):
        layer.build((None, 3, 4))
    with pytest.raises(ValueError, match=re.escape(
            "Reshape 'reshape': cannot reshape input shape (2, 3, 4) to target_shape (5, 2): "
            "12 elements per sample, target holds 10")):
        layer.forward(np.zeros((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "Reshape 'reshape': cannot reshape input shape (None, 7) to target_shape (-1, 2): "
            "7 elements per sample are not a multiple of 2")):
        Reshape((-1, 2)).output_shape((None, 7))


def test_reshape_backward_errors():
    with pytest.raises(RuntimeError, match="backward called before forward"):
        Reshape((2,)).backward(np.zeros((1, 2), np.float32))
    layer = Reshape((2, 3))
    layer(np.zeros((4, 6), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "Reshape 'reshape': grad_output must have shape (4, 2, 3) (the last output's "
            "shape), got (4, 6)")):
        layer.backward(np.zeros((4, 6), np.float32))
