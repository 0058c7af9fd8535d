"""Writes the Keras reference values the recurrent layers are compared with:
``data/keras_recurrent_reference.npz`` (arrays) and ``data/keras_recurrent_reference.json``
(the cases: layer class, constructor arguments, whether an initial state is passed).

Run by hand, never in CI (Keras and JAX are no tinynet dependency), from a virtualenv
that has ``keras==3.15.1``, ``jax`` and ``jaxlib`` (CPU)::

    KERAS_BACKEND=jax /work/scratch/keras-venv/bin/python tests/layers/make_recurrent_reference.py

Per case, under ``<id>/``: the input ``x`` ``[2, 5, 3]``; the weights ``w0, w1, ...`` in
Keras's ``layer.weights`` order (kernel, recurrent_kernel, bias), drawn normal times 0.5
by ``numpy.random.default_rng(seed)`` (seed: the CRC-32 of the id); the initial states
``s0, s1`` when the case passes them; the outputs ``out0, out1, ...`` (a list when
``return_state``); cotangents ``cot0, ...`` of the outputs' shapes; and the gradients of
``sum(out_k * cot_k)`` from ``jax.vjp`` through the layer's ``stateless_call``: ``dx``,
``dw0, ...`` and ``ds0, ...``. float32 throughout.
"""

from __future__ import annotations

import json
import os
import zlib

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data")
NPZ = os.path.join(DATA, "keras_recurrent_reference.npz")
JSON = os.path.join(DATA, "keras_recurrent_reference.json")
SHAPE = (2, 5, 3)
UNITS = 4

# id: (class, constructor arguments, pass initial_state)
CASES = {
    "simple_seq": ("SimpleRNN", {"return_sequences": True}, False),
    "simple_relu_backwards": ("SimpleRNN", {"activation": "relu", "go_backwards": True}, False),
    "simple_state_nobias_init": ("SimpleRNN", {"use_bias": False, "return_state": True,
                                               "return_sequences": True}, True),
    "lstm_last": ("LSTM", {}, False),
    "lstm_seq_state": ("LSTM", {"return_sequences": True, "return_state": True}, False),
    "lstm_backwards_seq": ("LSTM", {"go_backwards": True, "return_sequences": True}, False),
    "lstm_init_state": ("LSTM", {"return_state": True}, True),
    "lstm_relu_hard_sigmoid_nobias": ("LSTM", {"activation": "relu",
                                               "recurrent_activation": "hard_sigmoid",
                                               "use_bias": False, "return_sequences": True},
                                      False),
    "lstm_linear_backwards_init": ("LSTM", {"activation": None, "go_backwards": True,
                                            "return_state": True}, True),
    "gru_after_seq": ("GRU", {"return_sequences": True}, False),
    "gru_before_state": ("GRU", {"reset_after": False, "return_state": True}, False),
    "gru_after_backwards_init": ("GRU", {"go_backwards": True, "return_sequences": True},
                                 True),
    "gru_before_nobias_backwards_seq": ("GRU", {"reset_after": False, "use_bias": False,
                                                "return_sequences": True,
                                                "go_backwards": True}, False),
    "gru_after_nobias_relu": ("GRU", {"use_bias": False, "activation": "relu"}, False),
    "gru_before_init_hard_sigmoid": ("GRU", {"reset_after": False,
                                             "recurrent_activation": "hard_sigmoid",
                                             "return_sequences": True, "return_state": True},
                                     True),
    # wrappers: kwargs {"layer": [class, kwargs], "backward_layer": [class, kwargs] or
    # absent, and the wrapper's own arguments}
    "bi_lstm_concat_seq": ("Bidirectional", {"layer": ["LSTM", {"return_sequences": True}]},
                           False),
    "bi_gru_sum": ("Bidirectional", {"layer": ["GRU", {}], "merge_mode": "sum"}, False),
    "bi_simple_mul_seq": ("Bidirectional", {"layer": ["SimpleRNN", {"return_sequences": True}],
                                            "merge_mode": "mul"}, False),
    "bi_lstm_ave_state": ("Bidirectional", {"layer": ["LSTM", {"return_state": True}],
                                            "merge_mode": "ave"}, False),
    "bi_gru_none_seq_state": ("Bidirectional", {"layer": ["GRU", {"return_sequences": True,
                                                                  "return_state": True,
                                                                  "reset_after": False}],
                                                "merge_mode": None}, False),
    "bi_lstm_gru_backward_layer": ("Bidirectional", {
        "layer": ["LSTM", {"return_sequences": True}],
        "backward_layer": ["GRU", {"return_sequences": True, "go_backwards": True}]}, False),
    "td_dense": ("TimeDistributed", {"layer": ["Dense", {"activation": "tanh"}]}, False),
}


def make_layer(module, cls: str, kwargs: dict):
    """The case's layer from a layers module (Keras's or tinynet's)."""
    if cls in ("Bidirectional", "TimeDistributed"):
        kw = dict(kwargs)
        inner_cls, inner_kw = kw.pop("layer")
        inner = getattr(module, inner_cls)(UNITS, **inner_kw)
        if "backward_layer" in kw:
            back_cls, back_kw = kw.pop("backward_layer")
            kw["backward_layer"] = getattr(module, back_cls)(UNITS, **back_kw)
        return getattr(module, cls)(inner, **kw)
    return getattr(module, cls)(UNITS, **kwargs)


def _case(cid: str, cls: str, kwargs: dict, with_state: bool) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    layer = make_layer(keras.layers, cls, kwargs)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    layer.build(SHAPE)
    weights = [(rng.standard_normal(tuple(w.shape)) * 0.5).astype(np.float32)
               for w in layer.weights]
    n_states = 2 if cls == "LSTM" else 1
    states = ([rng.standard_normal((SHAPE[0], UNITS)).astype(np.float32)
               for _ in range(n_states)] if with_state else [])

    def run(x, ws, ss):
        kw = {"initial_state": list(ss)} if ss else {}
        fixed = [v.value for v in layer.non_trainable_variables]  # the dropout seed state
        out, _ = layer.stateless_call(list(ws), fixed, x, **kw)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    outs, vjp = jax.vjp(run, x, weights, states)
    cots = [rng.standard_normal(o.shape).astype(np.float32) for o in outs]
    dx, dws, dss = vjp([jax.numpy.asarray(c) for c in cots])
    arrays = {"x": x}
    arrays.update({f"w{k}": w for k, w in enumerate(weights)})
    arrays.update({f"s{k}": s for k, s in enumerate(states)})
    arrays.update({f"out{k}": np.asarray(o) for k, o in enumerate(outs)})
    arrays.update({f"cot{k}": c for k, c in enumerate(cots)})
    arrays["dx"] = np.asarray(dx)
    arrays.update({f"dw{k}": np.asarray(d) for k, d in enumerate(dws)})
    arrays.update({f"ds{k}": np.asarray(d) for k, d in enumerate(dss)})
    return {f"{cid}/{k}": np.asarray(v, dtype=np.float32) for k, v in arrays.items()}


def main() -> None:
    os.makedirs(DATA, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    for cid, (cls, kwargs, with_state) in CASES.items():
        arrays.update(_case(cid, cls, kwargs, with_state))
    np.savez_compressed(NPZ, **arrays)
    doc = {"keras": keras.__version__, "jax": jax.__version__, "units": UNITS,
           "cases": [{"id": cid, "class": cls, "kwargs": kwargs, "initial_state": st}
                     for cid, (cls, kwargs, st) in CASES.items()]}
    with open(JSON, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(f"wrote {NPZ} ({len(arrays)} arrays) and {JSON}")


if __name__ == "__main__":
    main()
