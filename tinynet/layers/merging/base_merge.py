"""``Merge``: the base of the element-wise merging layers (Keras 3 semantics).

The inputs are combined left to right (``((x0 op x1) op x2) ...``, the order Keras uses),
so the result's bits depend only on the inputs. Shapes must have one rank; a non-batch
axis of size 1 broadcasts against the others (as in Keras), and its gradient is the sum
over that axis.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.tensor import Tensor, as_array

__all__ = ["Merge", "merged_shape"]


def merged_shape(shapes: list[tuple], owner: str) -> tuple:
    """The broadcast shape of several inputs of one rank (``None`` stays unknown; the
    batch axis is the inputs' when they agree, else ``None``).

    Raises:
        ValueError: ranks differ, or two known sizes of an axis differ and neither is 1.
    """
    out = list(shapes[0])
    for shape in shapes[1:]:
        if len(shape) != len(out):
            raise ValueError(f"{owner}: inputs must have one rank, got shapes {shapes}")
        for axis in range(1, len(out)):
            a, b = out[axis], shape[axis]
            if a == 1 or a is None and b not in (None, 1):
                out[axis] = b
            elif b not in (1, None) and a != b:
                raise ValueError(f"{owner}: inputs have incompatible shapes {shapes} (axis "
                                 f"{axis}: {a} and {b})")
    batches = {s[0] for s in shapes}
    return (batches.pop() if len(batches) == 1 else None, *out[1:])


class Merge(Layer):
    """An element-wise merge of a list of tensors (see the module docstring).

    Subclasses set :attr:`_op` (a NumPy ufunc folded left to right by :meth:`_merge`) or
    override :meth:`_merge`, and define :meth:`_input_grads`.

    Args:
        name: Optional layer name.

    Shape:
        Inputs: a list of ``[batch, ...]`` arrays of one rank; output: their broadcast shape.
    """

    multiple_inputs = True
    min_inputs = 2
    max_inputs: int | None = None

    def _owner(self) -> str:
        return f"{type(self).__name__} {self.name!r}"

    def _check_shapes(self, input_shape: Any) -> list[tuple]:
        owner = self._owner()
        if not isinstance(input_shape, list) or not all(isinstance(s, tuple) for s in input_shape):
            raise ValueError(f"{owner}: expects a list of input shapes, got {input_shape!r}")
        n = len(input_shape)
        if n < self.min_inputs or (self.max_inputs is not None and n > self.max_inputs):
            want = (f"exactly {self.max_inputs}" if self.max_inputs == self.min_inputs
                    else f"at least {self.min_inputs}")
            raise ValueError(f"{owner}: expects {want} inputs, got {n}")
        return input_shape

    def build(self, input_shape: Any) -> None:
        shapes = self._check_shapes(input_shape)
        self.output_shape(shapes)
        super().build(shapes)

    def output_shape(self, input_shape: Any) -> tuple:
        return merged_shape(self._check_shapes(input_shape), self._owner())

    def _arrays(self, inputs: Any) -> list[np.ndarray]:
        owner = self._owner()
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"{owner}: expects a list of inputs, got {type(inputs).__name__}")
        arrays = [as_array(x, f"{owner}: input {i}") for i, x in enumerate(inputs)]
        first = arrays[0].shape
        if (len(arrays) >= self.min_inputs and len(first) > 0
                and (self.max_inputs is None or len(arrays) <= self.max_inputs)
                and all(a.shape == first for a in arrays)):
            return arrays  # one shape: nothing broadcasts, nothing to check
        shapes = [(None, *a.shape[1:]) for a in arrays]
        self.output_shape(shapes)
        if len({a.shape[0] for a in arrays}) > 1:
            raise ValueError(f"{owner}: inputs must hold one batch size, got shapes "
                             f"{[a.shape for a in arrays]}")
        return arrays

    def forward(self, inputs: Any, training: bool = False) -> Tensor:
        arrays = self._arrays(inputs)
        out, state = self._merge(arrays)
        self._cache = (arrays, state)
        return Tensor(np.ascontiguousarray(out, dtype=np.float32))

    def backward(self, grad_output: Any) -> list[Tensor]:
        arrays, state = self._require_cache()
        g = as_array(grad_output, f"{self._owner()}: grad_output")
        grads = self._input_grads(g, arrays, state)
        return [Tensor(np.ascontiguousarray(dx if dx.shape == a.shape
                                            else _unbroadcast(dx, a.shape), dtype=np.float32))
                for dx, a in zip(grads, arrays)]

    _op: Any = None

    def _merge(self, arrays: list[np.ndarray]) -> tuple[np.ndarray, Any]:
        """The inputs folded left to right with :attr:`_op`, and what the backward needs."""
        out = arrays[0]
        for a in arrays[1:]:
            out = self._op(out, a)
        return out, None

    def _input_grads(self, g: np.ndarray, arrays: list[np.ndarray],
                     state: Any) -> list[np.ndarray]:  # pragma: no cover
        raise NotImplementedError


def _unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """``grad`` summed over the axes an input of ``shape`` was broadcast along."""
    grad = np.broadcast_to(grad, np.broadcast_shapes(grad.shape, shape))
    axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if s == 1 and g != 1)
    return grad.sum(axis=axes, keepdims=True, dtype=np.float32) if axes else grad
