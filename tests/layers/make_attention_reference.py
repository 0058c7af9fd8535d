"""Writes the Keras reference values the attention layers are compared with:
``data/keras_attention_reference.npz`` and ``data/keras_attention_reference.json`` (the
cases: layer class, constructor arguments, call arguments, input shapes, masks).

Run by hand, never in CI (Keras and JAX are no tinynet dependency)::

    KERAS_BACKEND=jax /work/scratch/keras-venv/bin/python tests/layers/make_attention_reference.py

Per case, under ``<id>/``: the inputs ``x0, x1(, x2)`` (query, value, key; normal, from
``numpy.random.default_rng(seed)``, seed the CRC-32 of the id), the weights ``w0, ...``
in Keras's ``layer.weights`` order (normal times 0.5), the boolean masks ``qmask``,
``vmask`` and ``attention_mask`` when the case has them, the outputs ``out0(, out1)``
(the scores with ``return_attention_scores``), cotangents ``cot0, ...`` and the gradients
of ``sum(out_k * cot_k)`` from ``jax.vjp``: ``dx0, ...`` and ``dw0, ...``.

``MultiHeadAttention`` takes the query's and the value's masks as Keras masks (a
``Masking`` layer before it in a functional model, with the masked steps' inputs zero),
the way ``Embedding(mask_zero=True)`` hands them on; ``Attention`` and
``AdditiveAttention`` take ``mask=[query_mask, value_mask]``.
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
NPZ = os.path.join(DATA, "keras_attention_reference.npz")
JSON = os.path.join(DATA, "keras_attention_reference.json")

# id: class, constructor arguments, call arguments, input shapes [query, value(, key)],
# masks: "padding" (query and value masks), "attention" (an attention_mask)
CASES = {
    "mha_basic": ("MultiHeadAttention", {"num_heads": 2, "key_dim": 3}, {},
                  [(2, 4, 6), (2, 5, 6)], []),
    "mha_key_value_dims": ("MultiHeadAttention",
                           {"num_heads": 3, "key_dim": 4, "value_dim": 2, "output_shape": 5},
                           {"return_attention_scores": True},  # (Keras-on-JAX's fused path
                           [(2, 4, 6), (2, 5, 7), (2, 5, 3)], []),  # fails on key_dim != value_dim)
    "mha_no_bias_causal": ("MultiHeadAttention",
                           {"num_heads": 2, "key_dim": 3, "use_bias": False},
                           {"use_causal_mask": True}, [(2, 5, 6), (2, 5, 6)], []),
    "mha_attention_mask_scores": ("MultiHeadAttention", {"num_heads": 2, "key_dim": 3},
                                  {"return_attention_scores": True},
                                  [(2, 4, 6), (2, 5, 6)], ["attention"]),
    "mha_causal_scores": ("MultiHeadAttention", {"num_heads": 4, "key_dim": 2, "value_dim": 3},
                          {"use_causal_mask": True, "return_attention_scores": True},
                          [(2, 5, 8), (2, 5, 8)], []),
    "mha_padding": ("MultiHeadAttention", {"num_heads": 2, "key_dim": 3}, {},
                    [(2, 5, 6), (2, 6, 6)], ["padding"]),
    "mha_padding_causal_scores": ("MultiHeadAttention", {"num_heads": 2, "key_dim": 3},
                                  {"use_causal_mask": True, "return_attention_scores": True},
                                  [(2, 5, 6), (2, 5, 6)], ["padding", "attention"]),
    "att_dot": ("Attention", {}, {}, [(2, 4, 6), (2, 5, 3), (2, 5, 6)], []),
    "att_dot_scale_scores": ("Attention", {"use_scale": True},
                             {"return_attention_scores": True}, [(2, 4, 6), (2, 5, 6)], []),
    "att_concat": ("Attention", {"score_mode": "concat"}, {}, [(2, 4, 6), (2, 5, 6)], []),
    "att_concat_scale_masks": ("Attention", {"score_mode": "concat", "use_scale": True},
                               {"return_attention_scores": True},
                               [(2, 4, 6), (2, 5, 2), (2, 5, 6)], ["padding"]),
    "att_dot_causal_masks": ("Attention", {"use_scale": True}, {"use_causal_mask": True},
                             [(2, 5, 6), (2, 5, 6)], ["padding"]),
    "additive": ("AdditiveAttention", {}, {}, [(2, 4, 6), (2, 5, 6)], []),
    "additive_no_scale_key": ("AdditiveAttention", {"use_scale": False},
                              {"return_attention_scores": True},
                              [(2, 4, 6), (2, 5, 3), (2, 5, 6)], []),
    "additive_masks_causal": ("AdditiveAttention", {}, {"use_causal_mask": True},
                              [(2, 5, 4), (2, 5, 4)], ["padding"]),
}


def masks_for(case: str, shapes: list, kinds: list, rng: np.random.Generator) -> dict:
    """The case's boolean masks: per sample, the last steps padded (sample 0 keeps 3
    query steps and 4 value steps); a random attention mask with every row's first key
    kept."""
    out = {}
    if "padding" in kinds:
        b, t, _ = shapes[0]
        s = shapes[1][1]
        qm = np.ones((b, t), bool)
        qm[0, 3:] = False
        vm = np.ones((b, s), bool)
        vm[0, 4:] = False
        vm[1, -1] = False
        out["qmask"], out["vmask"] = qm, vm
    if "attention" in kinds:
        b, t, _ = shapes[0]
        s = shapes[1][1]
        am = rng.random((b, t, s)) < 0.6
        am[:, :, 0] = True
        out["attention_mask"] = am
    return out


def run_case(case: str) -> dict:
    cls_name, args, call_args, shapes, kinds = CASES[case]
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    masks = masks_for(case, shapes, kinds, rng)
    cls = getattr(keras.layers, cls_name)
    layer = cls(**args)
    mha = cls_name == "MultiHeadAttention"
    if mha and "qmask" in masks:  # Keras masks through Masking layers (masked steps zero)
        xs[0][~masks["qmask"]] = 0.0
        xs[1][~masks["vmask"]] = 0.0
        ins = [keras.Input(s[1:]) for s in shapes]
        q = keras.layers.Masking(0.0)(ins[0])
        v = keras.layers.Masking(0.0)(ins[1])
        extra = {}
        if "attention_mask" in masks:
            extra["attention_mask"] = masks["attention_mask"]
        outs = layer(q, v, **call_args, **extra)
        runner = keras.Model(ins, list(outs) if isinstance(outs, tuple) else outs)
    else:
        runner = layer
        if mha:
            layer.build(*[tuple(s) for s in shapes[:2]], *(
                [tuple(shapes[2])] if len(shapes) == 3 else []))
        else:
            layer.build([tuple(s) for s in shapes])
    weights = [(0.5 * rng.standard_normal(tuple(w.shape))).astype(np.float32)
               for w in layer.weights]
    for w, value in zip(layer.weights, weights):
        w.assign(value)
    train = [v.value for v in runner.trainable_variables]
    fixed = [v.value for v in runner.non_trainable_variables]

    def forward(ws, *inputs):
        if runner is not layer:
            out, _ = runner.stateless_call(ws, fixed, list(inputs))
        elif mha:
            kw = dict(call_args)
            if "attention_mask" in masks:
                kw["attention_mask"] = masks["attention_mask"]
            key = inputs[2] if len(inputs) == 3 else None
            out, _ = layer.stateless_call(ws, fixed, inputs[0], inputs[1], key=key, **kw)
        else:
            kw = dict(call_args)
            if "qmask" in masks:
                kw["mask"] = [masks["qmask"], masks["vmask"]]
            out, _ = layer.stateless_call(ws, fixed, list(inputs), **kw)
        return list(out) if isinstance(out, (list, tuple)) else [out]

    outs, vjp = jax.vjp(forward, train, *xs)
    cots = [rng.standard_normal(o.shape).astype(np.float32) for o in outs]
    grads = vjp(cots)
    dws, dxs = grads[0], grads[1:]
    arrays = {f"x{i}": x for i, x in enumerate(xs)}
    arrays.update({f"w{i}": w for i, w in enumerate(weights)})
    arrays.update(masks)
    arrays.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
    arrays.update({f"cot{i}": c for i, c in enumerate(cots)})
    arrays.update({f"dx{i}": np.asarray(d) for i, d in enumerate(dxs)})
    arrays.update({f"dw{i}": np.asarray(d) for i, d in enumerate(dws)})
    return arrays


def main() -> None:
    arrays = {}
    for case in CASES:
        for name, value in run_case(case).items():
            arrays[f"{case}/{name}"] = value
    os.makedirs(DATA, exist_ok=True)
    np.savez_compressed(NPZ, **arrays)
    doc = {"keras": keras.__version__, "backend": keras.backend.backend(),
           "cases": {k: {"class": c, "args": a, "call": ca, "shapes": s, "masks": m}
                     for k, (c, a, ca, s, m) in CASES.items()}}
    with open(JSON, "w") as fh:
        json.dump(doc, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(f"wrote {len(CASES)} cases to {NPZ} and {JSON}")


if __name__ == "__main__":
    main()
