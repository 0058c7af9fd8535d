"""Keras-compat script in the steps of the keras-io example "Text classification from
scratch" (examples/nlp/text_classification_from_scratch.py): a `TextVectorization`
layer adapted on the training text, integer sequences of fixed length, an Embedding +
strided Conv1D + GlobalMaxPooling1D classifier, and an end-to-end model that takes raw
strings for inference.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: generated reviews (sentiment words among
neutral ones) instead of the IMDB download; the text is vectorized as NumPy arrays
instead of `tf.data` maps.
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

keras.utils.set_random_seed(8)

POSITIVE = "great wonderful superb moving delightful brilliant charming fun".split()
NEGATIVE = "awful boring dull terrible clumsy tedious bland weak".split()
NEUTRAL = ("the a film movie plot actor scene story it was and of with this that "
           "director music camera ending character dialogue").split()


def make_reviews(n, rng):
    texts, labels = [], []
    for _ in range(n):
        label = int(rng.integers(0, 2))
        words = list(rng.choice(NEUTRAL, size=int(rng.integers(8, 30))))
        mood = POSITIVE if label else NEGATIVE
        for _ in range(int(rng.integers(1, 4))):
            words.insert(int(rng.integers(0, len(words))), str(rng.choice(mood)))
        texts.append(("<br />" if rng.random() < 0.2 else "") + " ".join(words).capitalize()
                     + ("!" if label else "."))
        labels.append(label)
    return np.array(texts), np.array(labels, dtype="float32")


rng = np.random.default_rng(1)
train_text, train_labels = make_reviews(2000, rng)
test_text, test_labels = make_reviews(500, rng)

max_features = 2000
embedding_dim = 32
sequence_length = 40
vectorize_layer = layers.TextVectorization(
    max_tokens=max_features,
    output_mode="int",
    output_sequence_length=sequence_length,
)
vectorize_layer.adapt(train_text)
x_train = np.asarray(vectorize_layer(train_text))
x_test = np.asarray(vectorize_layer(test_text))
print("vocabulary:", vectorize_layer.vocabulary_size(), "first tokens:",
      vectorize_layer.get_vocabulary()[:4])

inputs = keras.Input(shape=(None,), dtype="int64")
x = layers.Embedding(max_features, embedding_dim)(inputs)
x = layers.Dropout(0.5)(x)
x = layers.Conv1D(64, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.Conv1D(64, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.GlobalMaxPooling1D()(x)
x = layers.Dense(64, activation="relu")(x)
x = layers.Dropout(0.5)(x)
predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)
model = keras.Model(inputs, predictions)
model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])
model.fit(x_train, train_labels, batch_size=32, epochs=4, validation_split=0.1, verbose=0)
loss, accuracy = model.evaluate(x_test, test_labels, verbose=0)

# Raw strings in, predictions out: vectorize, then the trained model.
examples = np.array(["A wonderful and moving film!", "It was a dull and tedious story."])
scores = model.predict(np.asarray(vectorize_layer(examples)), verbose=0)[:, 0]
print("scores:", [round(float(s), 2) for s in scores])
print("RESULT " + json.dumps({"test_accuracy": round(float(accuracy), 3),
                              "positive_example_is_positive": int(scores[0] > 0.5),
                              "negative_example_is_negative": int(scores[1] < 0.5)}))
