"""Keras-compat script in the steps of the keras-io guide "The Sequential model"
(guides/sequential_model.py): create, add and pop layers, weights, summary, feature
extraction from `model.layers`, and transfer learning with frozen layers.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: scikit-learn's 8x8 digits, not MNIST.
"""

import json
import os

import numpy as np
from sklearn.datasets import load_digits

if os.environ.get("KERAS_COMPAT") == "keras":
    import keras
    from keras import layers
else:
    import tinynet as keras
    from tinynet import layers

keras.utils.set_random_seed(1)

# A Sequential model, its layers, and building it on first call.
model = keras.Sequential(
    [
        layers.Dense(2, activation="relu", name="layer1"),
        layers.Dense(3, activation="relu", name="layer2"),
        layers.Dense(4, name="layer3"),
    ]
)
x = np.ones((3, 3), dtype="float32")
y = model(x)
print("layers:", [layer.name for layer in model.layers])
print("weights after a call:", len(model.weights))

# add() and pop().
model = keras.Sequential(name="my_sequential")
model.add(layers.Dense(2, activation="relu", name="layer1"))
model.add(layers.Dense(3, activation="relu", name="layer2"))
model.add(layers.Dense(4, name="layer3"))
model.pop()
print("after pop:", len(model.layers))

# Specifying the input shape in advance, summary along the way.
model = keras.Sequential()
model.add(keras.Input(shape=(8, 8, 1)))
model.add(layers.Conv2D(16, 3, activation="relu"))
model.add(layers.Conv2D(16, 3, activation="relu"))
model.add(layers.MaxPooling2D(2))
model.summary()
model.add(layers.GlobalMaxPooling2D())
model.add(layers.Dense(10, activation="softmax"))

# Feature extraction with a Sequential model.
extractor = keras.Model(
    inputs=model.inputs,
    outputs=[layer.output for layer in model.layers],
)
digits = load_digits()
images = (digits.images / 16.0).astype("float32")[..., None]
labels = digits.target
features = extractor(images[:4])
print("feature shapes:", [tuple(np.asarray(f).shape) for f in features])

# Train it, then transfer: freeze all layers but the last and train a new head.
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(images[:1400], labels[:1400], batch_size=32, epochs=8, verbose=0)
base_loss, base_acc = model.evaluate(images[1400:], labels[1400:], verbose=0)

for layer in model.layers[:-1]:
    layer.trainable = False
model.pop()
model.add(layers.Dense(10, activation="softmax", name="new_head"))
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(images[:1400], labels[:1400], batch_size=32, epochs=3, verbose=0)
loss, acc = model.evaluate(images[1400:], labels[1400:], verbose=0)
print("trainable weights after freezing:", len(model.trainable_weights))
print("RESULT " + json.dumps({"test_accuracy": round(float(base_acc), 3),
                              "transfer_accuracy": round(float(acc), 3)}))
