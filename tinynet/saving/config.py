"""The model and compile configurations in a file: written with registered class names,
read back type-checked, rebuilt within a bound on the weights they may allocate."""

from __future__ import annotations

import math
import types
import warnings
from typing import Any


from tinynet.layers import registry


def model_config(model: Any) -> dict:
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

def compile_config(model: Any) -> dict | None:
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

def check_model_config(config: Any, where: str) -> dict:
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

def build_model(config: dict, where: str, limit: int) -> Any:
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

def compile_model(model: Any, config: Any, where: str) -> None:
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
