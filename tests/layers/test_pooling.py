"""MaxPooling2D, AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tinynet import tuning
from tinynet.kernels import address
from tinynet.kernels import pooling as kernels
from tinynet.ops.arrays import pooling as pooling_ops
from tinynet.layers import (AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D,
                            MaxPooling2D)
from tinynet.testing import check_gradients

GATE = "pool_parallel_min_elems"
WINDOWED = (MaxPooling2D, AveragePooling2D)
GLOBAL = (GlobalAveragePooling2D, GlobalMaxPooling2D)

# (input [N, H, W, C], pool_size, strides, padding): odd sizes, stride != pool, overlaps
CONFIGS = [
    ((2, 6, 6, 3), 2, None, "valid"),
    ((2, 7, 5, 2), 2, None, "valid"),
    ((2, 7, 5, 2), 2, None, "same"),
    ((1, 9, 8, 4), 3, 2, "valid"),
    ((1, 9, 8, 4), 3, 2, "same"),
    ((3, 5, 7, 1), (2, 3), (1, 2), "same"),
    ((3, 5, 7, 1), (3, 2), (2, 1), "valid"),
    ((2, 4, 4, 5), 3, 1, "same"),
    ((2, 8, 6, 2), 2, 3, "valid"),
    ((2, 8, 6, 2), 2, 3, "same"),
    ((1, 3, 3, 1), 3, 3, "valid"),
    ((2, 1, 6, 3), (1, 4), 3, "same"),
]


@pytest.fixture(autouse=True)
def _restore_tuning():
    tuning.reset()
    yield
    tuning.reset()


# ---------------------------------------------------------------------------------------
# float64 references
# ---------------------------------------------------------------------------------------
def _axis(size, pool, stride, padding):
    if padding == "valid":
        out, before = math.floor((size - pool) / stride) + 1, 0
    else:
        out = math.ceil(size / stride)
        before = max((out - 1) * stride + pool - size, 0) // 2
    return [(max(i * stride - before, 0), min(i * stride - before + pool, size))
            for i in range(out)]


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def ref_pool(x, pool, strides, padding, mode):
    """Returns (out, grad_fn) in float64; grad_fn(g) is the exact backward."""
    x = np.asarray(x, dtype=np.float64)
    pool = _pair(pool)
    strides = pool if strides is None else _pair(strides)
    rows = _axis(x.shape[1], pool[0], strides[0], padding)
    cols = _axis(x.shape[2], pool[1], strides[1], padding)
    N, C = x.shape[0], x.shape[3]
    out = np.empty((N, len(rows), len(cols), C))
    where = {}
    for i, (h0, h1) in enumerate(rows):
        for j, (w0, w1) in enumerate(cols):
            win = x[:, h0:h1, w0:w1, :].reshape(N, -1, C)
            if mode == "max":
                k = win.argmax(axis=1)  # first maximum in row-major window order
                out[:, i, j] = np.take_along_axis(win, k[:, None, :], axis=1)[:, 0]
                where[i, j] = (h0 + k // (w1 - w0), w0 + k % (w1 - w0))
            else:
                out[:, i, j] = win.mean(axis=1)

    def grad(g):
        g = np.asarray(g, dtype=np.float64)
        gx = np.zeros(x.shape)
        n_idx, c_idx = np.meshgrid(np.arange(N), np.arange(C), indexing="ij")
        for i, (h0, h1) in enumerate(rows):
            for j, (w0, w1) in enumerate(cols):
                if mode == "max":
                    hh, ww = where[i, j]
                    np.add.at(gx, (n_idx, hh, ww, c_idx), g[:, i, j])
                else:
                    count = (h1 - h0) * (w1 - w0)
                    gx[:, h0:h1, w0:w1, :] += g[:, i, j][:, None, None, :] / count
        return gx

    return out, grad


def _distinct(shape, seed=0, spacing=0.25):
    """Distinct, well-separated values (no max-pool kinks within a finite-difference step)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    return ((rng.permutation(n) - n / 2) * spacing).reshape(shape).astype(np.float32)


def _make(cls, pool, strides, padding, **kw):
    return cls(pool_size=pool, strides=strides, padding=padding, **kw)


# ---------------------------------------------------------------------------------------
# contract
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", WINDOWED)
@pytest.mark.parametrize("shape,pool,strides,padding", CONFIGS)
def test_output_shape_matches_real_output(cls, shape, pool, strides, padding):
    layer = _make(cls, pool, strides, padding)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    y = layer(x)
    assert layer.output_shape(shape) == y.shape
    assert layer.output_shape((None, *shape[1:])) == (None, *y.shape[1:])
    assert layer.compute_output_shape((None, *shape[1:])) == (None, *y.shape[1:])
    ref, _ = ref_pool(x, pool, strides, padding, "max")
    assert y.shape == ref.shape
    assert y.dtype == np.float32
    assert layer.count_params() == 0 and layer.parameters() == []


@pytest.mark.parametrize("cls", WINDOWED)
def test_output_shape_unknown_spatial(cls):
    layer = cls(3, 2, "same")
    assert layer.output_shape((None, None, 9, 4)) == (None, None, 5, 4)
    assert layer.output_shape((None, 7, None, 4)) == (None, 4, None, 4)


@pytest.mark.parametrize("cls", GLOBAL)
@pytest.mark.parametrize("keepdims", [False, True])
def test_global_output_shape(cls, keepdims):
    layer = cls(keepdims=keepdims)
    x = np.random.default_rng(2).standard_normal((3, 5, 4, 6)).astype(np.float32)
    y = layer(x)
    assert layer.output_shape(x.shape) == y.shape
    assert layer.output_shape((None, 5, 4, 6)) == (None, *y.shape[1:])
    assert y.shape == ((3, 1, 1, 6) if keepdims else (3, 6))
    assert layer.count_params() == 0


@pytest.mark.parametrize("cls", WINDOWED)
def test_config_round_trip(cls):
    layer = cls((3, 2), strides=(1, 2), padding="same", name="pool", input_shape=(6, 6, 2))
    cfg = layer.get_config()
    assert cfg == {"name": "pool", "trainable": True, "input_shape": [6, 6, 2],
                   "pool_size": [3, 2], "strides": [1, 2], "padding": "same"}
    clone = cls.from_config(cfg)
    assert clone.get_config() == cfg
    assert clone.pool_size == (3, 2) and clone.strides == (1, 2) and clone.padding == "same"
    default = cls()
    assert (default.pool_size, default.strides, default.padding) == ((2, 2), (2, 2), "valid")
    assert cls.from_config(default.get_config()).get_config() == default.get_config()
    assert default.name == ("max_pooling2d" if cls is MaxPooling2D else "average_pooling2d")


@pytest.mark.parametrize("cls", GLOBAL)
def test_global_config_round_trip(cls):
    layer = cls(keepdims=True, name="gp")
    cfg = layer.get_config()
    assert cfg == {"name": "gp", "trainable": True, "keepdims": True}
    assert cls.from_config(cfg).get_config() == cfg
    assert cls().keepdims is False


def test_padding_case_insensitive():
    assert MaxPooling2D(padding="SAME").padding == "same"


# ---------------------------------------------------------------------------------------
# hand-derived values
# ---------------------------------------------------------------------------------------
NINE = np.arange(1, 10, dtype=np.float32).reshape(1, 3, 3, 1)


def test_max_pool_same_hand_values():
    layer = MaxPooling2D(pool_size=2, strides=2, padding="same")
    y = layer(NINE).numpy()
    np.testing.assert_array_equal(y[0, :, :, 0], [[5, 6], [8, 9]])
    g = layer.backward(np.ones((1, 2, 2, 1), np.float32)).numpy()
    np.testing.assert_array_equal(g[0, :, :, 0], [[0, 0, 0], [0, 1, 1], [0, 1, 1]])


def test_avg_pool_same_hand_values():
    layer = AveragePooling2D(pool_size=2, strides=2, padding="same")
    y = layer(NINE).numpy()
    np.testing.assert_array_equal(y[0, :, :, 0], [[3, 4.5], [7.5, 9]])
    g = layer.backward(np.ones((1, 2, 2, 1), np.float32)).numpy()
    np.testing.assert_array_equal(g[0, :, :, 0], [[0.25, 0.25, 0.5], [0.25, 0.25, 0.5],
                                                  [0.5, 0.5, 1.0]])


def test_valid_drops_the_remainder():
    y = MaxPooling2D(2)(NINE).numpy()
    np.testing.assert_array_equal(y.reshape(-1), [5])
    y = AveragePooling2D(2, strides=1)(NINE).numpy()
    np.testing.assert_array_equal(y[0, :, :, 0], [[3, 4], [6, 7]])


def test_same_odd_pad_cell_goes_at_the_end():
    # in=4, pool=3, stride=1, "same": pad_total=2 -> one before, one after
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 4, 1)
    y = AveragePooling2D((1, 3), 1, "same")(x).numpy().reshape(-1)
    np.testing.assert_allclose(y, [0.5, 1, 2, 2.5])
    # in=4, pool=2, stride=1: pad_total=1 -> zero before, one after
    y = MaxPooling2D((1, 2), 1, "same")(x).numpy().reshape(-1)
    np.testing.assert_array_equal(y, [1, 2, 3, 3])


def test_max_pool_ties_route_to_first_maximum():
    x = np.zeros((1, 2, 2, 2), np.float32)
    x[0, :, :, 1] = [[1, 3], [3, 3]]
    layer = MaxPooling2D(2)
    layer(x)
    g = layer.backward(np.array([[[[2.0, 5.0]]]], np.float32)).numpy()
    np.testing.assert_array_equal(g[0, :, :, 0], [[2, 0], [0, 0]])
    np.testing.assert_array_equal(g[0, :, :, 1], [[0, 5], [0, 0]])
    glayer = GlobalMaxPooling2D()
    glayer(x)
    g = glayer.backward(np.array([[2.0, 5.0]], np.float32)).numpy()
    np.testing.assert_array_equal(g[0, :, :, 0], [[2, 0], [0, 0]])
    np.testing.assert_array_equal(g[0, :, :, 1], [[0, 5], [0, 0]])


def test_max_pool_negative_and_infinite_values():
    x = np.full((1, 2, 2, 1), -np.inf, np.float32)
    assert MaxPooling2D(2)(x).numpy().item() == -np.inf
    x[0, 1, 1, 0] = -7.0
    assert MaxPooling2D(2)(x).numpy().item() == -7.0
    assert GlobalMaxPooling2D()(x).numpy().item() == -7.0


def test_max_pool_propagates_nan_like_torch():
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)
    x[0, 0, 1, 0] = np.nan
    y = MaxPooling2D(2)(x).numpy()[0, :, :, 0]
    assert np.isnan(y[0, 0]) and not np.isnan(y[1:, :]).any() and not np.isnan(y[0, 1])
    assert np.isnan(GlobalMaxPooling2D()(x).numpy()).all()


def test_global_pool_hand_values():
    x = NINE
    assert GlobalAveragePooling2D()(x).numpy().tolist() == [[5.0]]
    assert GlobalMaxPooling2D(keepdims=True)(x).numpy().tolist() == [[[[9.0]]]]
    layer = GlobalAveragePooling2D()
    layer(x)
    g = layer.backward(np.array([[9.0]], np.float32)).numpy()
    np.testing.assert_array_equal(g, np.ones((1, 3, 3, 1)))


def test_global_average_is_accurate_with_large_offset():
    rng = np.random.default_rng(3)
    x = (1e4 + rng.standard_normal((2, 31, 29, 3))).astype(np.float32)
    y = GlobalAveragePooling2D()(x).numpy()
    np.testing.assert_allclose(y, x.astype(np.float64).mean(axis=(1, 2)), rtol=1e-7)


def test_accepts_tensor_and_lists_and_returns_tensor():
    from tinynet import Tensor

    layer = MaxPooling2D(2)
    y = layer(Tensor(NINE))
    assert isinstance(y, Tensor)
    y2 = layer(NINE.tolist())
    np.testing.assert_array_equal(y.numpy(), y2.numpy())


def _window_scan(x, pool, strides, padding):
    """The kernels' documented rule, element by element in float32: each window's cells
    in row-major order; the maximum takes a cell that is greater or NaN (its flat
    position ``h * W + w`` with it), the average sums from +0 and divides by the count."""
    hlo, hhi, wlo, whi = pooling_ops._geometry(x.shape, pool, strides, padding)
    n, width, c = x.shape[0], x.shape[2], x.shape[3]
    mx = np.empty((n, hlo.size, wlo.size, c), np.float32)
    at = np.empty(mx.shape, np.int32)
    avg = np.empty(mx.shape, np.float32)
    for b, oh, ow, k in np.ndindex(*mx.shape):
        best, where, total = np.float32(-np.inf), hlo[oh] * width + wlo[ow], np.float32(0.0)
        for h in range(hlo[oh], hhi[oh]):
            for w in range(wlo[ow], whi[ow]):
                v = x[b, h, w, k]
                if v > best or v != v:
                    best, where = v, h * width + w
                total = np.float32(total + v)
        count = np.float32((hhi[oh] - hlo[oh]) * (whi[ow] - wlo[ow]))
        mx[b, oh, ow, k], at[b, oh, ow, k], avg[b, oh, ow, k] = best, where, total / count
    return mx, at, avg


@pytest.mark.parametrize("shape,pool,strides,padding", [
    ((2, 6, 8, 19), 2, 2, "valid"),   # every window 2x2 (the register path)
    ((2, 7, 5, 17), 2, 2, "same"),    # 2x2 windows beside 1x2, 2x1 and 1x1 ones
    ((1, 5, 6, 16), 2, 1, "same"),    # overlapping 2x2 windows
    ((1, 7, 7, 5), 3, 2, "same"),     # 3x3 windows, clipped to 2x2 at two corners
    ((1, 9, 9, 5), 3, 3, "valid"),    # no 2x2 window: the general loop only
])
def test_windows_give_the_bits_of_the_window_scan(shape, pool, strides, padding):
    rng = np.random.default_rng(21)
    x = rng.standard_normal(shape).astype(np.float32)
    x[..., ::3] = np.round(x[..., ::3])  # ties
    flat = x.reshape(-1)
    cells = rng.permutation(flat.size)[:3 * (flat.size // 40)].reshape(3, -1)
    flat[cells[0]], flat[cells[1]], flat[cells[2]] = np.nan, -np.inf, -0.0
    x[0, :2, :2, 0] = -0.0  # a window of negative zeros only: summed from +0, it gives +0
    pool2, strides2 = (pool, pool), (strides, strides)
    mx, at, avg = _window_scan(x, pool2, strides2, padding)
    for gate in (0, 2**62):
        with tuning.override(**{GATE: gate}):
            out, arg = pooling_ops.max_pool2d_forward(x, pool2, strides2, padding)
            mean = pooling_ops.avg_pool2d_forward(x, pool2, strides2, padding)
        assert out.tobytes() == mx.tobytes() and arg.tobytes() == at.tobytes()
        assert mean.tobytes() == avg.tobytes()


# ---------------------------------------------------------------------------------------
# float64 references (forward and backward)
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,cls", [("max", MaxPooling2D), ("avg", AveragePooling2D)])
@pytest.mark.parametrize("shape,pool,strides,padding", CONFIGS)
def test_matches_float64_reference(mode, cls, shape, pool, strides, padding):
    rng = np.random.default_rng(4)
    x = rng.standard_normal(shape).astype(np.float32)
    layer = _make(cls, pool, strides, padding)
    y = layer(x).numpy()
    ref, grad = ref_pool(x, pool, strides, padding, mode)
    g = rng.standard_normal(y.shape).astype(np.float32)
    gx = layer.backward(g).numpy()
    if mode == "max":
        np.testing.assert_array_equal(y, ref.astype(np.float32))
    else:
        np.testing.assert_allclose(y, ref, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gx, grad(g), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_global_pools_match_float64_reference(seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 5 + seed, 4, 2 + seed)).astype(np.float32)
    g = rng.standard_normal((3, 2 + seed)).astype(np.float32)
    avg, mx = GlobalAveragePooling2D(), GlobalMaxPooling2D()
    np.testing.assert_allclose(avg(x).numpy(), x.astype(np.float64).mean(axis=(1, 2)),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(mx(x).numpy(), x.max(axis=(1, 2)))
    hw = x.shape[1] * x.shape[2]
    np.testing.assert_allclose(avg.backward(g).numpy(),
                               np.broadcast_to(g[:, None, None, :] / hw, x.shape), rtol=1e-6)
    flat = x.reshape(3, hw, -1)
    want = np.zeros_like(flat)
    np.put_along_axis(want, flat.argmax(axis=1)[:, None, :], g[:, None, :], axis=1)
    np.testing.assert_array_equal(mx.backward(g).numpy(), want.reshape(x.shape))


def test_global_pools_several_blocks_match_reference():
    # C = 2048 -> 8 positions per block; 9 positions -> 2 blocks per sample
    assert pooling_ops.rows_per_block(2048) == 8
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 3, 2048)).astype(np.float32)
    np.testing.assert_allclose(GlobalAveragePooling2D()(x).numpy(),
                               x.astype(np.float64).mean(axis=(1, 2)), rtol=1e-6, atol=1e-7)
    layer = GlobalMaxPooling2D()
    np.testing.assert_array_equal(layer(x).numpy(), x.max(axis=(1, 2)))
    g = np.ones((2, 2048), np.float32)
    gx = layer.backward(g).numpy().reshape(2, 9, 2048)
    np.testing.assert_array_equal(gx.argmax(axis=1), x.reshape(2, 9, 2048).argmax(axis=1))
    assert gx.sum() == 2 * 2048


# ---------------------------------------------------------------------------------------
# finite differences
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,pool,strides,padding", CONFIGS[::2])
def test_gradcheck_average(shape, pool, strides, padding):
    check_gradients(_make(AveragePooling2D, pool, strides, padding), shape, seed=6)


@pytest.mark.parametrize("shape,pool,strides,padding", CONFIGS[1::2])
def test_gradcheck_max_distinct_values(shape, pool, strides, padding):
    check_gradients(_make(MaxPooling2D, pool, strides, padding), x=_distinct(shape, seed=7))


@pytest.mark.parametrize("keepdims", [False, True])
def test_gradcheck_global(keepdims):
    check_gradients(GlobalAveragePooling2D(keepdims=keepdims), (2, 3, 4, 3), seed=8)
    check_gradients(GlobalMaxPooling2D(keepdims=keepdims), x=_distinct((2, 3, 4, 3), seed=9))


# ---------------------------------------------------------------------------------------
# PyTorch parity (NCHW <-> NHWC)
# ---------------------------------------------------------------------------------------
def _torch_pool(torch, x, pool, strides, padding, mode):
    F = torch.nn.functional
    pool = _pair(pool)
    strides = pool if strides is None else _pair(strides)
    xt = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous().requires_grad_(True)
    inp = xt
    if padding == "same":
        pads = []
        for axis in (1, 0):  # F.pad: last axis (cols) first
            size = x.shape[1 + axis]
            out = math.ceil(size / strides[axis])
            total = max((out - 1) * strides[axis] + pool[axis] - size, 0)
            pads += [total // 2, total - total // 2]
        fill = -math.inf if mode == "max" else 0.0
        inp = F.pad(xt, pads, value=fill)
        if mode == "avg":  # count only in-bounds cells: sum pool of x over sum pool of ones
            ones = F.pad(torch.ones_like(xt), pads, value=0.0)
            s = F.avg_pool2d(inp, pool, strides, divisor_override=1)
            n = F.avg_pool2d(ones, pool, strides, divisor_override=1)
            return xt, (s / n).permute(0, 2, 3, 1)
    fn = F.max_pool2d if mode == "max" else F.avg_pool2d
    return xt, fn(inp, pool, strides).permute(0, 2, 3, 1)


@pytest.mark.parametrize("mode,cls", [("max", MaxPooling2D), ("avg", AveragePooling2D)])
@pytest.mark.parametrize("shape,pool,strides,padding", CONFIGS)
def test_torch_parity(mode, cls, shape, pool, strides, padding):
    torch = pytest.importorskip("torch")
    x = _distinct(shape, seed=10, spacing=0.01)
    layer = _make(cls, pool, strides, padding)
    y = layer(x).numpy()
    xt, yt = _torch_pool(torch, x, pool, strides, padding, mode)
    g = np.random.default_rng(11).standard_normal(y.shape).astype(np.float32)
    (gt,) = torch.autograd.grad(yt, xt, torch.from_numpy(g))
    gx = layer.backward(g).numpy()
    want_y = yt.detach().numpy()
    want_gx = gt.permute(0, 2, 3, 1).numpy()
    if mode == "max":
        np.testing.assert_array_equal(y, want_y)
        np.testing.assert_array_equal(gx, want_gx)
    else:
        np.testing.assert_allclose(y, want_y, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gx, want_gx, rtol=1e-5, atol=1e-6)


def test_torch_parity_global():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(12).standard_normal((2, 5, 6, 3)).astype(np.float32)
    xt = torch.from_numpy(x).permute(0, 3, 1, 2)
    np.testing.assert_allclose(GlobalAveragePooling2D()(x).numpy(),
                               torch.nn.functional.adaptive_avg_pool2d(xt, 1).flatten(1).numpy(),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(GlobalMaxPooling2D()(x).numpy(),
                                  torch.nn.functional.adaptive_max_pool2d(xt, 1).flatten(1).numpy())


# ---------------------------------------------------------------------------------------
# determinism: serial vs parallel, 1 vs 2 threads (bitwise)
# ---------------------------------------------------------------------------------------
DET_CONFIGS = [((3, 13, 11, 6), 2, None, "valid"), ((3, 13, 11, 6), 3, 2, "same"),
               ((2, 9, 10, 5), 3, 1, "same")]


def _run_all(x, g_seed=13):
    """Forward and backward of every pooling layer on ``x``; returns the arrays."""
    results = []
    for shape, pool, strides, padding in DET_CONFIGS:
        xs = x[:shape[0], :shape[1], :shape[2], :shape[3]].copy()
        for cls in WINDOWED:
            layer = _make(cls, pool, strides, padding)
            y = layer(xs).numpy()
            g = np.random.default_rng(g_seed).standard_normal(y.shape).astype(np.float32)
            results += [y, layer.backward(g).numpy()]
    xb = np.random.default_rng(14).standard_normal((2, 3, 3, 2048)).astype(np.float32)
    for inp in (x, xb):
        for cls in GLOBAL:
            layer = cls()
            y = layer(inp).numpy()
            g = np.random.default_rng(g_seed).standard_normal(y.shape).astype(np.float32)
            results += [y, layer.backward(g).numpy()]
    return results


def _assert_bitwise(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.shape == v.shape and u.dtype == v.dtype
        assert np.array_equal(u.view(np.uint32), v.view(np.uint32))


@pytest.fixture
def big_input():
    return np.random.default_rng(15).standard_normal((3, 13, 11, 6)).astype(np.float32)


def test_serial_vs_parallel_bitwise(big_input):
    if tuning.max_threads() < 2:
        pytest.skip("needs 2 threads")
    tuning.set_num_threads(2)
    with tuning.override(**{GATE: 2**62}):
        serial = _run_all(big_input)
    with tuning.override(**{GATE: 0}):
        parallel = _run_all(big_input)
    _assert_bitwise(serial, parallel)
    # each parallel variant ran its serial kernel through its address
    ran = {key[0] for key in address._addresses}
    for kernel in (kernels.max_fwd_serial, kernels.max_bwd_serial,
                   kernels.avg_fwd_serial, kernels.avg_bwd_serial,
                   kernels.gap_blocks, kernels.broadcast_serial, kernels.gmp_blocks):
        assert id(kernel) in ran, f"{kernel.__name__} never ran in parallel"


def test_one_vs_two_threads_bitwise(big_input):
    if tuning.max_threads() < 2:
        pytest.skip("needs 2 threads")
    with tuning.override(**{GATE: 0}):
        tuning.set_num_threads(1)
        one = _run_all(big_input)
        tuning.set_num_threads(2)
        two = _run_all(big_input)
    tuning.reset()
    _assert_bitwise(one, two)


def test_parallel_path_matches_reference(big_input):
    with tuning.override(**{GATE: 0}):
        for shape, pool, strides, padding in DET_CONFIGS:
            x = big_input[:shape[0], :shape[1], :shape[2], :shape[3]]
            for mode, cls in (("max", MaxPooling2D), ("avg", AveragePooling2D)):
                layer = _make(cls, pool, strides, padding)
                ref, grad = ref_pool(x, pool, strides, padding, mode)
                np.testing.assert_allclose(layer(x).numpy(), ref, rtol=1e-6, atol=1e-6)
                g = np.ones(ref.shape, np.float32)
                np.testing.assert_allclose(layer.backward(g).numpy(), grad(g), rtol=1e-6,
                                           atol=1e-6)


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", WINDOWED)
@pytest.mark.parametrize("arg,value,exc", [
    ("pool_size", 0, ValueError), ("pool_size", -2, ValueError), ("pool_size", (2, 0), ValueError),
    ("pool_size", (2, 2, 2), ValueError), ("pool_size", 2.0, TypeError),
    ("pool_size", "2", TypeError), ("pool_size", True, TypeError), ("pool_size", (2, 1.5), TypeError),
    ("strides", 0, ValueError), ("strides", (1, -1), ValueError), ("strides", 1.0, TypeError),
])
def test_bad_window_arguments(cls, arg, value, exc):
    name = cls.__name__
    msg = f"{name}: {arg} must be a positive int or a tuple of 2 positive ints, got {value!r}"
    with pytest.raises(exc, match=re.escape(msg)):
        cls(**{arg: value})


@pytest.mark.parametrize("cls", WINDOWED)
def test_bad_padding(cls):
    name = cls.__name__
    with pytest.raises(ValueError, match=re.escape(f"{name}: padding must be 'valid' or 'same', got 'full'")):
        cls(padding="full")
    with pytest.raises(TypeError, match=re.escape(f"{name}: padding must be 'valid' or 'same', got 1")):
        cls(padding=1)


@pytest.mark.parametrize("cls", GLOBAL)
def test_bad_keepdims(cls):
    with pytest.raises(TypeError, match=re.escape(f"{cls.__name__}: keepdims must be a bool, got 1")):
        cls(keepdims=1)


@pytest.mark.parametrize("cls", WINDOWED + GLOBAL)
def test_wrong_input_rank(cls):
    layer = cls()
    with pytest.raises(ValueError, match=re.escape(
            f"{cls.__name__} {layer.name!r}: input must have rank 4 (batch axis included), "
            f"got shape (2, 4, 4)")):
        layer.forward(np.zeros((2, 4, 4), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            f"{cls.__name__} {layer.name!r}: input must have rank 4 (batch, rows, cols, channels), "
            f"got shape (None, 4, 4)")):
        layer.build((None, 4, 4))


@pytest.mark.parametrize("cls", WINDOWED)
def test_window_larger_than_input(cls):
    layer = cls(3)
    with pytest.raises(ValueError, match=re.escape(
            f"{cls.__name__} {layer.name!r}: pool_size (3, 3) does not fit input shape "
            f"(None, 2, 5, 1) with padding 'valid' (the output would be empty)")):
        layer.output_shape((None, 2, 5, 1))
    assert cls(3, padding="same").output_shape((None, 2, 5, 1)) == (None, 1, 2, 1)


@pytest.mark.parametrize("cls", WINDOWED + GLOBAL)
def test_backward_before_forward(cls):
    layer = cls()
    with pytest.raises(RuntimeError, match="backward called before forward"):
        layer.backward(np.zeros((1, 1, 1, 1), np.float32))


@pytest.mark.parametrize("cls", WINDOWED + GLOBAL)
def test_backward_grad_shape_mismatch(cls):
    layer = cls()
    y = layer(np.zeros((2, 4, 4, 3), np.float32))
    with pytest.raises(ValueError, match=re.escape(
            f"{cls.__name__} {layer.name!r}: grad_output must have shape {y.shape} "
            f"(the last output's shape), got (2, 5)")):
        layer.backward(np.zeros((2, 5), np.float32))
