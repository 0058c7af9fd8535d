"""Writes the Keras reference values of the recurrent layers under a sequence mask:
``data/keras_recurrent_mask_reference.npz`` and ``data/keras_recurrent_mask_reference.json``
(the same layout as ``make_recurrent_reference.py``'s, plus the mask ``m`` of each case).

Run by hand, never in CI (Keras and JAX are no tinynet dependency), from a virtualenv
with ``keras==3.15.1``, ``jax`` and ``jaxlib`` (CPU)::

    KERAS_BACKEND=jax <keras-venv>/bin/python tests/layers/make_recurrent_mask_reference.py

Per case, under ``<id>/``: ``x`` ``[3, 6, 3]``, the mask ``m`` ``[3, 6]`` (1 a valid step,
0 padding; one of :data:`MASKS`), the weights ``w0, ...`` (normal times 0.5), the initial
states ``s0, s1`` when the case passes them, the outputs ``out0, ...``, cotangents
``cot0, ...`` and the gradients of ``sum(out_k * cot_k)`` (``jax.vjp`` through
``stateless_call(..., mask=m)``): ``dx``, ``dw0, ...``, ``ds0, ...``. float32.
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
NPZ = os.path.join(DATA, "keras_recurrent_mask_reference.npz")
JSON = os.path.join(DATA, "keras_recurrent_mask_reference.json")
SHAPE = (3, 6, 3)
UNITS = 4

#: Mask patterns ``[3, 6]``: padding at the end, at the start, and zeros inside (the last
#: row of "interior" masked throughout).
MASKS = {
    "right": [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]],
    "left": [[0, 0, 1, 1, 1, 1], [0, 1, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1]],
    "interior": [[1, 0, 1, 0, 0, 1], [1, 1, 0, 1, 1, 1], [0, 0, 0, 0, 0, 0]],
}

# id: (class, constructor arguments, pass initial_state, mask pattern)
CASES = {
    "simple_seq_right": ("SimpleRNN", {"return_sequences": True}, False, "right"),
    "simple_last_left_init": ("SimpleRNN", {"return_state": True}, True, "left"),
    "simple_backwards_seq_interior": ("SimpleRNN", {"go_backwards": True,
                                                    "return_sequences": True}, False,
                                      "interior"),
    "lstm_last_right": ("LSTM", {}, False, "right"),
    "lstm_seq_state_left": ("LSTM", {"return_sequences": True, "return_state": True}, False,
                            "left"),
    "lstm_seq_state_left_init": ("LSTM", {"return_sequences": True, "return_state": True},
                                 True, "left"),
    "lstm_backwards_seq_right": ("LSTM", {"go_backwards": True, "return_sequences": True},
                                 False, "right"),
    "lstm_backwards_state_interior_init": ("LSTM", {"go_backwards": True,
                                                    "return_state": True}, True, "interior"),
    "lstm_unroll_seq_left_init": ("LSTM", {"unroll": True, "return_sequences": True}, True,
                                  "left"),
    "gru_after_seq_interior": ("GRU", {"return_sequences": True}, False, "interior"),
    "gru_after_state_right_init": ("GRU", {"return_state": True}, True, "right"),
    "gru_before_seq_left": ("GRU", {"reset_after": False, "return_sequences": True}, False,
                            "left"),
    "gru_before_backwards_state_interior": ("GRU", {"reset_after": False, "go_backwards": True,
                                                    "return_state": True,
                                                    "return_sequences": True}, True,
                                            "interior"),
    "bi_lstm_concat_seq_right": ("Bidirectional", {"layer": ["LSTM", {"return_sequences": True}]},
                                 False, "right"),
    "bi_lstm_concat_last_left": ("Bidirectional", {"layer": ["LSTM", {}]}, False, "left"),
    "bi_gru_sum_seq_interior": ("Bidirectional", {"layer": ["GRU", {"return_sequences": True}],
                                                  "merge_mode": "sum"}, False, "interior"),
    "bi_simple_mul_seq_right": ("Bidirectional", {"layer": ["SimpleRNN",
                                                            {"return_sequences": True}],
                                                  "merge_mode": "mul"}, False, "right"),
    "bi_lstm_ave_state_interior": ("Bidirectional", {"layer": ["LSTM", {"return_state": True}],
                                                     "merge_mode": "ave"}, False, "interior"),
    "bi_gru_none_seq_state_left": ("Bidirectional", {
        "layer": ["GRU", {"return_sequences": True, "return_state": True,
                          "reset_after": False}], "merge_mode": None}, False, "left"),
    "bi_lstm_gru_backward_layer_right": ("Bidirectional", {
        "layer": ["LSTM", {"return_sequences": True}],
        "backward_layer": ["GRU", {"return_sequences": True, "go_backwards": True}]}, False,
        "right"),
}


def make_layer(module, cls: str, kwargs: dict):
    """The case's layer from a layers module (Keras's or tinynet's)."""
    if cls == "Bidirectional":
        kw = dict(kwargs)
        inner_cls, inner_kw = kw.pop("layer")
        inner = getattr(module, inner_cls)(UNITS, **inner_kw)
        if "backward_layer" in kw:
            back_cls, back_kw = kw.pop("backward_layer")
            kw["backward_layer"] = getattr(module, back_cls)(UNITS, **back_kw)
        return getattr(module, cls)(inner, **kw)
    return getattr(module, cls)(UNITS, **kwargs)


def _case(cid: str, cls: str, kwargs: dict, with_state: bool,
          pattern: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(zlib.crc32(cid.encode()))
    layer = make_layer(keras.layers, cls, kwargs)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    mask = np.array(MASKS[pattern], dtype=bool)
    layer.build(SHAPE)
    weights = [(rng.standard_normal(tuple(w.shape)) * 0.5).astype(np.float32)
               for w in layer.weights]
    n_states = 2 if cls == "LSTM" else 1
    states = ([rng.standard_normal((SHAPE[0], UNITS)).astype(np.float32)
               for _ in range(n_states)] if with_state else [])

    def run(x, ws, ss):
        kw = {"initial_state": list(ss)} if ss else {}
        fixed = [v.value for v in layer.non_trainable_variables]
        out, _ = layer.stateless_call(list(ws), fixed, x, mask=jax.numpy.asarray(mask), **kw)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    outs, vjp = jax.vjp(run, x, weights, states)
    cots = [rng.standard_normal(o.shape).astype(np.float32) for o in outs]
    dx, dws, dss = vjp([jax.numpy.asarray(c) for c in cots])
    arrays = {"x": x, "m": mask.astype(np.float32)}
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
    for cid, (cls, kwargs, with_state, pattern) in CASES.items():
        arrays.update(_case(cid, cls, kwargs, with_state, pattern))
    np.savez_compressed(NPZ, **arrays)
    doc = {"keras": keras.__version__, "jax": jax.__version__, "units": UNITS,
           "cases": [{"id": cid, "class": cls, "kwargs": kwargs, "initial_state": st,
                      "mask": pattern}
                     for cid, (cls, kwargs, st, pattern) in CASES.items()]}
    with open(JSON, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    print(f"wrote {NPZ} ({len(arrays)} arrays) and {JSON}")


if __name__ == "__main__":
    main()
