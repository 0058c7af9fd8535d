"""Kernels without JIT: the interpreted kernels compute the compiled kernels' bits.

Every kernel family runs on small shapes with all gates at 0 (parallel variants) and at
2**62 (serial variants), here and in a subprocess whose JIT mode is the opposite one
(``NUMBA_DISABLE_JIT=1`` when this process compiles, compiled when this process runs
with ``NUMBA_DISABLE_JIT=1``, as CI's second run does); the results must be equal byte
for byte (transcendentals included: the kernels evaluate exp/tanh/erf in float64 through
``math``, which calls the same C library functions in both modes). Under
``NUMBA_DISABLE_JIT`` the kernels are plain Python (``prange`` is
``range``), so line coverage tools see them, and a profiler in the interpreted process
checks that the parallel variants really ran.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.nojit

NOJIT = os.environ.get("NUMBA_DISABLE_JIT", "0") not in ("", "0")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNEL_FILES = ("reduction.py", "folds.py", "forward.py", "backward.py", "rows.py",
                "rows_registers.py", "lanes.py", "layout.py", "formulas.py")


def _gates(value: int) -> dict:
    from tinynet import tuning

    return {name: value for name in tuning.defaults()}


def _rng():
    return np.random.default_rng(1234)


def _f32(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def _layer_pass(layer, x, g, out, key, training=True):
    """Forward and backward through ``layer``; stores output, dx and every grad."""
    y = layer.forward(x, training=training)
    out[f"{key}/y"] = np.asarray(y)
    out[f"{key}/dx"] = np.asarray(layer.backward(g))
    for p in layer.parameters():
        if p.grad is not None:
            out[f"{key}/d{p.name}"] = np.array(p.grad)


def _built(layer, shape, rng):
    layer.build((None, *shape[1:]))
    layer.built = True
    for p in layer.parameters():
        value = _f32(rng, *p.value.shape, scale=0.5)
        p.value[...] = np.abs(value) + 0.5 if "variance" in p.name else value
    return layer


# -- the families ----------------------------------------------------------------------------
def _normalization(out):
    from tinynet.layers import (BatchNormalization, GroupNormalization, InstanceNormalization,
                                LayerNormalization)

    rng = _rng()
    cases = [
        ("bn4d", lambda: BatchNormalization(), (3, 5, 5, 4)),
        ("bn2d", lambda: BatchNormalization(), (7, 6)),
        ("gn_chunks", lambda: GroupNormalization(groups=2), (4, 3, 3, 8)),
        ("gn_blocks", lambda: GroupNormalization(groups=4), (1, 48, 48, 8)),
        # C = 64: one wide row per position (registers); C = 128: two quads per row;
        # C = 192: the spans
        ("gn_wide", lambda: GroupNormalization(groups=16), (2, 3, 5, 64)),
        ("bn_wide", lambda: BatchNormalization(), (2, 3, 5, 64)),
        ("gn_wide128", lambda: GroupNormalization(groups=16), (2, 3, 5, 128)),
        ("bn_wide128", lambda: BatchNormalization(), (2, 3, 5, 128)),
        ("gn_spans", lambda: GroupNormalization(groups=16), (2, 3, 5, 192)),
        ("in", lambda: InstanceNormalization(), (2, 4, 4, 3)),
        ("ln_rows", lambda: LayerNormalization(), (6, 16)),
        ("ln_rows_pairs", lambda: LayerNormalization(), (7, 24)),  # row pairs, one alone
        ("ln_rows32", lambda: LayerNormalization(), (7, 32)),  # register row pairs, one alone
        ("ln_rows48", lambda: LayerNormalization(), (5, 48)),  # row pairs, one alone
        ("ln_rows64", lambda: LayerNormalization(), (9, 64)),  # the 16-lane vector rows
        ("ln_axes", lambda: LayerNormalization(axis=[1, 2, 3]), (2, 4, 4, 3)),
    ]
    # the same wide rows written with streaming stores (threshold moved to 0)
    streamed = [("bn_stream", lambda: BatchNormalization(), (2, 3, 5, 32)),
                ("gn_stream128", lambda: GroupNormalization(groups=16), (2, 3, 5, 128)),
                ("ln_stream32", lambda: LayerNormalization(), (7, 32)),
                ("ln_stream48", lambda: LayerNormalization(), (5, 48)),
                ("ln_stream64", lambda: LayerNormalization(), (3, 64))]
    from tinynet.ops.arrays import streaming

    threshold = streaming.STREAM_MIN_BYTES
    for key, make, shape in cases + streamed:
        x, g = _f32(rng, *shape, scale=2.0) + 0.5, _f32(rng, *shape)
        layer = _built(make(), shape, rng)
        streaming.STREAM_MIN_BYTES = 0 if "_stream" in key else threshold
        try:
            _layer_pass(layer, x, g, out, f"{key}/train")
            _layer_pass(layer, x, g, out, f"{key}/infer", training=False)
        finally:
            streaming.STREAM_MIN_BYTES = threshold
        for p in layer.parameters():
            out[f"{key}/{p.name}"] = p.value.copy()  # moving statistics after training


def _gn_cores(out):
    from tinynet.ops.arrays.normalization import (
        group_norm_backward_core, group_norm_forward_core)

    rng = _rng()
    for key, shape, groups in [("blocks", (1, 48, 48, 8), 2), ("chunks", (5, 3, 3, 8), 4),
                               ("rows", (5, 6), 1), ("one", (1, 2, 2, 4), 4)]:
        x, g = _f32(rng, *shape) * 3 - 1, _f32(rng, *shape)
        gamma, beta = _f32(rng, shape[-1]), _f32(rng, shape[-1])
        y, xn, inv_std = group_norm_forward_core(x, groups, gamma, beta, 1e-3)
        dx, dgamma, dbeta = group_norm_backward_core(g, xn, inv_std, groups, gamma)
        out.update({f"{key}/y": y, f"{key}/xn": xn, f"{key}/inv_std": inv_std,
                    f"{key}/dx": dx, f"{key}/dgamma": dgamma, f"{key}/dbeta": dbeta})


def _folds(out):
    from tinynet.kernels.normalization import folds
    from tinynet.ops.arrays import reduction
    from tinynet.ops.arrays.reduction import det_reduce, lane_sum

    rng = _rng()
    x, y = _f32(rng, 3000, 5), _f32(rng, 3000, 5)
    flat = x.reshape(-1)
    for parallel in (False, True):
        out[f"col_sum/{parallel}"] = reduction.col_sum(x, 5, parallel=parallel, scale=0.5)
        out[f"col_dot/{parallel}"] = reduction.col_dot(x, y, 5, parallel=parallel)
    parts = rng.standard_normal((2, 7, 130))
    out["merge_rows/serial"] = folds.merge_rows_serial(parts)
    out["merge_rows/parallel"] = folds.merge_rows_parallel(parts)
    for start, stop in [(0, 0), (3, 4), (1, 30), (5, 14_999)]:
        out[f"segment_sum/{start}"] = np.float32(folds.segment_sum(flat, start, stop))
        out[f"segment_dot/{start}"] = np.float32(folds.segment_dot(flat, y.reshape(-1),
                                                                   start, stop))
        out[f"lane_sum/{start}"] = np.asarray(lane_sum(flat, start, stop))
    for n in (1, 17, 16_384, 40_000):
        data = _f32(rng, n)
        out[f"det_reduce/{n}"] = np.float64(det_reduce(data))


def _pooling(out):
    from tinynet.layers import (AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D,
                                MaxPooling2D)

    rng = _rng()
    shape = (2, 7, 6, 3)
    x, x_ties = _f32(rng, *shape), np.round(_f32(rng, *shape))  # ties pick the first max
    for key, make in [("max2", lambda: MaxPooling2D(2)),
                      ("max3s2same", lambda: MaxPooling2D(3, strides=2, padding="same")),
                      ("avg2", lambda: AveragePooling2D(2)),
                      ("avg3same", lambda: AveragePooling2D(3, strides=1, padding="same")),
                      ("gap", lambda: GlobalAveragePooling2D()),
                      ("gmp", lambda: GlobalMaxPooling2D())]:
        for name, data in (("x", x), ("ties", x_ties)):
            layer = _built(make(), shape, rng)
            y = np.asarray(layer.forward(data, training=True))
            _layer_pass(layer, data, _f32(rng, *y.shape), out, f"{key}/{name}")


def _conv(out):
    from tinynet.layers import Conv2D

    rng = _rng()
    shape = (2, 7, 6, 3)
    x = _f32(rng, *shape)
    for key, kwargs in [("valid", {}), ("same", {"padding": "same", "activation": "relu"}),
                        ("stride2", {"strides": 2, "padding": "same", "use_bias": False}),
                        ("dilated", {"dilation_rate": 2}),
                        ("k1", {"kernel_size": 1, "activation": "relu"})]:
        kwargs = {"kernel_size": 3, **kwargs}
        layer = _built(Conv2D(4, **kwargs), shape, rng)
        y = np.asarray(layer.forward(x, training=True))
        _layer_pass(layer, x, _f32(rng, *y.shape), out, key)
    # the direct register kernels (16 filters, 16 channels): forward, both gradients
    x16 = _f32(rng, 2, 5, 6, 16)
    for key, kwargs in [("direct", {"padding": "same"}),
                        ("direct_s2", {"strides": 2, "padding": "same"})]:
        layer = _built(Conv2D(16, 3, **kwargs), x16.shape, rng)
        y = np.asarray(layer.forward(x16, training=True))
        _layer_pass(layer, x16, _f32(rng, *y.shape), out, key)
    _new_convolutions(out, rng)


def _new_convolutions(out, rng):
    """Conv1D and Conv2DTranspose (the convolution kernels with other roles), and the
    depthwise kernels (DepthwiseConv2D, SeparableConv2D): stride 1 rows and strided pixels."""
    from tinynet.layers import Conv1D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D

    cases = [("conv1d_causal", lambda: Conv1D(4, 3, padding="causal"), (2, 9, 3)),
             ("transpose_s2", lambda: Conv2DTranspose(16, 3, strides=2, padding="same"),
              (2, 4, 3, 16)),
             ("depthwise_m2", lambda: DepthwiseConv2D(3, padding="same", depth_multiplier=2),
              (2, 6, 5, 3)),
             ("depthwise_s2", lambda: DepthwiseConv2D((3, 2), strides=2, activation="relu"),
              (2, 7, 6, 4)),
             ("depthwise_dilated", lambda: DepthwiseConv2D(3, dilation_rate=(1, 2),
                                                           padding="same"), (2, 6, 7, 2)),
             ("depthwise_whole_vectors", lambda: DepthwiseConv2D(3, padding="same"),
              (2, 5, 6, 16)),
             ("separable", lambda: SeparableConv2D(5, 3, padding="same"), (2, 5, 5, 3))]
    for key, make, shape in cases:
        x = _f32(rng, *shape)
        layer = _built(make(), shape, rng)
        y = np.asarray(layer.forward(x, training=True))
        _layer_pass(layer, x, _f32(rng, *y.shape), out, key)


def _activations(out):
    from tinynet import activations
    from tinynet.layers import ELU, Activation, Dense, LeakyReLU, ReLU, Softmax

    rng = _rng()
    x = _f32(rng, 5, 9, scale=3.0)
    x[0, :3] = [0.0, -0.0, 20.0]
    layers = [(f"act_{name}", lambda name=name: Activation(name)) for name in activations.names()]
    layers += [("relu_capped", lambda: ReLU(max_value=1.5, negative_slope=0.1, threshold=0.2)),
               ("leaky", lambda: LeakyReLU(0.2)), ("elu", lambda: ELU(0.7)),
               ("softmax", lambda: Softmax())]
    for name in activations.names():
        layers.append((f"dense_{name}", lambda name=name: Dense(4, activation=name)))
    for key, make in layers:
        layer = _built(make(), x.shape, rng)
        y = np.asarray(layer.forward(x, training=True))
        _layer_pass(layer, x, _f32(rng, *y.shape), out, key)


def _optimizers(out):
    from tinynet import optimizers
    from tinynet.layers.layer import Parameter

    rng = _rng()
    cases = [("sgd", lambda: optimizers.SGD(0.1)),
             ("sgd_nesterov", lambda: optimizers.SGD(0.1, momentum=0.9, nesterov=True,
                                                     clipvalue=0.5)),
             ("adam", lambda: optimizers.Adam(0.01, clipnorm=1.0)),
             ("adam_plain", lambda: optimizers.Adam(0.01)),
             ("adam_amsgrad", lambda: optimizers.Adam(0.01, amsgrad=True, weight_decay=0.01)),
             ("adamw", lambda: optimizers.AdamW(0.01, global_clipnorm=0.7)),
             ("rmsprop", lambda: optimizers.RMSprop(0.01)),
             ("rmsprop_centered", lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True)),
             ("adagrad", lambda: optimizers.Adagrad(0.1)),
             ("nadam", lambda: optimizers.Nadam(0.01, weight_decay=0.01)),
             ("adamax", lambda: optimizers.Adamax(0.01)),
             ("lion", lambda: optimizers.Lion(0.001, clipvalue=0.5))]
    for key, make in cases:
        params = [Parameter(_f32(rng, 37, 3), "kernel"), Parameter(_f32(rng, 5), "bias")]
        params[1].path = "layer/bias"
        opt = make()
        for step in range(3):
            for p in params:
                p.grad = _f32(rng, *p.value.shape, scale=2.0)
            opt.apply(params) if step < 2 else opt.apply_or_undo(params)
        params[0].grad[7, 1] = np.nan  # a step that would break a weight: not taken
        out[f"{key}/undone"] = np.array(opt.apply_or_undo(params) is params[0])
        for i, p in enumerate(params):
            out[f"{key}/w{i}"] = p.value.copy()
        for name, slot in opt.get_state().items():
            out[f"{key}/slot/{name}"] = np.asarray(slot)


def _matmul(out):
    """Each product by the small-product kernel and by the blocked GEMM (every size
    counted as large)."""
    from tinynet.ops.arrays import matmul as mm

    rng = _rng()
    a, b = _f32(rng, 33, 20), _f32(rng, 20, 70)
    long_a, long_b = _f32(rng, 3, 5000), _f32(rng, 5000, 4)  # a long inner dimension
    small = mm.SMALL_MULADDS
    for route, limit in (("small", small), ("blocked", 0)):
        mm.SMALL_MULADDS = limit
        try:
            out[f"{route}/ab"] = mm.matmul(a, b)
            out[f"{route}/atb"] = mm.matmul(a.T.copy(), b, trans_a=True)
            out[f"{route}/abt"] = mm.matmul(a, b.T.copy(), trans_b=True)
            out[f"{route}/long"] = mm.matmul(long_a, long_b)
            # the blocked route cuts it in two parts (sizes counted as large)
            out[f"{route}/parts"] = mm.weight_gradient(long_a.T.copy(), long_b)
        finally:
            mm.SMALL_MULADDS = small


def _recurrent(out):
    from tinynet.layers import GRU, LSTM, SimpleRNN

    rng = _rng()
    shape = (2, 3, 2)
    x = _f32(rng, *shape)
    for key, make in [("simple", lambda: SimpleRNN(3, return_sequences=True,
                                                    recurrent_dropout=0.3, seed=1)),
                      ("lstm", lambda: LSTM(3, activation="relu",
                                            recurrent_activation="hard_sigmoid",
                                            recurrent_dropout=0.3, seed=2)),
                      ("gru_after", lambda: GRU(3, return_sequences=True, recurrent_dropout=0.3,
                                                seed=3)),
                      ("gru_before", lambda: GRU(3, reset_after=False, recurrent_dropout=0.3,
                                                 seed=4))]:
        layer = _built(make(), shape, rng)
        y = np.asarray(layer.forward(x, training=True))
        layer._rng = None  # the same dropout masks in the timed pass
        _layer_pass(layer, x, _f32(rng, *y.shape), out, key)
        # a sequence mask: a padded step at the start of one row, inside the other
        layer._rng = None
        masked = np.asarray(layer.forward(x, training=True, mask=[[0, 1, 1], [1, 0, 1]]))
        out[f"{key}/masked/y"] = masked
        out[f"{key}/masked/dx"] = np.asarray(layer.backward(_f32(rng, *masked.shape)))
        for p in layer.parameters():
            out[f"{key}/masked/d{p.name}"] = np.array(p.grad)


def _embedding(out):
    """The Embedding table's gradient (repeated ids add up in input order)."""
    from tinynet.ops.arrays.embedding import table_grad

    rng = _rng()
    ids = np.array([[3, 0, 3], [5, 3, 0]])
    out["embedding/table_grad"] = table_grad(ids, _f32(rng, 2, 3, 4), 6)


def _attention(out):
    """The batched products of the attention layers, then a MultiHeadAttention pass."""
    from tinynet.layers import MultiHeadAttention
    from tinynet.ops.arrays.attention import bmm

    rng = _rng()
    a, b = _f32(rng, 3, 5, 7), _f32(rng, 3, 7, 4)
    out["bmm/ab"] = bmm(a, b)
    out["bmm/atb"] = bmm(np.ascontiguousarray(a.transpose(0, 2, 1)), b, trans_a=True)
    out["bmm/abt"] = bmm(a, np.ascontiguousarray(b.transpose(0, 2, 1)), trans_b=True)
    layer = MultiHeadAttention(2, 3, dropout=0.3, seed=1)
    layer.build([(None, 4, 5), (None, 6, 5)])
    for p in layer.parameters():
        p.value[...] = _f32(rng, *p.value.shape, scale=0.5)
    q, v = _f32(rng, 2, 4, 5), _f32(rng, 2, 6, 5)
    y = layer.forward([q, v], training=True, use_causal_mask=True)
    out["mha/y"] = np.asarray(y)
    dq, dv = layer.backward(_f32(rng, *y.shape))
    out["mha/dq"], out["mha/dv"] = np.asarray(dq), np.asarray(dv)
    for name, p in layer.named_weights():
        out[f"mha/d{name}"] = np.array(p.grad)
    # the fused path: unmasked self-attention, steps not whole vectors, scores returned
    fused = MultiHeadAttention(2, 3, seed=1)
    x = _f32(rng, 2, 19, 5)
    fused.build([(None, 19, 5), (None, 19, 5)])
    for p in fused.parameters():
        p.value[...] = _f32(rng, *p.value.shape, scale=0.5)
    y, scores = fused.forward([x, x], return_attention_scores=True)
    out["mha_fused/y"], out["mha_fused/scores"] = np.asarray(y), np.asarray(scores)
    dq, dv = fused.backward([_f32(rng, *y.shape), _f32(rng, *scores.shape)])
    out["mha_fused/dq"], out["mha_fused/dv"] = np.asarray(dq), np.asarray(dv)
    for name, p in fused.named_weights():
        out[f"mha_fused/d{name}"] = np.array(p.grad)


FAMILIES = {"normalization": _normalization, "gn_cores": _gn_cores, "folds": _folds,
            "pooling": _pooling, "conv": _conv, "activations": _activations,
            "optimizers": _optimizers, "matmul": _matmul, "recurrent": _recurrent,
            "attention": _attention, "embedding": _embedding}
MODES = {"serial": 2**62, "parallel": 0}
# families whose parallel variants are picked by a gate (the others call both explicitly)
GATED = ("normalization", "gn_cores", "pooling", "conv", "activations", "optimizers",
         "recurrent", "attention")


def _kernel_calls(record: set):
    """A profiler that records the names of kernel functions run as Python code."""
    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_code.co_filename.replace(os.sep, "/")
            if "tinynet/" in name and (name.endswith(KERNEL_FILES) or "/kernels/" in name):
                record.add(frame.f_code.co_name)
    return profile


def compute(family: str, mode: str, track: bool = False) -> tuple[dict, list]:
    """Runs one family under one gate setting: ``({key: array}, [kernel names run])``."""
    from tinynet import tuning

    import tinynet as tn

    out: dict = {}
    calls: set = set()
    tn.set_seed(0)
    with tuning.override(**_gates(MODES[mode])):
        if track:
            sys.setprofile(_kernel_calls(calls))
        try:
            FAMILIES[family](out)
        finally:
            if track:
                sys.setprofile(None)
    return {k: np.asarray(v) for k, v in out.items()}, sorted(calls)


def _dump(path: str) -> None:
    """Subprocess entry: every family and mode into ``path`` (.npz) and ``path``.json."""
    arrays, calls = {}, {}
    for family in FAMILIES:
        for mode in MODES:
            out, names = compute(family, mode, track=NOJIT)
            arrays.update({f"{family}|{mode}|{k}": v for k, v in out.items()})
            calls[f"{family}|{mode}"] = names
    np.savez(path, **arrays)
    with open(path + ".json", "w", encoding="utf-8") as fh:
        json.dump({"nojit": NOJIT, "calls": calls}, fh)


@pytest.fixture(scope="module")
def other_mode(tmp_path_factory):
    """Every family's results from a subprocess in the opposite JIT mode."""
    path = str(tmp_path_factory.mktemp("nojit") / "results.npz")
    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "TINYNET_NUM_THREADS": "2"}
    if NOJIT:
        env.pop("NUMBA_DISABLE_JIT")
    else:
        env["NUMBA_DISABLE_JIT"] = "1"
    code = (f"import sys; sys.path.insert(0, {ROOT!r}); "
            f"from tests.hardening.test_nojit import _dump; _dump({path!r})")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    with open(path + ".json", encoding="utf-8") as fh:
        meta = json.load(fh)
    assert meta["nojit"] is not NOJIT
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    return arrays, meta["calls"]


def _need_threads_here() -> None:
    """Interpreted here: gates pick parallel variants only with 2 threads or more."""
    from tinynet import tuning

    if NOJIT and tuning.get_num_threads() < 2:
        pytest.skip("set NUMBA_NUM_THREADS=2 to run the parallel variants interpreted")


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _same_across_modes(key: str, a: np.ndarray, b: np.ndarray) -> bool:
    return _same(a, b)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_matches_the_other_jit_mode_bitwise(family, other_mode):
    arrays, _ = other_mode
    for mode in MODES:
        here, _ = compute(family, mode)
        prefix = f"{family}|{mode}|"
        there = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
        assert sorted(here) == sorted(there)
        differ = [k for k in here if not _same_across_modes(k, here[k], there[k])]
        assert not differ, f"{family} ({mode}): JIT and NUMBA_DISABLE_JIT differ in {differ}"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_serial_and_parallel_variants_agree(family):
    serial, _ = compute(family, "serial")
    parallel, _ = compute(family, "parallel")
    differ = [k for k in serial if not _same(serial[k], parallel[k])]
    assert not differ, f"{family}: serial and parallel variants differ in {differ}"


@pytest.mark.parametrize("family", GATED)
def test_interpreted_run_exercised_both_variants(family, other_mode):
    _, calls = other_mode
    _need_threads_here()
    interpreted = calls if not NOJIT else {
        f"{family}|{mode}": compute(family, mode, track=True)[1] for mode in MODES}
    serial, parallel = interpreted[f"{family}|serial"], interpreted[f"{family}|parallel"]
    assert serial and parallel, f"{family}: no kernel ran as Python code"
    def kernels(names):  # parallel kernel variants (not the "_parallel" gate helper)
        return [n for n in names if n.endswith("_parallel") and n != "_parallel"]
    assert not kernels(serial), (family, serial)
    assert kernels(parallel), (family, parallel)


def _parallel_kernels_in_source() -> set:
    """Every ``@njit(..., parallel=True)`` function defined in tinynet (those a factory
    defines, one per layout or flag, included)."""
    import re

    found = set()
    pattern = re.compile(r"@njit\([^)]*parallel=True[^)]*\)\s*\n\s*def (\w+)")
    for folder, _, files in os.walk(os.path.join(ROOT, "tinynet")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    found.update(pattern.findall(fh.read()))
    return found


def test_every_parallel_kernel_runs_interpreted(other_mode):
    _, calls = other_mode
    _need_threads_here()
    if NOJIT:
        calls = {f"{family}|parallel": compute(family, "parallel", track=True)[1]
                 for family in FAMILIES}
    ran = {name for key, names in calls.items() if key.endswith("|parallel") for name in names}
    kernels = _parallel_kernels_in_source()
    assert "gemm_parallel" in kernels  # the pattern finds them
    assert sorted(kernels - ran) == []
    # the serial kernels run through their address (address.run_parallel) ran too
    assert "tasks_parallel" in ran
