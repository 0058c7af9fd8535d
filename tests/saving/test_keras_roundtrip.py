"""Round trips with Keras 3 itself: tinynet -> ``.keras`` -> Keras and Keras -> ``.keras``
-> tinynet, for the digits CNN, the residual functional model, a nested model and a model
of every layer with a Keras counterpart; the optimizer state carried so that one more
step gives the same weights in either framework; weights-only files both ways.

Runs where ``keras`` (3.x), ``jax`` and ``h5py`` are importable (``.ci/run`` installs
them); skips cleanly elsewhere. Keras runs on the JAX backend unless ``KERAS_BACKEND``
says otherwise. Nothing is downloaded.
"""

import os
import sys

import numpy as np
import pytest

pytest.importorskip("h5py")
if "keras" not in sys.modules:
    os.environ.setdefault("KERAS_BACKEND", "jax")
    if os.environ["KERAS_BACKEND"] == "jax":
        pytest.importorskip("jax")
keras = pytest.importorskip("keras")
if not keras.__version__.startswith("3."):
    pytest.skip(f"Keras 3 needed, found {keras.__version__}", allow_module_level=True)

import tinynet as tn  # noqa: E402
from tinynet import layers as L  # noqa: E402

EXAMPLES = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
DATA = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "data", "keras"))
ATOL = 1e-5
sys.path.insert(0, DATA)
# Attention and AdditiveAttention on padded ids (the model of the checked-in fixtures)
from generate_keras_attention import attention_model, data as attention_data  # noqa: E402


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(EXAMPLES)


# -- tinynet models --------------------------------------------------------------------------
def digits_cnn() -> tn.Sequential:
    sys.path.insert(0, EXAMPLES)
    try:
        import train_digits_cnn
    finally:
        sys.path.remove(EXAMPLES)
    return train_digits_cnn.build_model()


def residual() -> tn.Model:
    sys.path.insert(0, EXAMPLES)
    try:
        import residual_cnn
    finally:
        sys.path.remove(EXAMPLES)
    return residual_cnn.build_model()


def nested() -> tn.Model:
    inner = tn.Sequential([L.Conv2D(4, 3, activation="relu"), L.MaxPooling2D(2)], name="inner")
    inputs = tn.Input((8, 8, 1))
    return tn.Model(inputs, L.Dense(10)(L.Flatten()(inner(inputs))))


def every_layer() -> tn.Model:
    """Every tinynet layer with a Keras counterpart (Embedding: :func:`embedding`)."""
    i = tn.Input((8, 8, 1))
    x = L.RandomFlip(seed=1)(i)
    x = L.RandomCrop(8, 8, seed=1)(x)
    x = L.RandomTranslation(0.1, 0.1, seed=1)(x)
    x = L.RandomRotation(0.1, seed=1)(x)
    x = L.RandomZoom(0.1, seed=1)(x)
    x = L.RandomContrast(0.1, seed=1)(x)
    x = L.Rescaling(0.5, offset=-0.1)(x)
    x = L.Normalization(mean=[0.1], variance=[2.0])(x)
    x = L.GaussianDropout(0.1, seed=1)(L.GaussianNoise(0.1, seed=1)(x))
    x = L.Conv2D(4, 3, padding="same", activation="relu")(x)
    x = L.SpatialDropout2D(0.1)(L.BatchNormalization()(x))
    x = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same")(x)
    x = L.SeparableConv2D(4, 3, padding="same")(x)
    x = L.GroupNormalization(2)(x)
    x = L.Conv2DTranspose(4, 3, padding="same")(x)
    x = L.Cropping2D(1)(L.ZeroPadding2D(1)(x))
    a, b = L.MaxPooling2D(2)(x), L.AveragePooling2D(2)(x)
    x = L.Concatenate()([L.Add()([a, b]), L.Subtract()([a, b]), L.Multiply()([a, b]),
                         L.Average()([a, b]), L.Maximum()([a, b]), L.Minimum()([a, b])])
    x = L.UpSampling2D(2)(x)
    g = [L.GlobalAveragePooling2D()(x), L.GlobalMaxPooling2D()(x)]
    s = L.Conv1D(4, 3, padding="causal", activation="tanh")(
        L.Reshape((64, 24))(L.Permute((2, 1, 3))(x)))
    s = L.AveragePooling1D(2)(L.MaxPooling1D(2)(s))
    v = L.Concatenate()(g + [L.GlobalAveragePooling1D()(s), L.GlobalMaxPooling1D()(s)])
    v = L.UnitNormalization()(L.LayerNormalization()(L.Dense(8, activation="relu")(v)))
    v = L.Activation("tanh")(L.ReLU()(L.LeakyReLU()(L.ELU()(v))))
    v = L.Identity()(L.Dropout(0.1)(L.Tanh()(L.Sigmoid()(v))))
    v = L.ActivityRegularization()(v)
    r = L.RepeatVector(3)(v)
    v = L.Concatenate()([v, L.Flatten()(L.Dot(axes=(2, 2), normalize=True)([r, r]))])
    return tn.Model(i, L.Softmax()(L.Dense(10)(v)))


def embedding() -> tn.Sequential:
    model = tn.Sequential([L.Embedding(7, 3), L.Flatten(), L.Dense(10)])
    model.build((None, 4))
    return model


def lstm_text() -> tn.Model:
    """Embedding(mask_zero) -> LSTM: the recurrent weights under Keras's ``cell``."""
    inputs = tn.Input((6,), dtype="int64")
    x = L.LSTM(5)(L.Embedding(20, 8, mask_zero=True)(inputs))
    return tn.Model(inputs, L.Dense(10)(x))


def gru_rnn() -> tn.Sequential:
    """GRU in both forms (reset_after True and False) and SimpleRNN."""
    return tn.Sequential([tn.Input((5, 3)), L.GRU(4, return_sequences=True),
                          L.GRU(4, reset_after=False, return_sequences=True),
                          L.SimpleRNN(3, activation="relu"), L.Dense(10)])


def bidirectional() -> tn.Model:
    """Bidirectional with every merge mode (None gives two outputs), one over a GRU
    with its own backward layer."""
    inputs = tn.Input((5, 3))
    outs = [L.Bidirectional(L.LSTM(3), merge_mode=mode)(inputs)
            for mode in ("concat", "sum", "mul", "ave")]
    outs += L.Bidirectional(L.SimpleRNN(2), merge_mode=None)(inputs)
    outs.append(L.Bidirectional(L.GRU(2), backward_layer=L.GRU(2, go_backwards=True))(inputs))
    return tn.Model(inputs, L.Dense(10)(L.Concatenate()(outs)))


def time_distributed() -> tn.Sequential:
    return tn.Sequential([tn.Input((5, 3)), L.TimeDistributed(L.Dense(4, activation="relu")),
                          L.LSTM(4, return_sequences=True),
                          L.TimeDistributed(L.Dense(2)), L.Flatten(), L.Dense(10)])


def encoder(causal: bool = False) -> tn.Model:
    """A transformer encoder block: self-attention, residual, LayerNormalization, Dense."""
    inputs = tn.Input((8, 16))
    x = L.LayerNormalization()(L.Add()([inputs, L.MultiHeadAttention(2, 8)(
        inputs, inputs, use_causal_mask=causal)]))
    x = L.GlobalAveragePooling1D()(L.Dense(16, activation="relu")(x))
    return tn.Model(inputs, L.Dense(10)(x))


def cross_attention() -> tn.Model:
    """A separate key (value_dim, output_shape, no biases), returning the scores too."""
    inputs = tn.Input((8, 16))
    memory = L.Dense(6)(inputs)
    out, scores = L.MultiHeadAttention(3, 4, value_dim=5, use_bias=False, output_shape=7)(
        inputs, memory, memory, return_attention_scores=True)
    return tn.Model(inputs, L.Dense(10)(L.Concatenate()([L.Flatten()(out),
                                                          L.Flatten()(scores)])))


TINYNET_MODELS = {"digits_cnn": digits_cnn, "residual": residual, "nested": nested,
                  "every_layer": every_layer, "embedding": embedding, "lstm_text": lstm_text,
                  "gru_rnn": gru_rnn, "bidirectional": bidirectional,
                  "time_distributed": time_distributed, "encoder": encoder,
                  "encoder_causal": lambda: encoder(causal=True),
                  "cross_attention": cross_attention,
                  "attention_layers": lambda: attention_model(L, tn)}
SEQUENCES = ("gru_rnn", "bidirectional", "time_distributed")
ATTENTION = ("encoder", "encoder_causal", "cross_attention", "attention_kwargs")


def _data(name: str):
    rng = np.random.default_rng(0)
    if name == "attention_layers":
        return attention_data()
    if name == "embedding":
        x = rng.integers(0, 7, (16, 4)).astype(np.float32)
    elif name == "lstm_text":
        # no padding: tinynet's recurrent layers do not take the mask yet
        x = rng.integers(1, 20, (16, 6)).astype(np.int64)
    elif name in ATTENTION:
        x = rng.standard_normal((16, 8, 16)).astype(np.float32)
    elif name in SEQUENCES:
        x = rng.standard_normal((16, 5, 3)).astype(np.float32)
    else:
        x = rng.random((16, 8, 8, 1)).astype(np.float32)
    return x, np.arange(16) % 10


def _compile_tinynet(model, optimizer="adam"):
    model.compile(optimizer=optimizer,
                  loss=tn.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])


@pytest.mark.parametrize("name", sorted(TINYNET_MODELS))
def test_tinynet_to_keras_and_back(tmp_path, name):
    tn.set_seed(0)
    model = TINYNET_MODELS[name]()
    _compile_tinynet(model)
    x, y = _data(name)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    model.save(tmp_path / "tinynet.keras")
    k = keras.models.load_model(tmp_path / "tinynet.keras")
    np.testing.assert_allclose(k.predict(x, verbose=0), model.predict(x, verbose=0), atol=ATOL)
    assert int(k.optimizer.iterations) == 2
    assert np.isfinite(k.fit(x, y, batch_size=8, epochs=1, verbose=0).history["loss"][0])
    # and back: the file Keras writes of it
    k.save(tmp_path / "keras.keras")
    back = tn.models.load_model(tmp_path / "keras.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), k.predict(x, verbose=0), atol=ATOL)
    assert back.optimizer.iterations == 4
    assert np.isfinite(back.fit(x, y, batch_size=8, epochs=1, verbose=0).history["loss"][0])


# -- Keras models ----------------------------------------------------------------------------
def keras_digits_cnn():
    kl = keras.layers
    return keras.Sequential([
        keras.Input((8, 8, 1)), kl.Conv2D(16, 3, padding="same", activation="relu"),
        kl.GroupNormalization(4), kl.MaxPooling2D(2),
        kl.Conv2D(32, 3, padding="same", activation="relu"), kl.BatchNormalization(),
        kl.MaxPooling2D(2), kl.Flatten(), kl.Dense(64, activation="relu"), kl.Dense(10)])


def keras_residual():
    kl = keras.layers

    def block(x):
        h = kl.Activation("relu")(kl.BatchNormalization(momentum=0.9)(
            kl.Conv2D(16, 3, padding="same")(x)))
        h = kl.BatchNormalization(momentum=0.9)(kl.Conv2D(16, 3, padding="same")(h))
        return kl.Activation("relu")(kl.Add()([x, h]))

    inputs = keras.Input((8, 8, 1), name="digits")
    x = block(kl.Conv2D(16, 3, padding="same", activation="relu")(inputs))
    x = kl.GroupNormalization(4)(block(kl.MaxPooling2D(2)(x)))
    return keras.Model(inputs, kl.Dense(10)(kl.GlobalAveragePooling2D()(x)))


def keras_nested():
    kl = keras.layers
    inner = keras.Sequential([kl.Conv2D(4, 3, activation="relu"), kl.MaxPooling2D(2)],
                             name="inner")
    inputs = keras.Input((8, 8, 1))
    return keras.Model(inputs, kl.Dense(10)(kl.Flatten()(inner(inputs))))


def keras_lstm_text():
    """Functional, so Keras's config records the embedding's mask as a NotEqual op."""
    kl = keras.layers
    inputs = keras.Input((6,), dtype="int64")
    x = kl.LSTM(5)(kl.Embedding(20, 8, mask_zero=True)(inputs))
    return keras.Model(inputs, kl.Dense(10)(x))


def keras_gru_rnn():
    kl = keras.layers
    return keras.Sequential([keras.Input((5, 3)), kl.GRU(4, return_sequences=True),
                             kl.GRU(4, reset_after=False, return_sequences=True),
                             kl.SimpleRNN(3, activation="relu"), kl.Dense(10)])


def keras_bidirectional():
    kl = keras.layers
    inputs = keras.Input((5, 3))
    outs = [kl.Bidirectional(kl.LSTM(3), merge_mode=mode)(inputs)
            for mode in ("concat", "sum", "mul", "ave")]
    outs += kl.Bidirectional(kl.SimpleRNN(2), merge_mode=None)(inputs)
    outs.append(kl.Bidirectional(kl.GRU(2), backward_layer=kl.GRU(2, go_backwards=True))(inputs))
    return keras.Model(inputs, kl.Dense(10)(kl.Concatenate()(outs)))


def keras_time_distributed():
    kl = keras.layers
    return keras.Sequential([keras.Input((5, 3)),
                             kl.TimeDistributed(kl.Dense(4, activation="relu")),
                             kl.LSTM(4, return_sequences=True),
                             kl.TimeDistributed(kl.Dense(2)), kl.Flatten(), kl.Dense(10)])


def keras_encoder(causal: bool = False):
    kl = keras.layers
    inputs = keras.Input((8, 16))
    x = kl.LayerNormalization()(kl.Add()([inputs, kl.MultiHeadAttention(2, 8)(
        inputs, inputs, use_causal_mask=causal)]))
    x = kl.GlobalAveragePooling1D()(kl.Dense(16, activation="relu")(x))
    return keras.Model(inputs, kl.Dense(10)(x))


def keras_attention_kwargs():
    """Value and key given as keyword arguments (Keras records them in the node's
    kwargs), the scores returned."""
    kl = keras.layers
    inputs = keras.Input((8, 16))
    memory = kl.Dense(6)(inputs)
    out, scores = kl.MultiHeadAttention(3, 4, value_dim=5, output_shape=7)(
        inputs, value=memory, key=kl.LayerNormalization()(memory),
        return_attention_scores=True)
    return keras.Model(inputs, kl.Dense(10)(kl.Concatenate()([kl.Flatten()(out),
                                                              kl.Flatten()(scores)])))


KERAS_MODELS = {"digits_cnn": keras_digits_cnn, "residual": keras_residual,
                "nested": keras_nested, "lstm_text": keras_lstm_text,
                "gru_rnn": keras_gru_rnn, "bidirectional": keras_bidirectional,
                "time_distributed": keras_time_distributed, "encoder": keras_encoder,
                "encoder_causal": lambda: keras_encoder(causal=True),
                "attention_kwargs": keras_attention_kwargs,
                "attention_layers": lambda: attention_model(keras.layers, keras)}


@pytest.mark.parametrize("name", sorted(KERAS_MODELS))
def test_keras_to_tinynet(tmp_path, name):
    keras.utils.set_random_seed(0)
    k = KERAS_MODELS[name]()
    k.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy"])
    x, y = _data(name)
    k.fit(x, y, batch_size=8, epochs=1, verbose=0)
    k.save(tmp_path / "keras.keras")
    model = tn.models.load_model(tmp_path / "keras.keras")
    np.testing.assert_allclose(model.predict(x, verbose=0), k.predict(x, verbose=0), atol=ATOL)
    assert model.optimizer.iterations == 2 and model.loss.from_logits
    assert np.isfinite(model.fit(x, y, batch_size=8, epochs=1, verbose=0).history["loss"][0])


# -- the optimizer state carries over: one more step gives the same weights -----------------
OPTIMIZERS = {
    "adam": (lambda: tn.optimizers.Adam(0.01), lambda: keras.optimizers.Adam(0.01)),
    "adamw": (lambda: tn.optimizers.AdamW(0.01, weight_decay=0.05),
              lambda: keras.optimizers.AdamW(0.01, weight_decay=0.05)),
    "sgd": (lambda: tn.optimizers.SGD(0.05, momentum=0.9),
            lambda: keras.optimizers.SGD(0.05, momentum=0.9)),
    "rmsprop": (lambda: tn.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
                lambda: keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True)),
}


def _mlp_data():
    rng = np.random.default_rng(5)
    return rng.standard_normal((8, 5)).astype(np.float32), rng.standard_normal((8, 2))


def _step(model, x, y):
    model.fit(x, y.astype(np.float32), batch_size=len(x), epochs=1, shuffle=False, verbose=0)


def _assert_same_weights(tinynet_model, keras_model):
    for a, b in zip(tinynet_model.get_weights(), keras_model.get_weights()):
        np.testing.assert_allclose(a, np.asarray(b), atol=ATOL)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_optimizer_state_continues_in_keras(tmp_path, opt):
    x, y = _mlp_data()
    tn.set_seed(0)
    model = tn.Sequential([tn.Input((5,)), L.Dense(4, activation="relu"), L.Dense(2)])
    model.compile(optimizer=OPTIMIZERS[opt][0](), loss="mse")
    for _ in range(2):
        _step(model, x, y)
    model.save(tmp_path / "m.keras")
    k = keras.models.load_model(tmp_path / "m.keras")
    _step(model, x, y)
    _step(k, x, y)
    _assert_same_weights(model, k)


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_optimizer_state_continues_in_tinynet(tmp_path, opt):
    x, y = _mlp_data()
    keras.utils.set_random_seed(0)
    k = keras.Sequential([keras.Input((5,)), keras.layers.Dense(4, activation="relu"),
                          keras.layers.Dense(2)])
    k.compile(optimizer=OPTIMIZERS[opt][1](), loss="mse")
    for _ in range(2):
        _step(k, x, y)
    k.save(tmp_path / "k.keras")
    model = tn.models.load_model(tmp_path / "k.keras")
    _step(model, x, y)
    _step(k, x, y)
    _assert_same_weights(model, k)


def test_recurrent_weights_files_both_ways(tmp_path):
    x, _ = _data("bidirectional")
    keras.utils.set_random_seed(0)
    k = keras_bidirectional()
    k.save_weights(tmp_path / "k.weights.h5")
    model = bidirectional()
    model.load_weights(tmp_path / "k.weights.h5")
    np.testing.assert_allclose(model.predict(x, verbose=0), k.predict(x, verbose=0), atol=ATOL)
    tn.set_seed(3)
    other = bidirectional()
    other.save_weights(tmp_path / "t.weights.h5")
    k.load_weights(tmp_path / "t.weights.h5")
    np.testing.assert_allclose(k.predict(x, verbose=0), other.predict(x, verbose=0), atol=ATOL)


def test_weights_files_both_ways(tmp_path):
    x, _ = _data("digits_cnn")
    keras.utils.set_random_seed(0)
    k = keras_digits_cnn()
    k.save_weights(tmp_path / "k.weights.h5")
    model = digits_cnn()
    model.load_weights(tmp_path / "k.weights.h5")
    np.testing.assert_allclose(model.predict(x, verbose=0), k.predict(x, verbose=0), atol=ATOL)
    tn.set_seed(3)
    other = digits_cnn()
    other.save_weights(tmp_path / "t.weights.h5")
    k.load_weights(tmp_path / "t.weights.h5")
    np.testing.assert_allclose(k.predict(x, verbose=0), other.predict(x, verbose=0), atol=ATOL)
