"""Bitwise determinism (DESIGN §7): results never depend on a tuning gate or the thread count.

Each configuration runs a fresh layer (same weights) through forward and backward; the
output, input gradient, parameter gradients and (BN) moving statistics must be bitwise equal
to the all-serial run: every gate 0 vs every gate 2**62, 2 threads vs 1, and repeated runs.
Shapes are at or above the default gates so the parallel paths also run at default settings.
"""

from __future__ import annotations

import numpy as np
import pytest

from tinynet import tuning
from tinynet.layers.regularization.normalization import (
    BatchNormalization, GroupNormalization, InstanceNormalization, LayerNormalization,
    group_norm_backward_core, group_norm_forward_core)

NORM_GATES = ("gn_row_parallel_min_elems", "gn_param_grad_parallel_min_elems",
              "bn_parallel_min_elems", "ln_parallel_min_elems")


def _all_gates(value: int) -> dict:
    gates = dict.fromkeys(tuning.gates(), value)
    assert set(NORM_GATES) <= set(gates)
    return gates


def _configs():
    """(label, gate value, threads) for every configuration compared with the serial one."""
    out = [("gates=0,threads=1", 0, 1)]
    if tuning.max_threads() >= 2:
        out += [("gates=0,threads=2", 0, 2), ("gates=0,threads=2,again", 0, 2),
                ("gates=2**62,threads=2", 2**62, 2), ("defaults,threads=2", None, 2)]
    return out


def _inputs(shape, seed, pshape=None):
    rng = np.random.default_rng(seed)
    c = shape[-1]
    # large per-channel offsets: the shifted sums and their fold order both matter
    x = (rng.standard_normal(shape, dtype=np.float32) * rng.uniform(0.5, 3, c).astype(np.float32)
         + rng.uniform(-50, 50, c).astype(np.float32))
    g = rng.standard_normal(shape, dtype=np.float32)
    pshape = (c,) if pshape is None else pshape
    gamma = rng.uniform(0.5, 2, pshape).astype(np.float32)
    beta = rng.standard_normal(pshape).astype(np.float32)
    return x, g, gamma, beta


def _run_layer(make, x, g, gamma, beta, training, moving=None):
    layer = make()
    layer.build((None, *x.shape[1:]))
    p = {q.name: q for q in layer.parameters()}
    p["gamma"].assign(gamma)
    p["beta"].assign(beta)
    if moving is not None:
        p["moving_mean"].assign(moving[0])
        p["moving_variance"].assign(moving[1])
    results = {"output": np.array(layer(x, training=training), copy=True)}
    results["dx"] = np.array(layer.backward(g), copy=True)
    for q in layer.parameters():
        if q.grad is not None:
            results[f"grad_{q.name}"] = np.array(q.grad, copy=True)
        if not q.trainable:
            results[q.name] = q.value.copy()
    return results


def _run_core(x, g, gamma, beta, groups):
    out, xn, inv_std = group_norm_forward_core(x, groups, gamma, beta, 1e-3)
    dx, dgamma, dbeta = group_norm_backward_core(g, xn, inv_std, groups, gamma)
    names = ("output", "x_normalized", "inv_std", "dx", "dgamma", "dbeta")
    return {n: np.array(a, copy=True) for n, a in zip(names, (out, xn, inv_std, dx, dgamma, dbeta))}


def _under(gate_value, threads, fn):
    tuning.reset()
    tuning.set_num_threads(threads)
    if gate_value is None:
        return fn()
    with tuning.override(**_all_gates(gate_value)):
        return fn()


def _assert_bitwise_everywhere(fn):
    base = _under(2**62, 1, fn)
    assert base, "nothing to compare"
    for label, gate_value, threads in _configs():
        got = _under(gate_value, threads, fn)
        assert got.keys() == base.keys(), label
        for key, want in base.items():
            assert got[key].dtype == want.dtype and got[key].shape == want.shape, (label, key)
            assert np.array_equal(got[key], want), f"{key} differs under {label}"
            assert got[key].tobytes() == want.tobytes(), f"{key} bytes differ under {label}"


# [4,32,32,64] = 262144 elements (batch >= threads: split across samples);
# [1,128,128,32] = 524288 elements (batch 1: the split must move inside the sample)
GN_CASES = [((4, 32, 32, 64), 8), ((1, 128, 128, 32), 4), ((3, 50, 40, 48), 48),
            ((2, 64, 64, 32), 1)]


@pytest.mark.parametrize("shape,groups", GN_CASES)
def test_group_norm_cores_bitwise(shape, groups):
    x, g, gamma, beta = _inputs(shape, seed=groups)
    _assert_bitwise_everywhere(lambda: _run_core(x, g, gamma, beta, groups))


@pytest.mark.parametrize("shape,groups", GN_CASES[:2])
def test_group_normalization_layer_bitwise(shape, groups):
    x, g, gamma, beta = _inputs(shape, seed=groups + 1)
    _assert_bitwise_everywhere(lambda: _run_layer(
        lambda: GroupNormalization(groups=groups), x, g, gamma, beta, training=True))


@pytest.mark.parametrize("shape", [(4, 32, 32, 64), (1, 128, 128, 32)])
def test_instance_normalization_layer_bitwise(shape):
    x, g, gamma, beta = _inputs(shape, seed=5)
    _assert_bitwise_everywhere(lambda: _run_layer(
        InstanceNormalization, x, g, gamma, beta, training=True))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(4, 32, 32, 64), (1, 128, 128, 32), (4, 128, 128, 4)])
def test_batch_normalization_layer_bitwise(shape, training):
    x, g, gamma, beta = _inputs(shape, seed=9)
    c = shape[-1]
    moving = (np.linspace(-1, 1, c, dtype=np.float32), np.linspace(0.5, 2, c, dtype=np.float32))
    _assert_bitwise_everywhere(lambda: _run_layer(
        BatchNormalization, x, g, gamma, beta, training=training, moving=moving))


@pytest.mark.parametrize("shape,axis", [((8, 196, 256), -1), ((2, 64, 64, 32), (1, 2, 3)),
                                        ((1, 1024, 192), -1), ((3, 96, 1000), (1, 2))])
def test_layer_normalization_layer_bitwise(shape, axis):
    axes = (axis,) if isinstance(axis, int) else axis
    pshape = tuple(shape[a] for a in axes)
    x, g, gamma, beta = _inputs(shape, seed=13, pshape=pshape)
    _assert_bitwise_everywhere(lambda: _run_layer(
        lambda: LayerNormalization(axis=axis), x, g, gamma, beta, training=True))


def test_group_normalization_equals_instance_normalization_bitwise():
    # one core for both: groups == channels (or -1) is instance normalization
    x, g, gamma, beta = _inputs((2, 20, 20, 16), seed=17)
    runs = [_run_layer(make, x, g, gamma, beta, training=True)
            for make in (InstanceNormalization, lambda: GroupNormalization(groups=-1),
                         lambda: GroupNormalization(groups=16))]
    for other in runs[1:]:
        for key, want in runs[0].items():
            assert np.array_equal(other[key], want), key


def test_repeated_calls_on_one_layer_are_bitwise_stable():
    x, g, gamma, beta = _inputs((2, 16, 16, 32), seed=19)
    layer = GroupNormalization(groups=8)
    first = np.array(layer(x, training=True), copy=True)
    dx_first = np.array(layer.backward(g), copy=True)
    for _ in range(2):
        assert np.array_equal(np.asarray(layer(x, training=True)), first)
        assert np.array_equal(np.asarray(layer.backward(g)), dx_first)


ROUTES = [
    ("bn", BatchNormalization, {"bn_parallel_min_elems"}),
    ("gn", lambda: GroupNormalization(groups=4),
     {"gn_row_parallel_min_elems", "gn_param_grad_parallel_min_elems"}),
    ("in", InstanceNormalization, {"gn_row_parallel_min_elems", "gn_param_grad_parallel_min_elems"}),
    ("ln", lambda: LayerNormalization(axis=(1, 2, 3)), {"ln_parallel_min_elems"}),
]


@pytest.mark.skipif(tuning.max_threads() < 2, reason="needs 2 threads")
@pytest.mark.parametrize("make,gates", [r[1:] for r in ROUTES], ids=[r[0] for r in ROUTES])
def test_layers_consult_their_gates(monkeypatch, make, gates):
    """The comparisons above only mean something if the gates really switch the paths."""
    calls = []
    original = tuning.use_parallel

    def spy(name, work):
        answer = original(name, work)
        calls.append((name, work, answer))
        return answer

    monkeypatch.setattr(tuning, "use_parallel", spy)
    x, g, _, _ = _inputs((2, 8, 8, 16), seed=23)
    tuning.set_num_threads(2)
    for value, expected in ((0, True), (2**62, False)):
        calls.clear()
        with tuning.override(**_all_gates(value)):
            layer = make()
            layer(x, training=True)
            layer.backward(g)
        assert {name for name, _, _ in calls} >= gates, calls
        for name, work, answer in calls:
            # the unit of `work` is the gate's own (elements or other work counts, DESIGN §4)
            if name in gates:
                assert work > 0 and answer is expected, (name, work, answer)


def test_cores_consult_the_group_norm_gates(monkeypatch):
    calls = []
    original = tuning.use_parallel
    monkeypatch.setattr(tuning, "use_parallel",
                        lambda name, work: calls.append(name) or original(name, work))
    x, g, gamma, beta = _inputs((2, 4, 4, 8), seed=29)
    _run_core(x, g, gamma, beta, 2)
    assert {"gn_row_parallel_min_elems", "gn_param_grad_parallel_min_elems"} <= set(calls)


# Streaming stores (tinynet.ops.arrays.streaming) write large outputs past the cache; the
# threshold moved to 0 makes these small shapes stream. The channel counts are the
# streamed ones (whole 16-float vectors per row); the path runs serial and parallel.
STREAM_CASES = [
    ("bn", BatchNormalization, (2, 9, 7, 32)),
    ("bn128", BatchNormalization, (3, 5, 5, 128)),
    ("gn", lambda: GroupNormalization(groups=4), (4, 6, 6, 64)),
    ("gn16", lambda: GroupNormalization(groups=2), (1, 40, 40, 16)),
    ("in", InstanceNormalization, (2, 30, 30, 32)),
    # layer norm's rows: 32 and 64 features (register rows), 48 and 256 (vector row pairs)
    ("ln32", LayerNormalization, (3, 9, 32)),
    ("ln48", LayerNormalization, (5, 48)),
    ("ln64", LayerNormalization, (2, 7, 64)),
    ("ln256", LayerNormalization, (3, 7, 256)),
]


@pytest.mark.parametrize("make,shape", [c[1:] for c in STREAM_CASES],
                         ids=[c[0] for c in STREAM_CASES])
def test_streaming_stores_change_no_bit(monkeypatch, make, shape):
    from tinynet.ops.arrays import streaming
    from tinynet.ops.arrays import normalization as group_norm_core

    x, g, gamma, beta = _inputs(shape, seed=29)
    allocated = []
    aligned = group_norm_core.empty_aligned

    def spy(*args):
        allocated.append(args)
        return aligned(*args)

    monkeypatch.setattr(group_norm_core, "empty_aligned", spy)
    runs = {}
    for label, threshold in (("ordinary", 2**62), ("streamed", 0)):
        monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", threshold)
        allocated.clear()
        for gate_value, threads in ((2**62, 1), (0, 2)):
            runs[label, gate_value, threads] = _under(gate_value, threads, lambda: _run_layer(
                make, x, g, gamma, beta, training=True))
        # the streamed runs took the streaming path: output and dx (2 runs each)
        assert len(allocated) == (4 if label == "streamed" else 0), label
    base = runs["ordinary", 2**62, 1]
    for key, got in runs.items():
        for name, want in base.items():
            assert got[name].tobytes() == want.tobytes(), f"{name} differs under {key}"
