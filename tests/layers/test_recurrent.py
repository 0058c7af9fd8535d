"""SimpleRNN, LSTM and GRU: Keras 3.15.1's values and gradients (fixtures written by
``make_recurrent_reference.py``), finite differences, dropout semantics, bitwise
serial/parallel and thread-count independence, PyTorch parity (where torch is
installed), initial states and saving."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tinynet as tn
from tinynet import tuning
from tinynet.kernels import recurrent as kernels
from tinynet.kernels.address import run_parallel
from tinynet.layers import GRU, LSTM, SimpleRNN
from tinynet.ops.arrays.recurrent import GATE
from tinynet.testing import check_gradients

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
NPZ = os.path.join(DATA, "keras_recurrent_reference.npz")
JSON = os.path.join(DATA, "keras_recurrent_reference.json")
CLASSES = {"SimpleRNN": SimpleRNN, "LSTM": LSTM, "GRU": GRU}

with open(JSON, encoding="utf-8") as _fh:
    DOC = json.load(_fh)
with np.load(NPZ) as _npz:
    ARRAYS = {k: _npz[k] for k in _npz.files}


def _close(got, want, what):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = max(float(np.max(np.abs(want))), 1.0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale, err_msg=what)


def _make(cls, kwargs):
    """The case's layer (a wrapper's kwargs name its inner layers as [class, kwargs])."""
    units = DOC["units"]
    if cls in ("Bidirectional", "TimeDistributed"):
        kw = dict(kwargs)
        inner_cls, inner_kw = kw.pop("layer")
        if "backward_layer" in kw:
            back_cls, back_kw = kw.pop("backward_layer")
            kw["backward_layer"] = getattr(tn.layers, back_cls)(units, **back_kw)
        return getattr(tn.layers, cls)(getattr(tn.layers, inner_cls)(units, **inner_kw), **kw)
    return CLASSES[cls](units, **kwargs)


def _keras_layer(case):
    a = {k.split("/", 1)[1]: v for k, v in ARRAYS.items() if k.startswith(case["id"] + "/")}
    layer = _make(case["class"], case["kwargs"])
    layer.build((None, *a["x"].shape[1:]))
    layer.set_weights([a[f"w{k}"] for k in range(len(layer.weights))])
    return layer, a


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["id"] for c in DOC["cases"]])
def test_equals_keras(case):
    """Keras's weights load and give Keras's outputs, input, state and weight gradients."""
    layer, a = _keras_layer(case)
    states = [a[f"s{k}"] for k in range(2) if f"s{k}" in a]
    out = layer(a["x"], initial_state=states) if states else layer(a["x"])
    outs = out if isinstance(out, list) else [out]
    n_out = len([k for k in a if k.startswith("out")])
    assert len(outs) == n_out
    for k, o in enumerate(outs):
        _close(o, a[f"out{k}"], f"out{k}")
    cots = [a[f"cot{k}"] for k in range(n_out)]
    back = layer.backward(cots if len(cots) > 1 else cots[0])
    grads = back if isinstance(back, list) else [back]
    _close(grads[0], a["dx"], "dx")
    for k, d in enumerate(grads[1:]):
        _close(d, a[f"ds{k}"], f"ds{k}")
    assert len(grads) == 1 + len(states)
    for k, p in enumerate(layer.weights):
        _close(p.grad, a[f"dw{k}"], f"d{p.name}")


def test_keras_weight_names_and_shapes():
    x = np.zeros((2, 5, 3), np.float32)
    expect = {
        SimpleRNN(4): [("kernel", (3, 4)), ("recurrent_kernel", (4, 4)), ("bias", (4,))],
        LSTM(4): [("kernel", (3, 16)), ("recurrent_kernel", (4, 16)), ("bias", (16,))],
        GRU(4): [("kernel", (3, 12)), ("recurrent_kernel", (4, 12)), ("bias", (2, 12))],
        GRU(4, reset_after=False): [("kernel", (3, 12)), ("recurrent_kernel", (4, 12)),
                                    ("bias", (12,))],
        LSTM(4, use_bias=False): [("kernel", (3, 16)), ("recurrent_kernel", (4, 16))],
    }
    for layer, names in expect.items():
        layer(x)
        assert [(p.name, p.value.shape) for p in layer.weights] == names


def test_initializers_follow_keras():
    tn.set_seed(0)
    lstm = LSTM(5)
    lstm.build((None, 7, 3))
    bias = lstm.bias.value
    assert np.array_equal(bias, np.r_[np.zeros(5), np.ones(5), np.zeros(10)])
    u = lstm.recurrent_kernel.value  # orthogonal [5, 20]: orthonormal rows
    np.testing.assert_allclose(u @ u.T, np.eye(5), atol=1e-5)
    no_forget = LSTM(5, unit_forget_bias=False)
    no_forget.build((None, 7, 3))
    assert not no_forget.bias.value.any()


CONFIGS = [
    lambda: SimpleRNN(3, return_sequences=True),
    lambda: SimpleRNN(3, activation="relu", go_backwards=True, return_state=True),
    lambda: LSTM(3),
    lambda: LSTM(3, return_sequences=True, return_state=True, go_backwards=True),
    lambda: LSTM(3, activation="relu", recurrent_activation="hard_sigmoid", use_bias=False,
                 return_sequences=True),
    lambda: GRU(3, return_sequences=True),
    lambda: GRU(3, reset_after=False, return_state=True),
    lambda: GRU(3, reset_after=False, go_backwards=True, return_sequences=True,
                activation=None),
]


def _x(shape=(3, 6, 4), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("k", range(len(CONFIGS)))
def test_finite_differences(k):
    tn.set_seed(k)
    layer = CONFIGS[k]()
    # relu's kink lies within the default step of some pre-activations: a smaller step
    delta = 1e-3 if layer.activation == "relu" else 1e-2
    check_gradients(layer, x=_x(), seed=1, delta=delta)


def _freeze_masks(layer):
    """Keeps the first call's dropout masks for every later call (finite differences)."""
    first = layer._masks
    kept = {}

    def masks(*args):
        if "m" not in kept:
            kept["m"] = first(*args)
        return kept["m"]
    layer._masks = masks
    return layer


@pytest.mark.parametrize("make", [
    lambda: SimpleRNN(3, dropout=0.3, recurrent_dropout=0.4, seed=1, return_sequences=True),
    lambda: LSTM(3, dropout=0.3, seed=2, return_sequences=True),
    lambda: LSTM(3, dropout=0.3, recurrent_dropout=0.4, seed=3, return_state=True),
    lambda: GRU(3, dropout=0.3, recurrent_dropout=0.4, seed=4, return_sequences=True),
    lambda: GRU(3, reset_after=False, dropout=0.2, recurrent_dropout=0.4, seed=5),
])
def test_dropout_gradients(make):
    check_gradients(_freeze_masks(make()), x=_x(), seed=1, training=True)


def test_dropout_masks_are_fixed_over_time_and_inference_is_unaffected():
    x = _x()
    tn.set_seed(0)
    plain = LSTM(3, return_sequences=True)
    drop = LSTM(3, return_sequences=True, dropout=0.5, seed=7)
    plain.build((None, 6, 4))
    drop.build((None, 6, 4))
    drop.set_weights(plain.get_weights())
    assert np.array_equal(drop(x).numpy(), plain(x).numpy())  # inference: no dropout
    masks = {}
    first = drop._masks
    drop._masks = lambda *a: masks.setdefault("m", first(*a))
    y = drop(x, training=True).numpy()
    xmask = masks["m"][0]
    assert xmask.shape == (1, 3, 4)  # one mask per sample and feature, shared by the steps
    assert set(np.unique(xmask)) <= {0.0, 2.0}
    assert np.array_equal(y, plain(x * xmask[0][:, None, :]).numpy())
    assert not np.array_equal(y, plain(x).numpy())


def _simple_rnn_reference(x, w, u, b, rmask):
    """NumPy SimpleRNN with a recurrent dropout mask (float64)."""
    h = np.zeros((x.shape[0], u.shape[0]))
    out = []
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ w + b + (h * rmask) @ u)
        out.append(h)
    return np.stack(out, axis=1)


def test_recurrent_dropout_masks_the_previous_state_in_the_product():
    x = _x()
    layer = SimpleRNN(3, recurrent_dropout=0.5, seed=3, return_sequences=True)
    layer.build((None, 6, 4))
    masks = {}
    first = layer._masks
    layer._masks = lambda *a: masks.setdefault("m", first(*a))
    y = layer(x, training=True).numpy()
    rmask = masks["m"][1]
    assert rmask.shape == (3, 1, 3)
    w, u, b = (p.value.astype(np.float64) for p in layer.weights)
    np.testing.assert_allclose(y, _simple_rnn_reference(x, w, u, b, rmask[:, 0]), rtol=1e-5,
                               atol=1e-6)


def _run(make, x, g_seed=3):
    tn.set_seed(0)
    layer = make()
    out = layer(x, training=True)
    outs = out if isinstance(out, list) else [out]
    gs = [np.random.default_rng(g_seed + i).standard_normal(o.shape).astype(np.float32)
          for i, o in enumerate(outs)]
    dx = layer.backward(gs if len(gs) > 1 else gs[0])
    return [np.asarray(o) for o in outs] + [np.asarray(dx)] + [p.grad for p in layer.weights]


BITWISE = [
    lambda: SimpleRNN(16, return_sequences=True, return_state=True),
    lambda: LSTM(16, return_sequences=True, go_backwards=True),
    lambda: LSTM(16, dropout=0.2, recurrent_dropout=0.3, seed=1, return_state=True),
    lambda: GRU(16, return_sequences=True, recurrent_dropout=0.2, seed=2),
    lambda: GRU(16, reset_after=False, return_state=True, dropout=0.1, recurrent_dropout=0.2,
                seed=3),
]


def _assert_bitwise(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        assert np.array_equal(u.view(np.uint8), v.view(np.uint8))


def test_serial_vs_parallel_bitwise(monkeypatch):
    """Parallel gates run every kernel's blocks as tasks on the threads, each a call of the
    serial kernel through its address (no parallel copy of it): the serial run's bits."""
    if tuning.max_threads() < 2:
        pytest.skip("needs 2 threads")
    ran = []

    def recording(kernel, tasks, *args):
        ran.append(kernel)
        run_parallel(kernel, tasks, *args)

    monkeypatch.setattr(kernels, "run_parallel", recording)
    x = _x((9, 11, 5))
    before = tuning.get_num_threads()
    tuning.set_num_threads(2)
    try:
        for make in BITWISE:
            before_serial = len(ran)
            with tuning.override(**{GATE: 2**62}):
                serial = _run(make, x)
            assert len(ran) == before_serial  # serial gates: no parallel run
            with tuning.override(**{GATE: 0}):
                parallel = _run(make, x)
            _assert_bitwise(serial, parallel)
    finally:
        tuning.set_num_threads(before)
    assert set(ran) == {kernels.simple_forward_blocks, kernels.simple_backward_blocks,
                        kernels.lstm_forward_blocks, kernels.lstm_backward_blocks,
                        kernels.gru_forward_blocks, kernels.gru_backward_blocks}


def test_one_vs_two_threads_bitwise():
    if tuning.max_threads() < 2:
        pytest.skip("needs 2 threads")
    x = _x((9, 11, 5))
    before = tuning.get_num_threads()
    try:
        with tuning.override(**{GATE: 0}):
            for make in BITWISE:
                tuning.set_num_threads(1)
                one = _run(make, x)
                tuning.set_num_threads(2)
                two = _run(make, x)
                _assert_bitwise(one, two)
    finally:
        tuning.set_num_threads(before)


def test_initial_state_and_return_state_round_trip():
    """The final states of one call, fed as the next call's initial state, continue the
    sequence: two halves give the whole sequence's result."""
    x = _x((2, 8, 4))
    for make in (lambda: LSTM(5, return_sequences=True, return_state=True),
                 lambda: GRU(5, return_sequences=True, return_state=True),
                 lambda: SimpleRNN(5, return_sequences=True, return_state=True)):
        tn.set_seed(0)
        layer = make()
        whole = layer(x)
        first = layer(x[:, :5])
        second = layer(x[:, 5:], initial_state=[s.numpy() for s in first[1:]])
        np.testing.assert_allclose(np.concatenate([first[0].numpy(), second[0].numpy()], 1),
                                   whole[0].numpy(), rtol=1e-6, atol=1e-6)
        for a, b in zip(second[1:], whole[1:]):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


def test_stateful_is_refused_and_unroll_changes_nothing():
    with pytest.raises(ValueError, match=r"LSTM: stateful=True is not supported"):
        LSTM(4, stateful=True)
    x = _x()
    a = GRU(4, unroll=True)
    b = GRU(4)
    a.build((None, 6, 4))
    b.build((None, 6, 4))
    b.set_weights(a.get_weights())
    assert np.array_equal(a(x).numpy(), b(x).numpy())
    assert a.get_config()["unroll"] is True


def test_save_load_and_fit(tmp_path):
    tn.set_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 6, 3)).astype(np.float32)
    y = (x[:, :, 0].sum(1) > 0).astype(np.int64)
    model = tn.Sequential([tn.Input((6, 3)), LSTM(8, return_sequences=True, dropout=0.1,
                                                  recurrent_dropout=0.1, seed=1),
                           GRU(6, reset_after=False, return_sequences=True),
                           SimpleRNN(4, go_backwards=True),
                           tn.layers.Dense(2)])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    before = model.predict(x, verbose=0)
    path = tmp_path / "rnn.safetensors"
    model.save(path)
    again = tn.load_model(path)
    assert np.array_equal(again.predict(x, verbose=0), before)
    assert [type(l).__name__ for l in again.layers] == ["LSTM", "GRU", "SimpleRNN", "Dense"]
    assert again.layers[0].get_config() == model.layers[0].get_config()


def test_return_state_in_a_functional_model():
    inp = tn.Input((5, 3))
    out, h, c = LSTM(4, return_state=True)(inp)
    model = tn.Model(inp, [out, h, c])
    ys = model.predict(_x((2, 5, 3)), verbose=0)
    assert [y.shape for y in ys] == [(2, 4)] * 3
    assert np.array_equal(ys[0], ys[1])


# -- PyTorch parity (skipped without torch) ------------------------------------------------
def _torch():
    return pytest.importorskip("torch")


def test_lstm_matches_torch():
    torch = _torch()
    x = _x((3, 7, 4))
    tn.set_seed(0)
    layer = LSTM(5, return_sequences=True)
    y = layer(x).numpy()
    w, u, b = (p.value for p in layer.weights)
    ref = torch.nn.LSTM(4, 5, batch_first=True)
    with torch.no_grad():  # both use gate order i, f, g, o
        ref.weight_ih_l0.copy_(torch.tensor(w.T))
        ref.weight_hh_l0.copy_(torch.tensor(u.T))
        ref.bias_ih_l0.copy_(torch.tensor(b))
        ref.bias_hh_l0.zero_()
    xt = torch.tensor(x, requires_grad=True)
    yt, _ = ref(xt)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = _x(y.shape, seed=5)
    (yt * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(layer.backward(g).numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(layer.recurrent_kernel.grad, ref.weight_hh_l0.grad.numpy().T,
                               rtol=1e-4, atol=1e-6)


def test_gru_reset_after_matches_torch():
    torch = _torch()
    x = _x((3, 7, 4))
    tn.set_seed(0)
    layer = GRU(5, return_sequences=True)
    layer.build((None, 7, 4))
    rng = np.random.default_rng(1)
    layer.bias.assign(rng.standard_normal((2, 15)).astype(np.float32) * 0.3)
    y = layer(x).numpy()
    w, u, b = (p.value for p in layer.weights)
    # Keras z, r, h -> torch r, z, n
    order = np.r_[5:10, 0:5, 10:15]
    ref = torch.nn.GRU(4, 5, batch_first=True)
    with torch.no_grad():
        ref.weight_ih_l0.copy_(torch.tensor(w[:, order].T))
        ref.weight_hh_l0.copy_(torch.tensor(u[:, order].T))
        ref.bias_ih_l0.copy_(torch.tensor(b[0, order]))
        ref.bias_hh_l0.copy_(torch.tensor(b[1, order]))
    xt = torch.tensor(x, requires_grad=True)
    yt, _ = ref(xt)
    np.testing.assert_allclose(y, yt.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = _x(y.shape, seed=5)
    (yt * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(layer.backward(g).numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(layer.kernel.grad[:, order], ref.weight_ih_l0.grad.numpy().T,
                               rtol=1e-4, atol=1e-6)


# -- wrappers --------------------------------------------------------------------------------
def test_bidirectional_weights_names_and_order():
    layer = tn.layers.Bidirectional(LSTM(4, name="enc"))
    layer(_x((2, 5, 3)))
    assert layer.forward_layer.name == "forward_enc"
    assert layer.backward_layer.name == "backward_enc" and layer.backward_layer.go_backwards
    assert [n for n, _ in layer.named_weights()] == [
        f"{d}_enc/{w}" for d in ("forward", "backward")
        for w in ("kernel", "recurrent_kernel", "bias")]
    assert layer.count_params() == 2 * 4 * 4 * (3 + 4 + 1)


@pytest.mark.parametrize("mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_merge_modes_finite_differences(mode):
    tn.set_seed(0)
    layer = tn.layers.Bidirectional(GRU(3, return_sequences=True), merge_mode=mode)
    check_gradients(layer, x=_x(), seed=1)


def test_bidirectional_text_classifier_fits_saves_and_loads(tmp_path):
    """Embedding -> Bidirectional(LSTM) -> Dense, as keras-io's IMDB example, learns a
    generated task and loads back bitwise."""
    tn.set_seed(0)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 50, size=(96, 12))
    y = (ids[:, 0] < 25).astype(np.int64)  # the first token's half of the vocabulary
    model = tn.Sequential([tn.Input((12,)), tn.layers.Embedding(50, 8),
                           tn.layers.Bidirectional(LSTM(8, return_sequences=True)),
                           tn.layers.TimeDistributed(tn.layers.Dense(4, activation="relu")),
                           tn.layers.Bidirectional(GRU(6), merge_mode="ave"),
                           tn.layers.Dense(2, activation="softmax")])
    model.compile(tn.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(ids, y, epochs=8, batch_size=16, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.9
    path = tmp_path / "bi.safetensors"
    model.save(path)
    again = tn.load_model(path)
    assert np.array_equal(again.predict(ids, verbose=0), model.predict(ids, verbose=0))
    assert again.layers[1].get_config() == model.layers[1].get_config()


def test_time_distributed_is_the_layer_on_every_step():
    x = _x((2, 5, 4))
    dense = tn.layers.Dense(3)
    layer = tn.layers.TimeDistributed(dense)
    y = layer(x).numpy()
    assert np.array_equal(y, dense(x.reshape(10, 4)).numpy().reshape(2, 5, 3))
    assert [p.name for p in layer.weights] == ["kernel", "bias"]


@pytest.mark.parametrize("kind, reference", [
    (kernels.TANH, np.tanh), (kernels.SIGMOID, lambda v: 1.0 / (1.0 + np.exp(-v)))])
def test_float32_tanh_and_sigmoid_within_two_ulp(kind, reference):
    """The kernels' float32 tanh and sigmoid against float64 NumPy: within 2 ulp down to
    ``exp(-87)`` (sigmoid holds that value further out), NaN stays NaN, the infinities
    saturate."""
    v = np.concatenate([np.linspace(-90, 90, 40001), np.logspace(-8, 1.5, 4001),
                        -np.logspace(-8, 1.5, 4001), [0.0, 0.625, -0.625]]).astype(np.float32)
    got = v.copy()
    kernels._act_span(kind, got, 0, got.size)
    want = reference(v.astype(np.float64))
    normal = np.abs(want) >= np.exp(-87.0)
    ulp = np.spacing(np.abs(want[normal]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[normal] - want[normal]) / ulp) <= 2.1
    assert np.max(np.abs(got - want)) < 1e-7
    special = np.array([np.nan, np.inf, -np.inf], np.float32)
    kernels._act_span(kind, special, 0, 3)
    assert np.isnan(special[0]) and special[1] == 1.0
    if kind == kernels.TANH:
        assert special[2] == -1.0
    else:  # exp saturates at exp(-87), the smallest normal float32's order
        assert 0.0 < special[2] < 2e-38
