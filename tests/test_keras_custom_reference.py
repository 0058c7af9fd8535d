"""Custom losses, metrics and a subclassed model against Keras 3 (JAX backend), issue 44:
"a subclassed Model, a function loss, a Loss subclass and a Metric subclass each train in
fit with Keras-equal values on a fixed batch".

``tests/ops/data/keras_custom_reference.npz`` and ``.json`` (written by
``tests/ops/make_keras_model_reference.py`` with Keras 3.15.1 on JAX, float32) hold a fixed
batch ``x`` (8, 4), ``y`` (8, 3), ``sample_weight`` (8,) and the initial weights
``kernel0``, ``bias0`` of a ``Dense(3)``, and per case:

* training (``fn_loss``, ``fn_loss_sample_weight``, ``subclass_loss``,
  ``subclass_loss_sum``, ``subclass_model``): ``SGD(0.1)``, three ``train_on_batch`` steps
  on the batch; the loss each step returned and the weights after each step. Here each
  runs with ``train_on_batch`` and again with ``fit(batch_size=8, epochs=3,
  shuffle=False)`` (one batch per epoch, so each epoch's logged loss is that step's);
* direct loss calls (``call_*``) with the reductions ``sum_over_batch_size``, ``None``,
  ``"mean"``, ``"mean_with_sample_weight"`` and ``"sum"``;
* metrics (``metric_*``): a ``Metric`` subclass updated twice (the second time with
  sample weights), its result after each update and after ``reset_state()``.

The custom objects below are the fixture's sources (in the JSON) with ``tinynet.ops`` and
tinynet's base classes in place of Keras's. Values match within float32 rounding.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tinynet as tn
from tinynet import ops

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops", "data")
NPZ = os.path.join(DATA, "keras_custom_reference.npz")
JSON = os.path.join(DATA, "keras_custom_reference.json")
RTOL = 1e-5
ATOL = 1e-6
LR = 0.1
STEPS = 3


def _load() -> tuple[dict, dict[str, np.ndarray]]:
    if not (os.path.exists(NPZ) and os.path.exists(JSON)):
        return {"cases": [], "sources": {}}, {}
    with open(JSON) as fh:
        doc = json.load(fh)
    with np.load(NPZ) as npz:
        arrays = {k: npz[k] for k in npz.files}
    return doc, arrays


DOC, REF = _load()
CASES = {c["id"]: c for c in DOC["cases"]}
pytestmark = pytest.mark.skipif(not CASES, reason=f"no Keras reference fixture at {JSON}")


def _ids(kind: str) -> list[str]:
    return [cid for cid, c in CASES.items() if c["kind"] == kind]


# -- the custom objects (the fixture's sources, with tinynet in place of keras) -----------
def my_mse(y_true, y_pred):
    return ops.mean(ops.square(y_true - y_pred), axis=-1)


class MyMSE(tn.losses.Loss):
    def call(self, y_true, y_pred):
        return ops.mean(ops.square(y_true - y_pred), axis=-1)


class ScaledMSE(tn.losses.Loss):
    def __init__(self, scale=1.0, reduction="sum_over_batch_size", name="scaled_mse"):
        super().__init__(reduction=reduction, name=name)
        self.scale = scale

    def call(self, y_true, y_pred):
        return self.scale * ops.mean(ops.square(y_true - y_pred), axis=-1)

    def get_config(self):
        return {**super().get_config(), "scale": self.scale}


class BinaryTruePositives(tn.metrics.Metric):
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


class MeanAbsError(tn.metrics.Metric):
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


# the fixture's ``subclass_model``: one ``Dense(3)`` called in ``call()``
class OneDense(tn.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = tn.layers.Dense(3)

    def call(self, inputs):
        return self.dense(inputs)


def test_the_sources_are_the_fixtures():
    """The objects above are the fixture's, word for word but for the Keras names."""
    import inspect

    here = {obj.__name__: inspect.getsource(obj) for obj in
            (my_mse, MyMSE, ScaledMSE, BinaryTruePositives, MeanAbsError, OneDense)}
    for name, src in DOC["sources"].items():
        ours = here[name]
        for keras_name, tn_name in (("keras.losses.Loss", "tn.losses.Loss"),
                                    ("keras.metrics.Metric", "tn.metrics.Metric"),
                                    ("keras.Model", "tn.Model"),
                                    ("keras.layers.Dense", "tn.layers.Dense")):
            src = src.replace(keras_name, tn_name)
        assert src == ours, name


# -- training ------------------------------------------------------------------------------
TRAIN = {  # case id -> (model factory, loss factory)
    "fn_loss": ("sequential", lambda: my_mse),
    "fn_loss_sample_weight": ("sequential", lambda: my_mse),
    "subclass_loss": ("sequential", lambda: MyMSE()),
    "subclass_loss_sum": ("sequential", lambda: ScaledMSE(scale=0.5, reduction="sum")),
    "subclass_model": ("subclassed", lambda: my_mse),
}


def _model(kind: str, loss) -> tn.Model:
    tn.set_seed(0)
    if kind == "sequential":
        model = tn.Sequential([tn.layers.Input((4,)), tn.layers.Dense(3)])
    else:
        model = OneDense()
        model.build((None, 4))
    model.set_weights([REF["kernel0"], REF["bias0"]])
    model.compile(optimizer=tn.optimizers.SGD(learning_rate=LR), loss=loss)
    return model


def _check_steps(case: str, losses, kernels, biases) -> None:
    np.testing.assert_allclose(np.asarray(losses, np.float32), REF[f"{case}/loss"],
                               rtol=RTOL, atol=ATOL, err_msg=f"{case}: loss")
    np.testing.assert_allclose(np.stack(kernels), REF[f"{case}/kernel_steps"],
                               rtol=RTOL, atol=ATOL, err_msg=f"{case}: kernel")
    np.testing.assert_allclose(np.stack(biases), REF[f"{case}/bias_steps"],
                               rtol=RTOL, atol=ATOL, err_msg=f"{case}: bias")


def _sample_weight(case: str):
    return REF["sample_weight"] if CASES[case]["sample_weight"] else None


def test_every_training_case_is_covered():
    assert set(_ids("train_on_batch")) == set(TRAIN)


@pytest.mark.parametrize("case", sorted(TRAIN))
def test_train_on_batch_equals_keras(case):
    kind, loss = TRAIN[case]
    model = _model(kind, loss())
    sw = _sample_weight(case)
    losses, kernels, biases = [], [], []
    for _ in range(STEPS):
        losses.append(float(model.train_on_batch(REF["x"], REF["y"], sample_weight=sw)))
        kernel, bias = model.get_weights()
        kernels.append(kernel)
        biases.append(bias)
    _check_steps(case, losses, kernels, biases)


@pytest.mark.parametrize("case", sorted(TRAIN))
def test_fit_equals_keras(case):
    """One batch per epoch: each epoch's logged loss is that step's ``train_on_batch``
    loss in Keras, and the weights after the last epoch its last step's."""
    kind, loss = TRAIN[case]
    model = _model(kind, loss())
    history = model.fit(REF["x"], REF["y"], batch_size=8, epochs=STEPS, shuffle=False,
                        verbose=0, sample_weight=_sample_weight(case))
    np.testing.assert_allclose(np.asarray(history.history["loss"], np.float32),
                               REF[f"{case}/loss"], rtol=RTOL, atol=ATOL)
    kernel, bias = model.get_weights()
    np.testing.assert_allclose(kernel, REF[f"{case}/kernel"], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(bias, REF[f"{case}/bias"], rtol=RTOL, atol=ATOL)


def test_the_subclassed_model_trains_as_the_sequential_one():
    """Keras's subclassed model and its Sequential do the same Dense math (checked by the
    fixture's generator); so do tinynet's."""
    for key in ("loss", "kernel_steps", "bias_steps"):
        np.testing.assert_allclose(REF[f"subclass_model/{key}"], REF[f"fn_loss/{key}"],
                                   rtol=RTOL, atol=ATOL)


# -- direct loss calls ---------------------------------------------------------------------
CALLS = {
    "call_fn": lambda y, p, sw: my_mse(y, p),
    "call_subclass": lambda y, p, sw: MyMSE()(y, p),
    "call_subclass_sample_weight": lambda y, p, sw: MyMSE()(y, p, sample_weight=sw),
    "call_subclass_reduction_none": lambda y, p, sw: MyMSE(reduction=None)(y, p),
    "call_subclass_reduction_mean": lambda y, p, sw: MyMSE(reduction="mean")(
        y, p, sample_weight=sw),
    "call_subclass_reduction_mean_with_sample_weight": lambda y, p, sw: MyMSE(
        reduction="mean_with_sample_weight")(y, p, sample_weight=sw),
    "call_scaled_sum": lambda y, p, sw: ScaledMSE(scale=0.5, reduction="sum")(y, p),
}


def test_every_call_case_is_covered():
    assert set(_ids("loss_call")) == set(CALLS)


def test_pred0_is_the_dense_output():
    np.testing.assert_allclose(REF["x"] @ REF["kernel0"] + REF["bias0"], REF["pred0"],
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("case", sorted(CALLS))
def test_loss_call_equals_keras(case):
    out = CALLS[case](REF["y"], REF["pred0"], REF["sample_weight"])
    value = np.asarray(out.data if isinstance(out, tn.Tensor) else out)
    expected = REF[f"{case}/value"]
    assert value.shape == expected.shape == tuple(CASES[case]["shape"])
    np.testing.assert_allclose(value, expected, rtol=RTOL, atol=ATOL)


# -- metrics -------------------------------------------------------------------------------
METRICS = {"metric_binary_true_positives": BinaryTruePositives,
           "metric_mean_abs_error": MeanAbsError}


def test_every_metric_case_is_covered():
    assert set(_ids("metric")) == set(METRICS)


@pytest.mark.parametrize("case", sorted(METRICS))
def test_metric_equals_keras(case):
    cls = METRICS[case]
    assert CASES[case]["class"] == cls.__name__
    metric = cls()
    assert [(v.name, list(v.shape), str(v.dtype)) for v in metric.variables] == [
        (v["name"], v["shape"], v["dtype"]) for v in CASES[case]["variables"]]
    a = {k: REF[f"{case}/{k}"] for k in CASES[case]["arrays"]}
    results = []
    metric.update_state(a["y_true0"], a["y_pred0"])
    results.append(float(metric.result()))
    metric.update_state(a["y_true1"], a["y_pred1"], sample_weight=a["sample_weight1"])
    results.append(float(metric.result()))
    np.testing.assert_allclose(np.asarray(results, np.float32), a["result"],
                               rtol=RTOL, atol=ATOL)
    metric.reset_state()
    np.testing.assert_allclose(float(metric.result()), a["result_reset"], rtol=RTOL,
                               atol=ATOL)
