"""Writes the Keras 3.15.1 reference of the training loop's surface (``keras_fit_refs.json``):
the order of the callback hooks, weighted metrics and ``AUC(multi_label=True)``.

Run once with Keras 3.15.1 on the JAX backend, outside the project's environment (Keras is
never a tinynet dependency)::

    KERAS_BACKEND=jax /path/to/keras-venv/bin/python tests/data/keras/generate_fit.py

* ``hooks``: every hook a recording callback sees (its name, the batch or epoch index and
  the sorted keys of its ``logs``, ``None`` for no logs), with ``set_model`` and
  ``set_params``, for a fit with validation, an evaluate and a predict; ``alias`` the
  ``on_batch_begin``/``on_batch_end`` calls a callback defining only those gets.
* ``weighted``: a one-unit sigmoid Dense with the given weights; ``evaluate`` with
  ``sample_weight``, and a ``fit`` with ``class_weight`` at learning rate 0 (the weights
  stay) with weighted validation data; Keras's logs.
* ``auc``: ``AUC(multi_label=True)`` for each curve and summation: the result after batch
  1, after batch 2 with its sample weights, and of batch 2 alone.
"""

from __future__ import annotations

import json
import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
         "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
         "on_test_batch_begin", "on_test_batch_end", "on_predict_begin", "on_predict_end",
         "on_predict_batch_begin", "on_predict_batch_end")


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seq = []

    def set_model(self, model):
        super().set_model(model)
        self.seq.append(["set_model"])

    def set_params(self, params):
        super().set_params(params)
        self.seq.append(["set_params", {k: params[k] for k in sorted(params)}])


def _recording(hook):
    def record(self, *args, **kwargs):
        # Keras passes logs by keyword to the batch hooks, positionally to the others
        args, logs = (args, kwargs["logs"]) if "logs" in kwargs else (args[:-1], args[-1])
        self.seq.append([hook, *args, None if logs is None else sorted(logs)])
    return record


for _hook in HOOKS:
    setattr(Recorder, _hook, _recording(_hook))


class AliasRecorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seq = []

    def on_batch_begin(self, batch, logs=None):
        self.seq.append(["on_batch_begin", batch, sorted(logs or {})])

    def on_batch_end(self, batch, logs=None):
        self.seq.append(["on_batch_end", batch, sorted(logs or {})])


def hooks() -> dict:
    rng = np.random.default_rng(0)
    x = rng.random((10, 3)).astype("float32")
    y = (rng.random((10, 1)) > 0.5).astype("float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"])
    out = {}
    rec, alias = Recorder(), AliasRecorder()
    model.fit(x, y, batch_size=4, epochs=2, validation_data=(x[:6], y[:6]), verbose=0,
              callbacks=[rec, alias])
    out["fit"], out["fit_alias"] = rec.seq, alias.seq
    rec, alias = Recorder(), AliasRecorder()
    model.evaluate(x, y, batch_size=4, verbose=0, callbacks=[rec, alias])
    out["evaluate"], out["evaluate_alias"] = rec.seq, alias.seq
    rec = Recorder()
    model.predict(x, batch_size=4, verbose=0, callbacks=[rec])
    out["predict"] = rec.seq
    return out


def weighted() -> dict:
    rng = np.random.default_rng(1)
    x = rng.random((10, 3)).astype("float32")
    y = (rng.random((10, 1)) > 0.5).astype("float32")
    sw = rng.random(10).astype("float32")
    kernel = rng.normal(size=(3, 1)).astype("float32")
    bias = np.array([0.1], dtype="float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, activation="sigmoid")])
    model.set_weights([kernel, bias])
    model.compile(keras.optimizers.SGD(0.0), "binary_crossentropy", metrics=["accuracy"],
                  weighted_metrics=["accuracy", "mse", keras.metrics.AUC(name="wauc")])
    out = {"x": x.tolist(), "y": y.tolist(), "sample_weight": sw.tolist(),
           "kernel": kernel.tolist(), "bias": bias.tolist(), "class_weight": {"0": 0.3, "1": 2.0}}
    out["evaluate_weighted"] = model.evaluate(x, y, sample_weight=sw, batch_size=4, verbose=0,
                                              return_dict=True)
    out["evaluate"] = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    history = model.fit(x, y, class_weight={0: 0.3, 1: 2.0}, batch_size=4, epochs=1,
                        shuffle=False, verbose=0, validation_data=(x, y, sw))
    out["fit"] = {k: v[0] for k, v in history.history.items()}
    return out


def auc() -> dict:
    rng = np.random.default_rng(2)
    b1_t = (rng.random((8, 3)) > 0.5).astype("float32")
    b1_p = np.round(rng.random((8, 3)), 3).astype("float32")
    b2_t = (rng.random((6, 3)) > 0.4).astype("float32")
    b2_p = np.round(rng.random((6, 3)), 3).astype("float32")
    b2_w = np.round(rng.random(6) * 2, 2).astype("float32")
    out = {"b1_t": b1_t.tolist(), "b1_p": b1_p.tolist(), "b2_t": b2_t.tolist(),
           "b2_p": b2_p.tolist(), "b2_w": b2_w.tolist(), "values": {}}
    for curve in ("ROC", "PR"):
        for summation in ("interpolation", "minoring", "majoring"):
            for num in (200, 7):
                m = keras.metrics.AUC(num_thresholds=num, curve=curve,
                                      summation_method=summation, multi_label=True)
                m.update_state(b1_t, b1_p)
                first = float(m.result())
                m.update_state(b2_t, b2_p, sample_weight=b2_w)
                second = float(m.result())
                m.reset_state()
                m.update_state(b2_t, b2_p)
                out["values"][f"{curve}-{summation}-{num}"] = [first, second, float(m.result())]
    return out


def main() -> None:
    refs = {"keras_version": keras.__version__, "hooks": hooks(), "weighted": weighted(),
            "auc": auc()}
    with open(os.path.join(HERE, "keras_fit_refs.json"), "w", encoding="utf-8") as fh:
        json.dump(refs, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
