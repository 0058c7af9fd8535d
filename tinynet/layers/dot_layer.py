"""``Dot``: the batch dot product of two tensors (``keras.layers.Dot``; the module is not
``dot.py``, which would hide the function ``tinynet.layers.dot``).

Written as a ``call()`` layer on :mod:`tinynet.ops`; its backward comes from the ops.
"""

from __future__ import annotations

from typing import Any

from tinynet import ops
from tinynet.layers.layer import Layer

__all__ = ["Dot"]


def _check_axes(axes: Any) -> int | tuple[int, int]:
    what = f"Dot: axes must be an int or a tuple of two ints, got {axes!r}"
    if isinstance(axes, bool):
        raise TypeError(what)
    if isinstance(axes, int):
        return int(axes)
    if not isinstance(axes, (list, tuple)):
        raise TypeError(what)
    if len(axes) != 2:
        raise ValueError(what)
    if any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
        raise TypeError(what)
    return (int(axes[0]), int(axes[1]))


class Dot(Layer):
    """The dot product of two samples along ``axes``, per sample (Keras's ``batch_dot``).

    Args:
        axes: The axis (an int, the same for both inputs) or axes (a pair, one per input)
            summed over; negative counts from the end; not the batch axis.
        normalize: L2-normalize each input along its axis first, so the result is the
            cosine similarity.
        name: Optional layer name.

    Shape:
        Inputs: two arrays ``[batch, ...]`` whose sizes along the axes match; output: the
        first's shape without its axis, then the second's without its batch axis and its
        axis; ``(batch, 1)`` when nothing else is left.
    """

    multiple_inputs = True

    def __init__(self, axes: int | tuple[int, int], normalize: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axes = _check_axes(axes)
        if not isinstance(normalize, bool):
            raise TypeError(f"Dot: normalize must be a bool, got {normalize!r}")
        self.normalize = normalize

    def _owner(self) -> str:
        return f"Dot {self.name!r}"

    def _resolve(self, shapes: Any) -> tuple[int, int]:
        owner = self._owner()
        if not isinstance(shapes, (list, tuple)) or len(shapes) != 2 or not all(
                isinstance(s, tuple) for s in shapes):
            raise ValueError(f"{owner}: expects a list of exactly 2 inputs, got {shapes!r}")
        pair = (self.axes, self.axes) if isinstance(self.axes, int) else self.axes
        axes = []
        for a, shape in zip(pair, shapes):
            r = a + len(shape) if a < 0 else a
            if not 1 <= r < len(shape):
                raise ValueError(f"{owner}: axis {a} is not a non-batch axis of an input of "
                                 f"shape {shape}")
            axes.append(r)
        d1, d2 = shapes[0][axes[0]], shapes[1][axes[1]]
        if d1 is not None and d2 is not None and d1 != d2:
            raise ValueError(f"{owner}: the inputs' sizes along the dot axes differ: "
                             f"{d1} (axis {axes[0]} of {shapes[0]}) != {d2} (axis {axes[1]} "
                             f"of {shapes[1]})")
        return axes[0], axes[1]

    def build(self, input_shape: Any) -> None:
        self._resolve([tuple(s) for s in input_shape] if isinstance(input_shape, list)
                      else input_shape)
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> tuple:
        shapes = [tuple(s) for s in input_shape] if isinstance(input_shape, list) else input_shape
        a1, a2 = self._resolve(shapes)
        s1 = [d for i, d in enumerate(shapes[0]) if i != a1]
        s2 = [d for i, d in enumerate(shapes[1]) if i not in (0, a2)]
        out = s1 + s2
        return tuple(out + [1] if len(out) == 1 else out)

    def call(self, inputs: Any) -> Any:
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"{self._owner()}: expects a list of exactly 2 inputs, got "
                             f"{type(inputs).__name__}")
        x1, x2 = (ops.convert_to_tensor(x) for x in inputs)
        a1, a2 = self._resolve([tuple(x1.shape), tuple(x2.shape)])
        if x1.shape[0] != x2.shape[0]:
            raise ValueError(f"{self._owner()}: inputs must hold one batch size, got shapes "
                             f"{tuple(x1.shape)} and {tuple(x2.shape)}")
        if self.normalize:
            x1 = ops.normalize(x1, axis=a1)
            x2 = ops.normalize(x2, axis=a2)
        batch, n = x1.shape[0], x1.shape[a1]
        rest1 = [d for i, d in enumerate(x1.shape) if i not in (0, a1)]
        rest2 = [d for i, d in enumerate(x2.shape) if i not in (0, a2)]
        left = ops.reshape(ops.moveaxis(x1, a1, -1), (batch, -1, n))
        right = ops.reshape(ops.moveaxis(x2, a2, 1), (batch, n, -1))
        out = ops.matmul(left, right)
        shape = (batch, *rest1, *rest2)
        return ops.reshape(out, shape if len(shape) > 1 else (batch, 1))

    def get_config(self) -> dict:
        axes = self.axes if isinstance(self.axes, int) else list(self.axes)
        return {**super().get_config(), "axes": axes, "normalize": self.normalize}

    @classmethod
    def from_config(cls, config: dict) -> "Dot":
        config = dict(config)
        if isinstance(config.get("axes"), list):
            config["axes"] = tuple(config["axes"])
        return super().from_config(config)
