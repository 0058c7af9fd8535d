"""``TimeDistributed``: one layer applied to every timestep (Keras 3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.layers.recurrent.wrapped import check_layer, hold, layer_entry, layer_from_entry
from tinynet.tensor import Tensor, as_array

__all__ = ["TimeDistributed"]


class TimeDistributed(Layer):
    """Applies ``layer`` to every temporal slice of the input: the ``[batch * timesteps,
    ...]`` view goes through the layer once, with the same weights for every step.

    Args:
        layer: The layer to apply (a tinynet Layer with one input and one output).
        name, input_shape, trainable: As for any layer.

    Shape:
        Input: ``[batch, timesteps, *inner]``.
        Output: ``[batch, timesteps, *layer.output_shape((batch, *inner))[1:]]``.
        Parameters: the wrapped layer's.
    """

    def __init__(self, layer: Layer, *, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        if isinstance(layer, dict):  # from_config
            layer = layer_from_entry(layer, "layer", "TimeDistributed")
        self.layer = check_layer(layer, "layer", "TimeDistributed")
        if getattr(self.layer, "multiple_inputs", False):
            raise ValueError(f"TimeDistributed: layer must take one input, got "
                             f"{type(self.layer).__name__} (several inputs)")
        hold(self, layer=self.layer)
        if not trainable:
            self.layer.trainable = False

    def _inner_shape(self, input_shape: tuple) -> tuple:
        shape = tuple(input_shape)
        if len(shape) < 3:
            raise ValueError(f"TimeDistributed {self.name!r}: input must have rank >= 3 "
                             f"[batch, timesteps, ...], got shape {shape}")
        return (None, *shape[2:])

    def build(self, input_shape: tuple) -> None:
        inner = self._inner_shape(input_shape)
        if not self.layer.built:
            self.layer.build_for(inner)
        super().build(input_shape)

    def output_shape(self, input_shape: tuple) -> tuple:
        inner = self.layer.compute_output_shape(self._inner_shape(input_shape))
        if isinstance(inner, list):
            raise ValueError(f"TimeDistributed {self.name!r}: the wrapped layer must have one "
                             f"output, {type(self.layer).__name__} has {len(inner)}")
        shape = tuple(input_shape)
        return (shape[0], shape[1], *tuple(inner)[1:])

    supports_masking = True  # the mask passes on (Keras)

    def forward(self, x: Any, training: bool = False, mask: Any = None) -> Tensor:
        """``layer`` on every step; a ``mask`` (``[batch, timesteps, ...]``) goes to the
        layer as ``[batch * timesteps, ...]`` when its ``forward`` takes one (Keras)."""
        x = as_array(x)
        if not self.built:
            self.build((None, *x.shape[1:]))
        self._inner_shape((None, *x.shape[1:]))
        b, t = x.shape[:2]
        extra = {}
        if mask is not None:
            m = np.asarray(mask.data if isinstance(mask, Tensor) else mask)
            if m.ndim < 2 or m.shape[:2] != (b, t):
                raise ValueError(f"TimeDistributed {self.name!r}: mask must have shape "
                                 f"({b}, {t}, ...) (batch, timesteps of the input), got "
                                 f"shape {m.shape}")
            if self.layer._forward_takes_mask:
                extra["mask"] = m.reshape(b * t, *m.shape[2:])
        y = self.layer.forward(x.reshape(b * t, *x.shape[2:]), training=training, **extra)
        if isinstance(y, list):
            raise ValueError(f"TimeDistributed {self.name!r}: the wrapped layer must have one "
                             f"output, {type(self.layer).__name__} returned {len(y)}")
        y = as_array(y)
        self._cache = (x.shape, y.shape, self.layer.forward_state())
        return Tensor(y.reshape(b, t, *y.shape[1:]))

    def backward(self, grad_output: Any) -> Tensor:
        x_shape, y_shape, state = self._require_cache()
        b, t = x_shape[:2]
        g = self._check_grad(grad_output, (b, t, *y_shape[1:]))
        self.layer.restore_forward_state(state)
        dx = as_array(self.layer.backward(np.ascontiguousarray(g).reshape(y_shape)))
        return Tensor(dx.reshape(x_shape))

    def get_config(self) -> dict:
        config = super().get_config()
        config["layer"] = layer_entry(self.layer)
        return config
