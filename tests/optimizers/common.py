"""Shared helpers for the optimizer tests."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from tinynet.layers.layer import Parameter


def make_param(values, name: str = "kernel", path: str | None = None) -> Parameter:
    p = Parameter(np.array(values, dtype=np.float32, copy=True), name)
    p.path = path if path is not None else f"dense/{name}"
    return p


def run_scalar(opt, grads, w0: float = 1.0, name: str = "kernel") -> list[float]:
    """Steps a one-element parameter through ``grads``; returns the value after each step."""
    p = make_param([w0], name)
    out = []
    for g in grads:
        p.grad = np.array([g], dtype=np.float32)
        opt.apply([p])
        out.append(float(p.value[0]))
    return out


def run_torch(torch_opt_factory, w0: np.ndarray, grads: list[np.ndarray]) -> np.ndarray:
    """Runs a torch optimizer on one tensor with the given gradient sequence."""
    import torch

    w = torch.tensor(w0.copy(), requires_grad=True)
    opt = torch_opt_factory([w])
    for g in grads:
        w.grad = torch.tensor(g.copy())
        opt.step()
    return w.detach().numpy().copy()


def run_tinynet(opt, w0: np.ndarray, grads: list[np.ndarray]) -> np.ndarray:
    p = make_param(w0)
    for g in grads:
        p.grad = g.copy()
        opt.apply([p])
    return p.value.copy()


# -- the checks every optimizer gets (state, determinism, saving, Keras) --------------------
def params(sizes=((4, 3), (3,)), seed: int = 0) -> list[Parameter]:
    rng = np.random.default_rng(seed)
    names = ["kernel", "bias", "gamma", "beta"]
    return [make_param(rng.standard_normal(s), names[i % 4], f"layer{i}/{names[i % 4]}")
            for i, s in enumerate(sizes)]


def set_grads(ps: list[Parameter], step: int, scale: float = 1.0) -> None:
    rng = np.random.default_rng(100 + step)
    for p in ps:
        p.grad = (rng.standard_normal(p.value.shape) * scale).astype(np.float32)


def train(opt, ps: list[Parameter], steps: int, start: int = 0, scale: float = 1.0) -> None:
    for s in range(start, start + steps):
        set_grads(ps, s, scale)
        opt.apply(ps)


def assert_state_round_trip_bitwise(make) -> None:
    """3 steps, ``get_state``, 3 more; a fresh ``from_config`` optimizer given the state
    and the weights continues to the same bits."""
    ps = params()
    opt = make()
    train(opt, ps, 3)
    state = opt.get_state()
    weights = [p.value.copy() for p in ps]
    train(opt, ps, 3, start=3)
    straight = [p.value.copy() for p in ps]

    ps2 = params()
    for p, w in zip(ps2, weights):
        p.value[...] = w
    opt2 = type(opt).from_config(opt.get_config())
    opt2.set_state(state, ps2)
    assert opt2.iterations == 3 and opt2.count_params() == opt.count_params()
    train(opt2, ps2, 3, start=3)
    for a, b in zip(straight, ps2):
        np.testing.assert_array_equal(a, b.value)
    assert set(opt2.get_state()) == set(state)
    for key, value in opt.get_state().items():
        assert value.tobytes() == opt2.get_state()[key].tobytes(), key


BIG = 40_000  # > 2 update blocks of 16384, so the parallel kernels split the work


def _run_big(make) -> list[np.ndarray]:
    ps = params(((BIG,), (7,)), seed=3)
    opt = make()
    train(opt, ps, 3, scale=50.0)   # large gradients so the clipping variants clip
    return [p.value.copy() for p in ps] + [v for _, v in sorted(opt.get_state().items())]


def assert_serial_parallel_threads_bitwise(make) -> None:
    """The same bits with the serial and the parallel kernels, on 1 and 2 threads."""
    from tinynet import tuning

    try:
        with tuning.override(optimizer_parallel_min_elems=2**62):
            serial = _run_big(make)
        with tuning.override(optimizer_parallel_min_elems=0):
            parallel = _run_big(make)
            tuning.set_num_threads(1)
            one = _run_big(make)
            tuning.set_num_threads(min(2, tuning.max_threads()))
            two = _run_big(make)
    finally:
        tuning.reset()
    for a, b, c, d in zip(serial, parallel, one, two):
        assert a.tobytes() == b.tobytes() == c.tobytes() == d.tobytes()


def assert_model_resume_bitwise(make, tmp_path) -> None:
    """``fit`` 2 epochs, ``save``, ``load_model``, 1 more epoch: the same weights, losses
    and optimizer state as 3 epochs straight."""
    import tinynet as tn
    from tinynet.layers import Dense, Input

    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((24, 5)).astype(np.float32), rng.standard_normal((24, 2))

    def model():
        tn.set_seed(11)
        m = tn.Sequential([Input((5,)), Dense(4, activation="tanh"), Dense(2)])
        m.compile(optimizer=make(), loss="mse")
        return m

    straight = model()
    h = straight.fit(x, y, batch_size=8, epochs=3, verbose=0)
    first = model()
    h1 = first.fit(x, y, batch_size=8, epochs=2, verbose=0)
    path = tmp_path / "resume.safetensors"
    first.save(path)
    tn.set_seed(999)
    resumed = tn.load_model(path)
    h2 = resumed.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert h1.history["loss"] + h2.history["loss"] == h.history["loss"]
    for a, b in zip(straight.get_weights(), resumed.get_weights()):
        assert a.tobytes() == b.tobytes()
    ours, theirs = straight.optimizer.get_state(), resumed.optimizer.get_state()
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        assert ours[key].tobytes() == theirs[key].tobytes(), key
    assert resumed.optimizer.get_config() == straight.optimizer.get_config()


# -- Keras 3.15.1 references (tests/data/keras/generate_optimizers.py) ------------------------
KERAS_REFS = os.path.join(os.path.dirname(__file__), os.pardir, "data", "keras",
                          "keras_optimizer_refs.npz")


#: Keras config keys of what tinynet does not implement (docs/optimizers.md)
KERAS_ONLY_CONFIG = {"use_ema", "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                     "gradient_accumulation_steps"}


#: Keras's default optimizer names where tinynet's differ (AdamW's predates this check)
KERAS_NAMES = {"adamw": "adam_w"}


def keras_refs() -> dict[str, np.ndarray]:
    with np.load(KERAS_REFS) as data:
        return {k: data[k] for k in data.files}


def keras_cases(refs: dict, cls_name: str) -> list[str]:
    """The names of the reference cases of optimizer class ``cls_name``."""
    return sorted(k.split("/")[0] for k in refs if k.endswith("/case")
                  and json.loads(str(refs[k]))[0] == cls_name)


def run_keras_case(refs: dict, case: str):
    """Runs ``case`` in tinynet: ``(optimizer, [(step, param name, ours, Keras's), ...])``."""
    from tinynet import optimizers

    cls, kwargs, schedule = json.loads(str(refs[f"{case}/case"]))
    kwargs = dict(kwargs)
    if schedule is not None:
        kwargs["learning_rate"] = getattr(optimizers.schedules, schedule[0])(**schedule[1])
    opt = getattr(optimizers, cls)(**kwargs)
    ps = [make_param(refs[f"w0/{name}"], name) for name in ("kernel", "bias")]
    out = []
    for step in (1, 2, 3):
        for p in ps:
            p.grad = refs[f"grad{step}/{p.name}"].copy()
        opt.apply(ps)
        out += [(step, p.name, p.value.copy(), refs[f"{case}/step{step}/{p.name}"])
                for p in ps]
    return opt, out


def assert_matches_keras(refs: dict, case: str, rtol: float, atol: float) -> None:
    """Weights after each of the 3 steps, the slots after the last one, the scalar count
    and the config keys against Keras."""
    opt, steps = run_keras_case(refs, case)
    for step, name, ours, theirs in steps:
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol,
                                   err_msg=f"{case}: {name} after step {step}")
    state = opt.get_state()
    slots = {k[len(f"{case}/slot/"):]: v for k, v in refs.items()
             if k.startswith(f"{case}/slot/")}
    assert sorted(f"dense/{k}" for k in slots) == sorted(k for k in state if "/" in k)
    for key, theirs in slots.items():
        np.testing.assert_allclose(state[f"dense/{key}"], theirs, rtol=2e-6, atol=1e-9,
                                   err_msg=f"{case}: slot {key}")
    if f"{case}/u_product" in refs:
        np.testing.assert_allclose(state["u_product"], refs[f"{case}/u_product"], rtol=1e-6)
    assert opt.iterations == int(refs[f"{case}/iterations"])
    assert opt.count_params() == int(refs[f"{case}/n_scalars"])
    keras_config = json.loads(str(refs[f"{case}/config"]))
    ours = opt.get_config()
    assert set(keras_config) - set(ours) == KERAS_ONLY_CONFIG, case
    # Keras numbers the default names of later instances: "nadam", "nadam_1", ...
    name = ours.pop("name")
    name = KERAS_NAMES.get(name, name)
    assert re.fullmatch(rf"{name}(_[0-9]+)?", keras_config["name"]), case
    for key, value in ours.items():
        if key != "learning_rate":
            assert keras_config[key] == value, (case, key)


# -- the shared tests of one optimizer's module ----------------------------------------------
def contract_tests(makers: dict, resume: list[str]):
    """The determinism, state and saving tests over ``makers`` (id: factory), the model
    save/load over those named in ``resume``; a test module binds them to test names."""
    ids, makes = list(makers), list(makers.values())

    @pytest.mark.parametrize("make", makes, ids=ids)
    def serial_parallel_threads(make):
        assert_serial_parallel_threads_bitwise(make)

    @pytest.mark.parametrize("make", makes, ids=ids)
    def state_round_trip(make):
        assert_state_round_trip_bitwise(make)

    @pytest.mark.parametrize("make", [makers[k] for k in resume], ids=resume)
    def save_load_continue(make, tmp_path):
        assert_model_resume_bitwise(make, tmp_path)

    return serial_parallel_threads, state_round_trip, save_load_continue


def keras_tests(class_names: list[str], expected: list[str]):
    """The Keras comparison of the reference cases of ``class_names`` (which must be
    ``expected``). Keras rounds ``beta_2`` to float32 before ``1 - beta_2**t`` (tinynet:
    float64, docs/optimizers.md), which with ``beta_2 = 0.999`` moves an Adam or Nadam
    step by 6e-6 relative: those compare to rtol 1e-5 (atol 1e-6); Adamax and Lion (no
    power of ``beta_2``) and the ``_betas`` cases (betas a float32 holds) differ by float32
    rounding alone and compare to rtol 1e-6 (atol 1e-8)."""
    refs = keras_refs()
    cases = [c for name in class_names for c in keras_cases(refs, name)]

    @pytest.mark.parametrize("case", cases)
    def matches_keras(case):
        exact = case.endswith("_betas") or case.startswith(("adamax", "lion"))
        assert_matches_keras(refs, case, rtol=1e-6 if exact else 1e-5,
                             atol=1e-8 if exact else 1e-6)

    def cases_present():
        assert cases == expected

    return matches_keras, cases_present


def assert_follows_reference(cls, kwargs: dict, reference, seed: int, size: int = 31):
    """8 steps of ``cls(**kwargs)`` on one parameter against ``reference(w0, grads,
    **kwargs)`` (float64 weights after each step); returns ``(optimizer, grads)``."""
    rng = np.random.default_rng(seed)
    w0 = rng.standard_normal(size).astype(np.float32)
    grads = [(rng.standard_normal(size) * s).astype(np.float32)
             for s in (3, 0.1, 1, 0.01, 0.5, 2, 0.01, 1)]
    p = make_param(w0)
    opt = cls(**kwargs)
    for step, (g, ref) in enumerate(zip(grads, reference(w0, grads, **kwargs)), start=1):
        p.grad = g
        opt.apply([p])
        np.testing.assert_allclose(p.value, ref, rtol=2e-6, atol=1e-7, err_msg=f"step {step}")
    return opt, grads
