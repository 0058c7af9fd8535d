"""Keras-compat script in the steps of the keras-io example "Timeseries classification
from scratch" (examples/timeseries/timeseries_classification_from_scratch.py): a fully
convolutional network (three Conv1D + BatchNormalization + ReLU blocks, global average
pooling), ReduceLROnPlateau and EarlyStopping, sparse categorical accuracy.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: generated two-class series (a sine burst
or not, in noise) of 128 steps instead of the FordA download; the guide's
ModelCheckpoint is left out.
"""

import json
import os

import numpy as np

if os.environ.get("KERAS_COMPAT") == "keras":
    import keras
    from keras import layers
else:
    import tinynet as keras
    from tinynet import layers

keras.utils.set_random_seed(6)


def make_series(n, steps, rng):
    t = np.arange(steps)
    y = rng.integers(0, 2, n)
    x = rng.normal(0.0, 1.0, (n, steps))
    start = rng.integers(0, steps - 32, n)
    for i in np.flatnonzero(y):
        x[i, start[i]:start[i] + 32] += 3.0 * np.sin(t[:32] * 0.6)
    return x.reshape((n, steps, 1)).astype("float32"), y


rng = np.random.default_rng(0)
x_train, y_train = make_series(600, 128, rng)
x_test, y_test = make_series(200, 128, rng)
num_classes = len(np.unique(y_train))
idx = rng.permutation(len(x_train))
x_train, y_train = x_train[idx], y_train[idx]


def make_model(input_shape):
    input_layer = keras.layers.Input(input_shape)
    conv1 = keras.layers.Conv1D(filters=32, kernel_size=3, padding="same")(input_layer)
    conv1 = keras.layers.BatchNormalization()(conv1)
    conv1 = keras.layers.ReLU()(conv1)
    conv2 = keras.layers.Conv1D(filters=32, kernel_size=3, padding="same")(conv1)
    conv2 = keras.layers.BatchNormalization()(conv2)
    conv2 = keras.layers.ReLU()(conv2)
    conv3 = keras.layers.Conv1D(filters=32, kernel_size=3, padding="same")(conv2)
    conv3 = keras.layers.BatchNormalization()(conv3)
    conv3 = keras.layers.ReLU()(conv3)
    gap = keras.layers.GlobalAveragePooling1D()(conv3)
    output_layer = keras.layers.Dense(num_classes, activation="softmax")(gap)
    return keras.models.Model(inputs=input_layer, outputs=output_layer)


model = make_model(input_shape=x_train.shape[1:])
callbacks = [
    keras.callbacks.ReduceLROnPlateau(monitor="val_loss", factor=0.5, patience=5,
                                      min_lr=0.0001),
    keras.callbacks.EarlyStopping(monitor="val_loss", patience=10, verbose=1),
]
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
              metrics=["sparse_categorical_accuracy"])
history = model.fit(x_train, y_train, batch_size=32, epochs=25, callbacks=callbacks,
                    validation_split=0.2, verbose=0)
test_loss, test_acc = model.evaluate(x_test, y_test, verbose=0)
print("RESULT " + json.dumps({"test_accuracy": round(float(test_acc), 3),
                              "epochs": len(history.history["loss"])}))
