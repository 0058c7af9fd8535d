"""Models whose Keras 3.15.1 summaries are stored beside this file (``summary_*.txt``,
written by ``generate.py``): each is built from a layers module and a models module, so
the same code builds the Keras model and the tinynet one."""



def _transformer(L, M):
    """A transformer encoder classifier: token embedding plus a learned positional
    embedding (a custom layer on ``add_weight`` and ``call``), one attention block with
    residuals and layer normalization, a feed-forward block, pooling, a classifier."""

    class PositionalEmbedding(L.Layer):
        def __init__(self, sequence_length, **kwargs):
            super().__init__(**kwargs)
            self.sequence_length = sequence_length

        def build(self, input_shape):
            self.positions = self.add_weight(shape=(self.sequence_length, input_shape[-1]),
                                             initializer="random_normal", name="positions")

        def call(self, x):
            return x + self.positions

    ids = L.Input((64,), dtype="int32")
    x = PositionalEmbedding(64)(L.Embedding(1000, 64)(ids))
    a = L.MultiHeadAttention(4, 16)(x, x)
    x = L.LayerNormalization()(L.Add()([x, a]))
    f = L.Dense(64)(L.Dense(128, activation="relu")(x))
    x = L.LayerNormalization()(L.Add()([x, f]))
    return M.Model(ids, L.Dense(2)(L.GlobalAveragePooling1D()(x)), name="transformer")


SUMMARY_MODELS = {  # file name: the model, built from a layers module and a models module
    "summary_augment_convs": lambda L, M: M.Sequential([
        L.Input((16, 16, 3)), L.RandomFlip(), L.RandomRotation(0.1), L.RandomZoom(0.1),
        L.RandomTranslation(0.1, 0.1), L.RandomContrast(0.2), L.RandomCrop(14, 14),
        L.Rescaling(1 / 255.0), L.Normalization(mean=[0.5, 0.5, 0.5], variance=[0.1] * 3),
        L.Conv2D(8, 3, padding="same", activation="relu"),
        L.DepthwiseConv2D(3, depth_multiplier=2), L.SeparableConv2D(16, 3, padding="same"),
        L.Conv2DTranspose(4, 3, strides=2, padding="same"), L.GlobalAveragePooling2D(),
        L.Dense(10)]),
    "summary_sequence": lambda L, M: M.Sequential([
        L.Input((20,)), L.Embedding(100, 8),
        L.Conv1D(16, 3, padding="causal", activation="relu"), L.MaxPooling1D(2),
        L.Conv1D(16, 3, padding="same"), L.GlobalMaxPooling1D(), L.Dense(4)]),
    "summary_text_cnn": lambda L, M: (lambda ids: M.Model(ids, L.Dense(1, activation="sigmoid")(
        L.GlobalMaxPooling1D()(L.Conv1D(64, 5, activation="relu")(L.Embedding(20000, 64)(ids))))))(
        L.Input(shape=(None,), dtype="int32")),
    "summary_variable_length": lambda L, M: M.Sequential([
        L.Input(shape=(None,), dtype="int64"), L.Embedding(1000, 16),
        L.Conv1D(8, 3, padding="same"), L.MaxPooling1D(2), L.AveragePooling1D(2, padding="same"),
        L.LayerNormalization(), L.BatchNormalization(), L.Dropout(0.1), L.Dense(4),
        L.GlobalAveragePooling1D(), L.Dense(1)]),
    "summary_fixed_batch": lambda L, M: M.Sequential([
        L.Input(shape=(None, 3), batch_size=32), L.Conv1D(4, 2), L.GlobalMaxPooling1D(),
        L.Dense(2)]),
    "summary_recurrent": lambda L, M: M.Sequential([
        L.Input((20, 8)), L.LSTM(16, return_sequences=True), L.GRU(8), L.Dense(2)]),
    "summary_bidirectional": lambda L, M: M.Sequential([
        L.Input((20, 8)), L.Bidirectional(L.LSTM(16, return_sequences=True)),
        L.TimeDistributed(L.Dense(4, name="project")),
        L.Bidirectional(L.GRU(8), merge_mode="sum"),
        L.Dense(2)]),
    "summary_transformer": _transformer,
}
