"""Ints too large for a float (``±10**400``) given to numeric arguments raise ``ValueError``
or ``TypeError`` naming the argument, never ``OverflowError`` from ``float()`` (issue 49,
finding 7).

Two sweeps: every public constructor, each argument whose default is a number or ``None``
(the required ones set to 1), and the methods that take numbers (``compile``, ``fit``,
``evaluate``, losses, metrics, weights, ops).
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import numpy as np
import pytest

import tinynet as tn
from tinynet import initializers, regularizers, tuning
from tinynet.scalars import float_array, to_float

HUGE = (10**400, -10**400)
MODULES = {"layers": tn.layers, "losses": tn.losses, "metrics": tn.metrics,
           "optimizers": tn.optimizers, "schedules": tn.optimizers.schedules,
           "callbacks": tn.callbacks, "initializers": initializers,
           "regularizers": regularizers}


def _numeric_arguments() -> list[tuple[str, type, str]]:
    found = []
    for module_name, module in MODULES.items():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if not inspect.isclass(obj):
                continue
            for p in inspect.signature(obj).parameters.values():
                if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                    continue
                default = p.default
                if default is p.empty or default is None or (
                        isinstance(default, (int, float)) and not isinstance(default, bool)):
                    found.append((f"{module_name}.{name}.{p.name}", obj, p.name))
    return found


ARGUMENTS = _numeric_arguments()


def _construct(cls: type, arg: str, value: int) -> Any:
    params = inspect.signature(cls).parameters.values()
    kwargs = {p.name: 1 for p in params if p.default is p.empty
              and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    kwargs[arg] = value
    return cls(**kwargs)


def _raises_only_value_or_type_error(call: Callable[[], Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except (ValueError, TypeError):
            pass


def test_the_constructor_sweep_is_wide():
    assert len(ARGUMENTS) > 300
    ids = {i for i, _, _ in ARGUMENTS}
    for expected in ("layers.Rescaling.scale", "losses.BinaryFocalCrossentropy.gamma",
                     "optimizers.SGD.learning_rate", "regularizers.L2.l2",
                     "schedules.ExponentialDecay.decay_rate", "callbacks.EarlyStopping.min_delta"):
        assert expected in ids


@pytest.mark.parametrize("value", HUGE, ids=["plus", "minus"])
def test_constructors_refuse_huge_ints_with_value_or_type_error(value):
    for _, cls, arg in ARGUMENTS:
        _raises_only_value_or_type_error(lambda: _construct(cls, arg, value))


X, Y = np.zeros((5, 4), np.float32), np.zeros((5, 3), np.float32)
LABELS = np.array([0, 1, 2, 0, 1])


def _model(loss: str = "mse", **compile_kwargs: Any) -> tn.Sequential:
    model = tn.Sequential([tn.layers.Input((4,)), tn.layers.Dense(3)])
    model.compile(optimizer="sgd", loss=loss, **compile_kwargs)
    return model


def _built_dense() -> Any:
    layer = tn.layers.Dense(1)
    layer.build((None, 1))
    return layer


METHODS: dict[str, Callable[[int], Any]] = {
    "compile.loss_weights": lambda v: _model(loss_weights=[v]),
    "fit.sample_weight": lambda v: _model().fit(X, Y, sample_weight=[v] * 5, verbose=0),
    "fit.class_weight": lambda v: _model("sparse_categorical_crossentropy").fit(
        X, LABELS, class_weight={0: v, 1: 1, 2: 1}, verbose=0),
    "fit.validation_split": lambda v: _model().fit(X, Y, validation_split=v, verbose=0),
    "fit.batch_size": lambda v: _model().fit(X, Y, batch_size=-abs(v), verbose=0),
    "fit.epochs": lambda v: _model().fit(X, Y, epochs=-abs(v), verbose=0),
    "fit.verbose": lambda v: _model().fit(X, Y, verbose=v),
    "evaluate.sample_weight": lambda v: _model().evaluate(X, Y, sample_weight=[v] * 5,
                                                          verbose=0),
    "train_on_batch.sample_weight": lambda v: _model().train_on_batch(X, Y,
                                                                      sample_weight=[v] * 5),
    "predict.batch_size": lambda v: _model().predict(X, batch_size=-abs(v), verbose=0),
    "loss.sample_weight": lambda v: tn.losses.MeanSquaredError()(
        np.ones((2, 2)), np.ones((2, 2)), sample_weight=[v, v]),
    "metric.sample_weight": lambda v: tn.metrics.Mean().update_state([1.0], sample_weight=[v]),
    "set_weights": lambda v: _built_dense().set_weights([np.array([[v]], dtype=object),
                                                         np.array([v], dtype=object)]),
    "optimizer.learning_rate": lambda v: setattr(tn.optimizers.SGD(), "learning_rate", v),
    "Normalization.mean": lambda v: tn.layers.Normalization(mean=v, variance=1.0),
    "set_seed": lambda v: tn.set_seed(v),
    "tuning.set": lambda v: tuning.set(gn_row_parallel_min_elems=v),
    "tuning.set_num_threads": lambda v: tuning.set_num_threads(v),
    "Tensor": lambda v: tn.Tensor([v]),
    "ops.add": lambda v: tn.ops.add(np.ones(2), v),
    "to_categorical": lambda v: tn.utils.to_categorical([0, 1], num_classes=v),
}


@pytest.mark.parametrize("value", HUGE, ids=["plus", "minus"])
@pytest.mark.parametrize("name", list(METHODS))
def test_methods_refuse_huge_ints_with_value_or_type_error(name, value):
    try:
        _raises_only_value_or_type_error(lambda: METHODS[name](value))
    finally:
        tuning.reset()


def test_the_conversions_give_huge_ints_their_float_limit():
    assert to_float(10**400) == np.inf and to_float(-10**400) == -np.inf
    assert to_float(3) == 3.0
    arr = float_array([[1, 10**400], [-10**400, 2]], np.float32)
    assert arr.dtype == np.float32
    assert arr.tolist() == [[1.0, np.inf], [-np.inf, 2.0]]
    assert float_array(10**400).shape == ()


@pytest.mark.parametrize("call, message", [
    (lambda: tn.layers.Rescaling(10**400),
     "Rescaling: scale must be a finite float or an array of them, each within float32's "
     "range (|v| <= 3.402823e+38), got 1000000000"),
    (lambda: tn.losses.BinaryFocalCrossentropy(gamma=-10**400),
     "BinaryFocalCrossentropy: gamma must be a finite float >= 0, got -1000000000"),
    (lambda: tn.regularizers.L2(10**400),
     "L2: l2 must be a non-negative finite float, got 1000000000"),
    (lambda: _model(loss_weights=[10**400]),
     "Sequential.compile: loss_weights must hold finite numbers, got 1000000000"),
    (lambda: _model().fit(X, Y, sample_weight=[-10**400] * 5, verbose=0),
     "Sequential.fit: sample_weight must be finite"),
])
def test_huge_int_messages_name_the_argument(call, message):
    with pytest.raises(ValueError) as info:
        call()
    assert str(info.value).startswith(message)
