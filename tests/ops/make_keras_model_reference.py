"""Writes the Keras reference values for custom losses and metrics written with
``keras.ops``: ``data/keras_custom_reference.npz`` (arrays) and
``data/keras_custom_reference.json`` (cases, the source of each custom object, metadata).

Run by hand, never in CI (Keras and JAX are no tinynet dependency), from a virtualenv
with ``keras==3.15.1``, ``jax`` and ``jaxlib`` (CPU; see ``make_keras_reference.py``)::

    KERAS_BACKEND=jax /work/scratch/keras-venv/bin/python tests/ops/make_keras_model_reference.py

Data (npz, top level): a fixed batch ``x`` (8, 4) and ``y`` (8, 3) float32,
``sample_weight`` (8,), and the initial weights of a ``Dense(3)`` on 4 inputs,
``kernel0`` (4, 3) and ``bias0`` (3,), which tinynet sets before training.

Training cases (``Sequential([Input((4,)), Dense(3)])`` compiled with ``SGD(0.1)`` and
the case's loss, then ``train_on_batch(x, y)`` three times on the same batch):
``<case>/loss`` (3,), the value each call returned (the loss at the weights before
that step; Keras resets its loss tracker on every call), ``<case>/kernel_steps``
(3, 4, 3) and ``<case>/bias_steps`` (3, 3), the weights after each step, and
``<case>/kernel`` and ``<case>/bias``, the final ones.

* ``fn_loss``: ``my_mse`` below, a plain function, as ``loss=my_mse``;
* ``fn_loss_sample_weight``: the same with ``train_on_batch(x, y, sample_weight=sw)``;
* ``subclass_loss``: ``MyMSE()``, a ``keras.losses.Loss`` subclass;
* ``subclass_loss_sum``: ``ScaledMSE(scale=0.5, reduction="sum")`` (a constructor
  argument and a non-default reduction);
* ``subclass_model``: ``OneDense()`` below, a ``keras.Model`` subclass with one
  ``Dense(3)`` called in ``call()`` (built by one call, the same initial weights), in
  place of the Sequential, with ``loss=my_mse``: the same Dense math, so the values equal
  ``fn_loss``'s (checked).

Direct calls (``<case>/value``): the loss objects called on ``(y, pred0)`` with
``pred0 = x @ kernel0 + bias0``, with and without ``sample_weight`` and with the
reductions ``None``, ``"mean"`` (sum / number of values, like the default
``"sum_over_batch_size"``) and ``"mean_with_sample_weight"`` (sum / sum of weights).

Metric cases: ``BinaryTruePositives`` (one scalar variable made with
``add_variable``) and ``MeanAbsError`` (two variables, total and count), each updated
twice (``<case>/y_true<k>``, ``<case>/y_pred<k>``, the second with
``<case>/sample_weight1``, (8, 1) for the (8, 2) true-positive case): ``<case>/result``
(2,), the result after each update, and ``<case>/result_reset``, the result after
``reset_state()``.

The script checks the training cases against plain NumPy (the MSE gradient and the SGD
update) before writing anything.
"""

from __future__ import annotations

import datetime
import inspect
import json
import os
import platform
import sys

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jaxlib  # noqa: E402
import keras  # noqa: E402
from keras import ops  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
NPZ = os.path.join(DATA, "keras_custom_reference.npz")
JSON = os.path.join(DATA, "keras_custom_reference.json")
KERAS_VERSION = "3.15.1"
SEED = 20240611
STEPS = 3
LR = 0.1


# ----------------------------------------------------------------------------------------
# the custom objects (their source goes into the JSON)


def my_mse(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class MyMSE(keras.losses.Loss):
    def call(self, y_true, y_pred):
        return ops.mean(ops.square(y_true - y_pred), axis=-1)


class ScaledMSE(keras.losses.Loss):
    def __init__(self, scale=1.0, reduction="sum_over_batch_size", name="scaled_mse"):
        super().__init__(reduction=reduction, name=name)
        self.scale = scale

    def call(self, y_true, y_pred):
        return self.scale * ops.mean(ops.square(y_true - y_pred), axis=-1)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


class OneDense(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(3)

    def call(self, inputs):
        return self.dense(inputs)


class BinaryTruePositives(keras.metrics.Metric):
    def __init__(self, name="binary_true_positives", threshold=0.5, **kwargs):
        super().__init__(name=name, **kwargs)
        self.threshold = threshold
        self.true_positives = self.add_variable(
            shape=(), initializer="zeros", name="true_positives")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "bool")
        y_pred = ops.greater_equal(y_pred, self.threshold)
        values = ops.cast(ops.logical_and(y_true, y_pred), self.dtype)
        if sample_weight is not None:
            values = values * ops.cast(sample_weight, self.dtype)
        self.true_positives.assign_add(ops.sum(values))

    def result(self):
        return self.true_positives

    def reset_state(self):
        self.true_positives.assign(0.0)


class MeanAbsError(keras.metrics.Metric):
    def __init__(self, name="mean_abs_error", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        err = ops.mean(ops.abs(ops.cast(y_true, self.dtype) - y_pred), axis=-1)
        if sample_weight is None:
            sample_weight = ops.ones_like(err)
        sample_weight = ops.cast(sample_weight, self.dtype)
        self.total.assign_add(ops.sum(err * sample_weight))
        self.count.assign_add(ops.sum(sample_weight))

    def result(self):
        return ops.divide(self.total, ops.maximum(self.count, 1e-7))

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)


# ----------------------------------------------------------------------------------------


def _data():
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((8, 4)).astype(np.float32)
    y = rng.standard_normal((8, 3)).astype(np.float32)
    sw = rng.uniform(0.2, 2.0, (8,)).astype(np.float32)
    kernel0 = (rng.standard_normal((4, 3)) * 0.5).astype(np.float32)
    bias0 = (rng.standard_normal((3,)) * 0.1).astype(np.float32)
    return dict(x=x, y=y, sample_weight=sw, kernel0=kernel0, bias0=bias0)


def _train(loss, data, use_sw, subclassed=False):
    keras.utils.set_random_seed(0)
    if subclassed:
        model = OneDense()
        model(np.zeros((1, 4), np.float32))  # builds it (Keras's build() would not here)
    else:
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.set_weights([data["kernel0"], data["bias0"]])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=LR), loss=loss)
    losses, kernels, biases = [], [], []
    for _ in range(STEPS):
        kw = {"sample_weight": data["sample_weight"]} if use_sw else {}
        losses.append(float(model.train_on_batch(data["x"], data["y"], **kw)))
        k, b = model.get_weights()
        kernels.append(k)
        biases.append(b)
    return (np.asarray(losses, np.float32), np.stack(kernels).astype(np.float32),
            np.stack(biases).astype(np.float32))


def _numpy_train(data, use_sw, scale=1.0, reduction="sum_over_batch_size"):
    """The same training in float64 NumPy: per-sample MSE, the reduction, SGD."""
    x, y = data["x"].astype(np.float64), data["y"].astype(np.float64)
    k, b = data["kernel0"].astype(np.float64), data["bias0"].astype(np.float64)
    sw = data["sample_weight"].astype(np.float64) if use_sw else np.ones(len(x))
    n = len(x) if reduction == "sum_over_batch_size" else 1
    losses, ks, bs = [], [], []
    for _ in range(STEPS):
        p = x @ k + b
        per = scale * np.mean((y - p) ** 2, axis=-1)
        losses.append(np.sum(per * sw) / n)
        dp = scale * (-2.0 * (y - p) / y.shape[-1]) * sw[:, None] / n
        k, b = k - LR * (x.T @ dp), b - LR * dp.sum(0)
        ks.append(k)
        bs.append(b)
    return np.asarray(losses), np.stack(ks), np.stack(bs)


SEQUENTIAL = "Sequential([Input((4,)), Dense(3)]), set_weights([kernel0, bias0])"
SUBCLASSED = ("OneDense() (keras.Model subclass), called once on zeros((1, 4)) to build it, "
              "set_weights([kernel0, bias0])")
TRAIN_CASES = {  # name: (loss factory, sample weights?, description, numpy kwargs)
    "fn_loss": (lambda: my_mse, False, "loss=my_mse (a plain function)", {}),
    "fn_loss_sample_weight": (lambda: my_mse, True,
                              "loss=my_mse, train_on_batch(x, y, sample_weight=sw): "
                              "sum(per_sample * sw) / batch_size (not / sum(sw))", {}),
    "subclass_loss": (lambda: MyMSE(), False, "loss=MyMSE() (keras.losses.Loss subclass, "
                      "reduction sum_over_batch_size)", {}),
    "subclass_loss_sum": (lambda: ScaledMSE(scale=0.5, reduction="sum"), False,
                          "loss=ScaledMSE(scale=0.5, reduction='sum')",
                          {"scale": 0.5, "reduction": "sum"}),
    "subclass_model": (lambda: my_mse, False, "OneDense() (a keras.Model subclass with one "
                       "Dense(3) in call()), loss=my_mse: equals fn_loss", {}),
}


def main():
    assert keras.__version__ == KERAS_VERSION, keras.__version__
    assert keras.backend.backend() == "jax", keras.backend.backend()
    os.makedirs(DATA, exist_ok=True)
    data = _data()
    arrays = dict(data)
    cases = []

    for name, (factory, use_sw, desc, np_kw) in TRAIN_CASES.items():
        subclassed = name == "subclass_model"
        losses, kernels, biases = _train(factory(), data, use_sw, subclassed)
        ref_l, ref_k, ref_b = _numpy_train(data, use_sw, **np_kw)
        np.testing.assert_allclose(losses, ref_l, rtol=1e-5, err_msg=name)
        np.testing.assert_allclose(kernels, ref_k, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(biases, ref_b, rtol=1e-5, atol=1e-6, err_msg=name)
        arrays.update({f"{name}/loss": losses, f"{name}/kernel_steps": kernels,
                       f"{name}/bias_steps": biases, f"{name}/kernel": kernels[-1],
                       f"{name}/bias": biases[-1]})
        cases.append({"id": name, "kind": "train_on_batch", "description": desc,
                      "model": SUBCLASSED if subclassed else SEQUENTIAL,
                      "optimizer": f"SGD(learning_rate={LR})",
                      "steps": STEPS, "sample_weight": use_sw,
                      "arrays": ["loss", "kernel_steps", "bias_steps", "kernel", "bias"]})

    for key in ("loss", "kernel_steps", "bias_steps"):
        np.testing.assert_allclose(arrays[f"subclass_model/{key}"], arrays[f"fn_loss/{key}"],
                                   rtol=1e-6, atol=1e-7, err_msg=f"subclass_model/{key}")

    # direct calls of the loss objects
    x, y, sw = data["x"], data["y"], data["sample_weight"]
    pred0 = (x @ data["kernel0"] + data["bias0"]).astype(np.float32)
    arrays["pred0"] = pred0
    calls = {
        "call_fn": ("my_mse(y, pred0)", lambda: my_mse(y, pred0)),
        "call_subclass": ("MyMSE()(y, pred0)", lambda: MyMSE()(y, pred0)),
        "call_subclass_sample_weight": ("MyMSE()(y, pred0, sample_weight=sample_weight)",
                                        lambda: MyMSE()(y, pred0, sample_weight=sw)),
        "call_subclass_reduction_none": ("MyMSE(reduction=None)(y, pred0)",
                                         lambda: MyMSE(reduction=None)(y, pred0)),
        "call_subclass_reduction_mean": ("MyMSE(reduction='mean')(y, pred0, "
                                         "sample_weight=sample_weight)",
                                         lambda: MyMSE(reduction="mean")(
                                             y, pred0, sample_weight=sw)),
        "call_subclass_reduction_mean_with_sample_weight": (
            "MyMSE(reduction='mean_with_sample_weight')(y, pred0, "
            "sample_weight=sample_weight)",
            lambda: MyMSE(reduction="mean_with_sample_weight")(y, pred0, sample_weight=sw)),
        "call_scaled_sum": ("ScaledMSE(scale=0.5, reduction='sum')(y, pred0)",
                            lambda: ScaledMSE(scale=0.5, reduction="sum")(y, pred0)),
    }
    for name, (expr, fn) in calls.items():
        arrays[f"{name}/value"] = np.asarray(fn(), np.float32)
        cases.append({"id": name, "kind": "loss_call", "call": expr,
                      "shape": list(arrays[f"{name}/value"].shape), "arrays": ["value"]})
    per = np.mean((y - pred0) ** 2, axis=-1)
    np.testing.assert_allclose(arrays["call_subclass_sample_weight/value"],
                               np.sum(per * sw) / 8, rtol=1e-5)
    np.testing.assert_allclose(arrays["call_subclass_reduction_mean/value"],
                               np.sum(per * sw) / 8, rtol=1e-5)
    np.testing.assert_allclose(
        arrays["call_subclass_reduction_mean_with_sample_weight/value"],
        np.sum(per * sw) / np.sum(sw), rtol=1e-5)

    # metrics
    rng = np.random.default_rng(SEED + 1)
    for name, cls, shape in (("metric_binary_true_positives", BinaryTruePositives, (8, 2)),
                             ("metric_mean_abs_error", MeanAbsError, (8, 3))):
        metric = cls()
        results = []
        for k in range(2):
            if cls is BinaryTruePositives:
                yt = (rng.random(shape) < 0.5).astype(np.float32)
                yp = rng.uniform(0.0, 1.0, shape).astype(np.float32)
            else:
                yt = rng.standard_normal(shape).astype(np.float32)
                yp = rng.standard_normal(shape).astype(np.float32)
            arrays[f"{name}/y_true{k}"], arrays[f"{name}/y_pred{k}"] = yt, yp
            if k == 1:
                w = rng.uniform(0.0, 2.0, (8,)).astype(np.float32)
                if cls is BinaryTruePositives:
                    w = w[:, None]
                arrays[f"{name}/sample_weight1"] = w
                metric.update_state(yt, yp, sample_weight=w)
            else:
                metric.update_state(yt, yp)
            results.append(float(metric.result()))
        metric.reset_state()
        arrays[f"{name}/result"] = np.asarray(results, np.float32)
        arrays[f"{name}/result_reset"] = np.asarray(float(metric.result()), np.float32)
        cases.append({"id": name, "kind": "metric", "class": cls.__name__,
                      "calls": ["update_state(y_true0, y_pred0)",
                                "update_state(y_true1, y_pred1, sample_weight=sample_weight1)",
                                "reset_state()"],
                      "variables": [{"name": v.name, "shape": list(v.shape),
                                     "dtype": str(v.dtype)} for v in metric.variables],
                      "arrays": ["y_true0", "y_pred0", "y_true1", "y_pred1",
                                 "sample_weight1", "result", "result_reset"]})
    tp = arrays["metric_binary_true_positives/result"]
    a = {k: arrays[f"metric_binary_true_positives/{k}"] for k in
         ("y_true0", "y_pred0", "y_true1", "y_pred1", "sample_weight1")}
    t0 = np.sum((a["y_true0"] > 0) & (a["y_pred0"] >= 0.5))
    t1 = t0 + np.sum(((a["y_true1"] > 0) & (a["y_pred1"] >= 0.5)) * a["sample_weight1"])
    np.testing.assert_allclose(tp, [t0, t1], rtol=1e-6)

    np.savez_compressed(NPZ, **{k: np.asarray(v) for k, v in arrays.items()})
    sources = {obj.__name__: inspect.getsource(obj) for obj in
               (my_mse, MyMSE, ScaledMSE, OneDense, BinaryTruePositives, MeanAbsError)}
    meta = {
        "generator": "tests/ops/make_keras_model_reference.py",
        "command": "KERAS_BACKEND=jax /work/scratch/keras-venv/bin/python "
                   "tests/ops/make_keras_model_reference.py",
        "date": datetime.date.today().isoformat(),
        "keras": keras.__version__, "backend": keras.backend.backend(),
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
        "python": platform.python_version(), "floatx": keras.config.floatx(),
        "seed": SEED,
        "data": {k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in data.items()},
        "npz_keys": "x, y, sample_weight, kernel0, bias0, pred0; <case>/<array>",
    }
    doc = {"metadata": meta, "cases": cases, "sources": sources}
    with open(JSON, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    for c in cases:
        vals = {k: arrays[f"{c['id']}/{k}"] for k in c["arrays"]
                if k in ("loss", "value", "result")}
        print(f"  {c['id']:34s} " + "  ".join(f"{k}={np.round(v, 5).tolist()}"
                                              for k, v in vals.items()))
    for path in (NPZ, JSON):
        print(f"{os.path.relpath(path, os.getcwd())}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    sys.exit(main())
