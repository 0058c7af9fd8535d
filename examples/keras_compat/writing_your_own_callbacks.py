"""Keras-compat script in the steps of the keras-io guide "Writing your own callbacks"
(guides/writing_your_own_callbacks.py): a callback that records every hook with the
keys of its logs during fit, evaluate and predict; loss and error printing; early
stopping at the minimum loss with `model.stop_training` and the best weights; a
learning-rate schedule that sets `model.optimizer.learning_rate`.

It runs unchanged on Keras 3 and on tinynet: the import block is the only place the two
differ (KERAS_COMPAT=keras picks Keras). Data: scikit-learn's 8x8 digits as a
regression target (the digit), not MNIST.
"""

import json
import os

import numpy as np
from sklearn.datasets import load_digits

if os.environ.get("KERAS_COMPAT") == "keras":
    import keras
else:
    import tinynet as keras

keras.utils.set_random_seed(7)


def get_model():
    model = keras.Sequential()
    model.add(keras.layers.Dense(1))
    model.compile(optimizer=keras.optimizers.RMSprop(learning_rate=0.1),
                  loss="mean_squared_error", metrics=["mean_absolute_error"])
    return model


digits = load_digits()
x = (digits.data / 16.0).astype("float32")
y = digits.target.astype("float32")
x_train, y_train, x_test, y_test = x[:1000], y[:1000], x[1000:], y[1000:]
x_train, y_train = x_train[:640], y_train[:640]
x_test, y_test = x_test[:320], y_test[:320]

calls = []


class CustomCallback(keras.callbacks.Callback):
    def _record(self, hook, logs):
        calls.append(f"{hook}:{','.join(sorted(logs))}")

    def on_train_begin(self, logs=None):
        self._record("train_begin", logs)

    def on_train_end(self, logs=None):
        self._record("train_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._record("epoch_begin", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._record("epoch_end", logs)

    def on_test_begin(self, logs=None):
        self._record("test_begin", logs)

    def on_test_end(self, logs=None):
        self._record("test_end", logs)

    def on_predict_begin(self, logs=None):
        self._record("predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._record("predict_end", logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._record("train_batch_begin", logs)

    def on_train_batch_end(self, batch, logs=None):
        self._record("train_batch_end", logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._record("test_batch_begin", logs)

    def on_test_batch_end(self, batch, logs=None):
        self._record("test_batch_end", logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._record("predict_batch_begin", logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._record("predict_batch_end", logs)


model = get_model()
model.fit(x_train, y_train, batch_size=128, epochs=1, verbose=0, validation_split=0.5,
          callbacks=[CustomCallback()])
model.evaluate(x_test, y_test, batch_size=128, verbose=0, callbacks=[CustomCallback()])
model.predict(x_test, batch_size=128, callbacks=[CustomCallback()], verbose=0)
for call in calls:
    print(call)


class LossAndErrorPrintingCallback(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        print(f"The average loss for epoch {epoch} is {logs['loss']:7.2f} and mean absolute "
              f"error is {logs['mean_absolute_error']:7.2f}.")


model = get_model()
model.fit(x_train, y_train, batch_size=128, epochs=2, verbose=0,
          callbacks=[LossAndErrorPrintingCallback()])


class EarlyStoppingAtMinLoss(keras.callbacks.Callback):
    def __init__(self, patience=0):
        super().__init__()
        self.patience = patience
        self.best_weights = None

    def on_train_begin(self, logs=None):
        self.wait = 0
        self.stopped_epoch = 0
        self.best = np.inf

    def on_epoch_end(self, epoch, logs=None):
        current = logs.get("loss")
        if np.less(current, self.best):
            self.best = current
            self.wait = 0
            self.best_weights = self.model.get_weights()
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = epoch
                self.model.stop_training = True
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


model = get_model()
stopper = EarlyStoppingAtMinLoss(patience=2)
early_history = model.fit(x_train, y_train, batch_size=64, epochs=30, verbose=0,
                          callbacks=[LossAndErrorPrintingCallback(), stopper])


class CustomLearningRateScheduler(keras.callbacks.Callback):
    def __init__(self, schedule):
        super().__init__()
        self.schedule = schedule

    def on_epoch_begin(self, epoch, logs=None):
        lr = self.model.optimizer.learning_rate
        scheduled_lr = self.schedule(epoch, lr)
        self.model.optimizer.learning_rate = scheduled_lr
        print(f"Epoch {epoch}: Learning rate is {float(np.array(scheduled_lr)):6.4f}.")


LR_SCHEDULE = [(3, 0.05), (6, 0.01), (9, 0.005), (12, 0.001)]


def lr_schedule(epoch, lr):
    if epoch < LR_SCHEDULE[0][0] or epoch > LR_SCHEDULE[-1][0]:
        return lr
    for i in range(len(LR_SCHEDULE)):
        if epoch == LR_SCHEDULE[i][0]:
            return LR_SCHEDULE[i][1]
    return lr


model = get_model()
lr_history = model.fit(x_train, y_train, batch_size=64, epochs=15, verbose=0,
                       callbacks=[LossAndErrorPrintingCallback(),
                                  CustomLearningRateScheduler(lr_schedule)])
final_lr = float(np.array(model.optimizer.learning_rate))

print("RESULT " + json.dumps({
    "hook_calls": len(calls),
    "early_stopping_epochs": len(early_history.history["loss"]),
    "scheduled_final_loss": round(float(lr_history.history["loss"][-1]), 3),
    "final_learning_rate": round(final_lr, 4),
}))
