"""Activation functions (Keras 3 names and defaults), used by layers and by name in configs;
:mod:`tinynet.activations` is this module under Keras's name.

``get("relu")`` returns the :class:`~tinynet.ops.fused.ActivationFn` a layer runs, with
``forward(x)`` and ``backward(x, y, grad)`` on float32 arrays (fused Numba passes, see
:mod:`tinynet.ops.fused`); ``get(None)`` and ``get("linear")`` return ``None``
(identity). Keras semantics: ``"leaky_relu"`` has negative slope 0.2, ``"gelu"`` is the
exact erf form (``approximate=False``), ``"elu"`` has alpha 1.0, ``"softmax"`` normalizes
the last axis.

The module is also what Keras's ``keras.activations`` namespace holds: ``relu(x, negative_slope=0.0,
max_value=None, threshold=0.0)``, ``sigmoid(x)``, ``softmax(x, axis=-1)``,
``gelu(x, approximate=False)``, ... apply the activation to a tensor through
:mod:`tinynet.ops` (so they are recorded inside a ``call()`` layer), and ``get`` accepts
them where it accepts their names (``Dense(8, activation=tn.activations.relu)``).
:func:`relu_fn` and :func:`elu_fn` build the parametrised activations the ReLU,
LeakyReLU and ELU layers run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.ops.fused import (_REGISTRY, ActivationFn, bias_act_backward, bias_act_forward,
                               bias_grad, elu_fn, relu_fn)

__all__ = ["ActivationFn", "FunctionActivation", "get", "names", "relu_fn", "elu_fn", "bias_act_forward",
           "bias_act_backward", "bias_grad",
           # keras.activations: functions of a tensor
           "relu", "relu6", "elu", "selu", "leaky_relu", "sigmoid", "hard_sigmoid",
           "log_sigmoid", "tanh", "softplus", "softsign", "silu", "swish", "hard_silu",
           "hard_swish", "gelu", "softmax", "log_softmax", "exponential", "linear"]

def names() -> tuple[str, ...]:
    """The accepted activation strings, ``"linear"`` included, sorted."""
    return tuple(sorted([*_REGISTRY, "linear"]))


def get(identifier: str | None, *, owner: str | None = None) -> ActivationFn | None:
    """Looks up an activation by its Keras name.

    Args:
        identifier: ``None``, ``"linear"`` or one of :func:`names`, or the function of
            this module of that name (``relu``, ..., ``swish`` for ``"silu"``), or any
            other function of a tensor written with :mod:`tinynet.ops` (a
            :class:`FunctionActivation`; Keras's ``Dense(8, activation=my_fn)``).
        owner: Class name used to prefix error messages (e.g. ``"Dense"``).

    Returns:
        The :class:`ActivationFn` (a :class:`FunctionActivation` for a function), or
        ``None`` for ``None`` and ``"linear"`` (identity).

    Raises:
        ValueError: An unknown name (the message lists the valid ones).
        TypeError: Neither a string nor ``None``.
    """
    prefix = f"{owner}: " if owner else ""
    valid = ", ".join(repr(n) for n in names())
    if identifier is None:
        return None
    if callable(identifier) and _KERAS_FUNCTIONS.get(getattr(identifier, "__name__", None)) \
            is identifier and _KERAS_NAMES.get(identifier.__name__) in (*_REGISTRY, "linear"):
        identifier = _KERAS_NAMES[identifier.__name__]  # tn.activations.relu: "relu"
    if isinstance(identifier, FunctionActivation):
        return identifier
    if callable(identifier) and not isinstance(identifier, (str, ActivationFn)):
        return FunctionActivation(identifier)
    if not isinstance(identifier, str):
        raise TypeError(f"{prefix}activation must be a string, a function of a tensor or "
                        f"None (one of {valid}), got {identifier!r}")
    if identifier == "linear":
        return None
    fn = _REGISTRY.get(identifier)
    if fn is None:
        from tinynet.custom_objects import get_registered_object

        custom = get_registered_object(identifier)
        if callable(custom) and not isinstance(custom, type):
            return FunctionActivation(custom)  # a registered function, by its saved name
        raise ValueError(f"{prefix}activation must be one of {valid}, got {identifier!r} "
                         f"(a function of your own is found by name once registered with "
                         f"register_keras_serializable)")
    return fn


class FunctionActivation(ActivationFn):
    """An activation given as a function of a tensor (Keras's ``activation=my_fn``): the
    forward pass runs it on :mod:`tinynet.ops`; the backward pass runs it again on the
    pre-activation under a recording and replays the recorded ops (no state is kept, so
    a layer's cached pre-activation is all it needs).

    Attributes:
        function: The function; its saved name is its registered custom-object name
            (``package>name``, :func:`tinynet.saving.register_keras_serializable`) or
            ``__name__``.
    """

    __slots__ = ("function",)

    def __init__(self, function: Any) -> None:
        from tinynet.custom_objects import registered_name

        super().__init__(registered_name(function), "function", uses_input=True, uses_output=False)
        self.function = function

    def _apply(self, x: np.ndarray) -> Any:
        from tinynet.tensor import Tensor

        y = self.function(x if isinstance(x, Tensor) else Tensor._wrap(x))
        arr = np.asarray(y.data if isinstance(y, Tensor) else y)
        if arr.shape != x.shape:
            raise ValueError(f"activation {self.name}: the function must keep the shape "
                             f"{x.shape}, got {arr.shape}")
        return y

    def forward(self, x: Any, *, bias: Any = None, out: np.ndarray | None = None) -> np.ndarray:
        from tinynet.ops import autodiff
        from tinynet.tensor import Tensor

        z = np.ascontiguousarray(x, dtype=np.float32)
        if bias is not None:
            z = z + np.asarray(bias, dtype=np.float32).reshape(-1)
        with autodiff.no_record():
            y = self._apply(z)
        y = np.asarray(y.data if isinstance(y, Tensor) else y, dtype=np.float32)
        if out is None:
            return np.ascontiguousarray(y)
        self._check_out(out, z.shape)[...] = y
        return out

    def backward(self, x: Any, y: Any, grad: Any, *, out: np.ndarray | None = None) -> np.ndarray:
        from tinynet.ops import autodiff
        from tinynet.tensor import Tensor

        g = np.ascontiguousarray(grad, dtype=np.float32)
        graph = autodiff.Graph(owner=self.name)
        with graph:
            leaf = graph.leaf(np.ascontiguousarray(x, dtype=np.float32))
            result = self._apply(leaf)
        if not isinstance(result, Tensor) or result._node is None:
            dx = np.zeros_like(g)  # the output does not depend on the input
        else:
            autodiff.backprop([result], [g], graph)
            dx = leaf._node.grad
            dx = np.zeros_like(g) if dx is None else np.asarray(dx, dtype=np.float32)
        if out is None:
            return np.ascontiguousarray(dx)
        self._check_out(out, g.shape)[...] = dx
        return out

    def __repr__(self) -> str:
        return f"FunctionActivation({self.name!r})"


def relu(x: Any, negative_slope: float = 0.0, max_value: float | None = None,
         threshold: float = 0.0) -> Any:
    """Keras ``activations.relu``: ``min(x, max_value)`` for ``x > threshold`` (0 at it),
    ``negative_slope * (x - threshold)`` below; the defaults give ``max(x, 0)``.
    Computed as Keras computes it, with :mod:`tinynet.ops` (recorded in a ``call()``)."""
    from tinynet import ops

    if negative_slope != 0.0:
        if max_value is None and threshold == 0:
            return ops.leaky_relu(x, negative_slope=negative_slope)
        negative_part = (ops.relu(ops.negative(x) + threshold) if threshold != 0
                         else ops.relu(ops.negative(x)))
    else:
        negative_part = 1
    clip_max = max_value is not None
    if threshold != 0:
        x = ops.where(ops.greater(x, threshold), x, 0.0)  # Keras: x * (x > threshold)
    elif max_value == 6:
        x = ops.relu6(x)
        clip_max = False
    else:
        x = ops.relu(x)
    if clip_max:
        x = ops.clip(x, 0.0, max_value)
    if negative_slope != 0.0:
        x = x - negative_slope * negative_part
    return x


def relu6(x: Any) -> Any:
    """Keras ``activations.relu6``: ``min(max(x, 0), 6)``."""
    from tinynet import ops

    return ops.relu6(x)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """Keras ``activations.elu``: ``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise."""
    from tinynet import ops

    return ops.elu(x, alpha=alpha)


def selu(x: Any) -> Any:
    """Keras ``activations.selu``: the scaled ELU with Keras's constants."""
    from tinynet import ops

    return ops.selu(x)


def leaky_relu(x: Any, negative_slope: float = 0.2) -> Any:
    """Keras ``activations.leaky_relu``: ``x`` for ``x >= 0``, ``negative_slope * x``
    below."""
    from tinynet import ops

    return ops.leaky_relu(x, negative_slope=negative_slope)


def sigmoid(x: Any) -> Any:
    """Keras ``activations.sigmoid``: ``1 / (1 + exp(-x))``."""
    from tinynet import ops

    return ops.sigmoid(x)


def hard_sigmoid(x: Any) -> Any:
    """Keras ``activations.hard_sigmoid``: ``relu6(x + 3) / 6``."""
    from tinynet import ops

    return ops.hard_sigmoid(x)


def log_sigmoid(x: Any) -> Any:
    """Keras ``activations.log_sigmoid``: ``log(sigmoid(x))``."""
    from tinynet import ops

    return ops.log_sigmoid(x)


def tanh(x: Any) -> Any:
    """Keras ``activations.tanh``."""
    from tinynet import ops

    return ops.tanh(x)


def softplus(x: Any) -> Any:
    """Keras ``activations.softplus``: ``log(exp(x) + 1)``."""
    from tinynet import ops

    return ops.softplus(x)


def softsign(x: Any) -> Any:
    """Keras ``activations.softsign``: ``x / (abs(x) + 1)``."""
    from tinynet import ops

    return ops.softsign(x)


def silu(x: Any) -> Any:
    """Keras ``activations.silu`` (also ``swish``): ``x * sigmoid(x)``."""
    from tinynet import ops

    return ops.silu(x)


def swish(x: Any) -> Any:
    """Keras ``activations.swish``: the same function as :func:`silu`."""
    return silu(x)


def hard_silu(x: Any) -> Any:
    """Keras ``activations.hard_silu`` (also ``hard_swish``): ``x * hard_sigmoid(x)``."""
    from tinynet import ops

    return ops.hard_silu(x)


def hard_swish(x: Any) -> Any:
    """Keras ``activations.hard_swish``: the same function as :func:`hard_silu`."""
    return hard_silu(x)


def gelu(x: Any, approximate: bool = False) -> Any:
    """Keras ``activations.gelu``: the exact ``x * Phi(x)`` by default (Keras's
    ``activations.gelu``; ``ops.gelu`` defaults to the tanh approximation)."""
    from tinynet import ops

    return ops.gelu(x, approximate=approximate)


def softmax(x: Any, axis: int = -1) -> Any:
    """Keras ``activations.softmax`` along ``axis``."""
    from tinynet import ops

    return ops.softmax(x, axis=axis)


def log_softmax(x: Any, axis: int = -1) -> Any:
    """Keras ``activations.log_softmax`` along ``axis``."""
    from tinynet import ops

    return ops.log_softmax(x, axis=axis)


def exponential(x: Any) -> Any:
    """Keras ``activations.exponential``: ``exp(x)``."""
    from tinynet import ops

    return ops.exp(x)


def linear(x: Any) -> Any:
    """Keras ``activations.linear``: ``x`` unchanged."""
    return x


# the functions above by name, and the registry name ``get`` maps each to (as Keras
# serializes them: swish as "silu", hard_swish as "hard_silu")
_KERAS_FUNCTIONS = {f.__name__: f for f in (
    relu, relu6, elu, selu, leaky_relu, sigmoid, hard_sigmoid, log_sigmoid, tanh, softplus,
    softsign, silu, swish, hard_silu, hard_swish, gelu, softmax, log_softmax, exponential,
    linear)}
_KERAS_NAMES = {**{n: n for n in _KERAS_FUNCTIONS}, "swish": "silu", "hard_swish": "hard_silu"}
