"""``Bidirectional``: a recurrent layer run forward and backward over the sequence, the
two outputs merged (Keras 3)."""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.layers.recurrent.base_rnn import BaseRNN
from tinynet.layers.recurrent.wrapped import check_layer, hold, layer_entry, layer_from_entry
from tinynet.tensor import Tensor, as_array

__all__ = ["Bidirectional"]

MERGE_MODES = ("concat", "sum", "mul", "ave", None)


def _strip(name: str, prefix: str) -> str:
    return name[len(prefix):] if name.startswith(prefix) else name


def _copy(layer: Layer, name: str, **changes: Any) -> Layer:
    """A fresh layer of ``layer``'s class and config (no weights), renamed and changed."""
    config = {**layer.get_config(), "name": name, **changes}
    return type(layer).from_config(config)


class Bidirectional(Layer):
    """Runs a recurrent layer over the sequence and a twin over the reversed sequence,
    then merges the two outputs (Keras 3 semantics and weight order).

    The forward layer is a fresh copy of ``layer`` named ``forward_<name>``; the backward
    one is ``backward_layer`` or a copy with ``go_backwards=True`` named
    ``backward_<name>``. With ``return_sequences`` the backward output is flipped back to
    the input's time order before merging.

    Args:
        layer: A ``SimpleRNN``, ``LSTM`` or ``GRU`` (its config is copied; it is not used
            itself).
        merge_mode: ``"concat"`` (default), ``"sum"``, ``"mul"``, ``"ave"`` or ``None``
            (a list ``[forward, backward]``).
        backward_layer: Optional recurrent layer for the backward direction; it must have
            ``go_backwards`` opposite to ``layer``'s and the same ``return_sequences`` and
            ``return_state``.
        name, input_shape, trainable: As for any layer.

    A mask (``Embedding(mask_zero=True)``, ``Masking``, ``mask=``) goes to both layers;
    with ``return_sequences`` their masked steps output zeros (Keras), and the mask
    passes on.

    With ``return_state`` on the wrapped layer the output is a list: the merged output (or
    both outputs for ``merge_mode=None``), then the forward layer's final states, then the
    backward layer's.

    Shape:
        Input: ``[batch, timesteps, features]``.
        Output: the wrapped layer's, with ``2 * units`` channels for ``"concat"``.
        Parameters: the forward layer's weights, then the backward layer's.
    """

    def __init__(self, layer: Layer, merge_mode: str | None = "concat", *,
                 backward_layer: Layer | None = None, name: str | None = None,
                 input_shape: tuple | None = None, trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = "Bidirectional"
        if isinstance(layer, dict):  # from_config
            layer = layer_from_entry(layer, "layer", owner)
        if isinstance(backward_layer, dict):
            backward_layer = layer_from_entry(backward_layer, "backward_layer", owner)
        check_layer(layer, "layer", owner)
        if not isinstance(layer, BaseRNN):
            raise TypeError(f"{owner}: layer must be a recurrent layer (SimpleRNN, LSTM or "
                            f"GRU), got {type(layer).__name__}")
        if merge_mode not in MERGE_MODES:
            raise ValueError(f"{owner}: merge_mode must be 'concat', 'sum', 'mul', 'ave' or "
                             f"None, got {merge_mode!r}")
        self.merge_mode = merge_mode
        self.forward_layer = _copy(layer, f"forward_{_strip(layer.name, 'forward_')}")
        if backward_layer is None:
            self.backward_layer = _copy(layer, f"backward_{_strip(layer.name, 'backward_')}",
                                        go_backwards=True)
        else:
            check_layer(backward_layer, "backward_layer", owner)
            if not isinstance(backward_layer, BaseRNN):
                raise TypeError(f"{owner}: backward_layer must be a recurrent layer (SimpleRNN, "
                                f"LSTM or GRU), got {type(backward_layer).__name__}")
            self.backward_layer = backward_layer
        fwd, bwd = self.forward_layer, self.backward_layer
        if fwd.go_backwards == bwd.go_backwards:
            raise ValueError(f"{owner}: the forward and backward layers must have different "
                             f"go_backwards, got {fwd.go_backwards} for both")
        for attr in ("return_sequences", "return_state"):
            if getattr(fwd, attr) != getattr(bwd, attr):
                raise ValueError(f"{owner}: the forward and backward layers must have the same "
                                 f"{attr}, got {getattr(fwd, attr)} and {getattr(bwd, attr)}")
        self.return_sequences = fwd.return_sequences
        self.return_state = fwd.return_state
        # Keras: with return_sequences, masked steps output zeros in both directions
        fwd._zero_output_for_mask = bwd._zero_output_for_mask = self.return_sequences
        hold(self, forward_layer=fwd, backward_layer=bwd)
        if not trainable:
            fwd.trainable = bwd.trainable = False

    # -- shapes ---------------------------------------------------------------------------
    def build(self, input_shape: tuple) -> None:
        for layer in (self.forward_layer, self.backward_layer):
            if not layer.built:
                layer.build_for(tuple(input_shape))
        super().build(input_shape)

    def output_shape(self, input_shape: tuple) -> tuple | list:
        f = self.forward_layer.output_shape(input_shape)
        b = self.backward_layer.output_shape(input_shape)
        f_states, b_states = [], []
        if self.return_state:
            f, f_states = f[0], f[1:]
            b, b_states = b[0], b[1:]
        if self.merge_mode is None:
            outs = [tuple(f), tuple(b)]
        elif self.merge_mode == "concat":
            outs = [(*tuple(f)[:-1], f[-1] + b[-1])]
        else:
            outs = [tuple(f)]
        if not self.return_state and len(outs) == 1:
            return outs[0]
        return outs + [tuple(s) for s in (*f_states, *b_states)]

    supports_masking = True

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The input's mask with ``return_sequences`` (one per output for
        ``merge_mode=None``), else ``None``; ``None`` for each returned state (Keras)."""
        out = previous_mask if self.return_sequences else None
        masks = [out, out] if self.merge_mode is None else [out]
        if self.return_state:
            masks += [None] * (self.forward_layer._STATES + self.backward_layer._STATES)
        return masks[0] if len(masks) == 1 else masks

    # -- computing ------------------------------------------------------------------------
    def forward(self, x: Any, training: bool = False, mask: Any = None) -> Any:
        """The merged outputs for ``x``; ``mask`` (``[batch, timesteps]``) goes to both
        directions (the backward layer reverses it with the sequence)."""
        x = as_array(x)
        if not self.built:
            self.build((None, *x.shape[1:]))
        y = self.forward_layer.forward(x, training=training, mask=mask)
        f_state = self.forward_layer.forward_state()
        y_rev = self.backward_layer.forward(x, training=training, mask=mask)
        b_state = self.backward_layer.forward_state()
        states: list = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        y, y_rev = as_array(y), as_array(y_rev)
        if self.return_sequences:
            y_rev = y_rev[:, ::-1]
        self._cache = (f_state, b_state, y, y_rev, len(states))
        if self.merge_mode == "concat":
            outs = [np.concatenate([y, y_rev], axis=-1)]
        elif self.merge_mode == "sum":
            outs = [y + y_rev]
        elif self.merge_mode == "ave":
            outs = [(y + y_rev) / np.float32(2.0)]
        elif self.merge_mode == "mul":
            outs = [y * y_rev]
        else:
            outs = [np.ascontiguousarray(y), np.ascontiguousarray(y_rev)]
        outs = [Tensor(np.ascontiguousarray(o)) for o in outs] + [Tensor(s) for s in states]
        return outs[0] if len(outs) == 1 else outs

    def backward(self, grad_output: Any) -> Tensor:
        f_state, b_state, y, y_rev, n_states = self._require_cache()
        n_out = 2 if self.merge_mode is None else 1
        if n_out + n_states > 1:
            if not isinstance(grad_output, (list, tuple)) or len(grad_output) != n_out + n_states:
                got = (len(grad_output) if isinstance(grad_output, (list, tuple))
                       else f"one array of shape {np.shape(grad_output)}")
                raise ValueError(f"Bidirectional {self.name!r}: grad_output must be a list of "
                                 f"{n_out + n_states} arrays (outputs, then states), got {got}")
            grads = list(grad_output)
        else:
            grads = [grad_output]
        if self.merge_mode is None:
            g_f = self._check_grad(grads[0], y.shape)
            g_b = self._check_grad(grads[1], y_rev.shape)
        else:
            shape = ((*y.shape[:-1], y.shape[-1] + y_rev.shape[-1])
                     if self.merge_mode == "concat" else y.shape)
            g = self._check_grad(grads[0], shape)
            if self.merge_mode == "concat":
                g_f, g_b = g[..., :y.shape[-1]], g[..., y.shape[-1]:]
            elif self.merge_mode == "sum":
                g_f = g_b = g
            elif self.merge_mode == "ave":
                g_f = g_b = g / np.float32(2.0)
            else:  # mul
                g_f, g_b = g * y_rev, g * y
        if self.return_sequences:
            g_b = g_b[:, ::-1]
        g_f = np.ascontiguousarray(g_f, dtype=np.float32)
        g_b = np.ascontiguousarray(g_b, dtype=np.float32)
        states = grads[n_out:]
        half = n_states // 2
        if self.return_state:
            g_f = [g_f, *states[:half]]
            g_b = [g_b, *states[half:]]
        self.forward_layer.restore_forward_state(f_state)
        dx = as_array(self.forward_layer.backward(g_f))
        self.backward_layer.restore_forward_state(b_state)
        dx = dx + as_array(self.backward_layer.backward(g_b))
        return Tensor(dx)

    def get_config(self) -> dict:
        config = super().get_config()
        config["merge_mode"] = self.merge_mode
        config["layer"] = layer_entry(self.forward_layer)
        config["backward_layer"] = layer_entry(self.backward_layer)
        return config
