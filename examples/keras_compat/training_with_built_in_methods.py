"""Keras-compat script in the steps of the keras-io guide "Training & evaluation with the
built-in methods" (guides/training_with_built_in_methods.py): compile/fit/evaluate/
predict, validation data, a custom loss function, a `Loss` subclass, a `Metric`
subclass, `add_loss` in a layer, sample and class weights, a learning-rate schedule and
the EarlyStopping callback.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: scikit-learn's 8x8 digits, not MNIST.
"""

import json
import os

import numpy as np
from sklearn.datasets import load_digits

if os.environ.get("KERAS_COMPAT") == "keras":
    import keras
    from keras import layers, ops
else:
    import tinynet as keras
    from tinynet import layers, ops

keras.utils.set_random_seed(3)

digits = load_digits()
x = (digits.data / 16.0).astype("float32")
y = digits.target.astype("int64")
x_train, y_train = x[:1200], y[:1200]
x_val, y_val = x[1200:1400], y[1200:1400]
x_test, y_test = x[1400:], y[1400:]


def get_uncompiled_model():
    inputs = keras.Input(shape=(64,), name="digits")
    h = layers.Dense(64, activation="relu", name="dense_1")(inputs)
    h = layers.Dense(64, activation="relu", name="dense_2")(h)
    outputs = layers.Dense(10, activation="softmax", name="predictions")(h)
    return keras.Model(inputs=inputs, outputs=outputs)


def get_compiled_model():
    model = get_uncompiled_model()
    model.compile(optimizer="rmsprop", loss="sparse_categorical_crossentropy",
                  metrics=["sparse_categorical_accuracy"])
    return model


# The API overview.
model = get_compiled_model()
history = model.fit(x_train, y_train, batch_size=64, epochs=4,
                    validation_data=(x_val, y_val), verbose=0)
results = model.evaluate(x_test, y_test, batch_size=128, verbose=0)
predictions = model.predict(x_test[:3], verbose=0)
print("history:", sorted(history.history), "predictions:", predictions.shape)


# A custom loss function, and a Loss subclass.
def custom_mean_squared_error(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class CustomMSE(keras.losses.Loss):
    def __init__(self, regularization_factor=0.1, name="custom_mse"):
        super().__init__(name=name)
        self.regularization_factor = regularization_factor

    def call(self, y_true, y_pred):
        mse = ops.mean(ops.square(y_true - y_pred), axis=-1)
        reg = ops.mean(ops.square(0.5 - y_pred), axis=-1)
        return mse + reg * self.regularization_factor


y_train_one_hot = keras.utils.to_categorical(y_train, num_classes=10)
model = get_uncompiled_model()
model.compile(optimizer=keras.optimizers.Adam(), loss=custom_mean_squared_error)
model.fit(x_train, y_train_one_hot, batch_size=64, epochs=1, verbose=0)
model = get_uncompiled_model()
model.compile(optimizer=keras.optimizers.Adam(), loss=CustomMSE())
custom_loss_history = model.fit(x_train, y_train_one_hot, batch_size=64, epochs=2, verbose=0)


# A Metric subclass.
class CategoricalTruePositives(keras.metrics.Metric):
    def __init__(self, name="categorical_true_positives", **kwargs):
        super().__init__(name=name, **kwargs)
        self.true_positives = self.add_variable(shape=(), name="ctp", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.reshape(ops.argmax(y_pred, axis=1), (-1, 1))
        values = ops.cast(y_true, "int32") == ops.cast(y_pred, "int32")
        values = ops.cast(values, "float32")
        if sample_weight is not None:
            sample_weight = ops.cast(sample_weight, "float32")
            values = ops.multiply(values, sample_weight)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives.value

    def reset_state(self):
        self.true_positives.assign(0.0)


model = get_uncompiled_model()
model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(),
              metrics=[CategoricalTruePositives()])
ctp_history = model.fit(x_train, y_train, batch_size=64, epochs=3, verbose=0)


# A layer that adds an activity loss.
class ActivityRegularizationLayer(layers.Layer):
    def call(self, inputs):
        self.add_loss(ops.sum(inputs) * 0.1)
        return inputs


inputs = keras.Input(shape=(64,), name="digits")
h = layers.Dense(64, activation="relu", name="dense_1")(inputs)
h = ActivityRegularizationLayer()(h)
h = layers.Dense(64, activation="relu", name="dense_2")(h)
outputs = layers.Dense(10, name="predictions")(h)
model = keras.Model(inputs=inputs, outputs=outputs)
model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=64, epochs=1, verbose=0)

# Class weights and sample weights.
class_weight = {i: 1.0 for i in range(10)}
class_weight[5] = 2.0
model = get_compiled_model()
model.fit(x_train, y_train, class_weight=class_weight, batch_size=64, epochs=1, verbose=0)
sample_weight = np.ones(shape=(len(y_train),))
sample_weight[y_train == 5] = 2.0
model = get_compiled_model()
model.fit(x_train, y_train, sample_weight=sample_weight, batch_size=64, epochs=1, verbose=0)

# A learning-rate schedule and EarlyStopping.
lr_schedule = keras.optimizers.schedules.ExponentialDecay(
    0.01, decay_steps=100, decay_rate=0.96, staircase=True)
model = get_uncompiled_model()
model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr_schedule, momentum=0.9),
              loss="sparse_categorical_crossentropy", metrics=["sparse_categorical_accuracy"])
callbacks = [keras.callbacks.EarlyStopping(monitor="val_loss", min_delta=1e-2, patience=2,
                                           verbose=1)]
es_history = model.fit(x_train, y_train, epochs=20, batch_size=64, callbacks=callbacks,
                       validation_split=0.2, verbose=0)
es_scores = model.evaluate(x_test, y_test, verbose=0)

print("RESULT " + json.dumps({
    "test_accuracy": round(float(results[1]), 3),
    "custom_mse_final_loss": round(float(custom_loss_history.history["loss"][-1]), 4),
    "true_positives_last_epoch": round(float(ctp_history.history["categorical_true_positives"][-1])),
    "early_stopping_epochs": len(es_history.history["loss"]),
    "early_stopping_test_accuracy": round(float(es_scores[1]), 3),
}))
