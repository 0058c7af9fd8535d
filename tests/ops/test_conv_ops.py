"""tinynet.ops convolution and pooling: the built-in layers' bits (float32), finite-difference
gradients (float64), PyTorch values and gradients, argument errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

from tinynet import ops
from tinynet.layers.conv1d import Conv1D
from tinynet.layers.conv2d_transpose import Conv2DTranspose
from tinynet.layers.convolutional import Conv2D
from tinynet.layers.depthwise_conv2d import DepthwiseConv2D
from tinynet.layers.layer import Layer
from tinynet.layers.pooling import (AveragePooling1D, AveragePooling2D, MaxPooling1D,
                                    MaxPooling2D)
from tinynet.ops import autodiff
from tinynet.ops.core import OpError
from tinynet.tensor import Tensor


def _rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _run(fn, arrays, cot, **kw):
    """``fn(*arrays, **kw)`` on tracked leaves, then the gradients of ``sum(out * cot)``."""
    with autodiff.Graph() as graph:
        leaves = [graph.leaf(a) for a in arrays]
        out = fn(*leaves, **kw)
        autodiff.backprop([out], [cot])
    assert isinstance(out, Tensor)
    return out.data, [leaf._node.grad for leaf in leaves]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype == np.float32
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


# -- (1) float32: the layers' bits -------------------------------------------------------
def _layer_vs_op(layer, weight_attr, x, kernel, op, **kw):
    layer.build((None, *x.shape[1:]))
    layer.set_weights([kernel])
    y_layer = np.asarray(layer.forward(x)).copy()
    cot = _rand(y_layer.shape, 99)
    dx_layer = np.asarray(layer.backward(cot)).copy()
    dk_layer = getattr(layer, weight_attr).grad.copy()
    y, (dx, dk) = _run(op, [x, kernel], cot, **kw)
    _same_bits(y, y_layer)
    _same_bits(dx, dx_layer)
    _same_bits(dk, dk_layer)


CONV2D_CASES = [
    # x shape, filters, kernel_size, strides, padding, dilation
    ((2, 7, 7, 3), 4, 3, 1, "same", 1),           # tiled im2col
    ((2, 8, 8, 3), 16, 3, 2, "valid", 1),         # direct forward and kernel gradient
    ((2, 6, 6, 16), 16, 3, 1, "same", 1),         # direct input gradient too
    ((2, 6, 5, 3), 5, (2, 3), 1, "valid", 2),     # dilated, rectangular
    ((2, 6, 6, 3), 4, 3, (2, 1), "same", 1),      # unequal strides
    ((2, 5, 5, 3), 4, 1, 1, "valid", 1),          # pointwise: one GEMM
    ((8, 32, 32, 32), 64, 1, 1, "valid", 1),      # pointwise, kernel gradient in parts
]


@pytest.mark.parametrize("shape,filters,k,s,pad,d", CONV2D_CASES)
def test_conv2d_matches_layer_bits(shape, filters, k, s, pad, d):
    layer = Conv2D(filters, k, strides=s, padding=pad, dilation_rate=d, use_bias=False)
    kk = (k, k) if isinstance(k, int) else k
    x = _rand(shape, 1)
    kernel = _rand((*kk, shape[-1], filters), 2)
    _layer_vs_op(layer, "kernel", x, kernel, ops.conv, strides=s, padding=pad,
                 dilation_rate=d)


@pytest.mark.parametrize("shape,filters,k,s,pad,d", [
    ((2, 9, 3), 4, 3, 2, "same", 1),
    ((2, 11, 3), 16, 3, 1, "valid", 2),
    ((2, 9, 3), 4, 1, 1, "same", 1),
])
def test_conv1d_matches_layer_bits(shape, filters, k, s, pad, d):
    layer = Conv1D(filters, k, strides=s, padding=pad, dilation_rate=d, use_bias=False)
    x = _rand(shape, 3)
    kernel = _rand((k, shape[-1], filters), 4)
    _layer_vs_op(layer, "kernel", x, kernel, ops.conv, strides=s, padding=pad,
                 dilation_rate=d)


@pytest.mark.parametrize("shape,k,mult,s,pad,d", [
    ((2, 7, 7, 3), 3, 2, 2, "same", 1),
    ((2, 7, 6, 4), (3, 2), 1, 1, "valid", 2),
])
def test_depthwise_conv2d_matches_layer_bits(shape, k, mult, s, pad, d):
    layer = DepthwiseConv2D(k, strides=s, padding=pad, depth_multiplier=mult,
                            dilation_rate=d, use_bias=False)
    kk = (k, k) if isinstance(k, int) else k
    x = _rand(shape, 5)
    kernel = _rand((*kk, shape[-1], mult), 6)
    _layer_vs_op(layer, "depthwise", x, kernel, ops.depthwise_conv, strides=s, padding=pad,
                 dilation_rate=d)


def test_depthwise_conv1d_is_the_2d_op_on_one_row():
    x = _rand((2, 9, 3), 7)
    kernel = _rand((3, 3, 2), 8)
    cot = _rand((2, 5, 6), 9)
    y, (dx, dk) = _run(ops.depthwise_conv, [x, kernel], cot, strides=2, padding="same")
    y2, (dx2, dk2) = _run(ops.depthwise_conv, [x[:, None], kernel[None]], cot[:, None],
                          strides=(1, 2), padding="same")
    _same_bits(y, y2[:, 0])
    _same_bits(dx, dx2[:, 0])
    _same_bits(dk, dk2[0])


@pytest.mark.parametrize("shape,filters,k,s,pad,op_", [
    ((2, 4, 4, 3), 5, 3, 2, "same", None),
    ((2, 4, 5, 3), 4, 3, 2, "valid", None),
    ((2, 4, 4, 3), 5, 3, 2, "same", 1),
])
def test_conv_transpose_matches_layer_bits(shape, filters, k, s, pad, op_):
    layer = Conv2DTranspose(filters, k, strides=s, padding=pad, output_padding=op_,
                            use_bias=False)
    x = _rand(shape, 10)
    kernel = _rand((k, k, filters, shape[-1]), 11)
    _layer_vs_op(layer, "kernel", x, kernel, ops.conv_transpose, strides=s, padding=pad,
                 output_padding=op_)


POOL_CASES = [  # pool_size, strides, padding
    (2, None, "valid"),
    (3, 2, "same"),
    (2, 1, "same"),
]


@pytest.mark.parametrize("pool,s,pad", POOL_CASES + [((2, 3), 1, "valid")])
@pytest.mark.parametrize("kind", ["max", "average"])
def test_pool2d_matches_layer_bits(kind, pool, s, pad):
    cls = MaxPooling2D if kind == "max" else AveragePooling2D
    op = ops.max_pool if kind == "max" else ops.average_pool
    x = _rand((2, 7, 6, 3), 12)
    layer = cls(pool, strides=s, padding=pad)
    y_layer = np.asarray(layer.forward(x)).copy()
    cot = _rand(y_layer.shape, 13)
    dx_layer = np.asarray(layer.backward(cot)).copy()
    y, (dx,) = _run(op, [x], cot, pool_size=pool, strides=s, padding=pad)
    _same_bits(y, y_layer)
    _same_bits(dx, dx_layer)


@pytest.mark.parametrize("pool,s,pad", POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "average"])
def test_pool1d_matches_layer_bits(kind, pool, s, pad):
    cls = MaxPooling1D if kind == "max" else AveragePooling1D
    op = ops.max_pool if kind == "max" else ops.average_pool
    x = _rand((2, 9, 3), 14)
    layer = cls(pool, strides=s, padding=pad)
    y_layer = np.asarray(layer.forward(x)).copy()
    cot = _rand(y_layer.shape, 15)
    dx_layer = np.asarray(layer.backward(cot)).copy()
    y, (dx,) = _run(op, [x], cot, pool_size=pool, strides=s, padding=pad)
    _same_bits(y, y_layer)
    _same_bits(dx, dx_layer)


def test_max_pool_ties_go_to_the_first_maximum():
    """MaxPooling2D's rule (and JAX's): the first maximum in row-major window order."""
    x = np.array([[1.0, 3.0, 3.0], [3.0, 0.0, 3.0]], np.float32).reshape(1, 2, 3, 1)
    for dt in (np.float32, np.float64):
        y, (dx,) = _run(ops.max_pool, [x.astype(dt)], np.ones((1, 1, 2, 1), dt),
                        pool_size=2, strides=1)
        np.testing.assert_array_equal(y.ravel(), [3.0, 3.0])
        np.testing.assert_array_equal(dx[0, :, :, 0], [[0, 2, 0], [0, 0, 0]])
    # a window of -inf: the gradient goes to its first in-bounds cell, never to padding
    x = np.full((1, 3, 1), -np.inf)
    y, (dx,) = _run(ops.max_pool, [x], np.ones((1, 2, 1)), pool_size=2, padding="same")
    np.testing.assert_array_equal(dx.ravel(), [1.0, 0.0, 1.0])


def test_grouped_conv_float32_and_float64_agree():
    """A grouped convolution (kernel in-channels dividing the inputs') is one
    convolution per group: the float32 path agrees with the float64 one, and with
    separate convolutions of each group."""
    x = _rand((2, 6, 6, 4), 16)
    kernel = _rand((3, 3, 2, 6), 17)
    cot = _rand((2, 3, 3, 6), 18)
    kw = dict(strides=2, padding="same")
    y, (dx, dk) = _run(ops.conv, [x, kernel], cot, **kw)
    y64, (dx64, dk64) = _run(ops.conv, [x.astype(np.float64), kernel.astype(np.float64)],
                             cot.astype(np.float64), **kw)
    np.testing.assert_allclose(y, y64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, dx64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dk, dk64, rtol=1e-5, atol=1e-5)
    for g in range(2):
        yg, (dxg, dkg) = _run(ops.conv, [np.ascontiguousarray(x[..., 2 * g:2 * g + 2]),
                                         np.ascontiguousarray(kernel[..., 3 * g:3 * g + 3])],
                              np.ascontiguousarray(cot[..., 3 * g:3 * g + 3]), **kw)
        _same_bits(y[..., 3 * g:3 * g + 3], yg)
        _same_bits(dx[..., 2 * g:2 * g + 2], dxg)
        _same_bits(dk[..., 3 * g:3 * g + 3], dkg)


@pytest.mark.parametrize("op,kshape", [(ops.conv, (3, 3, 3, 4)),
                                       (ops.depthwise_conv, (3, 3, 3, 2))])
def test_strides_with_dilation_float32_and_float64_agree(op, kshape):
    """The layers refuse strides > 1 with dilation > 1; the ops (as keras.ops) take it."""
    x = _rand((2, 9, 8, 3), 19)
    kernel = _rand(kshape, 20)
    y = np.asarray(op(x, kernel, strides=2, padding="same", dilation_rate=2))
    cot = _rand(y.shape, 21)
    y, grads = _run(op, [x, kernel], cot, strides=2, padding="same", dilation_rate=2)
    y64, grads64 = _run(op, [x.astype(np.float64), kernel.astype(np.float64)],
                        cot.astype(np.float64), strides=2, padding="same", dilation_rate=2)
    np.testing.assert_allclose(y, y64, rtol=1e-5, atol=1e-5)
    for g, g64 in zip(grads, grads64):
        np.testing.assert_allclose(g, g64, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("xshape,kshape,kw", [
    ((2, 5, 3), (3, 4, 3), dict(strides=2, padding="same")),                   # 1-D
    ((2, 5, 3), (3, 4, 3), dict(strides=3, padding="valid", output_padding=2)),  # 1-D
    ((2, 4, 5, 3), (3, 3, 4, 3), dict(padding="same", dilation_rate=2)),
])
def test_conv_transpose_float32_and_float64_agree(xshape, kshape, kw):
    x, kernel = _rand(xshape, 48), _rand(kshape, 49)
    y = np.asarray(ops.conv_transpose(x, kernel, **kw))
    cot = _rand(y.shape, 50)
    y, grads = _run(ops.conv_transpose, [x, kernel], cot, **kw)
    y64, grads64 = _run(ops.conv_transpose, [x.astype(np.float64), kernel.astype(np.float64)],
                        cot.astype(np.float64), **kw)
    np.testing.assert_allclose(y, y64, rtol=1e-5, atol=1e-5)
    for g, g64 in zip(grads, grads64):
        np.testing.assert_allclose(g, g64, rtol=1e-5, atol=1e-5)


def test_conv_in_a_call_layer_matches_conv2d():
    """ops.conv on a weight inside call(): the derived backward gives Conv2D's bits."""

    class MyConv(Layer):
        def build(self, input_shape):
            self.kernel = self.add_weight("kernel", (3, 3, input_shape[-1], 4),
                                          "glorot_uniform")
            super().build(input_shape)

        def call(self, inputs):
            return ops.conv(inputs, self.kernel, strides=2, padding="same")

    x = _rand((2, 7, 7, 3), 22)
    kernel = _rand((3, 3, 3, 4), 23)
    mine = MyConv()
    mine.build((None, 7, 7, 3))
    mine.set_weights([kernel])
    ref = Conv2D(4, 3, strides=2, padding="same", use_bias=False)
    ref.build((None, 7, 7, 3))
    ref.set_weights([kernel])
    _same_bits(mine.forward(x), ref.forward(x))
    cot = _rand((2, 4, 4, 4), 24)
    _same_bits(mine.backward(cot), ref.backward(cot))
    _same_bits(mine.kernel.grad, ref.kernel.grad)


def test_untracked_kernel_and_no_graph():
    x = _rand((1, 5, 5, 2), 25)
    kernel = _rand((3, 3, 2, 3), 26)
    out = ops.conv(x, kernel)  # no graph: nothing recorded
    assert out._node is None and out.shape == (1, 3, 3, 3) and out.dtype == np.float32
    with autodiff.Graph() as graph:
        leaf = graph.leaf(x)
        y = ops.conv(leaf, kernel)
        autodiff.backprop([y], [np.ones(y.shape, np.float32)])
    assert leaf._node.grad.shape == x.shape
    # integer inputs give float32 (Keras would keep the integer dtype)
    assert ops.max_pool(np.arange(8).reshape(1, 8, 1), 2).dtype == np.float32


# -- (2) float64: finite differences -----------------------------------------------------
def _fd_check(fn, arrays, eps=1e-6, rtol=1e-6, **kw):
    """Central differences of ``sum(fn(*arrays) * cot)`` against the recorded VJPs."""
    arrays = [np.asarray(a, np.float64) for a in arrays]
    out = np.asarray(fn(*arrays, **kw))
    assert out.dtype == np.float64
    cot = _rand(out.shape, 77, np.float64)
    _, grads = _run(fn, arrays, cot, **kw)

    def loss(values):
        return float(np.sum(np.asarray(fn(*values, **kw)) * cot))

    for i, a in enumerate(arrays):
        assert grads[i].shape == a.shape and grads[i].dtype == np.float64
        num = np.empty_like(a)
        for idx in np.ndindex(a.shape):
            plus, minus = a.copy(), a.copy()
            plus[idx] += eps
            minus[idx] -= eps
            vals_p = [plus if j == i else arrays[j] for j in range(len(arrays))]
            vals_m = [minus if j == i else arrays[j] for j in range(len(arrays))]
            num[idx] = (loss(vals_p) - loss(vals_m)) / (2 * eps)
        np.testing.assert_allclose(grads[i], num, rtol=rtol, atol=1e-8,
                                   err_msg=f"gradient of argument {i}")


@pytest.mark.parametrize("xshape,kshape,kw", [
    ((2, 5, 5, 3), (3, 3, 3, 2), {}),
    ((2, 6, 5, 3), (3, 3, 3, 2), dict(strides=2, padding="same")),
    ((1, 6, 6, 2), (3, 2, 2, 3), dict(padding="same", dilation_rate=2)),
    ((1, 7, 6, 2), (2, 3, 2, 2), dict(strides=(2, 1), padding="valid")),
    ((1, 7, 7, 2), (2, 2, 2, 2), dict(strides=2, dilation_rate=2, padding="same")),
    ((1, 5, 5, 4), (3, 3, 2, 4), dict(padding="same")),              # 2 groups
    ((2, 9, 3), (3, 3, 2), dict(strides=2, padding="same")),           # 1-D
    ((2, 9, 2), (3, 2, 3), dict(dilation_rate=2)),                     # 1-D dilated
])
def test_conv_finite_differences(xshape, kshape, kw):
    _fd_check(ops.conv, [_rand(xshape, 30), _rand(kshape, 31)], **kw)


@pytest.mark.parametrize("xshape,kshape,kw", [
    ((2, 5, 5, 3), (3, 3, 3, 2), dict(strides=2, padding="same")),
    ((1, 6, 6, 2), (2, 2, 2, 1), dict(dilation_rate=2)),
    ((1, 6, 6, 2), (3, 3, 2, 2), dict(padding="same", dilation_rate=2)),
    ((2, 8, 3), (3, 3, 2), dict(padding="same")),                      # 1-D
    ((2, 8, 2), (2, 2, 1), dict(strides=2, dilation_rate=2)),          # 1-D
])
def test_depthwise_conv_finite_differences(xshape, kshape, kw):
    _fd_check(ops.depthwise_conv, [_rand(xshape, 32), _rand(kshape, 33)], **kw)


@pytest.mark.parametrize("xshape,kshape,kw", [
    ((1, 3, 3, 2), (3, 3, 3, 2), dict(strides=2, padding="same")),
    ((1, 3, 4, 2), (3, 3, 2, 2), dict(strides=2, padding="valid")),
    ((1, 3, 3, 2), (3, 3, 2, 2), dict(strides=2, padding="same", output_padding=1)),
    ((1, 3, 3, 2), (2, 2, 2, 2), dict(padding="same", dilation_rate=2)),
    ((2, 4, 2), (3, 3, 2), dict(strides=2, padding="same")),           # 1-D
])
def test_conv_transpose_finite_differences(xshape, kshape, kw):
    _fd_check(ops.conv_transpose, [_rand(xshape, 34), _rand(kshape, 35)], **kw)


@pytest.mark.parametrize("xshape,pool,kw", [
    ((2, 5, 5, 2), 2, {}),
    ((1, 6, 6, 2), 3, dict(strides=2, padding="same")),
    ((1, 5, 5, 2), 2, dict(strides=1, padding="same")),
    ((1, 5, 6, 2), (2, 3), dict(strides=1)),
    ((2, 7, 2), 2, dict(strides=1, padding="same")),                   # 1-D
    ((2, 7, 2), 3, dict(strides=2)),                                   # 1-D
])
@pytest.mark.parametrize("op", [ops.max_pool, ops.average_pool])
def test_pool_finite_differences(op, xshape, pool, kw):
    _fd_check(op, [_rand(xshape, 36)], pool_size=pool, **kw)


# -- (3) PyTorch -------------------------------------------------------------------------
def _tf_pads(size, window, stride, padding):
    """TF/Keras (before, after) padding of one axis."""
    if padding == "valid":
        return 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def _torch_input(torch, x, pads, value=0.0):
    """NHWC float64 -> padded NCHW tensor with requires_grad on the unpadded input."""
    t = torch.tensor(x.transpose(0, 3, 1, 2), requires_grad=True)
    (pt, pb), (pl, pr) = pads
    return t, torch.nn.functional.pad(t, (pl, pr, pt, pb), value=value)


@pytest.mark.parametrize("kw", [dict(), dict(strides=2, padding="same"),
                                dict(padding="same", dilation_rate=2)])
def test_conv2d_matches_torch(kw):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = _rand((2, 7, 6, 3), 40, np.float64)
    kernel = _rand((3, 3, 3, 4), 41, np.float64)
    s, d, pad = kw.get("strides", 1), kw.get("dilation_rate", 1), kw.get("padding", "valid")
    pads = [_tf_pads(n, 2 * d + 1, s, pad) for n in x.shape[1:3]]
    tx, txp = _torch_input(torch, x, pads)
    tk = torch.tensor(kernel.transpose(3, 2, 0, 1), requires_grad=True)  # [F, C, kh, kw]
    ty = F.conv2d(txp, tk, stride=s, dilation=d)
    cot = _rand(tuple(ty.permute(0, 2, 3, 1).shape), 42, np.float64)
    (ty * torch.tensor(cot.transpose(0, 3, 1, 2))).sum().backward()
    for dt, tol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        y, (dx, dk) = _run(ops.conv, [x.astype(dt), kernel.astype(dt)], cot.astype(dt), **kw)
        np.testing.assert_allclose(y, ty.detach().numpy().transpose(0, 2, 3, 1), rtol=tol,
                                   atol=tol)
        np.testing.assert_allclose(dx, tx.grad.numpy().transpose(0, 2, 3, 1), rtol=tol,
                                   atol=tol)
        np.testing.assert_allclose(dk, tk.grad.numpy().transpose(2, 3, 1, 0), rtol=tol,
                                   atol=tol)


@pytest.mark.parametrize("pool,s,pad", [(2, None, "valid"), (3, 2, "same"), (2, 1, "same")])
def test_pools_match_torch(pool, s, pad):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = _rand((2, 7, 6, 3), 43, np.float64)
    stride = pool if s is None else s
    pads = [_tf_pads(n, pool, stride, pad) for n in x.shape[1:3]]
    # max: -inf padding; average: window sums over window counts of real cells
    tx, txp = _torch_input(torch, x, pads, value=-np.inf)
    tmax = F.max_pool2d(txp, pool, stride)
    _, onesp = _torch_input(torch, np.ones((1, *x.shape[1:3], 1)), pads)
    tx2, tx2p = _torch_input(torch, x, pads)
    tavg = F.avg_pool2d(tx2p, pool, stride) / F.avg_pool2d(onesp, pool, stride)
    cot = _rand(tuple(tmax.permute(0, 2, 3, 1).shape), 44, np.float64)
    tcot = torch.tensor(cot.transpose(0, 3, 1, 2))
    (tmax * tcot).sum().backward()
    (tavg * tcot).sum().backward()
    for op, ty, tgrad in ((ops.max_pool, tmax, tx.grad), (ops.average_pool, tavg, tx2.grad)):
        for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-6)):
            y, (dx,) = _run(op, [x.astype(dt)], cot.astype(dt), pool_size=pool, strides=s,
                            padding=pad)
            np.testing.assert_allclose(y, ty.detach().numpy().transpose(0, 2, 3, 1),
                                       rtol=tol, atol=tol)
            np.testing.assert_allclose(dx, tgrad.numpy().transpose(0, 2, 3, 1), rtol=tol,
                                       atol=tol)


def test_conv_transpose_matches_torch():
    torch = pytest.importorskip("torch")
    x = _rand((2, 3, 4, 3), 45, np.float64)
    kernel = _rand((3, 3, 5, 3), 46, np.float64)   # [kh, kw, out, in]
    tx = torch.tensor(x.transpose(0, 3, 1, 2), requires_grad=True)
    tk = torch.tensor(kernel.transpose(3, 2, 0, 1), requires_grad=True)  # [in, out, kh, kw]
    # Keras "valid", stride 2: (in - 1) * 2 + 3 outputs, torch's output with no padding
    ty = torch.nn.functional.conv_transpose2d(tx, tk, stride=2)
    cot = _rand(tuple(ty.permute(0, 2, 3, 1).shape), 47, np.float64)
    (ty * torch.tensor(cot.transpose(0, 3, 1, 2))).sum().backward()
    y, (dx, dk) = _run(ops.conv_transpose, [x, kernel], cot, strides=2)
    np.testing.assert_allclose(y, ty.detach().numpy().transpose(0, 2, 3, 1), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(dx, tx.grad.numpy().transpose(0, 2, 3, 1), rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_allclose(dk, tk.grad.numpy().transpose(2, 3, 1, 0), rtol=1e-12,
                               atol=1e-12)


# -- (4) errors --------------------------------------------------------------------------
X4 = np.zeros((2, 5, 5, 4), np.float32)
K4 = np.zeros((3, 3, 4, 8), np.float32)


@pytest.mark.parametrize("call,exc,message", [
    (lambda: ops.conv(X4, np.zeros((3, 3, 3, 8), np.float32)), OpError,
     "conv: kernel has 3 input channels but inputs have 4 (inputs (2, 5, 5, 4), kernel "
     "(3, 3, 3, 8))"),
    (lambda: ops.conv(X4, np.zeros((3, 3, 2, 7), np.float32)), OpError,
     "conv: inputs have 4 channels, 2 groups of the kernel's 2, so the kernel's 7 output "
     "channels must be a multiple of 2 (inputs (2, 5, 5, 4), kernel (3, 3, 2, 7))"),
    (lambda: ops.conv(X4, np.zeros((3, 4, 8), np.float32)), OpError,
     "conv: kernel must have rank 4 for inputs of rank 4, got kernel (3, 4, 8) (inputs "
     "(2, 5, 5, 4))"),
    (lambda: ops.conv(np.zeros((5, 4), np.float32), K4), OpError,
     "conv: inputs must have rank 3 (batch, width, channels) or 4 (batch, height, width, "
     "channels), got shape (5, 4)"),
    (lambda: ops.conv(X4, np.zeros((0, 3, 4, 8), np.float32)), OpError,
     "conv: kernel must not have an empty axis, got kernel (0, 3, 4, 8)"),
    (lambda: ops.conv(X4, K4, padding="full"), OpError,
     "conv: padding must be 'valid' or 'same', got 'full'"),
    (lambda: ops.conv(X4, K4, padding=1), TypeError,
     "conv: padding must be 'valid' or 'same', got 1"),
    (lambda: ops.conv(X4, K4, strides=0), OpError,
     "conv: strides must be a positive int or a tuple of 2 positive ints, got 0"),
    (lambda: ops.conv(X4, K4, strides=(1, -2)), OpError,
     "conv: strides must be a positive int or a tuple of 2 positive ints, got (1, -2)"),
    (lambda: ops.conv(X4, K4, strides=(1, 2, 3)), OpError,
     "conv: strides must be a positive int or a tuple of 2 positive ints, got (1, 2, 3)"),
    (lambda: ops.conv(X4, K4, strides=1.5), TypeError,
     "conv: strides must be a positive int or a tuple of 2 positive ints, got 1.5"),
    (lambda: ops.conv(X4, K4, dilation_rate=0), OpError,
     "conv: dilation_rate must be a positive int or a tuple of 2 positive ints, got 0"),
    (lambda: ops.conv(X4, K4, data_format="channels_first"), OpError,
     "conv: data_format must be None or 'channels_last' (tinynet is channels-last only), "
     "got 'channels_first'"),
    (lambda: ops.conv(X4, np.zeros((6, 3, 4, 8), np.float32)), OpError,
     "conv: the dilated kernel does not fit the inputs with padding 'valid' (the output "
     "would be empty) (inputs (2, 5, 5, 4), kernel (6, 3, 4, 8))"),
    (lambda: ops.conv("x", K4), TypeError,
     "conv: inputs must be a real-valued tensor, got str of dtype <U1"),
    (lambda: ops.conv(np.zeros((2, 5, 4), np.float32), np.zeros((3, 4, 2), np.float32),
                      strides=(1, 1)), OpError,
     "conv: strides must be a positive int or a tuple of 1 positive ints, got (1, 1)"),
    (lambda: ops.depthwise_conv(X4, np.zeros((3, 3, 2, 1), np.float32)), OpError,
     "depthwise_conv: kernel has 2 input channels but inputs have 4 (inputs (2, 5, 5, 4), "
     "kernel (3, 3, 2, 1))"),
    (lambda: ops.depthwise_conv(X4, K4, dilation_rate=(1, 0)), OpError,
     "depthwise_conv: dilation_rate must be a positive int or a tuple of 2 positive ints, "
     "got (1, 0)"),
    (lambda: ops.conv_transpose(X4, np.zeros((3, 3, 8, 3), np.float32)), OpError,
     "conv_transpose: kernel has 3 input channels (its last axis) but inputs have 4 "
     "(inputs (2, 5, 5, 4), kernel (3, 3, 8, 3))"),
    (lambda: ops.conv_transpose(X4, np.zeros((3, 3, 8, 4), np.float32), strides=2,
                                output_padding=2), OpError,
     "conv_transpose: output_padding must be less than the strides, got output_padding=2 "
     "and strides=2"),
    (lambda: ops.max_pool(X4, 0), OpError,
     "max_pool: pool_size must be a positive int or a tuple of 2 positive ints, got 0"),
    (lambda: ops.max_pool(X4, 2, strides=(2, 0)), OpError,
     "max_pool: strides must be a positive int or a tuple of 2 positive ints, got (2, 0)"),
    (lambda: ops.max_pool(X4, 6), OpError,
     "max_pool: the pool_size 6 does not fit the inputs with padding 'valid' (the output "
     "would be empty) (inputs (2, 5, 5, 4))"),
    (lambda: ops.average_pool(X4, 2, padding="causal"), OpError,
     "average_pool: padding must be 'valid' or 'same', got 'causal'"),
    (lambda: ops.average_pool(X4, 2, data_format="channels_first"), OpError,
     "average_pool: data_format must be None or 'channels_last' (tinynet is channels-last "
     "only), got 'channels_first'"),
    (lambda: ops.average_pool(np.zeros((2, 3), np.float32), 2), OpError,
     "average_pool: inputs must have rank 3 (batch, width, channels) or 4 (batch, height, "
     "width, channels), got shape (2, 3)"),
])
def test_errors(call, exc, message):
    with pytest.raises(exc, match=f"^{re.escape(message)}$"):
        call()
    assert issubclass(OpError, ValueError)
