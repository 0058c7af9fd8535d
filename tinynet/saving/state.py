"""Training state in a file: the random generators' states (big integers as decimal
strings) and the optimizer's iterations, written and restored."""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from tinynet.saving.files import OPTIMIZER_PREFIX

_INT_RE = re.compile(r"-?[0-9]{1,64}\Z")
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
_RNG_ARRAY_DTYPES = ("uint32", "uint64")
_MISSING = object()


def _encode_state(value: Any) -> Any:
    """Bit generator state as JSON: ints as decimal strings, arrays as tagged lists."""
    if isinstance(value, dict):
        return {k: (v if k == "bit_generator" else _encode_state(v)) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return {"dtype": str(value.dtype), "data": [str(int(v)) for v in value.reshape(-1)]}
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    raise ValueError(f"cannot store a random generator state entry {value!r}")

def _decode_state(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        if set(value) == {"dtype", "data"}:
            if value["dtype"] not in _RNG_ARRAY_DTYPES or not isinstance(value["data"], list):
                raise ValueError(f"{where}: bad array in a random generator state")
            return np.array([_decode_state(v, where) for v in value["data"]],
                            dtype=value["dtype"])
        out = {}
        for k, v in value.items():
            if k == "bit_generator":
                out[k] = v
            else:
                out[k] = _decode_state(v, where)
        return out
    if isinstance(value, str) and _INT_RE.match(value):
        return int(value)
    raise ValueError(f"{where}: bad random generator state entry {value!r}")

def _rng_to_json(rng: np.random.Generator) -> dict:
    return _encode_state(rng.bit_generator.state)

def _rng_from_json(data: Any, where: str) -> np.random.Generator:
    if not isinstance(data, dict) or data.get("bit_generator") not in _BIT_GENERATORS:
        raise ValueError(f"{where}: a random generator state must name one of "
                         f"{', '.join(_BIT_GENERATORS)}, got {data!r:.200}")
    state = _decode_state(data, where)
    bit_generator = getattr(np.random, state["bit_generator"])()
    try:
        bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ValueError(f"{where}: invalid random generator state ({exc})") from None
    return np.random.Generator(bit_generator)

def _layer_rng(layer: Any) -> np.random.Generator | None:
    """A layer's ``rng`` generator, if it has one already (never creates it)."""
    if getattr(layer, "_rng", _MISSING) is None:  # Dropout creates its generator lazily
        return None
    rng = getattr(layer, "rng", None)
    return rng if isinstance(rng, np.random.Generator) else None

def _stateful_layers(model: Any) -> list[tuple[str, Any]]:
    """``model.named_layers()`` plus, under each, the sub-layers a ``call()`` layer holds
    (``block/dropout``; sub-layers sharing a name numbered as ``Layer.named_weights``
    numbers them), so their random generators are saved too."""
    out = []

    def walk(path: str, layer: Any) -> None:
        out.append((path, layer))
        used: set[str] = set()
        for sub in layer.sublayers() if hasattr(layer, "sublayers") else ():
            label, i = sub.name, 0
            while label in used:
                i += 1
                label = f"{sub.name}_{i}"
            used.add(label)
            walk(f"{path}/{label}", sub)

    for path, layer in model.named_layers():
        walk(path, layer)
    return out


def training_state(model: Any, tensors: dict[str, np.ndarray]) -> dict:
    """Adds the optimizer slots to ``tensors``; returns the JSON part of the state."""
    state: dict[str, Any] = {"optimizer_iterations": None, "shuffle_rng": None, "layer_rngs": {}}
    if getattr(model, "compiled", False):
        opt_state = model.optimizer.get_state()
        state["optimizer_iterations"] = int(opt_state.pop("iterations"))
        for key, arr in opt_state.items():
            name = OPTIMIZER_PREFIX + key
            if name in tensors:
                raise ValueError(f"save_model: optimizer slot {name!r} collides with a weight "
                                 f"of the same name; rename the layer")
            tensors[name] = np.require(arr, dtype=np.float32, requirements="C")
        if model.shuffle_rng is not None:
            state["shuffle_rng"] = _rng_to_json(model.shuffle_rng)
    for path, layer in _stateful_layers(model):
        rng = _layer_rng(layer)
        if rng is not None:
            state["layer_rngs"][path] = _rng_to_json(rng)
    return state

def restore_training_state(model: Any, state: Any, tensors: dict, weights: set[str],
                            where: str) -> Callable:
    """Validates the training state; returns a function that applies it (cannot fail)."""
    bad = f"{where}: invalid training_state:"
    if not isinstance(state, dict) or not isinstance(state.get("layer_rngs"), dict):
        raise ValueError(f"{bad} expected an object with 'layer_rngs'")
    layers = dict(_stateful_layers(model))
    layer_rngs = {}
    for name, data in state["layer_rngs"].items():
        layer = layers.get(name)
        if layer is None or not (hasattr(type(layer), "rng") or "rng" in vars(layer)):
            raise ValueError(f"{bad} the model has no layer {name!r} with a random generator")
        layer_rngs[name] = _rng_from_json(data, f"{where}: layer {name!r}")
    shuffle_rng = None
    opt_slots = {k[len(OPTIMIZER_PREFIX):]: v for k, v in tensors.items()
                 if k.startswith(OPTIMIZER_PREFIX) and k not in weights}
    compiled = getattr(model, "compiled", False)
    if compiled:
        iterations = state.get("optimizer_iterations")
        if (isinstance(iterations, bool) or not isinstance(iterations, int)
                or not 0 <= iterations < 2**63):
            raise ValueError(f"{bad} 'optimizer_iterations' must be a non-negative int below "
                             f"2**63, got {iterations!r:.40}")
        for key, arr in opt_slots.items():
            if arr.dtype != np.float32:
                raise ValueError(f"{where}: tensor {OPTIMIZER_PREFIX + key!r} has dtype "
                                 f"{arr.dtype}, expected float32")
        try:
            model.optimizer.set_state({"iterations": np.int64(iterations), **opt_slots},
                                      model.trainable_parameters())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: optimizer state does not match the model: {exc}") \
                from None
        if state.get("shuffle_rng") is not None:
            shuffle_rng = _rng_from_json(state["shuffle_rng"], f"{where}: shuffle_rng")
    elif opt_slots:
        raise ValueError(f"{where}: the file has optimizer tensors but no compile_config")

    def apply() -> None:
        for name, rng in layer_rngs.items():
            layers[name].rng = rng
        if shuffle_rng is not None:
            model.shuffle_rng = shuffle_rng

    return apply
