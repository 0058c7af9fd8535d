"""Sequence masks in SimpleRNN, LSTM, GRU, Bidirectional and TimeDistributed: Keras
3.15.1's values and gradients (fixtures written by ``make_recurrent_mask_reference.py``),
the masked-step semantics pinned by hand, mask flow through models, bitwise serial/parallel
and thread-count independence, and variable-length text models."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tinynet as tn
from tinynet import tuning
from tinynet.layers import GRU, LSTM, Bidirectional, Dense, Embedding, SimpleRNN, TimeDistributed
from tinynet.ops.arrays.recurrent import GATE
from tinynet.testing import check_gradients

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
NPZ = os.path.join(DATA, "keras_recurrent_mask_reference.npz")
JSON = os.path.join(DATA, "keras_recurrent_mask_reference.json")

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


def _make(cls, kwargs, units):
    if cls == "Bidirectional":
        kw = dict(kwargs)
        inner_cls, inner_kw = kw.pop("layer")
        if "backward_layer" in kw:
            back_cls, back_kw = kw.pop("backward_layer")
            kw["backward_layer"] = getattr(tn.layers, back_cls)(units, **back_kw)
        return Bidirectional(getattr(tn.layers, inner_cls)(units, **inner_kw), **kw)
    return getattr(tn.layers, cls)(units, **kwargs)


@pytest.mark.parametrize("case", DOC["cases"], ids=[c["id"] for c in DOC["cases"]])
def test_masked_equals_keras(case):
    """Keras's weights and mask give Keras's outputs, input, state and weight gradients."""
    a = {k.split("/", 1)[1]: v for k, v in ARRAYS.items() if k.startswith(case["id"] + "/")}
    layer = _make(case["class"], case["kwargs"], DOC["units"])
    layer.build((None, *a["x"].shape[1:]))
    layer.set_weights([a[f"w{k}"] for k in range(len(layer.weights))])
    mask = a["m"].astype(bool)
    states = [a[f"s{k}"] for k in range(2) if f"s{k}" in a]
    out = (layer(a["x"], initial_state=states, mask=mask) if states
           else layer(a["x"], mask=mask))
    outs = out if isinstance(out, list) else [out]
    n_out = len([k for k in a if k.startswith("out")])
    assert len(outs) == n_out
    for k, o in enumerate(outs):
        _close(o, a[f"out{k}"], f"out{k}")
    cots = [a[f"cot{k}"] for k in range(n_out)]
    back = layer.backward(cots if len(cots) > 1 else cots[0])
    grads = back if isinstance(back, list) else [back]
    _close(grads[0], a["dx"], "dx")
    assert len(grads) == 1 + len(states)
    for k, d in enumerate(grads[1:]):
        _close(d, a[f"ds{k}"], f"ds{k}")
    for k, p in enumerate(layer.weights):
        _close(p.grad, a[f"dw{k}"], f"d{p.name}")


def _x(shape=(3, 6, 4), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


MASK = np.array([[1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1], [1, 0, 1, 0, 0, 1]], dtype=bool)


@pytest.mark.parametrize("cls", [SimpleRNN, LSTM, GRU])
def test_masked_step_keeps_the_state_and_outputs_it(cls):
    """A masked step is skipped: its output is the kept state, and the result equals
    running each row on its valid steps only."""
    tn.set_seed(0)
    x = _x()
    layer = cls(5, return_sequences=True, return_state=True)
    out, *finals = layer(x, mask=MASK)
    out = out.numpy()
    for b in range(3):
        ref, *ref_finals = layer(x[b:b + 1, MASK[b]])
        np.testing.assert_allclose(out[b, MASK[b]], ref.numpy()[0], rtol=1e-6, atol=1e-6)
        for f, r in zip(finals, ref_finals):
            np.testing.assert_allclose(f.numpy()[b], r.numpy()[0], rtol=1e-6, atol=1e-6)
    # row 1 is padded at the start: the kept state there is the initial zeros
    assert np.array_equal(out[1, :2], np.zeros((2, 5), np.float32))
    # row 0 is padded at the end: the last valid output repeats
    assert np.array_equal(out[0, 4], out[0, 3]) and np.array_equal(out[0, 5], out[0, 3])


def test_all_valid_mask_changes_no_bit():
    tn.set_seed(0)
    layer = LSTM(5, return_sequences=True)
    x = _x()
    plain = layer(x).numpy()
    g = _x((3, 6, 5), seed=1)
    d_plain = layer.backward(g).numpy()
    masked = layer(x, mask=np.ones((3, 6), bool)).numpy()
    d_masked = layer.backward(g).numpy()
    assert np.array_equal(plain, masked) and np.array_equal(d_plain, d_masked)


class _WithMask:
    """A layer called with a fixed ``mask`` (the forward/backward contract of
    ``check_gradients``)."""

    def __init__(self, layer, mask):
        self.layer, self.mask = layer, mask

    def forward(self, x, training=False):
        return self.layer.forward(x, training=training, mask=self.mask)

    def __getattr__(self, name):
        return getattr(self.layer, name)


@pytest.mark.parametrize("make", [
    lambda: SimpleRNN(3, return_sequences=True, go_backwards=True),
    lambda: LSTM(3, return_state=True),
    lambda: GRU(3, reset_after=False, return_sequences=True),
    lambda: GRU(3, go_backwards=True, unroll=True, return_sequences=True),
    lambda: Bidirectional(LSTM(3, return_sequences=True), merge_mode="mul"),
])
def test_masked_finite_differences(make):
    tn.set_seed(0)
    check_gradients(_WithMask(make(), MASK), x=_x((3, 6, 2), seed=4), seed=1)


def test_compute_mask_follows_keras():
    m = MASK
    assert LSTM(2, return_sequences=True).compute_mask(None, m) is m
    assert LSTM(2).compute_mask(None, m) is None
    assert GRU(2, return_sequences=True, return_state=True).compute_mask(None, m) == [m, None]
    assert LSTM(2, return_state=True).compute_mask(None, m) == [None, None, None]
    bi = Bidirectional(LSTM(2, return_sequences=True), merge_mode=None)
    assert bi.compute_mask(None, m) == [m, m]
    assert Bidirectional(GRU(2)).compute_mask(None, m) is None
    assert TimeDistributed(Dense(2)).compute_mask(None, m) is m


def test_mask_flows_from_embedding_and_masking():
    """``Embedding(mask_zero=True)`` and ``Masking`` feed the mask to the recurrent layers:
    padding ids change nothing, and the model's output equals the unpadded sequences'."""
    tn.set_seed(0)
    ids = np.array([[3, 5, 7, 0, 0], [0, 0, 2, 4, 9]], dtype=np.int32)
    model = tn.Sequential([tn.Input((None,), dtype="int32"), Embedding(12, 4, mask_zero=True),
                           Bidirectional(LSTM(3, return_sequences=True)),
                           TimeDistributed(Dense(3)), GRU(2)])
    out = model.predict(ids, verbose=0)
    for b, valid in enumerate([ids[0, :3], ids[1, 2:]]):
        alone = model.predict(valid[None], verbose=0)
        np.testing.assert_allclose(out[b], alone[0], rtol=1e-5, atol=1e-6)
    x = _x((2, 5, 3))
    x[0, 3:] = 0.0
    masking = tn.Sequential([tn.Input((None, 3)), tn.layers.Masking(0.0), SimpleRNN(4)])
    np.testing.assert_allclose(masking.predict(x, verbose=0)[0],
                               masking.predict(x[:1, :3], verbose=0)[0], rtol=1e-5, atol=1e-6)


def test_time_distributed_passes_the_mask_to_a_layer_that_takes_one():
    inner = tn.layers.GlobalAveragePooling1D()
    td = TimeDistributed(inner)
    x = _x((2, 3, 4, 5))
    mask = np.ones((2, 3, 4), bool)
    mask[:, :, 2:] = False
    np.testing.assert_allclose(td(x, mask=mask).numpy(), x[:, :, :2].mean(axis=2), rtol=1e-6)


def _text_model(bidirectional):
    rec = LSTM(6)
    layers = [tn.Input((None,), dtype="int32"), Embedding(30, 5, mask_zero=True),
              Bidirectional(rec) if bidirectional else rec, Dense(2, activation="softmax")]
    return tn.Sequential(layers)


def _padded(n=48, steps=9, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 30, size=(n, steps))
    lengths = rng.integers(2, steps + 1, size=n)
    for i, length in enumerate(lengths):
        ids[i, length:] = 0
    y = (ids[:, 0] < 15).astype(np.int64)
    return ids.astype(np.int32), y


def _fit(bidirectional):
    tn.set_seed(0)
    model = _text_model(bidirectional)
    model.compile(tn.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
    ids, y = _padded()
    model.fit(ids, y, epochs=2, batch_size=16, verbose=0, shuffle=False)
    return [w.copy() for w in model.get_weights()] + [model.predict(ids, verbose=0)]


def _assert_bitwise(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        assert np.array_equal(u.view(np.uint8), v.view(np.uint8))


@pytest.mark.parametrize("bidirectional", [False, True])
def test_variable_length_fit_is_bitwise_at_any_thread_count_and_gate(bidirectional):
    if tuning.max_threads() < 2:
        pytest.skip("needs 2 threads")
    before = tuning.get_num_threads()
    runs = []
    try:
        for threads, gate in ((1, 2**62), (2, 2**62), (1, 0), (2, 0)):
            tuning.set_num_threads(threads)
            with tuning.override(**{GATE: gate}):
                runs.append(_fit(bidirectional))
    finally:
        tuning.set_num_threads(before)
    for other in runs[1:]:
        _assert_bitwise(runs[0], other)


def test_variable_length_predict_takes_any_length():
    tn.set_seed(0)
    model = _text_model(True)
    short = model.predict(np.array([[4, 2, 0]], np.int32), verbose=0)
    longer = model.predict(np.array([[4, 2, 0, 0, 0, 0, 0]], np.int32), verbose=0)
    np.testing.assert_allclose(short, longer, rtol=1e-6, atol=1e-7)


def test_mask_inside_a_call_layer():
    """``mask=`` given to a recurrent layer inside a ``call()`` layer is honoured and
    differentiated through."""

    class Masked(tn.layers.Layer):
        def __init__(self):
            super().__init__()
            self.rnn = GRU(3)

        def call(self, inputs):
            return self.rnn(inputs, mask=tn.ops.not_equal(inputs[:, :, 0], 0.0))

    tn.set_seed(0)
    x = _x((2, 5, 2))
    x[0, 3:] = 0.0
    layer = Masked()
    y = layer(x).numpy()
    np.testing.assert_allclose(y[0], layer.rnn(x[:1, :3]).numpy()[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mask, fragment", [
    (np.ones((3, 5), bool), "mask must have shape (3, 6) (batch, timesteps of the input), "
                            "got shape (3, 5)"),
    (np.ones((3, 6, 1), bool), "got shape (3, 6, 1)"),
    (np.full((3, 6), 0.5, np.float32), "mask must hold booleans (or 0/1 numbers), got dtype "
                                       "float32 with values other than 0 and 1"),
    (np.full((3, 6), "a"), "got dtype <U1"),
])
def test_bad_masks(mask, fragment):
    with pytest.raises(ValueError) as err:
        LSTM(2)(_x(), mask=mask)
    assert fragment in str(err.value)
    assert "LSTM 'lstm" in str(err.value)
