"""Training state in a file: the random generators' states (big integers as decimal
strings) and the optimizer's iterations, written and restored."""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from tinynet.saving.files import OPTIMIZER_PREFIX

_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
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

_PCG = {"state": {"state": ("int", 2**128), "inc": ("int", 2**128)},
        "has_uint32": ("int", 2), "uinteger": ("int", 2**32)}
#: The exact layout of each bit generator's state (numpy's ``bit_generator.state``): an
#: int below a bound, or an array of a dtype and length.
_STATE_LAYOUTS: dict[str, dict] = {
    "PCG64": _PCG, "PCG64DXSM": _PCG,
    "Philox": {"state": {"counter": ("uint64", 4), "key": ("uint64", 2)},
               "buffer": ("uint64", 4), "buffer_pos": ("int", 5), "has_uint32": ("int", 2),
               "uinteger": ("int", 2**32)},
    "SFC64": {"state": {"state": ("uint64", 4)}, "has_uint32": ("int", 2),
              "uinteger": ("int", 2**32)},
    "MT19937": {"state": {"key": ("uint32", 624), "pos": ("int", 625)}},
}
_DIGITS = re.compile(r"[0-9]{1,40}\Z")  # 2**128 has 39 digits


def _bound(bound: int) -> str:
    exponent = bound.bit_length() - 1
    return f"2**{exponent}" if bound == 1 << exponent and exponent > 3 else str(bound)


def _decode_int(value: Any, bound: int, field: str, where: str) -> int:
    if not isinstance(value, str) or not _DIGITS.match(value) or int(value) >= bound:
        raise ValueError(f"{where}: invalid random generator state: {field} must be a "
                         f"decimal string of an integer in [0, {_bound(bound)}), got "
                         f"{value!r:.60}")
    return int(value)


def _decode_state(value: Any, layout: dict, field: str, where: str) -> dict:
    """The JSON state ``value`` as numpy's state dict, checked against ``layout`` (the
    same keys, ints in range, arrays of the right length): numpy never sees a malformed
    state (it raises IndexError, OverflowError or silently broadcasts on some)."""
    if not isinstance(value, dict) or set(value) != set(layout):
        got = sorted(map(str, value)) if isinstance(value, dict) else type(value).__name__
        raise ValueError(f"{where}: invalid random generator state: {field} must be an "
                         f"object with the keys {sorted(layout)}, got {got!s:.200}")
    out: dict[str, Any] = {}
    for key, spec in layout.items():
        item, name = value[key], f"{field}.{key}"
        if isinstance(spec, dict):
            out[key] = _decode_state(item, spec, name, where)
        elif spec[0] == "int":
            out[key] = _decode_int(item, spec[1], name, where)
        else:
            dtype, length = spec
            if (not isinstance(item, dict) or set(item) != {"dtype", "data"}
                    or item["dtype"] != dtype or not isinstance(item["data"], list)
                    or len(item["data"]) != length):
                raise ValueError(f"{where}: invalid random generator state: {name} must be "
                                 f"{{'dtype': {dtype!r}, 'data': [{length} decimal strings]}}, "
                                 f"got {item!r:.120}")
            bound = 2 ** np.iinfo(dtype).bits
            out[key] = np.array([_decode_int(v, bound, f"{name}.data[{i}]", where)
                                 for i, v in enumerate(item["data"])], dtype=dtype)
    return out

def _rng_to_json(rng: np.random.Generator) -> dict:
    return _encode_state(rng.bit_generator.state)

def _rng_from_json(data: Any, where: str) -> np.random.Generator:
    if not isinstance(data, dict) or data.get("bit_generator") not in _BIT_GENERATORS:
        raise ValueError(f"{where}: a random generator state must name one of "
                         f"{', '.join(_BIT_GENERATORS)}, got {data!r:.200}")
    name = data["bit_generator"]
    state = _decode_state({k: v for k, v in data.items() if k != "bit_generator"},
                          _STATE_LAYOUTS[name], name, where)
    bit_generator = getattr(np.random, name)()
    try:
        bit_generator.state = {"bit_generator": name, **state}
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as exc:
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
    stack = list(reversed(model.named_layers()))  # iterative, depth-first as a recursion
    while stack:
        path, layer = stack.pop()
        out.append((path, layer))
        used: set[str] = set()
        subs = []
        for sub in layer.sublayers() if hasattr(layer, "sublayers") else ():
            label, i = sub.name, 0
            while label in used:
                i += 1
                label = f"{sub.name}_{i}"
            used.add(label)
            subs.append((f"{path}/{label}", sub))
        stack.extend(reversed(subs))
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
        layer_rngs[name] = _rng_from_json(data, f"{where}: training_state: layer_rngs"
                                                f"[{name!r}]")
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
            shuffle_rng = _rng_from_json(state["shuffle_rng"],
                                         f"{where}: training_state: shuffle_rng")
    elif opt_slots:
        raise ValueError(f"{where}: the file has optimizer tensors but no compile_config")

    def apply() -> None:
        for name, rng in layer_rngs.items():
            layers[name].rng = rng
        if shuffle_rng is not None:
            model.shuffle_rng = shuffle_rng

    return apply
