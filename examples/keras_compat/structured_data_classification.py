"""Keras-compat script in the steps of the keras-io example "Structured data
classification from scratch" (examples/structured_data/
structured_data_classification_from_scratch.py): numerical features normalized by
`Normalization` layers adapted on the training data, integer categories one-hot encoded
by `IntegerLookup`, string categories by `StringLookup`, `CategoryEncoding` for a
bounded integer feature, then a small dense binary classifier.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: a generated table shaped like the
Cleveland heart-disease one instead of its download; the features are encoded as NumPy
arrays instead of in `tf.data` maps.
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

keras.utils.set_random_seed(9)


def make_table(n, rng):
    age = rng.integers(29, 78, n).astype("float32")
    trestbps = rng.normal(130, 17, n).astype("float32")
    chol = rng.normal(245, 50, n).astype("float32")
    sex = rng.integers(0, 2, n)
    cp = rng.integers(0, 5, n)
    ca = rng.integers(0, 4, n)
    thal = rng.choice(np.array(["normal", "fixed", "reversible"]), n, p=[0.55, 0.1, 0.35])
    risk = (0.04 * (age - 54) + 0.02 * (trestbps - 130) + 0.8 * (cp >= 3) + 0.6 * ca
            + 1.2 * (thal == "reversible") + 0.5 * sex - 1.1)
    target = (risk + rng.normal(0, 0.6, n) > 0).astype("float32")
    return {"age": age, "trestbps": trestbps, "chol": chol, "sex": sex, "cp": cp, "ca": ca,
            "thal": thal}, target


rng = np.random.default_rng(2)
train, y_train = make_table(800, rng)
test, y_test = make_table(300, rng)


def encode_numerical(name):
    normalizer = layers.Normalization(axis=None)
    normalizer.adapt(train[name])
    return lambda table: np.asarray(normalizer(table[name])).reshape(-1, 1)


def encode_integer_categorical(name):
    lookup = layers.IntegerLookup(output_mode="one_hot")
    lookup.adapt(train[name])
    return lambda table: np.asarray(lookup(table[name]))


def encode_string_categorical(name):
    lookup = layers.StringLookup(output_mode="one_hot")
    lookup.adapt(train[name])
    return lambda table: np.asarray(lookup(table[name]))


def encode_bounded_integer(name, num_tokens):
    encoder = layers.CategoryEncoding(num_tokens=num_tokens, output_mode="one_hot")
    return lambda table: np.asarray(encoder(table[name]))


encoders = [encode_numerical("age"), encode_numerical("trestbps"), encode_numerical("chol"),
            encode_integer_categorical("sex"), encode_integer_categorical("cp"),
            encode_bounded_integer("ca", 4), encode_string_categorical("thal")]


def encode(table):
    return np.concatenate([np.asarray(e(table), dtype="float32") for e in encoders], axis=-1)


x_train, x_test = encode(train), encode(test)
print("encoded features:", x_train.shape[1])

inputs = keras.Input(shape=(x_train.shape[1],))
x = layers.Dense(32, activation="relu")(inputs)
x = layers.Dropout(0.5)(x)
output = layers.Dense(1, activation="sigmoid")(x)
model = keras.Model(inputs, output)
model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
model.fit(x_train, y_train, batch_size=32, epochs=20, validation_split=0.2, verbose=0)
loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
print("RESULT " + json.dumps({"feature_count": int(x_train.shape[1]),
                              "test_accuracy": round(float(accuracy), 3)}))
