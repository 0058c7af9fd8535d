"""Keras-compat script in the steps of the keras-io example "Simple custom layer example:
Antirectifier" (examples/keras_recipes/antirectifier.py): a layer written with
`build`/`call` on `keras.ops`, `add_weight` and `get_config`, trained in a Sequential
model.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: scikit-learn's 8x8 digits, not MNIST.
"""

import json
import os

from sklearn.datasets import load_digits

if os.environ.get("KERAS_COMPAT") == "keras":
    import keras
    from keras import layers, ops
else:
    import tinynet as keras
    from tinynet import layers, ops

keras.utils.set_random_seed(4)


class Antirectifier(layers.Layer):
    def __init__(self, initializer="he_normal", **kwargs):
        super().__init__(**kwargs)
        self.initializer = keras.initializers.get(initializer)

    def build(self, input_shape):
        output_dim = input_shape[-1]
        self.kernel = self.add_weight(
            shape=(output_dim * 2, output_dim),
            initializer=self.initializer,
            name="kernel",
            trainable=True,
        )

    def call(self, inputs):
        inputs -= ops.mean(inputs, axis=-1, keepdims=True)
        pos = ops.relu(inputs)
        neg = ops.relu(-inputs)
        concatenated = ops.concatenate([pos, neg], axis=-1)
        mixed = ops.matmul(concatenated, self.kernel)
        return mixed

    def get_config(self):
        base_config = super().get_config()
        config = {"initializer": keras.initializers.serialize(self.initializer)}
        return dict(list(base_config.items()) + list(config.items()))


digits = load_digits()
x = (digits.data / 16.0).astype("float32")
y = digits.target
x_train, y_train, x_test, y_test = x[:1400], y[:1400], x[1400:], y[1400:]

model = keras.Sequential(
    [
        keras.Input(shape=(64,)),
        layers.Dense(128),
        Antirectifier(),
        layers.Dense(128),
        Antirectifier(),
        layers.Dropout(0.5),
        layers.Dense(10),
    ]
)
model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer=keras.optimizers.RMSprop(),
    metrics=[keras.metrics.SparseCategoricalAccuracy()],
)
model.fit(x_train, y_train, batch_size=64, epochs=10, validation_split=0.15, verbose=0)
loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
config = model.layers[1].get_config()
print("config keys:", sorted(config))
print("RESULT " + json.dumps({"test_accuracy": round(float(accuracy), 3)}))
