"""Writes the Keras optimizer reference values the tests compare with
(``keras_optimizer_refs.npz``).

Run with Keras 3.15.1 on the PyTorch backend, outside the project's environment (Keras is
never a tinynet dependency), from a folder without a ``keras`` of its own, e.g.::

    cd /tmp && KERAS_BACKEND=torch PYTHONPATH=/path/to/kpkgs \\
        python /path/to/tinynet/tests/data/keras/generate_optimizers.py

Each case is an optimizer (class, arguments, an optional learning-rate schedule) applied
for three steps to two fixed variables (``kernel`` (3, 4) and ``bias`` (4,)) with fixed
gradients: the variables after each step, the optimizer's variables after the last one
(``<param>/<slot>`` as tinynet names them, plus Nadam's ``u_product``), the number of
scalars in ``optimizer.variables`` and the optimizer's config. The ``*_betas`` cases use
betas a float32 holds exactly: Keras rounds ``beta_2`` to float32 before ``1 - beta_2**t``
(tinynet computes it in float64), which with ``beta_2 = 0.999`` moves the first steps by
6e-6 relative; with exact betas the two differ by float32 rounding alone.
"""

from __future__ import annotations

import json
import os

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "torch")
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = {"kernel": (3, 4), "bias": (4,)}
STEPS = 3
GRAD_SCALES = (2.0, 0.1, 0.5)  # a small step between large ones: AMSGrad's max matters
EXP = ["ExponentialDecay", {"initial_learning_rate": 0.05, "decay_steps": 1,
                            "decay_rate": 0.5}]
COS = ["CosineDecay", {"initial_learning_rate": 0.02, "decay_steps": 4}]
CASES = {  # name: (class, arguments, schedule or None)
    "nadam": ("Nadam", {"learning_rate": 0.01}, None),
    "nadam_betas": ("Nadam", {"learning_rate": 0.05, "beta_1": 0.5, "beta_2": 0.75,
                              "epsilon": 1e-3}, None),
    "nadam_schedule": ("Nadam", {}, EXP),
    "nadam_weight_decay": ("Nadam", {"learning_rate": 0.01, "weight_decay": 0.1}, None),
    "adamax": ("Adamax", {"learning_rate": 0.01}, None),
    "adamax_betas": ("Adamax", {"learning_rate": 0.05, "beta_1": 0.5, "beta_2": 0.75,
                                "epsilon": 1e-3}, None),
    "adamax_schedule": ("Adamax", {}, COS),
    "adamax_weight_decay": ("Adamax", {"learning_rate": 0.01, "weight_decay": 0.1}, None),
    "lion": ("Lion", {"learning_rate": 0.01}, None),
    "lion_betas": ("Lion", {"learning_rate": 0.05, "beta_1": 0.5, "beta_2": 0.75}, None),
    "lion_schedule": ("Lion", {}, EXP),
    "lion_weight_decay": ("Lion", {"learning_rate": 0.01, "weight_decay": 0.3}, None),
    "adam_amsgrad": ("Adam", {"learning_rate": 0.01, "beta_2": 0.9, "amsgrad": True}, None),
    "adam_amsgrad_betas": ("Adam", {"learning_rate": 0.05, "beta_1": 0.5, "beta_2": 0.75,
                                    "amsgrad": True}, None),
    "adam_amsgrad_schedule": ("Adam", {"beta_2": 0.9, "amsgrad": True}, COS),
    "adam_amsgrad_weight_decay": ("Adam", {"learning_rate": 0.01, "beta_2": 0.9,
                                           "amsgrad": True, "weight_decay": 0.1}, None),
    "adamw_amsgrad": ("AdamW", {"learning_rate": 0.01, "beta_2": 0.9, "amsgrad": True,
                                "weight_decay": 0.05}, None),
    "adamw_amsgrad_schedule": ("AdamW", {"beta_2": 0.9, "amsgrad": True}, EXP),
}
# Keras's optimizer variable names -> tinynet's slot names
SLOTS = {"momentum": "momentum", "velocity": "velocity", "velocity_hat": "velocity_hat",
         "norm": "norm"}


def _data(rng) -> tuple[dict, list[dict]]:
    w0 = {name: rng.standard_normal(shape).astype(np.float32)
          for name, shape in SHAPES.items()}
    grads = [{name: (rng.standard_normal(shape) * scale).astype(np.float32)
              for name, shape in SHAPES.items()} for scale in GRAD_SCALES]
    return w0, grads


def _slot_name(var_name: str, param: str) -> str | None:
    """``"kernel_momentum"`` -> ``"momentum"`` for ``param == "kernel"``."""
    prefix = f"{param}_"
    if var_name.startswith(prefix) and var_name[len(prefix):] in SLOTS:
        return SLOTS[var_name[len(prefix):]]
    return None


def _case(name: str, cls: str, kwargs: dict, schedule, w0: dict, grads: list) -> dict:
    lr = kwargs.get("learning_rate", 0.001)
    if schedule is not None:
        lr = getattr(keras.optimizers.schedules, schedule[0])(**schedule[1])
    opt = getattr(keras.optimizers, cls)(**{**kwargs, "learning_rate": lr})
    variables = {p: keras.Variable(w0[p], name=p, dtype="float32") for p in SHAPES}
    out = {f"{name}/case": np.array(json.dumps([cls, kwargs, schedule]))}
    for step, g in enumerate(grads):
        opt.apply_gradients([(keras.ops.convert_to_tensor(g[p]), variables[p])
                             for p in SHAPES])
        for p, v in variables.items():
            out[f"{name}/step{step + 1}/{p}"] = keras.ops.convert_to_numpy(v.value)
    for var in opt.variables:
        value = keras.ops.convert_to_numpy(var.value)
        for p in SHAPES:
            slot = _slot_name(var.name, p)
            if slot is not None:
                out[f"{name}/slot/{p}/{slot}"] = value
    if cls == "Nadam":
        out[f"{name}/u_product"] = keras.ops.convert_to_numpy(opt._u_product.value)
    out[f"{name}/n_scalars"] = np.array(sum(int(np.prod(v.shape)) for v in opt.variables))
    out[f"{name}/iterations"] = np.array(int(keras.ops.convert_to_numpy(opt.iterations)))
    config = opt.get_config()
    config.pop("learning_rate")  # a schedule's config is compared by the schedule tests
    out[f"{name}/config"] = np.array(json.dumps(config))
    return out


def main() -> None:
    rng = np.random.default_rng(2024)
    w0, grads = _data(rng)
    out = {"keras_version": np.array(keras.__version__),
           "backend": np.array(keras.backend.backend())}
    for p in SHAPES:
        out[f"w0/{p}"] = w0[p]
        for step, g in enumerate(grads):
            out[f"grad{step + 1}/{p}"] = g[p]
    for name, (cls, kwargs, schedule) in CASES.items():
        out.update(_case(name, cls, kwargs, schedule, w0, grads))
    path = os.path.join(HERE, "keras_optimizer_refs.npz")
    np.savez_compressed(path, **out)
    print(f"wrote {len(out)} arrays to {path} (Keras {keras.__version__}, "
          f"{keras.backend.backend()})")


if __name__ == "__main__":
    main()
