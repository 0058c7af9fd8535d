"""Keras-compat script in the steps of the keras-io example "Simple MNIST convnet"
(examples/vision/mnist_convnet.py): two convolution blocks, dropout, categorical
crossentropy on one-hot labels, a validation split, evaluate.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: scikit-learn's 8x8 digits upsampled to
16x16, not MNIST's 28x28 (so the pools and kernels fit).
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

keras.utils.set_random_seed(5)

num_classes = 10
input_shape = (16, 16, 1)
digits = load_digits()
images = np.kron(digits.images, np.ones((2, 2))).astype("float32") / 16.0
images = np.expand_dims(images, -1)
labels = keras.utils.to_categorical(digits.target, num_classes)
x_train, y_train, x_test, y_test = images[:1400], labels[:1400], images[1400:], labels[1400:]
print("x_train shape:", x_train.shape)

model = keras.Sequential(
    [
        keras.Input(shape=input_shape),
        layers.Conv2D(32, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Conv2D(64, kernel_size=(3, 3), activation="relu"),
        layers.MaxPooling2D(pool_size=(2, 2)),
        layers.Flatten(),
        layers.Dropout(0.5),
        layers.Dense(num_classes, activation="softmax"),
    ]
)
model.summary()
model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=128, epochs=12, validation_split=0.1, verbose=0)
score = model.evaluate(x_test, y_test, verbose=0)
print("Test loss:", round(float(score[0]), 3))
print("RESULT " + json.dumps({"test_accuracy": round(float(score[1]), 3)}))
