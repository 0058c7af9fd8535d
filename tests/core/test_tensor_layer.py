"""Tensor and the Layer/Parameter base contract."""

import numpy as np
import pytest

import tinynet as tn
from tinynet.layers import Input, Layer, Parameter
from tinynet.layers.layer import snake_case


def test_tensor_wraps_without_copy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = tn.Tensor(a)
    assert t.data is a and np.asarray(t) is a and t.numpy() is a
    assert (t.shape, t.ndim, t.size, t.dtype, len(t)) == ((2, 3), 2, 6, np.float32, 2)
    assert isinstance(t[0], tn.Tensor) and t[0].shape == (3,)
    assert isinstance(t + 1, tn.Tensor) and np.array_equal((2 * t - t / 2).data, a * 1.5)
    assert isinstance(1 - t, tn.Tensor) and np.array_equal((1 - t).data, 1 - a)


def test_tensor_converts_when_it_must():
    t = tn.Tensor([[1, 2], [3, 4]])
    assert t.dtype == np.float32 and t.data.flags.c_contiguous
    f = np.asfortranarray(np.ones((3, 2)))
    assert tn.Tensor(f).data.flags.c_contiguous


def test_snake_case_names():
    assert [snake_case(n) for n in ("Conv2D", "ReLU", "GlobalAveragePooling2D",
                                    "BatchNormalization", "Dense")] == [
        "conv2d", "re_lu", "global_average_pooling2d", "batch_normalization", "dense"]


class Scale(Layer):
    def build(self, input_shape):
        self.w = self.add_weight("w", (input_shape[-1],), "ones")
        super().build(input_shape)

    def forward(self, x, training=False):
        x = tn.tensor.as_array(x)
        self._cache = x
        return tn.Tensor(x * self.w.value)

    def backward(self, grad_output):
        x = self._require_cache()
        g = np.asarray(grad_output)
        self.w.grad = (g * x).sum(0)
        return tn.Tensor(g * self.w.value)


def test_layer_builds_on_call_and_counts():
    layer = Scale()
    with pytest.raises(ValueError, match="Layer 'scale' is not built yet"):
        layer.count_params()
    with pytest.raises(RuntimeError, match="Scale 'scale': backward called before forward"):
        layer.backward(np.ones((1, 3)))
    y = layer(np.ones((2, 3)))
    assert layer.built and layer.built_input_shape == (None, 3)
    assert isinstance(y, tn.Tensor) and layer.count_params() == 3
    assert [p.path for p in layer.parameters()] == ["scale/w"]
    assert tn.testing.check_gradients(layer, (4, 3)) <= 1.0


def test_trainable_freezes_parameters():
    layer = Scale(trainable=False)
    layer.build((None, 2))
    assert not layer.parameters()[0].trainable
    layer.trainable = True
    assert layer.trainable_parameters() == layer.parameters()
    frozen = Parameter(np.zeros(2), "moving_mean", trainable=False)
    frozen.trainable = True
    assert frozen.trainable is False


def test_config_round_trip_and_input():
    layer = Scale(name="s", input_shape=(3,))
    config = layer.get_config()
    assert config == {"name": "s", "trainable": True, "input_shape": [3]}
    again = Scale.from_config(config)
    assert again.name == "s" and again.input_shape_arg == (None, 3)
    inp = Input((8, 8, 1)).layer  # the InputLayer behind the symbolic tensor
    assert inp.input_shape_arg == (None, 8, 8, 1)
    assert type(inp).from_config(inp.get_config()).shape == (8, 8, 1)
    assert Input((None, 3)).shape == (None, None, 3)  # a length known only from the data


def test_building_twice_does_not_duplicate_weights():
    layer = Scale()
    layer.build((None, 3))
    layer.build((None, 3))
    assert layer.count_params() == 3
