"""Saving and loading models: one ``.safetensors`` file, no code in it.

File layout (format version 1):

* tensors ``<layer_name>/<param_name>`` hold every parameter (non-trainable included),
  float32; a full save (:func:`save_model`) adds the optimizer slots as
  ``optimizer/<layer_name>/<param_name>/<slot>``;
* the header's ``__metadata__`` (string to string) holds ``format`` (``"tinynet"``),
  ``format_version`` (``"1"``), ``kind`` (``"model"`` or ``"weights"``) and, as JSON,
  ``model_config`` (``Sequential.get_config()``, class names as registered),
  ``compile_config`` (optimizer, loss and metrics) and ``training_state`` (optimizer
  iterations and the states of the model's shuffling generator and of each layer's
  random generator, big integers as decimal strings). With all of it restored, training
  resumes bitwise where it stopped.

Any safetensors reader (``safetensors.numpy.load_file``, ``safetensors.torch.load_file``)
opens the file. Loading never executes code from it: layer classes are looked up by
name in a registry (built-in layers, plus those decorated with :func:`register_layer`),
configurations are type-checked before use, the header size is checked against the
file size and capped, and any corrupt, truncated, foreign or mismatched file raises
``ValueError`` saying what is wrong. Writes are atomic: a temporary file in the target
folder, flushed and fsynced, then renamed over the target; a failed save leaves the
previous file untouched.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import stat
import types
import warnings
from typing import Any, Callable

import numpy as np

from tinynet.layers import registry
from tinynet.layers.registry import register_layer, registered_layers

__all__ = ["save_model", "save_weights", "load_weights", "load_model", "register_layer",
           "registered_layers",
           "FORMAT", "FORMAT_VERSION"]

FORMAT = "tinynet"
FORMAT_VERSION = 1
MAX_HEADER_BYTES = 100 * 1024 * 1024
MAX_JSON_DEPTH = 64
OPTIMIZER_PREFIX = "optimizer/"
# a config may ask for at most this many weight scalars beyond those the file holds (so a
# small file cannot make load_model allocate much more memory than its own size)
WEIGHT_SLACK = 1 << 20
_DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "I64": 8, "U64": 8, "I32": 4, "U32": 4,
                "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "C64": 8}

_INT_RE = re.compile(r"-?[0-9]{1,64}\Z")
_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
_RNG_ARRAY_DTYPES = ("uint32", "uint64")
_MISSING = object()

# -- helpers ------------------------------------------------------------------------------------
def _fspath(path: Any, owner: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{owner}: path must be a str or os.PathLike, got {type(path).__name__}")
    return os.fspath(path)


def _check_model(model: Any, owner: str) -> None:
    if not isinstance(model, registry.model_classes()):
        raise TypeError(f"{owner}: expected a tinynet Sequential model, got "
                        f"{type(model).__name__}")


def _json_depth_ok(value: Any) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return True


def _loads(text: str | bytes, what: str, where: str) -> Any:
    """``json.loads`` that turns any failure, and nesting beyond MAX_JSON_DEPTH, into ValueError."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"{where}: {what} is nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: {what} is not valid JSON ({exc})") from None
    if not _json_depth_ok(value):
        raise ValueError(f"{where}: {what} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def _weight_names(model: Any, owner: str) -> list[tuple[str, Any]]:
    """``[(tensor name, Parameter), ...]`` in model order; names must be unique."""
    out, seen = [], set()
    for layer in model.layers:
        for p in layer.parameters():
            key = f"{layer.name}/{p.name}"
            if key in seen:
                raise ValueError(f"{owner}: two weights share the name {key!r}")
            seen.add(key)
            out.append((key, p))
    return out


# -- random generator state ----------------------------------------------------------------------
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


# -- writing --------------------------------------------------------------------------------------
def _model_config(model: Any) -> dict:
    config = model.get_config()
    entries = config["layers"]
    layers = model.layers
    offset = len(entries) - len(layers)
    for i, entry in enumerate(entries):
        cls = type(layers[i - offset]) if i >= offset else None
        if cls is not None:
            entry["class_name"] = registry.registered_name(cls)
        elif entry["class_name"] not in registry.registered_layers():
            raise ValueError(f"save: unknown layer class {entry['class_name']!r}")
    return config


def _metric_entry(key: str, metric: Any, loss: Any) -> Any:
    from tinynet import metrics as metrics_module

    try:
        rebuilt = metrics_module.get(key, loss=loss)
    except (TypeError, ValueError):
        rebuilt = None
    if (rebuilt is not None and type(rebuilt) is type(metric)
            and rebuilt.get_config() == metric.get_config()):
        return key
    return {"class_name": type(metric).__name__, "config": metric.get_config()}


def _compile_config(model: Any) -> dict | None:
    if not getattr(model, "compiled", False):
        return None
    from tinynet import losses, optimizers

    loss = model.loss
    keys = list(model.metrics_names)[1:]
    return {
        "optimizer": optimizers.serialize(model.optimizer),
        "loss": losses.serialize(loss) if loss is not None else None,
        "metrics": [_metric_entry(k, m, loss) for k, m in zip(keys, model.metrics)],
    }


def _training_state(model: Any, tensors: dict[str, np.ndarray]) -> dict:
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
            tensors[name] = np.ascontiguousarray(arr, dtype=np.float32)
        if model.shuffle_rng is not None:
            state["shuffle_rng"] = _rng_to_json(model.shuffle_rng)
    for layer in model.layers:
        rng = _layer_rng(layer)
        if rng is not None:
            state["layer_rngs"][layer.name] = _rng_to_json(rng)
    return state


def _write(file: Any, payload: bytes) -> None:
    file.write(payload)


def _atomic_write(path: str, payload: bytes) -> None:
    """Writes ``payload`` to a temporary file beside ``path``, fsyncs it, renames it over."""
    folder = os.path.dirname(os.path.abspath(path))
    base = os.path.basename(path)
    while True:
        tmp = os.path.join(folder, f".{base}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)  # the umask applies, as for any new file
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as file:
            _write(file, payload)
            file.flush()
            os.fsync(file.fileno())
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))  # keep the old file's mode
        except FileNotFoundError:
            pass
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename durable (POSIX)
        try:
            dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)


def _save(model: Any, path: Any, weights_only: bool, owner: str) -> None:
    from safetensors.numpy import save

    _check_model(model, owner)
    path = _fspath(path, owner)
    tensors = {key: np.ascontiguousarray(p.value, dtype=np.float32)
               for key, p in _weight_names(model, owner)}
    metadata = {"format": FORMAT, "format_version": str(FORMAT_VERSION),
                "kind": "weights" if weights_only else "model"}
    if not weights_only:
        metadata["model_config"] = json.dumps(_model_config(model))
        metadata["compile_config"] = json.dumps(_compile_config(model))
        metadata["training_state"] = json.dumps(_training_state(model, tensors))
    _atomic_write(path, save(tensors, metadata=metadata))


def save_model(model: Any, path: str | os.PathLike) -> None:
    """Saves the whole model: architecture, weights, compile settings and training state.

    ``load_model(path)`` returns a model that predicts bitwise the same and, when it was
    compiled, continues ``fit`` bitwise as the original would have.

    Args:
        model: A :class:`tinynet.Sequential`.
        path: The file to write (``.safetensors`` by convention); replaced atomically.

    Raises:
        TypeError: ``model`` is not a ``Sequential`` or ``path`` not a path.
        ValueError: a layer class is not registered, or weight names collide.
        OSError: the file cannot be written (any previous file is left unchanged).
    """
    _save(model, path, False, "save_model")


def save_weights(model: Any, path: str | os.PathLike) -> None:
    """Saves only the weights (``<layer_name>/<param_name>`` tensors); see :func:`load_weights`."""
    _save(model, path, True, "save_weights")


# -- reading --------------------------------------------------------------------------------------
def _read(path: Any, owner: str) -> tuple[dict[str, str], dict[str, np.ndarray]]:
    """Reads and validates a tinynet safetensors file: (metadata, tensors)."""
    from safetensors import SafetensorError
    from safetensors.numpy import load

    path = _fspath(path, owner)
    where = f"{owner}: {path!r}"
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            raise ValueError(f"{where} is empty (0 bytes); not a safetensors file")
        if size < 8:
            raise ValueError(f"{where} is truncated or not a safetensors file: {size} bytes, "
                             f"shorter than the 8-byte header length")
        n = int.from_bytes(file.read(8), "little")
        if n > MAX_HEADER_BYTES:
            raise ValueError(f"{where} is not a safetensors file or is corrupt: its header "
                             f"claims {n} bytes, more than the {MAX_HEADER_BYTES}-byte limit")
        if n > size - 8:
            raise ValueError(f"{where} is truncated or not a safetensors file: its header "
                             f"claims {n} bytes but only {size - 8} follow")
        header_bytes = file.read(n)
        header = _loads(header_bytes, "the safetensors header", where)
        if not isinstance(header, dict):
            raise ValueError(f"{where} is not a safetensors file: its header is not a JSON "
                             f"object")
        data_len = 0
        for key, info in header.items():
            if key == "__metadata__":
                continue
            offsets = info.get("data_offsets") if isinstance(info, dict) else None
            if (not isinstance(offsets, list) or len(offsets) != 2
                    or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
                raise ValueError(f"{where} is corrupt: tensor {key!r} has no valid data_offsets")
            dtype, shape = info.get("dtype"), info.get("shape")
            if dtype not in _DTYPE_SIZES:
                raise ValueError(f"{where} is not a valid safetensors file for tinynet: tensor "
                                 f"{key!r} has dtype {dtype!r:.40}, which NumPy cannot read")
            if (not isinstance(shape, list) or not all(
                    isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape)
                    or not 0 <= offsets[0] <= offsets[1]
                    or math.prod(shape) * _DTYPE_SIZES[dtype] != offsets[1] - offsets[0]):
                raise ValueError(f"{where} is not a valid safetensors file: tensor {key!r} "
                                 f"({dtype}, shape {shape!r:.80}) does not fit its data_offsets "
                                 f"{offsets}")
            data_len = max(data_len, offsets[1])
        if 8 + n + data_len != size:
            raise ValueError(f"{where} is truncated or corrupt: the header describes "
                             f"{data_len} bytes of tensor data but the file holds "
                             f"{size - 8 - n}")
        file.seek(0)
        blob = file.read(size)
    if len(blob) != size:
        raise ValueError(f"{where} changed while being read")
    try:
        tensors = load(blob)
    except (SafetensorError, ValueError, TypeError, KeyError, OverflowError, MemoryError) as exc:
        raise ValueError(f"{where} is not a valid safetensors file: {exc}") from None
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise ValueError(f"{where} is a safetensors file but not a tinynet file (no "
                         f"'format': 'tinynet' entry in its metadata)")
    version = metadata.get("format_version")
    if not isinstance(version, str) or not re.fullmatch(r"[0-9]{1,9}", version) \
            or int(version) < 1:
        raise ValueError(f"{where}: invalid format_version {version!r}, expected a positive "
                         f"integer")
    if int(version) > FORMAT_VERSION:
        raise ValueError(f"{where} has format_version {int(version)}, newer than this tinynet "
                         f"reads ({FORMAT_VERSION}); upgrade tinynet to load it")
    if metadata.get("kind") not in ("model", "weights"):
        raise ValueError(f"{where}: metadata 'kind' must be 'model' or 'weights', got "
                         f"{metadata.get('kind')!r}")
    return metadata, tensors


def _check_tensor(tensors: dict, key: str, shape: tuple, dtype: Any, where: str) -> np.ndarray:
    arr = tensors.get(key)
    if arr is None:
        raise ValueError(f"{where}: tensor {key!r} is missing from the file")
    if arr.dtype != dtype:
        raise ValueError(f"{where}: tensor {key!r} has dtype {arr.dtype}, expected "
                         f"{np.dtype(dtype)}")
    if arr.shape != tuple(shape):
        raise ValueError(f"{where}: tensor {key!r} has shape {arr.shape}, expected "
                         f"{tuple(shape)}")
    return arr


def _match_weights(model: Any, tensors: dict[str, np.ndarray], where: str,
                   allow_optimizer: bool) -> list[tuple[Any, np.ndarray]]:
    """Pairs each parameter with its tensor, checking names, shapes and dtypes."""
    pairs = []
    names = _weight_names(model, where)
    for key, p in names:
        pairs.append((p, _check_tensor(tensors, key, p.value.shape, np.float32, where)))
    known = {key for key, _ in names}
    extra = sorted(k for k in tensors if k not in known
                   and not (allow_optimizer and k.startswith(OPTIMIZER_PREFIX)))
    if extra:
        raise ValueError(f"{where}: the file has tensors the model does not: {extra[:10]}"
                         f"{' ...' if len(extra) > 10 else ''}")
    return pairs


def load_weights(model: Any, path: str | os.PathLike) -> None:
    """Loads weights saved by :func:`save_weights` (or :func:`save_model`) into ``model``.

    Tensors are matched by name (``<layer_name>/<param_name>``); the model must be
    built. Everything is checked before any weight changes; optimizer state in a full
    model file is ignored.

    Raises:
        ValueError: the file is corrupt or foreign, a tensor is missing or extra, or a
            shape or dtype differs (the message names the tensor).
    """
    owner = "load_weights"
    _check_model(model, owner)
    where = f"{owner}: {os.fspath(path)!r}" if isinstance(path, (str, os.PathLike)) else owner
    if not model.built or not all(layer.built for layer in model.layers):
        raise ValueError(f"{where}: model {model.name!r} is not built; build it (or call it on "
                         f"data) before loading weights")
    _, tensors = _read(path, owner)
    for p, arr in _match_weights(model, tensors, where, allow_optimizer=True):
        p.value[...] = arr


# -- load_model -----------------------------------------------------------------------------------
def _check_model_config(config: Any, where: str) -> dict:
    bad = f"{where}: invalid model_config:"
    if not isinstance(config, dict):
        raise ValueError(f"{bad} expected a JSON object, got {type(config).__name__}")
    if not isinstance(config.get("name"), str) or not config["name"]:
        raise ValueError(f"{bad} 'name' must be a non-empty string")
    layers = config.get("layers")
    if not isinstance(layers, list):
        raise ValueError(f"{bad} 'layers' must be a list")
    known = registry.registered_layers()
    for i, entry in enumerate(layers):
        if not isinstance(entry, dict):
            raise ValueError(f"{bad} layer {i} must be a JSON object")
        class_name = entry.get("class_name")
        if not isinstance(class_name, str):
            raise ValueError(f"{bad} layer {i} has no string 'class_name'")
        if not registry.plain_name(class_name) or class_name not in known:
            raise ValueError(f"{where}: unknown layer class {class_name!r} (layer {i}); "
                             f"register custom layers with @tinynet.saving.register_layer")
        if not isinstance(entry.get("config"), dict):
            raise ValueError(f"{bad} layer {i} ({class_name}) has no 'config' object")
    shape = config.get("build_input_shape")
    if shape is not None and (not isinstance(shape, list) or not all(
            d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
            for d in shape)):
        raise ValueError(f"{bad} 'build_input_shape' must be null or a list of "
                         f"non-negative ints and nulls, got {shape!r}")
    return config


def _build_model(config: dict, where: str, limit: int) -> Any:
    """Rebuilds the model; its layers may create at most ``limit`` weight scalars in all,
    checked before each weight is allocated (a lying config cannot exhaust memory)."""
    sequential = registry.model_class("Sequential")

    sizes: dict[tuple[int, str], int] = {}
    made: list = []

    def limited(cls: type) -> Any:
        def from_config(layer_config: dict) -> Any:
            layer = cls.from_config(layer_config)
            real = layer.add_weight

            def add_weight(name: str, shape: tuple, *args: Any, **kwargs: Any) -> Any:
                try:
                    sizes[id(layer), name] = math.prod(max(int(d), 0) for d in shape)
                except (TypeError, ValueError):
                    pass  # add_weight itself reports a malformed shape
                if sum(sizes.values()) > limit:
                    raise ValueError(f"the config asks for more than {limit} weight values, "
                                     f"more than the file's tensors hold")
                return real(name, shape, *args, **kwargs)

            layer.add_weight = add_weight
            made.append(layer)
            return layer

        return types.SimpleNamespace(from_config=from_config)

    try:
        return sequential.from_config(
            config, custom_objects={name: limited(cls)
                                    for name, cls in registry.registered_layers().items()})
    except (TypeError, ValueError, KeyError, IndexError, MemoryError, OverflowError) as exc:
        raise ValueError(f"{where}: cannot rebuild the model from its config: "
                         f"{type(exc).__name__}: {exc}") from None
    finally:
        for layer in made:
            vars(layer).pop("add_weight", None)


def _compile(model: Any, config: Any, where: str) -> None:
    from tinynet import losses, metrics as metrics_module, optimizers

    bad = f"{where}: invalid compile_config:"
    if not isinstance(config, dict):
        raise ValueError(f"{bad} expected a JSON object or null")
    opt, loss, metric_entries = config.get("optimizer"), config.get("loss"), config.get("metrics")
    for arg, value in (("optimizer", opt), ("loss", loss)):
        if value is None and arg == "loss":
            continue
        if (not isinstance(value, dict) or not isinstance(value.get("class_name"), str)
                or not isinstance(value.get("config"), dict)):
            raise ValueError(f"{bad} {arg!r} must be {{'class_name': str, 'config': object}}")
    if not isinstance(metric_entries, list):
        raise ValueError(f"{bad} 'metrics' must be a list")
    public = {n: getattr(metrics_module, n) for n in metrics_module.__all__}
    try:
        optimizer = optimizers.get(opt)
        loss_obj = losses.get(loss) if loss is not None else None
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ValueError(f"{bad} {type(exc).__name__}: {exc}") from None
    metric_list, dropped = [], []
    for entry in metric_entries:
        try:
            if isinstance(entry, str):
                metric_list.append(metrics_module.get(entry, loss=loss_obj))
                continue
            cls = public.get(entry.get("class_name")) if isinstance(entry, dict) else None
            if (not isinstance(cls, type) or not issubclass(cls, metrics_module.Metric)
                    or cls in (metrics_module.Metric, metrics_module.MeanMetricWrapper)
                    or not isinstance(entry.get("config"), dict)):
                raise ValueError("not a built-in metric")
            metric_list.append(cls.from_config(entry["config"]))
        except (TypeError, ValueError, KeyError, OverflowError):
            dropped.append(entry)
    if dropped:
        warnings.warn(f"{where}: these metrics cannot be rebuilt from the file and were left "
                      f"out (compile the model again to add them): {dropped!r:.300}",
                      stacklevel=3)
    try:
        model.compile(optimizer=optimizer, loss=loss_obj, metrics=metric_list)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{bad} {type(exc).__name__}: {exc}") from None


def _restore_training_state(model: Any, state: Any, tensors: dict, weights: set[str],
                            where: str) -> Callable:
    """Validates the training state; returns a function that applies it (cannot fail)."""
    bad = f"{where}: invalid training_state:"
    if not isinstance(state, dict) or not isinstance(state.get("layer_rngs"), dict):
        raise ValueError(f"{bad} expected an object with 'layer_rngs'")
    layers = {layer.name: layer for layer in model.layers}
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


def load_model(path: str | os.PathLike, *, compile: bool = True) -> Any:
    """Loads a model saved by :func:`save_model` (``tn.load_model``).

    The model is rebuilt from its config (layer classes from the registry only),
    its weights are set bitwise, and, with ``compile=True`` and a compiled original, it
    is compiled with the saved optimizer, loss and metrics and gets back the optimizer
    state (slots and iterations) and the random generator states, so ``fit`` continues
    exactly where the original stopped.

    Args:
        path: A file written by :func:`save_model`.
        compile: ``False`` skips the compile settings and training state.

    Raises:
        ValueError: the file is empty, truncated, corrupt, not safetensors, not a tinynet
            model file (e.g. weights-only), of a newer format version, names an unknown
            layer class, or its tensors do not match the model (missing, extra, shape or
            dtype); the message says which.
    """
    owner = "load_model"
    if not isinstance(compile, bool):
        raise TypeError(f"{owner}: compile must be a bool, got {compile!r}")
    metadata, tensors = _read(path, owner)
    where = f"{owner}: {os.fspath(path)!r}"
    if metadata["kind"] != "model":
        raise ValueError(f"{where} holds weights only (written by save_weights); build the "
                         f"model and call load_weights instead")
    for key in ("model_config", "compile_config", "training_state"):
        if not isinstance(metadata.get(key), str):
            raise ValueError(f"{where}: metadata entry {key!r} is missing")
    config = _check_model_config(_loads(metadata["model_config"], "model_config", where), where)
    compile_config = _loads(metadata["compile_config"], "compile_config", where)
    state = _loads(metadata["training_state"], "training_state", where)
    model = _build_model(config, where,
                         sum(arr.size for arr in tensors.values()) + WEIGHT_SLACK)
    pairs = _match_weights(model, tensors, where, allow_optimizer=True)
    if compile and compile_config is not None:
        _compile(model, compile_config, where)
    apply_state = None
    if compile:
        weights = {key for key, _ in _weight_names(model, where)}
        apply_state = _restore_training_state(model, state, tensors, weights, where)
    for p, arr in pairs:
        p.value[...] = arr
    if apply_state is not None:
        apply_state()
    return model
