"""Keras-compat script in the steps of the keras-io guide "Save, serialize, and export
models" (guides/serialization_and_saving.py): a custom layer and a custom function
registered with `register_keras_serializable`, `model.save("...keras")` and
`keras.models.load_model`, `get_config`/`from_config`, `to_json`/`model_from_json`,
`clone_model`, and weights alone with `save_weights("...weights.h5")`/`load_weights`.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: generated arrays. Its files go to a
temporary folder.
"""

import json
import os
import tempfile

import numpy as np

if os.environ.get("KERAS_COMPAT") == "keras":
    import keras
    from keras import layers, ops
else:
    import tinynet as keras
    from tinynet import layers, ops

keras.utils.set_random_seed(10)
folder = tempfile.mkdtemp()


@keras.saving.register_keras_serializable(package="my_package", name="custom_fn")
def custom_fn(x):
    return x**2


@keras.saving.register_keras_serializable(package="MyLayers")
class CustomLayer(layers.Layer):
    def __init__(self, factor, **kwargs):
        super().__init__(**kwargs)
        self.factor = factor

    def call(self, x):
        return x * self.factor

    def get_config(self):
        return {"factor": self.factor, **super().get_config()}


def get_model():
    inputs = keras.Input(shape=(32,))
    x = layers.Dense(16, activation="relu")(inputs)
    x = CustomLayer(0.5)(x)
    x = layers.Dense(8, activation=custom_fn)(x)
    outputs = layers.Dense(1)(x)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer="adam", loss="mean_squared_error")
    return model


rng = np.random.default_rng(3)
x = rng.random((128, 32)).astype("float32")
y = rng.random((128, 1)).astype("float32")
model = get_model()
model.fit(x, y, epochs=2, verbose=0)

# The whole model: architecture, weights, compile configuration, optimizer state.
path = os.path.join(folder, "my_model.keras")
model.save(path)
reconstructed = keras.models.load_model(path)
same_predictions = np.allclose(model.predict(x, verbose=0), reconstructed.predict(x, verbose=0),
                               atol=1e-6)
reconstructed.fit(x, y, epochs=1, verbose=0)  # training goes on

# The configuration alone.
config = model.get_config()
from_config = keras.Model.from_config(config)
from_json = keras.models.model_from_json(model.to_json())
clone = keras.models.clone_model(model)
layer_config = layers.Dense(3, activation="relu").get_config()
new_layer = layers.Dense.from_config(layer_config)

# Weights alone.
weights_path = os.path.join(folder, "my_model.weights.h5")
model.save_weights(weights_path)
from_json.load_weights(weights_path)
weights_match = np.allclose(model.predict(x, verbose=0), from_json.predict(x, verbose=0),
                            atol=1e-6)
from_config.set_weights(model.get_weights())

print("RESULT " + json.dumps({
    "reload_is_same": int(same_predictions),
    "weights_reload_is_same": int(weights_match),
    "layer_count": len(clone.layers),
    "config_layer_count": len(from_config.layers),
}))
