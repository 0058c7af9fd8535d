"""Conv2D: contract, hand values, float64 and torch references, gradients, determinism, errors."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from tinynet import tuning
from tinynet.layers.convolutional import Conv2D, conv_geometry
from tinynet.tensor import Tensor
from tinynet.testing import check_gradients


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _pads(layer, h, w):
    """(top, bottom, left, right) padding of ``layer`` for an ``h x w`` input (TF rule)."""
    (kh, kw), (sh, sw), (dh, dw) = layer.kernel_size, layer.strides, layer.dilation_rate
    oh, ow, pt, pl = conv_geometry(h, w, layer.kernel_size, layer.strides, layer.dilation_rate,
                                   layer.padding == "same")
    if layer.padding == "valid":
        return 0, 0, 0, 0
    th = max((oh - 1) * sh + (kh - 1) * dh + 1 - h, 0)
    tw = max((ow - 1) * sw + (kw - 1) * dw + 1 - w, 0)
    return pt, th - pt, pl, tw - pl


def reference_conv(layer, x, g):
    """float64 forward (pre-activation) and backward (dx, dW, db) by explicit tap loops."""
    (kh, kw), (sh, sw), (dh, dw) = layer.kernel_size, layer.strides, layer.dilation_rate
    w = layer.kernel.value.astype(np.float64)
    b = layer.bias.value.astype(np.float64) if layer.use_bias else 0.0
    n, h, wd, c = x.shape
    pt, pb, pl, pr = _pads(layer, h, wd)
    xp = np.pad(x.astype(np.float64), ((0, 0), (pt, pb), (pl, pr), (0, 0)))
    oh = (xp.shape[1] - (kh - 1) * dh - 1) // sh + 1
    ow = (xp.shape[2] - (kw - 1) * dw - 1) // sw + 1
    y = np.zeros((n, oh, ow, w.shape[3])) + b
    g = g.astype(np.float64)
    dxp = np.zeros_like(xp)
    dwt = np.zeros_like(w)
    for i in range(kh):
        rows = slice(i * dh, i * dh + (oh - 1) * sh + 1, sh)
        for j in range(kw):
            cols = slice(j * dw, j * dw + (ow - 1) * sw + 1, sw)
            patch = xp[:, rows, cols]
            y += patch @ w[i, j]
            dwt[i, j] = np.einsum("nhwc,nhwf->cf", patch, g)
            dxp[:, rows, cols] += g @ w[i, j].T
    dx = dxp[:, pt:pt + h, pl:pl + wd]
    return y, dx, dwt, g.sum(axis=(0, 1, 2))


def _assert_matches_reference(layer, x, seed, tol=1e-5):
    """Forward and backward of ``layer`` on ``x`` (a random ``g``) against ``reference_conv``."""
    y = layer(x).numpy()
    g = _x(y.shape, seed=seed)
    dx = layer.backward(g).numpy()
    ry, rdx, rdw, rdb = reference_conv(layer, x, g)
    np.testing.assert_allclose(y, ry, rtol=tol, atol=tol)
    np.testing.assert_allclose(dx, rdx, rtol=tol, atol=tol)
    np.testing.assert_allclose(layer.kernel.grad, rdw, rtol=tol, atol=10 * tol)
    if layer.use_bias:
        np.testing.assert_allclose(layer.bias.grad, rdb, rtol=tol, atol=10 * tol)


CONFIGS = [
    dict(kernel_size=3, strides=1, padding="same"),
    dict(kernel_size=3, strides=2, padding="same"),
    dict(kernel_size=3, strides=2, padding="valid"),
    dict(kernel_size=(2, 3), strides=(2, 1), padding="same"),
    dict(kernel_size=3, padding="valid", dilation_rate=2),
    dict(kernel_size=(3, 2), padding="same", dilation_rate=(2, 1)),
    dict(kernel_size=4, strides=3, padding="same"),
    dict(kernel_size=1, padding="valid"),
    dict(kernel_size=1, strides=2, padding="same"),
    dict(kernel_size=5, strides=1, padding="same", use_bias=False),
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_contract(cfg):
    layer = Conv2D(4, seed=0, **cfg)
    x = _x((2, 9, 7, 3))
    y = layer(x)
    assert isinstance(y, Tensor) and y.dtype == np.float32
    assert y.shape == layer.output_shape(x.shape)
    assert layer.output_shape((None, 9, 7, 3)) == (None, *y.shape[1:])
    assert layer.output_shape((None, None, None, 3)) == (None, None, None, 4)
    kh, kw = layer.kernel_size
    use_bias = cfg.get("use_bias", True)
    assert layer.count_params() == kh * kw * 3 * 4 + (4 if use_bias else 0)
    assert layer.kernel.shape == (kh, kw, 3, 4)
    assert [p.name for p in layer.parameters()] == (["kernel", "bias"] if use_bias else ["kernel"])
    if use_bias:
        np.testing.assert_array_equal(layer.bias.value, np.zeros(4, np.float32))


@pytest.mark.parametrize("cfg", CONFIGS)
def test_matches_float64_reference(cfg):
    layer = Conv2D(5, seed=1, **cfg)
    x = _x((2, 9, 8, 3), seed=2)
    layer.build((None, 9, 8, 3))
    if layer.use_bias:
        layer.bias.assign(np.linspace(-1, 1, 5))
    y = layer(x).numpy()
    g = _x(y.shape, seed=3)
    dx = layer.backward(g).numpy()
    ry, rdx, rdw, rdb = reference_conv(layer, x, g)
    np.testing.assert_allclose(y, ry, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dx, rdx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.kernel.grad, rdw, rtol=1e-5, atol=1e-4)
    if layer.use_bias:
        np.testing.assert_allclose(layer.bias.grad, rdb, rtol=1e-5, atol=1e-4)


def test_random_configs_against_float64_reference():
    rng = np.random.default_rng(11)
    for trial in range(12):
        kh, kw = rng.integers(1, 5, size=2)
        dilate = trial % 3 == 0
        strides = (1, 1) if dilate else tuple(int(s) for s in rng.integers(1, 4, size=2))
        dilation = tuple(int(d) for d in rng.integers(1, 3, size=2)) if dilate else (1, 1)
        padding = ["valid", "same"][trial % 2]
        h, w = (int(v) for v in rng.integers(6, 12, size=2))
        c, f = (int(v) for v in rng.integers(1, 5, size=2))
        layer = Conv2D(f, (int(kh), int(kw)), strides, padding, dilation_rate=dilation, seed=trial)
        x = _x((2, h, w, c), seed=trial)
        layer.build((None, h, w, c))
        layer.bias.assign(rng.standard_normal(f))
        _assert_matches_reference(layer, x, seed=100 + trial)


def test_hand_values_same_padding_ones():
    layer = Conv2D(1, 3, padding="same")
    layer.build((None, 3, 3, 1))
    layer.kernel.assign(np.ones((3, 3, 1, 1)))
    y = layer(np.ones((1, 3, 3, 1), np.float32)).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(y, [[4, 6, 4], [6, 9, 6], [4, 6, 4]])
    dx = layer.backward(np.ones((1, 3, 3, 1), np.float32)).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(dx, [[4, 6, 4], [6, 9, 6], [4, 6, 4]])
    np.testing.assert_array_equal(layer.kernel.grad[:, :, 0, 0], [[4, 6, 4], [6, 9, 6], [4, 6, 4]])
    np.testing.assert_array_equal(layer.bias.grad, [9])


def test_same_padding_puts_the_odd_cell_at_the_end():
    layer = Conv2D(1, 2, padding="same")  # pad_total 1: nothing before, one cell after
    layer.build((None, 3, 3, 1))
    layer.kernel.assign(np.ones((2, 2, 1, 1)))
    x = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)
    y = layer(x).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(y, [[12, 16, 9], [24, 28, 15], [15, 17, 9]])
    layer = Conv2D(1, 3, strides=2, padding="same")  # 4 -> 2; pad_total 1, again at the end
    layer.build((None, 4, 4, 1))
    layer.kernel.assign(np.ones((3, 3, 1, 1)))
    y = layer(np.ones((1, 4, 4, 1), np.float32)).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(y, [[9, 6], [6, 4]])


@pytest.mark.parametrize("cfg", CONFIGS[:7])
def test_gradients(cfg):
    layer = Conv2D(3, activation="tanh", seed=0, **cfg)
    layer.build((None, 7, 6, 2))
    layer.bias.assign([0.1, -0.2, 0.3])
    check_gradients(layer, (2, 7, 6, 2), seed=1)


@pytest.mark.parametrize("activation", [None, "relu", "elu", "softmax"])
def test_gradients_with_activations(activation):
    layer = Conv2D(3, 3, padding="same", activation=activation, seed=2)
    linear = Conv2D(3, 3, padding="same", seed=2)
    for seed in range(200):  # an input whose pre-activations keep clear of ReLU/ELU's kink
        x = _x((1, 4, 4, 2), seed=seed)
        if np.abs(linear(x).numpy()).min() > 0.04:
            break
    else:
        pytest.fail("no input clear of the kink")
    check_gradients(layer, x=x, seed=3, delta=1e-2)


def test_torch_parity():
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    for cfg in CONFIGS:
        layer = Conv2D(4, activation="relu", seed=5, **cfg)
        x = _x((2, 9, 8, 3), seed=6)
        layer.build((None, 9, 8, 3))
        if layer.use_bias:
            layer.bias.assign(np.linspace(-0.3, 0.3, 4))
        y = layer(x).numpy()
        g = _x(y.shape, seed=7)
        dx = layer.backward(g).numpy()
        pt, pb, pl, pr = _pads(layer, 9, 8)
        xt = torch.tensor(x, dtype=torch.float64).permute(0, 3, 1, 2).requires_grad_()
        wt = torch.tensor(layer.kernel.value, dtype=torch.float64).permute(3, 2, 0, 1)
        wt.requires_grad_()
        bt = (torch.tensor(layer.bias.value, dtype=torch.float64).requires_grad_()
              if layer.use_bias else None)
        yt = F.relu(F.conv2d(F.pad(xt, (pl, pr, pt, pb)), wt, bt, stride=layer.strides,
                             dilation=layer.dilation_rate))
        yt.backward(torch.tensor(g, dtype=torch.float64).permute(0, 3, 1, 2))
        np.testing.assert_allclose(y, yt.detach().permute(0, 2, 3, 1).numpy(), rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_allclose(dx, xt.grad.permute(0, 2, 3, 1).numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(layer.kernel.grad, wt.grad.permute(2, 3, 1, 0).numpy(),
                                   rtol=1e-5, atol=1e-4)
        if layer.use_bias:
            np.testing.assert_allclose(layer.bias.grad, bt.grad.numpy(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("shape,filters,cfg", [
    ((8, 20, 20, 16), 32, dict(kernel_size=3, padding="same", activation="relu")),
    ((16, 32, 32, 4), 8, dict(kernel_size=3, strides=2, padding="same", activation="silu")),
    ((4, 24, 24, 8), 16, dict(kernel_size=3, padding="valid", dilation_rate=2)),
    # samples larger than a tile (several tiles per sample, accumulated in order)
    ((3, 40, 40, 16), 8, dict(kernel_size=3, padding="same", activation="relu")),
    # small samples grouped several to a tile
    ((37, 8, 8, 1), 4, dict(kernel_size=3, padding="same")),
    # the direct kernels: forward, kernel and input gradient; 48 filters = 32 + 16
    ((9, 12, 11, 16), 48, dict(kernel_size=3, padding="same", activation="relu")),
    ((5, 13, 9, 32), 32, dict(kernel_size=3, padding="valid", dilation_rate=2)),
    # direct forward and kernel gradient, tiled input gradient (stride 2, 3 channels)
    ((6, 14, 10, 3), 16, dict(kernel_size=3, strides=2, padding="same")),
])
def test_bitwise_across_gates_and_threads(shape, filters, cfg):
    x = _x(shape, seed=8)
    results = []
    for threads in (1, 2):
        tuning.set_num_threads(min(threads, tuning.max_threads()))
        for gate in (0, 2**62):
            with tuning.override(conv_parallel_min_elems=gate, matmul_parallel_min_flops=gate,
                                 elementwise_parallel_min_elems=gate):
                layer = Conv2D(filters, seed=0, **cfg)
                layer.build((None, *shape[1:]))
                layer.bias.assign(np.linspace(-0.5, 0.5, filters))
                y = layer(x).numpy()
                g = _x(y.shape, seed=9)
                dx = layer.backward(g).numpy()
                results.append((y, dx, layer.kernel.grad, layer.bias.grad))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert np.array_equal(a, b)


@pytest.mark.parametrize("shape,cfg", [
    ((3, 40, 40, 16), dict(kernel_size=3, padding="same")),             # 2 tiles per sample
    ((2, 60, 60, 64), dict(kernel_size=3, strides=2, padding="same")),  # 4 tiles, strided
    ((37, 8, 8, 1), dict(kernel_size=3, padding="valid")),              # 5 samples per tile
    ((5, 33, 20, 48), dict(kernel_size=(3, 2), dilation_rate=(2, 3), padding="same")),  # 2
])
def test_tiled_shapes_match_float64_reference(shape, cfg):
    from tinynet.ops.arrays import conv2d

    layer = Conv2D(6, seed=4, **cfg)
    layer.build((None, *shape[1:]))
    layer.bias.assign(np.linspace(-1, 1, 6))
    plan = conv2d._Plan(shape, (np.prod(layer.kernel_size) * shape[-1], 6),
                        layer._tiling(layer._geometry(shape)))
    assert len(plan.tasks) > 1 and plan.tasks[-1][1] == shape[0]
    _assert_matches_reference(layer, _x(shape, seed=12), seed=13, tol=1e-4)


# (input shape, filters, config, direct forward, direct input gradient)
DIRECT = [
    ((2, 7, 9, 16), 32, dict(kernel_size=3, padding="same"), True, True),
    ((3, 8, 8, 16), 48, dict(kernel_size=3, padding="valid"), True, True),
    ((2, 10, 10, 16), 16, dict(kernel_size=3, padding="same", dilation_rate=2), True, True),
    ((2, 6, 7, 32), 64, dict(kernel_size=5, padding="same", use_bias=False), True, True),
    ((2, 9, 8, 16), 32, dict(kernel_size=(2, 3), padding="same"), True, True),  # odd cell
    ((1, 3, 3, 16), 16, dict(kernel_size=3, padding="same"), True, True),        # 9 pixels
    ((4, 28, 28, 1), 32, dict(kernel_size=3, padding="same"), True, False),      # K = 9
    ((2, 9, 7, 32), 16, dict(kernel_size=3, strides=2, padding="same"), True, False),
    ((2, 5, 5, 8), 32, dict(kernel_size=3, strides=2, padding="valid"), False, False),  # 4 px
    ((2, 2, 3, 16), 16, dict(kernel_size=3, padding="same"), False, False),      # 6 pixels
    ((2, 8, 8, 16), 24, dict(kernel_size=3, padding="same"), False, True),       # 24 filters
]


@pytest.mark.parametrize("shape,filters,cfg,direct_out,direct_dx", DIRECT)
def test_direct_kernels_match_float64_reference(shape, filters, cfg, direct_out, direct_dx):
    """The direct register kernels (and their hand-over to the tiled path) against the
    float64 tap loops, with the path each shape takes pinned."""
    from tinynet.ops.arrays import conv2d

    layer = Conv2D(filters, seed=3, **cfg)
    layer.build((None, *shape[1:]))
    if layer.use_bias:
        layer.bias.assign(np.linspace(-1, 1, filters))
    plan = conv2d._Plan(shape, (np.prod(layer.kernel_size) * shape[-1], filters),
                        layer._tiling(layer._geometry(shape)))
    assert plan.direct_forward() == direct_out
    assert (plan.direct_input_grad() is not None) == direct_dx
    _assert_matches_reference(layer, _x(shape, seed=14), seed=15, tol=1e-4)


def test_direct_kernels_round_each_output_once_per_kernel_row():
    """A direct output is one fused multiply-add chain over the kernel rows in
    ``(i, j, c)`` order, then the bias: checked against that chain run step by step with
    the interpreted ``simd.vfma`` (each step rounded once, exactly; itself checked
    against rational arithmetic in ``tests/kernels/test_simd.py``)."""
    from tinynet.kernels.simd import vfma
    from tinynet.ops.arrays import conv2d

    rng = np.random.default_rng(21)
    x = rng.standard_normal((1, 4, 4, 16)).astype(np.float32)
    w = rng.standard_normal((3, 3, 16, 16)).astype(np.float32)
    bias = rng.standard_normal(16).astype(np.float32)
    geometry = (3, 3, 1, 1, 1, 1, 1, 1, 4, 4)
    z = conv2d.conv2d_forward(x, w.reshape(-1, 16), geometry, bias)
    xp = np.pad(x[0], ((1, 1), (1, 1), (0, 0)))
    patch = xp[1:4, 2:5].reshape(-1)  # output pixel (1, 2)
    acc = np.zeros(16, dtype=np.float32)
    for r in range(patch.size):
        acc = vfma(np.full(16, patch[r], np.float32), w.reshape(-1, 16)[r], acc)
    assert np.array_equal(z[1 * 4 + 2], acc + bias)


def test_tasks_depend_on_shape_only():
    from tinynet.ops.arrays import conv2d

    geometry = (3, 3, 1, 1, 1, 1, 1, 1, 8, 8)
    plans = []
    for threads in (1, 2):
        tuning.set_num_threads(min(threads, tuning.max_threads()))
        for gate in (0, 2**62):
            with tuning.override(conv_parallel_min_elems=gate):
                plans.append(conv2d._Plan((37, 8, 8, 1), (9, 4), geometry))
    for plan in plans:
        assert np.array_equal(plan.tasks, plans[0].tasks) and plan.step == plans[0].step
    # 64 pixels per sample, tiles of 14563 rows: samples grouped 5 to a task (>= 8 tasks)
    assert plans[0].tasks.tolist()[:2] == [[0, 5], [5, 10]] and len(plans[0].tasks) == 8


def test_second_backward_and_repeated_forward_are_identical():
    layer = Conv2D(4, 3, padding="same", activation="relu", seed=0)
    x = _x((2, 6, 6, 3))
    g = _x((2, 6, 6, 4), seed=1)
    layer(x)
    dx1 = layer.backward(g).numpy().copy()
    dw1 = layer.kernel.grad.copy()
    dx2 = layer.backward(g).numpy()
    assert np.array_equal(dx1, dx2) and np.array_equal(dw1, layer.kernel.grad)
    layer(_x((5, 6, 6, 3), seed=5))  # a larger batch in between: the buffer is reused
    layer(x)
    assert np.array_equal(layer.backward(g).numpy(), dx1)
    assert np.array_equal(layer.kernel.grad, dw1)


def test_config_round_trip():
    layer = Conv2D(6, (3, 2), strides=(1, 2), padding="SAME", activation="gelu",
                   dilation_rate=1, use_bias=False, kernel_initializer="he_uniform", seed=3,
                   name="c1", input_shape=(8, 8, 2), trainable=False)
    config = json.loads(json.dumps(layer.get_config()))
    assert config == {"name": "c1", "trainable": False, "input_shape": [8, 8, 2], "filters": 6,
                      "kernel_size": [3, 2], "strides": [1, 2], "padding": "same",
                      "activation": "gelu", "dilation_rate": [1, 1], "use_bias": False,
                      "kernel_initializer": "he_uniform", "seed": 3,
                      "kernel_regularizer": None, "bias_regularizer": None,
                      "activity_regularizer": None}
    assert Conv2D.from_config(config).get_config() == config
    assert Conv2D(2, 3).name == "conv2d"


def test_seeded_init_and_frozen_layer():
    a, b = Conv2D(4, 3, seed=9), Conv2D(4, 3, seed=9)
    a.build((None, 5, 5, 2))
    b.build((None, 5, 5, 2))
    np.testing.assert_array_equal(a.kernel.value, b.kernel.value)
    assert np.abs(a.kernel.value).max() <= np.sqrt(6.0 / (9 * 2 + 9 * 4))
    frozen = Conv2D(4, 3, seed=9, trainable=False)
    y = frozen(_x((1, 5, 5, 2)))
    frozen.backward(np.ones(y.shape, np.float32))
    assert frozen.kernel.grad is None and frozen.bias.grad is None
    assert frozen.trainable_parameters() == []


def test_backward_before_forward():
    layer = Conv2D(2, 3)
    layer.build((None, 4, 4, 1))
    with pytest.raises(RuntimeError, match=re.escape(
            "Conv2D 'conv2d': backward called before forward")):
        layer.backward(np.ones((1, 2, 2, 2), np.float32))


@pytest.mark.parametrize("call,exc,text", [
    (lambda: Conv2D(0, 3), ValueError, "Conv2D: filters must be a positive int, got 0"),
    (lambda: Conv2D(None, 3), TypeError, "Conv2D: filters must be a positive int, got None"),
    (lambda: Conv2D(2, 0), ValueError,
     "Conv2D: kernel_size must be a positive int or a tuple of 2 positive ints, got 0"),
    (lambda: Conv2D(2, (3, 0)), ValueError,
     "Conv2D: kernel_size must be a positive int or a tuple of 2 positive ints, got (3, 0)"),
    (lambda: Conv2D(2, (3, 3, 3)), ValueError,
     "Conv2D: kernel_size must be a positive int or a tuple of 2 positive ints, got (3, 3, 3)"),
    (lambda: Conv2D(2, "3"), TypeError,
     "Conv2D: kernel_size must be a positive int or a tuple of 2 positive ints, got '3'"),
    (lambda: Conv2D(2, 3, strides=-1), ValueError,
     "Conv2D: strides must be a positive int or a tuple of 2 positive ints, got -1"),
    (lambda: Conv2D(2, 3, dilation_rate=(1, 0)), ValueError,
     "Conv2D: dilation_rate must be a positive int or a tuple of 2 positive ints, got (1, 0)"),
    (lambda: Conv2D(2, 3, padding="full"), ValueError,
     "Conv2D: padding must be 'valid' or 'same', got 'full'"),
    (lambda: Conv2D(2, 3, padding=None), TypeError,
     "Conv2D: padding must be 'valid' or 'same', got None"),
    (lambda: Conv2D(2, 3, strides=2, dilation_rate=2), ValueError,
     "Conv2D: strides > 1 is not supported with dilation_rate > 1 (as in Keras), "
     "got strides=(2, 2) and dilation_rate=(2, 2)"),
    (lambda: Conv2D(2, 3, activation="swish"), ValueError,
     "Conv2D: activation must be one of 'elu', 'gelu', 'leaky_relu', 'linear', 'relu', "
     "'sigmoid', 'silu', 'softmax', 'tanh', got 'swish'"),
    (lambda: Conv2D(2, 3, use_bias="yes"), TypeError, "Conv2D: use_bias must be a bool, got 'yes'"),
    (lambda: Conv2D(2, 3, seed=1.5), TypeError,
     "Conv2D: seed must be None or a non-negative int, got 1.5"),
])
def test_argument_errors(call, exc, text):
    with pytest.raises(exc, match=re.escape(text)):
        call()


def test_input_errors():
    with pytest.raises(ValueError, match=re.escape(
            "Conv2D 'conv2d': input must have rank 4 (batch, height, width, channels), "
            "got shape (None, 5, 3)")):
        Conv2D(2, 3)(np.ones((2, 5, 3), np.float32))  # caught while building
    built = Conv2D(2, 3)
    built.build((None, 5, 5, 3))
    with pytest.raises(ValueError, match=re.escape(
            "Conv2D 'conv2d': input must have rank 4 (batch, height, width, channels), "
            "got shape (2, 5, 3)")):
        built(np.ones((2, 5, 3), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "Conv2D 'conv2d': input must have rank 4 (batch, height, width, channels), "
            "got shape (None, 5, 5)")):
        Conv2D(2, 3).output_shape((None, 5, 5))
    with pytest.raises(ValueError, match=re.escape(
            "Conv2D 'conv2d': input spatial size (2, 5) is smaller than the dilated kernel "
            "with padding \"valid\" (kernel_size=(3, 3), dilation_rate=(1, 1))")):
        Conv2D(2, 3).build((None, 2, 5, 1))
    layer = Conv2D(2, 3)
    layer(np.ones((1, 5, 5, 3), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            "Conv2D 'conv2d': expected 3 input channels, got shape (1, 5, 5, 2)")):
        layer(np.ones((1, 5, 5, 2), np.float32))


@pytest.mark.parametrize("shape,filters,cfg", [
    ((9, 12, 11, 16), 48, dict(kernel_size=3, padding="same", activation="relu")),  # 32 + 16
    ((5, 13, 9, 32), 32, dict(kernel_size=3, padding="valid", dilation_rate=2)),
    ((4, 28, 28, 1), 32, dict(kernel_size=3, padding="same")),   # K = 9: padded rows
    ((2, 9, 7, 32), 16, dict(kernel_size=3, strides=2, padding="same")),
    ((1, 3, 3, 16), 16, dict(kernel_size=3, padding="same")),    # 9 pixels: blocks overlap
    ((3, 8, 8, 16), 64, dict(kernel_size=(2, 3), padding="same")),
])
def test_narrow_and_wide_register_blocks_give_the_same_bits(monkeypatch, shape, filters, cfg):
    """Cores without AVX-512 run the direct kernels in narrow blocks (6 pixels or kernel
    rows by 16 channels), the others in wide ones (8 by 32): a block only groups chains,
    so outputs and all gradients are the same bytes either way, serial and parallel."""
    from tinynet.kernels import conv_direct as cd

    x = _x(shape, seed=31)
    runs = {}
    for narrow in (True, False):
        monkeypatch.setattr(cd, "NARROW", narrow)
        monkeypatch.setattr(cd, "GRAD_ROWS", cd.NARROW_BLOCK if narrow else cd.BLOCK)
        for gate in (0, 2**62):
            with tuning.override(conv_parallel_min_elems=gate):
                layer = Conv2D(filters, seed=5, **cfg)
                layer.build((None, *shape[1:]))
                if layer.use_bias:
                    layer.bias.assign(np.linspace(-0.5, 0.5, filters))
                y = layer(x).numpy()
                dx = layer.backward(_x(y.shape, seed=32)).numpy()
                runs[narrow, gate] = (y, dx, layer.kernel.grad, layer.bias.grad)
    base = runs[True, 0]
    for key, got in runs.items():
        for a, b in zip(base, got):
            assert a.tobytes() == b.tobytes(), key


def test_narrow_blocks_follow_the_vector_registers():
    from llvmlite import binding as llvm

    from tinynet.kernels import conv_direct as cd

    assert cd.NARROW == (not llvm.get_host_cpu_features().get("avx512f", False))
    assert cd.GRAD_ROWS == (cd.NARROW_BLOCK if cd.NARROW else cd.BLOCK)
