"""Keras-compat script in the steps of the keras-io guide "The Functional API"
(guides/functional_api.py): a model built from `keras.Input`, a multi-input,
multi-output ticket classifier trained with dicts of data, a small ResNet, shared
layers and feature extraction.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: generated tickets and images, scikit-learn's
8x8 digits; the guide's LSTM encoders are global average pooling here.
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

keras.utils.set_random_seed(2)

# A first functional model on the digits.
inputs = keras.Input(shape=(64,))
x = layers.Dense(64, activation="relu")(inputs)
x = layers.Dense(64, activation="relu")(x)
outputs = layers.Dense(10)(x)
model = keras.Model(inputs=inputs, outputs=outputs, name="digits_model")
model.summary()
digits = load_digits()
x_all = (digits.data / 16.0).astype("float32")
y_all = digits.target
model.compile(
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    optimizer=keras.optimizers.RMSprop(),
    metrics=["accuracy"],
)
history = model.fit(x_all[:1400], y_all[:1400], batch_size=64, epochs=5,
                    validation_split=0.2, verbose=0)
test_scores = model.evaluate(x_all[1400:], y_all[1400:], verbose=0)
print("history keys:", sorted(history.history))

# Multiple inputs and outputs: tickets with a title, a body and tags.
num_tags, num_words, num_departments = 12, 1000, 4
title_input = keras.Input(shape=(None,), dtype="int32", name="title")
body_input = keras.Input(shape=(None,), dtype="int32", name="body")
tags_input = keras.Input(shape=(num_tags,), name="tags")
title_features = layers.GlobalAveragePooling1D()(layers.Embedding(num_words, 64)(title_input))
body_features = layers.GlobalAveragePooling1D()(layers.Embedding(num_words, 64)(body_input))
x = layers.concatenate([title_features, body_features, tags_input])
priority_pred = layers.Dense(1, name="priority")(x)
department_pred = layers.Dense(num_departments, name="department")(x)
ticket_model = keras.Model(
    inputs=[title_input, body_input, tags_input],
    outputs={"priority": priority_pred, "department": department_pred},
)
ticket_model.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss={
        "priority": keras.losses.BinaryCrossentropy(from_logits=True),
        "department": keras.losses.CategoricalCrossentropy(from_logits=True),
    },
    loss_weights={"priority": 1.0, "department": 0.2},
)
rng = np.random.default_rng(0)
title_data = rng.integers(0, num_words, size=(640, 10))
body_data = rng.integers(0, num_words, size=(640, 100))
tags_data = rng.integers(0, 2, size=(640, num_tags)).astype("float32")
priority_targets = (tags_data[:, :1] > 0).astype("float32")  # learnable from the tags
department_targets = np.eye(num_departments, dtype="float32")[tags_data[:, 1:3].astype(int) @ [1, 2]]
ticket_history = ticket_model.fit(
    {"title": title_data, "body": body_data, "tags": tags_data},
    {"priority": priority_targets, "department": department_targets},
    epochs=4,
    batch_size=32,
    verbose=0,
)

# A toy ResNet on 8x8 digit images.
images = (digits.images / 16.0).astype("float32")[..., None]
labels = keras.utils.to_categorical(digits.target, 10)
inputs = keras.Input(shape=(8, 8, 1), name="img")
x = layers.Conv2D(16, 3, activation="relu", padding="same")(inputs)
block_1_output = layers.Conv2D(16, 3, activation="relu", padding="same")(x)
x = layers.Conv2D(16, 3, activation="relu", padding="same")(block_1_output)
x = layers.Conv2D(16, 3, activation="relu", padding="same")(x)
block_2_output = layers.add([x, block_1_output])
x = layers.Conv2D(16, 3, activation="relu", padding="same")(block_2_output)
x = layers.GlobalAveragePooling2D()(x)
x = layers.Dense(64, activation="relu")(x)
x = layers.Dropout(0.5)(x)
outputs = layers.Dense(10)(x)
resnet = keras.Model(inputs, outputs, name="toy_resnet")
resnet.compile(
    optimizer=keras.optimizers.RMSprop(1e-3),
    loss=keras.losses.CategoricalCrossentropy(from_logits=True),
    metrics=["acc"],
)
resnet.fit(images[:1400], labels[:1400], batch_size=64, epochs=6, validation_split=0.2,
           verbose=0)
resnet_scores = resnet.evaluate(images[1400:], labels[1400:], verbose=0)

# Shared layers and feature extraction.
shared_embedding = layers.Embedding(1000, 16)
text_input_a = keras.Input(shape=(None,), dtype="int32")
text_input_b = keras.Input(shape=(None,), dtype="int32")
encoded_a = shared_embedding(text_input_a)
encoded_b = shared_embedding(text_input_b)
features_list = [layer.output for layer in resnet.layers]
feat_extraction_model = keras.Model(inputs=resnet.input, outputs=features_list)
extracted = feat_extraction_model(images[:2])
print("extracted:", len(extracted), "tensors")

print("RESULT " + json.dumps({
    "mlp_test_accuracy": round(float(test_scores[1]), 3),
    "ticket_final_loss": round(float(ticket_history.history["loss"][-1]), 3),
    "resnet_test_accuracy": round(float(resnet_scores[1]), 3),
}))
