"""``tinynet.testing.check_gradients``: the finite-difference check users run on their layers."""

import re

import numpy as np
import pytest

from tinynet.layers import BatchNormalization, Layer
from tinynet.tensor import Tensor, as_array
from tinynet.testing import GradientCheckError, check_gradients


class Affine(Layer):
    """``y = x * w + b`` per feature (last axis), with optional planted backward errors.

    ``bad_dx`` / ``bad_dw`` name one flat index whose gradient gets 1.0 added.
    """

    def __init__(self, bad_dx=None, bad_dw=None, **kwargs):
        super().__init__(**kwargs)
        self.bad_dx, self.bad_dw = bad_dx, bad_dw
        self.forward_calls, self.training_seen = 0, []

    def build(self, input_shape):
        c = input_shape[-1]
        self.w = self.add_weight("w", (c,), lambda s: np.linspace(0.5, 1.5, s[0], dtype=np.float32))
        self.b = self.add_weight("b", (c,), "zeros")
        super().build(input_shape)

    def forward(self, x, training=False):
        self.forward_calls += 1
        self.training_seen.append(training)
        x = as_array(x)
        self._cache = x.copy()
        return Tensor(x * self.w.value + self.b.value)

    def backward(self, grad_output):
        x = self._require_cache()
        g = as_array(grad_output)
        c = x.shape[-1]
        self.w.grad = (g * x).reshape(-1, c).sum(axis=0)
        self.b.grad = g.reshape(-1, c).sum(axis=0)
        dx = g * self.w.value
        if self.bad_dx is not None:
            dx.reshape(-1)[self.bad_dx] += 1.0
        if self.bad_dw is not None:
            self.w.grad[self.bad_dw] += 1.0
        return Tensor(dx)


class TrainingDoubles(Layer):
    """Doubles its input in training, identity otherwise; backward is right in training only."""

    def forward(self, x, training=False):
        self._cache = True
        return Tensor(as_array(x) * (2.0 if training else 1.0))

    def backward(self, grad_output):
        self._require_cache()
        return Tensor(as_array(grad_output) * 2.0)


def test_correct_layer_passes_and_returns_the_worst_ratio():
    worst = check_gradients(Affine(), (3, 4))
    assert isinstance(worst, float)
    assert 0.0 <= worst <= 1.0


def test_same_seed_same_ratio():
    a = check_gradients(Affine(), (3, 4), seed=5)
    assert check_gradients(Affine(), (3, 4), seed=5) == a


def test_gradient_check_error_is_an_assertion_error():
    assert issubclass(GradientCheckError, AssertionError)


def test_wrong_input_gradient_names_layer_and_entry():
    layer = Affine(bad_dx=5, name="planted")
    with pytest.raises(GradientCheckError) as info:
        check_gradients(layer, (3, 4))
    message = str(info.value)
    assert message.startswith("check_gradients(Affine 'planted'): gradient mismatch at "
                              "input[flat index 5]: analytic ")
    assert re.search(r"numeric \S+ \(error ratio \S+ > 1 with rtol=0\.02, atol=0\.001\)$",
                     message)


def test_wrong_parameter_gradient_names_the_parameter():
    with pytest.raises(GradientCheckError,
                       match=re.escape("check_gradients(Affine 'affine'): gradient mismatch at "
                                       "w[flat index 2]")):
        check_gradients(Affine(bad_dw=2), (2, 3))


def test_raise_on_failure_false_returns_the_ratio():
    worst = check_gradients(Affine(bad_dx=0), (2, 3), raise_on_failure=False)
    assert worst > 1.0


def test_explicit_x_is_used_and_left_cached():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    layer = Affine()
    check_gradients(layer, input_shape=(9, 9, 9), x=x)  # x wins over input_shape
    assert layer.built_input_shape == (None, 4)
    assert np.array_equal(layer._cache, x)  # the cache is at the unperturbed point


def test_input_shape_builds_the_layer_and_weights_are_restored():
    layer = Affine()
    check_gradients(layer, (2, 5))
    assert layer.built and layer.built_input_shape == (None, 5)
    assert np.array_equal(layer.w.value, np.linspace(0.5, 1.5, 5, dtype=np.float32))
    assert np.array_equal(layer.b.value, np.zeros(5, np.float32))


def test_training_flag_is_passed_to_forward():
    layer = TrainingDoubles()
    assert check_gradients(layer, (2, 3), training=True) <= 1.0
    with pytest.raises(GradientCheckError, match=re.escape(
            "check_gradients(TrainingDoubles 'training_doubles'): gradient mismatch at input[")):
        check_gradients(TrainingDoubles(), (2, 3), training=False)
    affine = Affine()
    check_gradients(affine, (2, 3), training=True)
    assert affine.training_seen and all(affine.training_seen)


def test_batch_normalization_in_both_modes():
    assert check_gradients(BatchNormalization(), (4, 3, 3, 2), training=True) <= 1.0
    assert check_gradients(BatchNormalization(), (4, 3, 3, 2), training=False) <= 1.0


def test_max_checks_bounds_the_probes():
    layer = Affine()
    check_gradients(layer, (10, 10), max_checks=5)
    # 2 forwards for the analytic pass, 1 to restore the cache, 2 per probed entry:
    # at most 5 input entries, 5 of w and 5 of b
    assert layer.forward_calls <= 3 + 2 * 15


def test_frozen_parameters_are_not_checked():
    layer = Affine(bad_dw=1)
    layer.build((None, 3))
    layer.w.trainable = False
    assert check_gradients(layer, (2, 3)) <= 1.0


def test_needs_x_or_input_shape():
    with pytest.raises(ValueError, match=re.escape("check_gradients: give input_shape or x")):
        check_gradients(Affine())
