"""What SimpleRNN, LSTM and GRU share: arguments, the input projection, dropout masks,
``go_backwards``, initial states, the outputs and the weight gradients (Keras 3 semantics).

A recurrent layer's pass is one operation (:mod:`tinynet.ops.arrays.recurrent_layer`) in
three steps. The input side of every gate for the whole
sequence is one GEMM, ``xp = x @ kernel + bias`` (``[T * B, G]``, time-major, ``G =
gates * units``, tinynet's fixed-order GEMM; LSTM's step loop takes it step by step,
the same chains). The recurrence runs in a Numba kernel, one
batch row after another or the rows on threads (:mod:`tinynet.ops.arrays.recurrent`),
storing what backward needs. Backward runs back through time in the same kernels' twins,
which store the gradient of every step's gate pre-activations; the weight gradients are then GEMMs over
all ``T * B`` rows (``x.T @ dz``, ``h_prev.T @ dz``) and a fixed-order column sum. The
outputs and the input gradient come back batch-major (LSTM's loops write them so).

Dropout follows Keras 3: masks drawn once per call and kept for every step; ``dropout``
masks the input, ``recurrent_dropout`` the previous state in the recurrent products
(the state itself is carried unmasked). With ``recurrent_dropout`` LSTM and GRU draw one
mask per gate for each (Keras's ``implementation=1``), otherwise one input mask shared by
the gates.

A sequence mask (``[B, T]``, from ``Embedding(mask_zero=True)``, ``Masking`` or
``mask=``) enters each kernel's step loop: a masked step keeps the state (``h``, and
``c`` for LSTM) and its output is the kept ``h`` (Keras 3's scan), or zeros when the layer
zeroes masked outputs (``Bidirectional`` sets that for ``return_sequences``, as Keras).
With ``unroll=True`` Keras's unrolled loop outputs zeros before a row's first valid step;
that is kept too. The mask passes on with ``return_sequences`` (``compute_mask``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet import regularizers
from tinynet.layers.layer import Layer, check_bool, check_positive_int
from tinynet.layers.node import is_symbolic
from tinynet.layers.seeded import OwnGenerator
from tinynet.layers.validation import check_initializer, check_seed
from tinynet.ops.arrays import recurrent as R
from tinynet.ops.arrays.recurrent_layer import Cell, rnn_backward, rnn_forward
from tinynet.tensor import Tensor, as_array

__all__ = ["BaseRNN", "check_activation", "check_rate", "sequence_mask"]


def check_activation(value: Any, arg: str, owner: str) -> tuple[str, int]:
    """``(name, kernel kind)`` of a recurrent layer's activation (``None`` is linear)."""
    names = ", ".join(repr(n) for n in R.ACTIVATIONS)
    what = f"{owner}: {arg} must be one of {names} or None, got {value!r}"
    if value is None:
        return "linear", R.ACTIVATIONS["linear"]
    if not isinstance(value, str):
        raise TypeError(what)
    if value not in R.ACTIVATIONS:
        raise ValueError(what)
    return value, R.ACTIVATIONS[value]


def check_rate(value: Any, arg: str, owner: str) -> float:
    """A dropout rate: a float in ``[0, 1)``."""
    what = f"{owner}: {arg} must be a float in [0, 1), got {value!r}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)):
        raise TypeError(what)
    if not 0.0 <= value < 1.0:  # also rejects NaN
        raise ValueError(what)
    return float(value)


def sequence_mask(mask: Any, batch: int, steps: int, owner: str) -> np.ndarray:
    """``mask`` as a C-contiguous bool array ``[batch, steps]`` (``True``: a valid step).

    Booleans, or integers/floats holding only 0 and 1, are taken.

    Raises:
        ValueError: ``mask`` is not of shape ``(batch, steps)``, or not boolean/0-1 values.
    """
    m = mask.data if isinstance(mask, Tensor) else mask
    try:
        m = np.asarray(m)
    except (TypeError, ValueError):
        m = np.asarray(m, dtype=object)
    if m.dtype != np.bool_:
        ok = m.dtype.kind in "iuf" and bool(np.all((m == 0) | (m == 1)))
        if not ok:
            raise ValueError(f"{owner}: mask must hold booleans (or 0/1 numbers), got dtype "
                             f"{m.dtype}" + ("" if m.dtype.kind not in "iuf" else
                                             " with values other than 0 and 1"))
    if m.shape != (batch, steps):
        raise ValueError(f"{owner}: mask must have shape ({batch}, {steps}) (batch, timesteps "
                         f"of the input), got shape {m.shape}")
    return np.ascontiguousarray(m, dtype=np.bool_)


def _refuse(value: Any, arg: str, owner: str, why: str) -> bool:
    flag = check_bool(value, arg, owner)
    if flag:
        raise ValueError(f"{owner}: {arg}=True is not supported: {why}; got {arg}={value!r}")
    return flag


class BaseRNN(OwnGenerator, Layer):
    """The shared recurrent layer (subclassed by SimpleRNN, LSTM and GRU; not public).

    Subclasses set ``_KIND`` (the :class:`~tinynet.ops.arrays.recurrent_layer.Cell`'s
    kind), ``_GATES`` (1, 4 or 3), ``_STATES`` (1 or 2) and implement
    ``_bias_shape``/``_bias_init``. Each pass is one operation:
    :func:`~tinynet.ops.arrays.recurrent_layer.rnn_forward` and
    :func:`~tinynet.ops.arrays.recurrent_layer.rnn_backward`.
    """

    _KIND = "simple"
    _GATES = 1
    _STATES = 1
    supports_masking = True
    #: Whether masked steps output zeros instead of the kept state (Keras's
    #: ``zero_output_for_mask``; ``Bidirectional`` sets it to ``return_sequences``).
    _zero_output_for_mask = False

    def __init__(self, units: int, activation: str | None = "tanh",
                 recurrent_activation: str | None = "sigmoid", use_bias: bool = True,
                 kernel_initializer: str = "glorot_uniform",
                 recurrent_initializer: str = "orthogonal", bias_initializer: str = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, dropout: float = 0.0,
                 recurrent_dropout: float = 0.0, seed: int | None = None,
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 name: str | None = None, input_shape: tuple | None = None,
                 trainable: bool = True) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        self.units = check_positive_int(units, "units", owner)
        self.activation, self._act = check_activation(activation, "activation", owner)
        self.recurrent_activation, self._ract = check_activation(
            recurrent_activation, "recurrent_activation", owner)
        self.use_bias = check_bool(use_bias, "use_bias", owner)
        self.kernel_initializer = check_initializer(kernel_initializer, owner)
        self.recurrent_initializer = check_initializer(recurrent_initializer, owner,
                                                       "recurrent_initializer")
        self.bias_initializer = check_initializer(bias_initializer, owner, "bias_initializer")
        check = regularizers.check_layer_regularizer
        self.kernel_regularizer = check(kernel_regularizer, "kernel_regularizer", owner)
        self.recurrent_regularizer = check(recurrent_regularizer, "recurrent_regularizer", owner)
        self.bias_regularizer = check(bias_regularizer, "bias_regularizer", owner)
        self.dropout = check_rate(dropout, "dropout", owner)
        self.recurrent_dropout = check_rate(recurrent_dropout, "recurrent_dropout", owner)
        self.seed = check_seed(seed, owner)
        self._rng = None
        self.return_sequences = check_bool(return_sequences, "return_sequences", owner)
        self.return_state = check_bool(return_state, "return_state", owner)
        self.go_backwards = check_bool(go_backwards, "go_backwards", owner)
        self.stateful = _refuse(stateful, "stateful", owner,
                                "every call starts from initial_state or zeros")
        # unrolling is Keras's speed trick for short sequences; the compiled step loop
        # computes the same thing, so unroll=True is accepted and changes nothing
        self.unroll = check_bool(unroll, "unroll", owner)
        self.kernel = None
        self.recurrent_kernel = None
        self.bias = None

    def _check_use_cudnn(self, use_cudnn: Any) -> Any:
        """Keras's ``use_cudnn`` ("auto", True or False): accepted and unused on the CPU."""
        if use_cudnn not in ("auto", True, False):
            raise ValueError(f"{type(self).__name__}: use_cudnn must be 'auto', True or False, "
                             f"got {use_cudnn!r}")
        return use_cudnn

    # -- shapes ---------------------------------------------------------------------------

    def _owner(self) -> str:
        return f"{type(self).__name__} {self.name!r}"

    def _in_features(self, input_shape: tuple) -> int:
        shape = tuple(input_shape)
        if len(shape) != 3:
            raise ValueError(f"{self._owner()}: input must have rank 3 [batch, timesteps, "
                             f"features], got shape {shape}")
        if shape[-1] is None or shape[-1] == 0:
            raise ValueError(f"{self._owner()}: the features axis must be known and "
                             f"non-empty, got shape {shape}")
        return int(shape[-1])

    def output_shape(self, input_shape: tuple) -> tuple | list:
        self._in_features(input_shape)
        batch, steps = tuple(input_shape)[:2]
        out = (batch, steps, self.units) if self.return_sequences else (batch, self.units)
        if not self.return_state:
            return out
        return [out] + [(batch, self.units)] * self._STATES

    # -- weights --------------------------------------------------------------------------
    def _bias_shape(self) -> tuple:
        return (self._GATES * self.units,)

    def _bias_init(self) -> Any:
        return self.bias_initializer

    def build(self, input_shape: tuple) -> None:
        fan_in = self._in_features(input_shape)
        width = self._GATES * self.units
        self.kernel = self.add_weight("kernel", (fan_in, width), self.kernel_initializer,
                                      regularizer=self.kernel_regularizer)
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", (self.units, width), self.recurrent_initializer,
            regularizer=self.recurrent_regularizer)
        if self.use_bias:
            self.bias = self.add_weight("bias", self._bias_shape(), self._bias_init(),
                                        regularizer=self.bias_regularizer)
        super().build(input_shape)

    # -- calling ----------------------------------------------------------------------------
    def __call__(self, x: Any, *args: Any, initial_state: Any = None, **kwargs: Any) -> Any:
        """As any layer, plus Keras's ``initial_state=`` (arrays ``[batch, units]``: ``h``,
        and ``c`` for LSTM) and ``mask=`` (``[batch, timesteps]``, ``False`` at padded
        steps). Called with ``initial_state``, :meth:`backward` returns
        ``[dL/dx, dL/dh0, ...]``."""
        if initial_state is None:
            return super().__call__(x, *args, **kwargs)
        from tinynet.ops.autodiff import current

        states = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
        if is_symbolic(x) or any(is_symbolic(s) for s in states) or current() is not None:
            raise ValueError(f"{self._owner()}: initial_state is taken on arrays only (not "
                             f"on symbolic tensors of a functional model, nor inside a call() "
                             f"layer) for now")
        training = kwargs.pop("training", None)
        mask = kwargs.pop("mask", None)
        if args and len(args) == 1 and (args[0] is None or isinstance(args[0], (bool, np.bool_))):
            training, args = args[0], ()
        if args or kwargs:
            raise TypeError(f"{self._owner()}: called with unexpected arguments "
                            f"{list(args) + list(kwargs)}; use layer(x, initial_state=[...], "
                            f"mask=..., training=...)")
        if not self.built:
            self._build_on(x)
        return self.forward(x, training=bool(training), initial_state=states, mask=mask)

    def _initial(self, initial_state: Any, batch: int) -> list[np.ndarray]:
        if initial_state is None:
            return [np.zeros((batch, self.units), dtype=np.float32)] * self._STATES
        states = initial_state if isinstance(initial_state, (list, tuple)) else [initial_state]
        if len(states) != self._STATES:
            raise ValueError(f"{self._owner()}: initial_state must be a list of "
                             f"{self._STATES} array(s) of shape ({batch}, {self.units}), got "
                             f"{len(states)}")
        out = []
        for s in states:
            a = np.ascontiguousarray(as_array(s), dtype=np.float32)
            if a.shape != (batch, self.units):
                raise ValueError(f"{self._owner()}: initial_state must be array(s) of shape "
                                 f"({batch}, {self.units}) (batch, units), got {a.shape}")
            out.append(a)
        return out

    def _masks(self, batch: int, features: int,
               training: bool) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Keras 3's dropout masks for one call: input ``[n, B, features]`` (``n`` 1 or the
        gate count) and recurrent ``[B, gates, units]``, or ``None``."""
        per_gate = self._GATES if (self.recurrent_dropout > 0 and self._GATES > 1) else 1
        xmask = rmask = None
        if training and self.dropout > 0:
            keep = self.rng.random((per_gate, batch, features)) >= self.dropout
            xmask = (keep / (1.0 - self.dropout)).astype(np.float32)
        if training and self.recurrent_dropout > 0:
            keep = self.rng.random((batch, self._GATES, self.units)) >= self.recurrent_dropout
            rmask = (keep / (1.0 - self.recurrent_dropout)).astype(np.float32)
        return xmask, rmask

    def _input_bias(self) -> np.ndarray | None:
        return self.bias.value if self.use_bias else None

    def _recurrent_bias(self) -> np.ndarray | None:
        return None

    def _cell(self) -> Cell:
        return Cell(self._KIND, self._GATES, self.units, self._act,
                    getattr(self, "_ract", 0))

    def compute_mask(self, inputs: Any, previous_mask: Any = None) -> Any:
        """The input's mask with ``return_sequences``, else ``None`` (and ``None`` for
        each returned state), as Keras."""
        out = previous_mask if self.return_sequences else None
        if self.return_state:
            return [out] + [None] * self._STATES
        return out

    def _output_mask(self, smask: np.ndarray | None) -> np.ndarray | None:
        """``[B, T]`` float 0/1 multiplying the outputs (processing order), or ``None``:
        zeros at masked steps (``_zero_output_for_mask``), or, unrolled, before a row's
        first valid step (Keras's unrolled loop starts from a zero output)."""
        if smask is None:
            return None
        if self._zero_output_for_mask:
            keep = smask
        elif self.unroll:
            keep = np.logical_or.accumulate(smask, axis=1)
        else:
            return None
        return None if keep.all() else keep.astype(np.float32)

    def forward(self, x: Any, training: bool = False, initial_state: Any = None,
                mask: Any = None) -> Any:
        """The outputs for ``x``; ``mask`` (``[batch, timesteps]``, ``False`` at padded
        steps) keeps the state over masked steps."""
        x = as_array(x)
        if not self.built:
            self.build((None, *x.shape[1:]))
        fan_in = self.kernel.value.shape[0]
        if x.ndim != 3 or x.shape[-1] != fan_in:
            raise ValueError(f"{self._owner()}: expected input of shape (batch, timesteps, "
                             f"{fan_in}), got shape {x.shape}")
        batch, steps = x.shape[:2]
        if steps == 0:
            raise ValueError(f"{self._owner()}: the input must have at least one timestep, "
                             f"got shape {x.shape}")
        smask = None
        if mask is not None:
            smask = sequence_mask(mask, batch, steps, self._owner())
            if smask.all():
                smask = None  # every step valid: the unmasked loop, same bits
        states0 = self._initial(initial_state, batch)
        # the kernels run time-major ([T, B, ...]): each step's rows are one contiguous block
        # (the operation makes the one time-major copy of this view)
        xt = x.transpose(1, 0, 2)
        if self.go_backwards:
            xt = xt[::-1]
            smask = None if smask is None else np.ascontiguousarray(smask[:, ::-1])
        xmask, rmask = self._masks(batch, fan_in, training)
        xt, hs, finals, saved, seq = rnn_forward(
            self._cell(), xt, self.kernel.value, self.recurrent_kernel.value,
            self._input_bias(), self._recurrent_bias(), xmask, states0, rmask, smask,
            sequences=self.return_sequences)
        keep = self._output_mask(smask)
        self._cache = (xt, xmask, rmask, hs, saved, initial_state is not None, smask, keep)
        if self.return_sequences:
            out = seq * keep[:, :, None] if keep is not None else seq
        else:
            out = hs[-1] * keep[:, -1:] if keep is not None else hs[-1].copy()
        if not self.return_state:
            return Tensor(out)
        return [Tensor(out)] + [Tensor(s.copy()) for s in finals]

    def backward(self, grad_output: Any) -> Any:
        xt, xmask, rmask, hs, saved, with_state, smask, keep = self._require_cache()
        t, b, f = xt.shape
        u = self.units
        if self.return_state:
            want = f"{self._owner()}: grad_output must be a list of {1 + self._STATES} arrays " \
                   f"(output and states)"
            if not isinstance(grad_output, (list, tuple)):
                raise ValueError(f"{want}, got one array of shape {np.shape(grad_output)}")
            if len(grad_output) != 1 + self._STATES:
                raise ValueError(f"{want}, got {len(grad_output)}")
        grads = list(grad_output) if self.return_state else [grad_output]
        shape = (b, t, u) if self.return_sequences else (b, u)
        g_out = self._check_grad(grads[0], shape)
        if keep is not None:  # outputs zeroed at masked steps: no gradient there
            g_out = g_out * (keep[:, :, None] if self.return_sequences else keep[:, -1:])
        dout = np.ascontiguousarray(g_out, dtype=np.float32) if self.return_sequences else None
        finals = [np.zeros((b, u), dtype=np.float32) for _ in range(self._STATES)]
        if not self.return_sequences:
            finals[0] += g_out
        for i, g in enumerate(grads[1:]):
            finals[i] += self._check_grad(g, (b, u))
        want_bias = self.use_bias and self.bias.trainable
        dx, dkernel, drecurrent, dbias, d0 = rnn_backward(
            self._cell(), xt, self.kernel.value, self.recurrent_kernel.value, xmask, rmask, hs,
            saved, smask, dout, finals, reverse=self.go_backwards,
            want_kernel=self.kernel.trainable, want_recurrent=self.recurrent_kernel.trainable,
            want_bias=want_bias)
        self.kernel.grad = dkernel
        self.recurrent_kernel.grad = drecurrent
        if self.use_bias:
            self.bias.grad = dbias
        if with_state:
            return [Tensor(dx)] + [Tensor(d) for d in d0]
        return Tensor(dx)

    # -- config -----------------------------------------------------------------------------
    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "units": self.units,
            "activation": self.activation,
            "use_bias": self.use_bias,
            "kernel_initializer": self.kernel_initializer,
            "recurrent_initializer": self.recurrent_initializer,
            "bias_initializer": self.bias_initializer,
            "dropout": self.dropout,
            "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
            "return_sequences": self.return_sequences,
            "return_state": self.return_state,
            "go_backwards": self.go_backwards,
            "stateful": self.stateful,
            "unroll": self.unroll,
        })
        if self._GATES > 1:
            config["recurrent_activation"] = self.recurrent_activation
        owner = type(self).__name__
        for arg in ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer"):
            config[arg] = regularizers.config_entry(getattr(self, arg), arg, owner)
        return config
