"""Converters of the recurrent layers (``SimpleRNN``, ``LSTM``, ``GRU``) and their wrappers
(``Bidirectional``, ``TimeDistributed``).

The recurrent layers become ONNX's own ``RNN``, ``LSTM`` and ``GRU`` operators, which are
time-major: the input ``[batch, steps, features]`` is transposed to ``[steps, batch,
features]`` and the sequence output ``Y [steps, directions, batch, units]`` back (a
transpose back followed by the next recurrent layer's transpose forward cancels out).
The weights are Keras's, reordered: ONNX's ``W [directions, gates * units, features]``
and ``R [directions, gates * units, units]`` are the transposed kernels with the gate
blocks in ONNX's order (LSTM: Keras i, f, c, o -> ONNX i, o, f, c; GRU: z, r, h in
both), and ``B`` is the input bias then the recurrent bias (zeros but for GRU's
``reset_after=True``, which is ONNX's ``linear_before_reset=1``).

``go_backwards`` is the ``"reverse"`` direction, whose ``Y`` is in the input's time order
where Keras returns the steps in processing order, so the returned sequence is reversed.
``Bidirectional`` is one ``"bidirectional"`` operator when its two layers mirror each
other (same class and units, the backward one ``go_backwards``, GRU's same
``reset_after``), else one operator per layer; the merge modes are ``Concat``, ``Add``,
``Mul``, ``Add`` then ``Div`` by 2, or two outputs. ``TimeDistributed`` reshapes
``[batch, steps, ...]`` to ``[batch * steps, ...]`` around its inner layer's export.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.export.builder import OnnxBuilder
from tinynet.export.registry import converts

__all__ = ["onnx_activation"]

# Keras's gate blocks in ONNX's order
_GATE_ORDER = {"SimpleRNN": (0,), "LSTM": (0, 3, 1, 2), "GRU": (0, 1, 2)}
_OPERATOR = {"SimpleRNN": "RNN", "LSTM": "LSTM", "GRU": "GRU"}
# tinynet's recurrent activation -> (ONNX activation, alpha, beta); hard_sigmoid is Keras
# 3's relu6(x + 3) / 6 = clip(x / 6 + 1 / 2, 0, 1), linear the identity
_ACTIVATIONS: dict[str, tuple[str, float | None, float | None]] = {
    "tanh": ("Tanh", None, None), "sigmoid": ("Sigmoid", None, None),
    "relu": ("Relu", None, None), "hard_sigmoid": ("HardSigmoid", 1.0 / 6.0, 0.5),
    "linear": ("Affine", 1.0, 0.0)}
_INT64_MIN = np.iinfo(np.int64).min


def onnx_activation(layer: Any, name: str) -> tuple[str, float | None, float | None]:
    """The ONNX recurrent activation (and its alpha, beta) of the activation ``name`` of
    ``layer``.

    Raises:
        ValueError: ONNX's recurrent operators have no such activation.
    """
    if name not in _ACTIVATIONS:
        known = ", ".join(repr(k) for k in _ACTIVATIONS)
        raise ValueError(f"export: {type(layer).__name__} {layer.name!r} has activation "
                         f"{name!r}, which ONNX's recurrent operators do not have (they "
                         f"take {known})")
    return _ACTIVATIONS[name]


def _functions(layer: Any) -> list[str]:
    """The activations ONNX's operator applies, in its order (LSTM f, g, h; GRU f, g; RNN f)."""
    kind = type(layer).__name__
    if kind == "LSTM":
        return [layer.recurrent_activation, layer.activation, layer.activation]
    if kind == "GRU":
        return [layer.recurrent_activation, layer.activation]
    return [layer.activation]


def _blocks(w: np.ndarray, order: tuple, units: int) -> np.ndarray:
    """``w``'s last-axis gate blocks (``units`` wide) in ``order``."""
    return np.concatenate([w[..., g * units:(g + 1) * units] for g in order], axis=-1)


def _weights(layer: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ONNX's ``W [gates * units, features]``, ``R [gates * units, units]`` and
    ``B [2 * gates * units]`` (input bias, recurrent bias) of one direction."""
    kind, u = type(layer).__name__, layer.units
    order = _GATE_ORDER[kind]
    w = _blocks(layer.kernel.value, order, u).T
    r = _blocks(layer.recurrent_kernel.value, order, u).T
    zeros = np.zeros(len(order) * u, dtype=np.float32)
    if not layer.use_bias:
        wb, rb = zeros, zeros
    elif kind == "GRU" and layer.reset_after:
        wb, rb = layer.bias.value[0], layer.bias.value[1]
    else:
        wb, rb = _blocks(layer.bias.value, order, u), zeros
    return w, r, np.concatenate([wb, rb])


def _operator(b: OnnxBuilder, layers: list, xt: str) -> tuple[str, str, str | None, str]:
    """One ONNX recurrent operator running ``layers`` (one, or a mirrored forward and
    backward pair) on the time-major ``xt``; returns ``(Y, Y_h, Y_c, hint)``
    (``Y [steps, directions, batch, units]``, the states ``[directions, batch, units]``;
    ``Y`` is ``""`` without ``return_sequences``, ``Y_c`` ``None`` but for an LSTM with
    ``return_state``)."""
    first = layers[0]
    kind = type(first).__name__
    if len(layers) == 2:
        direction = "bidirectional"
    else:
        direction = "reverse" if first.go_backwards else "forward"
    parts = [_weights(layer) for layer in layers]
    key = tuple(id(layer) for layer in layers)
    w = b.const(np.stack([p[0] for p in parts]), "W", key=(*key, "W"))
    r = b.const(np.stack([p[1] for p in parts]), "R", key=(*key, "R"))
    bias = b.const(np.stack([p[2] for p in parts]), "B", key=(*key, "B"))
    names: list[str] = []
    alphas: list[float] = []
    betas: list[float] = []
    for layer in layers:  # alpha and beta listed for the functions that take them
        for fn in _functions(layer):
            name, alpha, beta = onnx_activation(layer, fn)
            names.append(name)
            if alpha is not None:
                alphas.append(alpha)
                betas.append(beta)
    hint = kind.lower()
    outputs = 3 if kind == "LSTM" else 2
    skip = [i for i, wanted in ((0, first.return_sequences), (2, first.return_state))
            if not wanted]
    attrs: dict[str, Any] = {"hidden_size": first.units, "direction": direction,
                             "activations": names,
                             "activation_alpha": alphas or None,
                             "activation_beta": betas or None}
    if kind == "GRU":
        attrs["linear_before_reset"] = int(first.reset_after)
    ys = b.op(_OPERATOR[kind], [xt, w, r, bias], hint, outputs=outputs, skip=skip, **attrs)
    return ys[0], ys[1], (ys[2] or None) if outputs == 3 else None, hint


def _pick(b: OnnxBuilder, value: str, index: int, axis: int, hint: str) -> str:
    """``value``'s slice ``index`` on ``axis`` (that axis dropped): one direction."""
    return b.op("Gather", [value, b.index(index, "direction")], hint,
                axis=axis)


def _reverse_steps(b: OnnxBuilder, seq: str) -> str:
    """The time-major ``seq`` with its steps in reverse order (any number of steps)."""
    return b.op("Slice", [seq, b.ints([-1], "starts"), b.ints([_INT64_MIN], "ends"),
                          b.ints([0], "axes"), b.ints([-1], "steps")], "reversed")


def _states(b: OnnxBuilder, yh: str, yc: str | None, d: int) -> list[str]:
    """Direction ``d``'s final states (``h``, and ``c`` when there is ``Y_c``),
    ``[batch, units]``."""
    out = [_pick(b, yh, d, 0, "state_h")]
    if yc is not None:
        out.append(_pick(b, yc, d, 0, "state_c"))
    return out


def _single(b: OnnxBuilder, layer: Any, xt: str, flip: bool = False) -> tuple[str, list[str]]:
    """``layer`` on the time-major ``xt``: its output as Keras returns it (time-major
    ``[steps, batch, units]`` with ``return_sequences``, reversed once more when ``flip``;
    else ``[batch, units]``) and its final states."""
    y, yh, yc, hint = _operator(b, [layer], xt)
    states = _states(b, yh, yc, 0)
    if not layer.return_sequences:
        return states[0], states
    seq = _pick(b, y, 0, 1, f"{hint}_sequence")
    if layer.go_backwards != flip:  # Keras's processing order, not ONNX's time order
        seq = _reverse_steps(b, seq)
    return seq, states


def _batch_major(b: OnnxBuilder, layer: Any, y: str) -> str:
    """A time-major sequence back to ``[batch, steps, ...]`` (a last output as it is)."""
    return b.transpose(y, [1, 0, 2]) if layer.return_sequences else y


@converts("SimpleRNN", "LSTM", "GRU", unknown_sizes=True)
def _recurrent(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> Any:
    out, states = _single(b, layer, b.transpose(x, [1, 0, 2]))
    out = _batch_major(b, layer, out)
    return [out, *states] if layer.return_state else out


def _mirrored(fwd: Any, bwd: Any) -> bool:
    """Whether one ``"bidirectional"`` operator runs both layers."""
    return (type(fwd) is type(bwd) and fwd.units == bwd.units and not fwd.go_backwards
            and bwd.go_backwards
            and getattr(fwd, "reset_after", None) == getattr(bwd, "reset_after", None))


def _merge(b: OnnxBuilder, mode: str | None, yf: str, yb: str) -> list[str]:
    """The two directions' outputs merged as tinynet merges them."""
    if mode == "concat":
        return [b.op("Concat", [yf, yb], "concat", axis=-1)]
    if mode == "sum":
        return [b.op("Add", [yf, yb], "sum")]
    if mode == "mul":
        return [b.op("Mul", [yf, yb], "product")]
    if mode == "ave":
        return [b.op("Div", [b.op("Add", [yf, yb], "sum"), b.const(2.0, "two")], "average")]
    return [yf, yb]


@converts("Bidirectional", unknown_sizes=True)
def _bidirectional(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> Any:
    fwd, bwd = layer.forward_layer, layer.backward_layer
    xt = b.transpose(x, [1, 0, 2])
    if _mirrored(fwd, bwd):
        y, yh, yc, hint = _operator(b, [fwd, bwd], xt)
        states = _states(b, yh, yc, 0) + _states(b, yh, yc, 1)
        both = y if layer.return_sequences else yh  # the direction axis 1, or 0
        axis = 1 if layer.return_sequences else 0
        if layer.merge_mode == "concat":  # directions next to the units, then one axis
            perm = [0, 2, 1, 3] if layer.return_sequences else [1, 0, 2]
            joined = b.op("Transpose", [both], "directions_last", perm=perm)
            target = [0, 0, -1] if layer.return_sequences else [0, -1]
            outs = [b.op("Reshape", [joined, b.ints(target, "concat_shape")], "concat")]
        else:
            outs = _merge(b, layer.merge_mode, _pick(b, both, 0, axis, "forward"),
                          _pick(b, both, 1, axis, "backward"))
    else:
        yf, f_states = _single(b, fwd, xt)
        yb, b_states = _single(b, bwd, xt, flip=layer.return_sequences)
        states = f_states + b_states
        outs = _merge(b, layer.merge_mode, yf, yb)
    outs = [_batch_major(b, fwd, o) for o in outs]
    outs += states if layer.return_state else []
    return outs if len(outs) > 1 else outs[0]


@converts("TimeDistributed", unknown_sizes=True)
def _time_distributed(b: OnnxBuilder, layer: Any, x: str, shape: tuple) -> str:
    """``[batch, steps, *inner]`` reshaped to ``[batch * steps, *inner]``, the inner layer,
    and its ``[batch * steps, *out]`` reshaped to ``[batch, steps, *out]`` (sizes read
    from the values where they are unknown)."""
    inner = tuple(shape[2:])
    if any(d is None for d in inner):
        flat_shape = b.op("Concat", [b.ints([-1], "minus_one"),
                                     b.op("Slice", [b.op("Shape", [x], "x_shape"),
                                                    b.ints([2], "starts"),
                                                    b.ints([len(shape)], "ends")],
                                          "inner_shape")], "flat_shape", axis=0)
    else:
        flat_shape = b.ints([-1, *inner], "flat_shape")
    flat = b.op("Reshape", [x, flat_shape], "flat")
    y, out = b.emit_layer(layer.layer, flat, (None, *inner), f"{b.path}/{layer.layer.name}")
    out = tuple(out[1:])
    if shape[1] is not None and all(d is not None for d in out):
        target = b.ints([-1, shape[1], *out], "steps_shape")
    else:
        lead = b.op("Slice", [b.op("Shape", [x], "x_shape"), b.ints([0], "starts"),
                              b.ints([2], "ends")], "batch_steps")
        tail = b.op("Slice", [b.op("Shape", [y], "y_shape"), b.ints([1], "starts"),
                              b.ints([len(out) + 1], "ends")], "out_shape")
        target = b.op("Concat", [lead, tail], "steps_shape", axis=0)
    return b.op("Reshape", [y, target], "time_distributed")
