"""MultiHeadAttention, Attention and AdditiveAttention against Keras 3.15.1 (JAX), a
float64 NumPy reference with finite differences, masks, models and determinism.

The Keras values come from ``make_attention_reference.py`` (run by hand) in
``data/keras_attention_reference.{npz,json}``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tinynet as tn
from tinynet import layers as L
from tinynet import tuning

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
with open(os.path.join(DATA, "keras_attention_reference.json")) as _fh:
    DOC = json.load(_fh)
with np.load(os.path.join(DATA, "keras_attention_reference.npz")) as _npz:
    ARRAYS = {k: _npz[k] for k in _npz.files}


def _close(got, want, what, scale=1.0):
    """Within 1e-5 relative, and 1e-6 of ``scale`` (the size of the terms summed: the
    key bias's gradient is zero in exact arithmetic, its float32 value rounding noise)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    scale = max(float(np.max(np.abs(want))), scale)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale, err_msg=what)


def _case(case):
    spec = DOC["cases"][case]
    arr = {k.split("/", 1)[1]: v for k, v in ARRAYS.items() if k.startswith(case + "/")}
    return spec, arr


def _run_mha_model(layer, xs, arr, call):
    """The query and value through Masking layers into ``layer``, as the Keras case."""
    ins = [tn.Input(x.shape[1:]) for x in xs]
    q = L.Masking(0.0)(ins[0])
    v = L.Masking(0.0)(ins[1])
    kw = dict(call)
    if "attention_mask" in arr:
        kw["attention_mask"] = arr["attention_mask"]
    out = layer(q, v, **kw)
    return tn.Model(ins, out)


@pytest.mark.parametrize("case", sorted(DOC["cases"]))
def test_matches_keras(case):
    """Outputs, input gradients and weight gradients equal Keras's within 1e-5."""
    spec, arr = _case(case)
    cls = getattr(L, spec["class"])
    layer = cls(**spec["args"])
    xs = [arr[f"x{i}"] for i in range(len(spec["shapes"]))]
    call = dict(spec["call"])
    mha = spec["class"] == "MultiHeadAttention"
    if mha and "qmask" in arr:
        model = _run_mha_model(layer, xs, arr, call)
        layer.set_weights([arr[f"w{i}"] for i in range(len(layer.weights))])
        outs = model._run_forward(xs, training=False)
        cots = [arr[f"cot{i}"] for i in range(len(outs))]
        dxs = model._run_backward(cots, input_grads=True)
    else:
        layer.build([(None, *s[1:]) for s in spec["shapes"]])
        layer.set_weights([arr[f"w{i}"] for i in range(len(layer.weights))])
        if mha and "attention_mask" in arr:
            call["attention_mask"] = arr["attention_mask"]
        if not mha and "qmask" in arr:
            call["mask"] = [arr["qmask"], arr["vmask"]]
        out = layer(*xs, **call) if mha else layer(xs, **call)
        outs = out if isinstance(out, list) else [out]
        cots = [arr[f"cot{i}"] for i in range(len(outs))]
        dxs = layer.backward(cots if len(outs) > 1 else cots[0])
    for i, o in enumerate(outs):
        _close(o, arr[f"out{i}"], f"{case}: output {i}")
    for i, d in enumerate(dxs):
        _close(d, arr[f"dx{i}"], f"{case}: input gradient {i}")
    scale = max(float(np.max(np.abs(arr[k]))) for k in arr if k.startswith(("dw", "dx")))
    for i, (name, w) in enumerate(layer.named_weights()):
        _close(w.grad, arr[f"dw{i}"], f"{case}: gradient of {name}", scale)


def test_weights_follow_keras_names_shapes_and_order():
    layer = L.MultiHeadAttention(4, 16, value_dim=8, output_shape=10)
    layer.build([(None, 7, 12), (None, 9, 5), (None, 9, 3)])
    assert [(n, p.value.shape) for n, p in layer.named_weights()] == [
        ("query/kernel", (12, 4, 16)), ("query/bias", (4, 16)),
        ("key/kernel", (3, 4, 16)), ("key/bias", (4, 16)),
        ("value/kernel", (5, 4, 8)), ("value/bias", (4, 8)),
        ("attention_output/kernel", (4, 8, 10)), ("attention_output/bias", (10,))]
    assert layer.output_shape([(None, 7, 12), (None, 9, 5), (None, 9, 3)]) == (None, 7, 10)
    plain = L.MultiHeadAttention(2, 3, use_bias=False)
    plain.build([(None, 4, 6), (None, 5, 6)])
    assert [n for n, _ in plain.named_weights()] == [
        "query/kernel", "key/kernel", "value/kernel", "attention_output/kernel"]
    assert plain.count_params() == 4 * 2 * 3 * 6


# -- a float64 reference, finite differences -------------------------------------------------
def _mha64(ws, q, v, causal):
    """Keras's MultiHeadAttention in float64 NumPy (biases on, one mask: causal)."""
    wq, bq, wk, bk, wv, bv, wo, bo = ws
    qp = np.einsum("btd,dhk->bhtk", q, wq) + bq.transpose(0, 1)[None, :, None, :]
    kp = np.einsum("bsd,dhk->bhsk", v, wk) + bk[None, :, None, :]
    vp = np.einsum("bsd,dhk->bhsk", v, wv) + bv[None, :, None, :]
    s = np.einsum("bhtk,bhsk->bhts", qp / np.sqrt(wq.shape[2]), kp)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    o = np.einsum("bhts,bhsk->bthk", p, vp)
    return np.einsum("bthk,hko->bto", o, wo) + bo


@pytest.mark.parametrize("causal,steps", [(True, 3), (False, 3), (False, 4)],
                         ids=["masked", "fused", "fused-self"])
def test_backward_matches_float64_finite_differences(causal, steps):
    """Masked: the general path; unmasked: the fused one (the key and value projections
    as one product), also with the query as the value (self-attention)."""
    rng = np.random.default_rng(3)
    layer = L.MultiHeadAttention(2, 3, value_dim=4)
    q = rng.standard_normal((2, 4, 5)).astype(np.float32)
    v = q if steps == 4 else rng.standard_normal((2, steps, 5)).astype(np.float32)
    layer.build([(None, 4, 5), (None, steps, 5)])
    layer.set_weights([(0.5 * rng.standard_normal(w.value.shape)).astype(np.float32)
                       for w in layer.weights])
    g = rng.standard_normal((2, 4, 5))
    y = layer(q, v, use_causal_mask=causal)
    ws64 = [w.value.astype(np.float64) for w in layer.weights]
    np.testing.assert_allclose(y.numpy(), _mha64(ws64, q.astype(np.float64),
                                                 v.astype(np.float64), causal), rtol=1e-5,
                               atol=1e-6)
    dq, dv = layer.backward(g.astype(np.float32))

    def loss(ws, qq, vv):
        return float(np.sum(_mha64(ws, qq, vv, causal) * g))

    eps = 1e-6
    q64, v64 = q.astype(np.float64), v.astype(np.float64)
    for arr, got in ((q64, dq.numpy()), (v64, dv.numpy())):
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            keep = arr[i]
            arr[i] = keep + eps
            up = loss(ws64, q64, v64)
            arr[i] = keep - eps
            down = loss(ws64, q64, v64)
            arr[i] = keep
            num[i] = (up - down) / (2 * eps)
        np.testing.assert_allclose(got, num, rtol=1e-4, atol=1e-5)
    for w64, w in zip(ws64, layer.weights):
        num = np.zeros_like(w64)
        for i in np.ndindex(w64.shape):
            keep = w64[i]
            w64[i] = keep + eps
            up = loss(ws64, q64, v64)
            w64[i] = keep - eps
            down = loss(ws64, q64, v64)
            w64[i] = keep
            num[i] = (up - down) / (2 * eps)
        np.testing.assert_allclose(w.grad, num, rtol=1e-4, atol=1e-5, err_msg=w.name)


@pytest.mark.parametrize("make", [
    lambda: L.Attention(use_scale=True, score_mode="concat"),
    lambda: L.Attention(use_scale=True),
    lambda: L.AdditiveAttention(),
])
def test_dense_attention_gradients(make):
    layer = make()
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3, 4), (2, 5, 2), (2, 5, 4))]
    tn.testing.check_gradients(layer, x=xs, seed=1)


# -- masks --------------------------------------------------------------------------------------
def test_embedding_mask_reaches_attention_and_pooling():
    """Padded steps change nothing: the model on ``[3, 4, 5, 0, 0, 0]`` gives the layers'
    result on the three valid steps alone (query and value masks, masked pooling)."""
    tn.set_seed(0)
    ids = tn.Input((6,), dtype="int32")
    x = L.Embedding(20, 8, mask_zero=True)(ids)
    a = L.MultiHeadAttention(2, 4)(x, x)
    model = tn.Model(ids, L.GlobalAveragePooling1D()(a))
    got = model.predict(np.array([[3, 4, 5, 0, 0, 0]]), verbose=0)
    direct = L.MultiHeadAttention(2, 4)
    direct.build([(None, 3, 8), (None, 3, 8)])
    direct.set_weights(model.layers[2].get_weights())
    emb = model.layers[1].get_weights()[0][[3, 4, 5]][None]
    want = direct(emb, emb).numpy().mean(axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_fully_masked_query_rows_follow_keras():
    """A query row masked everywhere: uniform weights by default (Keras's fused path),
    zero weights when the scores are returned (Keras's explicit path)."""
    rng = np.random.default_rng(0)
    layer = L.MultiHeadAttention(1, 2)
    q = rng.standard_normal((1, 2, 3)).astype(np.float32)
    am = np.array([[[True, True], [False, False]]])
    out, scores = layer(q, q, attention_mask=am, return_attention_scores=True)
    np.testing.assert_array_equal(scores.numpy()[0, 0, 1], [0.0, 0.0])
    wq, bq, wk, bk, wv, bv, wo, bo = [w.value.astype(np.float64) for w in layer.weights]
    np.testing.assert_allclose(out.numpy()[0, 1], bo, atol=1e-7)  # zero weights: the bias
    plain = layer(q, q, attention_mask=am).numpy()
    vp = np.einsum("sd,dhk->shk", q[0].astype(np.float64), wv) + bv
    uniform = np.einsum("hk,hko->o", vp.mean(axis=0), wo) + bo
    np.testing.assert_allclose(plain[0, 1], uniform, rtol=1e-5, atol=1e-6)


def test_attention_mask_of_the_wrong_shape_is_refused():
    layer = L.MultiHeadAttention(2, 3)
    q = np.zeros((2, 4, 6), np.float32)
    with pytest.raises(ValueError, match=r"attention_mask must have shape \(2, 4, 4\)"):
        layer(q, q, attention_mask=np.ones((2, 4, 5), bool))
    with pytest.raises(ValueError, match=r"value_mask: mask must have shape \(2, 4\)"):
        layer(q, q, value_mask=np.ones((2, 3), bool))
    with pytest.raises(ValueError, match=r"mask must have shape \(2, 4\)"):
        L.Attention()([q, q], mask=[np.ones((2, 5), bool), None])


# -- models, saving, determinism --------------------------------------------------------------
def _encoder(seq=8, dim=8):
    ids = tn.Input((seq,), dtype="int32")
    x = L.Embedding(16, dim)(ids)
    a = L.MultiHeadAttention(2, 4, dropout=0.1)(x, x, use_causal_mask=True)
    x = L.LayerNormalization()(L.Add()([x, a]))
    f = L.Dense(dim)(L.Dense(16, activation="relu")(x))
    x = L.LayerNormalization()(L.Add()([x, f]))
    x = L.Attention(use_scale=True, dropout=0.1)([x, x])
    x = L.AdditiveAttention()([x, x])
    out = L.Dense(3, activation="softmax")(L.GlobalAveragePooling1D()(x))
    return tn.Model(ids, out)


def _fit(threads):
    tuning.set_num_threads(threads)
    tn.set_seed(5)
    model = _encoder()
    model.compile("adam", "sparse_categorical_crossentropy")
    rng = np.random.default_rng(0)
    x = rng.integers(0, 16, (64, 8))
    y = (x[:, 0] % 3).astype(np.int64)
    with tuning.override(matmul_parallel_min_flops=0):
        model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    return [w.copy() for w in model.get_weights()]


def _fit_unmasked(threads):
    """A transformer block on the fused path (no mask, no dropout)."""
    tuning.set_num_threads(threads)
    tn.set_seed(6)
    x = inputs = tn.Input((8, 8))
    x = L.LayerNormalization()(L.Add()([x, L.MultiHeadAttention(2, 4)(x, x)]))
    out = L.Dense(3)(L.GlobalAveragePooling1D()(x))
    model = tn.Model(inputs, out)
    model.compile("adam", tn.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 8, 8)).astype(np.float32)
    y = rng.integers(0, 3, 64)
    with tuning.override(matmul_parallel_min_flops=0):
        model.fit(x, y, epochs=2, batch_size=16, verbose=0)
    return [w.copy() for w in model.get_weights()]


@pytest.mark.parametrize("fit", [_fit, _fit_unmasked], ids=["masked-dropout", "fused"])
def test_fit_is_bitwise_the_same_at_one_and_two_threads(fit):
    before, adaptive = tuning.get_num_threads(), tuning.get_adaptive_threads()
    tuning.set_adaptive_threads(False)  # two threads even on a busy machine
    try:
        one, two = fit(1), fit(2)
    finally:
        tuning.set_num_threads(before)
        tuning.set_adaptive_threads(adaptive)
    assert all(np.array_equal(a, b) for a, b in zip(one, two))


def test_fused_and_general_paths_agree():
    """An attention mask that masks nothing takes the general path; the values and
    gradients are those of the fused path to float32 rounding."""
    rng = np.random.default_rng(8)
    layer = L.MultiHeadAttention(3, 4, value_dim=5, output_shape=(2, 3))
    q = rng.standard_normal((2, 6, 7)).astype(np.float32)
    v = rng.standard_normal((2, 9, 7)).astype(np.float32)
    k = rng.standard_normal((2, 9, 5)).astype(np.float32)
    g = rng.standard_normal((2, 6, 2, 3)).astype(np.float32)
    gs = rng.standard_normal((2, 3, 6, 9)).astype(np.float32)
    runs = []
    for mask in (None, np.ones((2, 6, 9), dtype=bool)):
        y, scores = layer(q, v, key=k, attention_mask=mask, return_attention_scores=True)
        grads = layer.backward([g, gs])
        runs.append([y.numpy(), scores.numpy(), *(t.numpy() for t in grads),
                     *(w.grad.copy() for w in layer.weights)])
    for fused, general in zip(*runs):
        np.testing.assert_allclose(fused, general, rtol=1e-5, atol=1e-6)


def test_save_and_load_round_trip(tmp_path):
    tn.set_seed(1)
    model = _encoder()
    x = np.random.default_rng(0).integers(0, 16, (4, 8))
    before = model.predict(x, verbose=0)
    path = tmp_path / "encoder.safetensors"
    model.save(path)
    again = tn.load_model(path)
    assert np.array_equal(again.predict(x, verbose=0), before)
    assert again.layers[2].get_config() == model.layers[2].get_config()


def test_return_attention_scores_in_a_model():
    q = tn.Input((4, 6))
    v = tn.Input((5, 6))
    out, scores = L.MultiHeadAttention(2, 3)(q, v, return_attention_scores=True)
    model = tn.Model([q, v], [out, scores])
    rng = np.random.default_rng(0)
    y, s = model.predict([rng.standard_normal((3, 4, 6)), rng.standard_normal((3, 5, 6))],
                         verbose=0)
    assert y.shape == (3, 4, 6) and s.shape == (3, 2, 4, 5)
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-6)


def test_a_keras_file_keeps_the_call(tmp_path):
    """Attention's call arguments travel in Keras's functional node of a .keras file
    (tests/saving/test_keras_attention.py checks the layout and Keras's files)."""
    pytest.importorskip("h5py")
    x = tn.Input((4, 6))
    model = tn.Model(x, L.Attention(name="att")([x, x], use_causal_mask=True))
    model.save(str(tmp_path / "m.keras"))
    loaded = tn.models.load_model(str(tmp_path / "m.keras"))
    assert loaded.get_layer("att").get_config()["call_options"] == {"use_causal_mask": True}


@pytest.mark.parametrize("cls", [tn.layers.Attention, tn.layers.AdditiveAttention])
def test_config_keeps_the_dropout_seed(cls):
    # Keras 3.15.1 writes "seed" in both layers' configs
    layer = cls(dropout=0.25, seed=3)
    config = layer.get_config()
    assert config["seed"] == 3 and config["dropout"] == 0.25
    again = cls.from_config(config)
    assert again.seed == 3 and again.get_config() == config
