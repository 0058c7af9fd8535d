"""The model and compile configurations in a file: written with registered class names,
read back type-checked, rebuilt within a bound on the weights they may allocate."""

from __future__ import annotations

import math
import types
import warnings
from typing import Any


from tinynet.layers import registry


def _all_layers(model: Any) -> list:
    """Every layer of ``model`` and of the models inside it (the models included)."""
    out = []
    for layer in model.layers:
        out.append(layer)
        if isinstance(layer, registry.model_classes()):
            out += _all_layers(layer)
    return out


def model_config(model: Any) -> dict:
    """``{"class_name": the model's class, "config": model.get_config()}``, every class
    in it checked to be registered (so ``load_model`` can rebuild it)."""
    for layer in _all_layers(model):
        registry.registered_name(type(layer))
    return {"class_name": registry.registered_name(type(model)), "config": model.get_config()}

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
    """The compile settings as JSON: the optimizer, and per output the loss, its weight
    and the metrics (a model with one output keeps the flat form)."""
    if not getattr(model, "compiled", False):
        return None
    from tinynet import losses, optimizers

    def loss_entry(loss: Any) -> Any:
        return losses.serialize(loss) if loss is not None else None

    outputs = len(model.output_names)
    per_output: list[list] = [[] for _ in range(outputs)]
    loss_of = model.loss if outputs > 1 else [model.loss]
    for (i, metric), key in zip(model._metric_slots, model._metric_keys):
        per_output[i].append(_metric_entry(key, metric, loss_of[i]))
    config = {"optimizer": optimizers.serialize(model.optimizer)}
    if outputs == 1:
        config.update(loss=loss_entry(model.loss), metrics=per_output[0],
                      loss_weight=model.loss_weights)
    else:
        config["outputs"] = [{"loss": loss_entry(l), "loss_weight": w, "metrics": m}
                             for l, w, m in zip(model.loss, model.loss_weights, per_output)]
    return config

def check_model_config(config: Any, where: str) -> dict:
    """The file's model config as ``{"class_name", "config"}`` (a bare config, as files
    written before functional models hold, is a ``Sequential``'s), type-checked down to
    the models inside it."""
    bad = f"{where}: invalid model_config:"
    if not isinstance(config, dict):
        raise ValueError(f"{bad} expected a JSON object, got {type(config).__name__}")
    if "class_name" in config:
        class_name, inner = config["class_name"], config.get("config")
        if not isinstance(class_name, str) or class_name not in {
                cls.__name__ for cls in registry.model_classes()}:
            raise ValueError(f"{bad} 'class_name' must name a model class, got {class_name!r}")
    else:
        class_name, inner = "Sequential", config
    _check_container(inner, bad, where)
    return {"class_name": class_name, "config": inner}


def _check_container(config: Any, bad: str, where: str) -> None:
    if not isinstance(config, dict):
        raise ValueError(f"{bad} expected a JSON object, got {type(config).__name__}")
    if not isinstance(config.get("name"), str) or not config["name"]:
        raise ValueError(f"{bad} 'name' must be a non-empty string")
    layers = config.get("layers")
    if not isinstance(layers, list):
        raise ValueError(f"{bad} 'layers' must be a list")
    known = registry.registered_layers()
    models = registry.model_classes()
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
        if known[class_name] in models:
            _check_container(entry["config"], bad, where)
    shape = config.get("build_input_shape")
    if shape is not None and (not isinstance(shape, list) or not all(
            d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
            for d in shape)):
        raise ValueError(f"{bad} 'build_input_shape' must be null or a list of "
                         f"non-negative ints and nulls, got {shape!r}")

def build_model(config: dict, where: str, limit: int) -> Any:
    """Rebuilds the model; its layers may create at most ``limit`` weight scalars in all,
    checked before each weight is allocated (a lying config cannot exhaust memory)."""
    model_cls = registry.model_class(config["class_name"])

    sizes: dict[tuple[int, str], int] = {}
    made: list = []

    takes = "takes_custom_objects"

    def limited(cls: type) -> Any:
        def from_config(layer_config: dict, custom_objects: dict | None = None) -> Any:
            layer = (cls.from_config(layer_config, custom_objects=custom_objects)
                     if getattr(cls, takes, False) else cls.from_config(layer_config))
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

        return types.SimpleNamespace(from_config=from_config, **{takes: getattr(cls, takes, False)})

    try:
        return model_cls.from_config(
            config["config"], custom_objects={name: limited(cls)
                                              for name, cls in registry.registered_layers().items()})
    except (TypeError, ValueError, KeyError, IndexError, MemoryError, OverflowError) as exc:
        raise ValueError(f"{where}: cannot rebuild the model from its config: "
                         f"{type(exc).__name__}: {exc}") from None
    finally:
        for layer in made:
            vars(layer).pop("add_weight", None)

def _loss(entry: Any, bad: str) -> Any:
    from tinynet import losses

    if entry is None:
        return None
    if (not isinstance(entry, dict) or not isinstance(entry.get("class_name"), str)
            or not isinstance(entry.get("config"), dict)):
        raise ValueError(f"{bad} 'loss' must be {{'class_name': str, 'config': object}}")
    try:
        return losses.get(entry)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ValueError(f"{bad} {type(exc).__name__}: {exc}") from None


def _metrics(entries: Any, loss_obj: Any, bad: str, dropped: list) -> list:
    from tinynet import metrics as metrics_module

    if not isinstance(entries, list):
        raise ValueError(f"{bad} 'metrics' must be a list")
    public = {n: getattr(metrics_module, n) for n in metrics_module.__all__}
    out = []
    for entry in entries:
        try:
            if isinstance(entry, str):
                out.append(metrics_module.get(entry, loss=loss_obj))
                continue
            cls = public.get(entry.get("class_name")) if isinstance(entry, dict) else None
            if (not isinstance(cls, type) or not issubclass(cls, metrics_module.Metric)
                    or cls in (metrics_module.Metric, metrics_module.MeanMetricWrapper)
                    or not isinstance(entry.get("config"), dict)):
                raise ValueError("not a built-in metric")
            out.append(cls.from_config(entry["config"]))
        except (TypeError, ValueError, KeyError, OverflowError):
            dropped.append(entry)
    return out


def compile_model(model: Any, config: Any, where: str) -> None:
    from tinynet import optimizers

    bad = f"{where}: invalid compile_config:"
    if not isinstance(config, dict):
        raise ValueError(f"{bad} expected a JSON object or null")
    opt = config.get("optimizer")
    if (not isinstance(opt, dict) or not isinstance(opt.get("class_name"), str)
            or not isinstance(opt.get("config"), dict)):
        raise ValueError(f"{bad} 'optimizer' must be {{'class_name': str, 'config': object}}")
    try:
        optimizer = optimizers.get(opt)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ValueError(f"{bad} {type(exc).__name__}: {exc}") from None
    dropped: list = []
    if "outputs" in config:
        outputs = config["outputs"]
        if not isinstance(outputs, list) or not all(isinstance(o, dict) for o in outputs):
            raise ValueError(f"{bad} 'outputs' must be a list of objects")
        loss = [_loss(o.get("loss"), bad) for o in outputs]
        weights = [o.get("loss_weight") for o in outputs]
        metrics = [_metrics(o.get("metrics"), l, bad, dropped) for o, l in zip(outputs, loss)]
    else:
        loss = _loss(config.get("loss"), bad)
        weights = config.get("loss_weight")
        metrics = _metrics(config.get("metrics"), loss, bad, dropped)
    if dropped:
        warnings.warn(f"{where}: these metrics cannot be rebuilt from the file and were left "
                      f"out (compile the model again to add them): {dropped!r:.300}",
                      stacklevel=3)
    try:
        model.compile(optimizer=optimizer, loss=loss, metrics=metrics, loss_weights=weights)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ValueError(f"{bad} {type(exc).__name__}: {exc}") from None
