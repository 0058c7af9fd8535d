"""The model and compile configurations in a file: written with registered class names,
read back type-checked, rebuilt within a bound on the weights they may allocate."""

from __future__ import annotations

import json
import math
import warnings
from typing import Any


from tinynet.layers import registry
from tinynet.saving.files import MAX_LAYERS, MAX_NESTING, SCRATCH_VALUES, WEIGHT_SLACK


def _all_layers(model: Any) -> list:
    """Every layer of ``model`` and of the models inside it (the models included), in
    depth-first order; iterative, so no nesting depth meets the recursion limit."""
    out = []
    stack = [iter(model.layers)]
    models = registry.model_classes()
    while stack:
        layer = next(stack[-1], None)
        if layer is None:
            stack.pop()
            continue
        out.append(layer)
        if isinstance(layer, models):
            stack.append(iter(layer.layers))
    return out


def model_config(model: Any, owner: str = "save_model") -> dict:
    """``{"class_name": the model's class, "config": model.get_config()}``. A layer class
    is written by its registered name, or by its class name when it is not registered
    (``load_model`` then needs it in ``custom_objects`` or a ``custom_object_scope``);
    a class name that names another registered class is refused."""
    known = registry.registered_layers()
    for layer in [model, *_all_layers(model)]:
        cls = type(layer)
        name = registry.registered_name_or_class(cls)
        taken = known.get(name)
        if not registry.plain_name(name) or (taken is not None and taken is not cls):
            what = (f"names another registered class, {taken.__module__}."
                    f"{taken.__qualname__}" if taken is not None else "is not a plain name")
            raise ValueError(f"{owner}: layer class {cls.__module__}.{cls.__qualname__} would "
                             f"be saved as {name!r}, which {what}; rename the class, or "
                             f"register it under another name with "
                             f"@tinynet.saving.register_keras_serializable(name=...) or "
                             f"@tinynet.saving.register_layer(name=...)")
    try:
        config = model.get_config()
    except NotImplementedError as exc:
        raise ValueError(f"{owner}: {exc}") from None
    try:
        json.dumps(config)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{owner}: the model's config is not JSON-able ({exc}); a custom "
                         f"layer's get_config() must return JSON-able values") from None
    return {"class_name": registry.registered_name_or_class(type(model)), "config": config}

def _metric_entry(key: str, metric: Any, loss: Any) -> Any:
    from tinynet import metrics as metrics_module

    try:
        rebuilt = metrics_module.get(key, loss=loss)
    except (TypeError, ValueError):
        rebuilt = None
    if (rebuilt is not None and type(rebuilt) is type(metric)
            and rebuilt.get_config() == metric.get_config()):
        return key
    from tinynet.custom_objects import registered_name

    cls = type(metric)
    public = getattr(metrics_module, cls.__name__, None) is cls
    return {"class_name": cls.__name__ if public else registered_name(cls),
            "config": metric.get_config()}

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
    weighted: list[list] = [[] for _ in range(outputs)]  # compile(weighted_metrics=...)
    for (i, slot), key in zip(model._weighted_slots, getattr(model, "_weighted_keys", [])):
        weighted[i].append(_metric_entry(key, slot.metric, loss_of[i]))
    config = {"optimizer": optimizers.serialize(model.optimizer)}
    if outputs == 1:
        config.update(loss=loss_entry(model.loss), metrics=per_output[0],
                      loss_weight=model.loss_weights)
        if weighted[0]:
            config["weighted_metrics"] = weighted[0]
    else:
        config["outputs"] = [{"loss": loss_entry(l), "loss_weight": w, "metrics": m,
                              **({"weighted_metrics": wm} if wm else {})}
                             for l, w, m, wm in zip(model.loss, model.loss_weights, per_output,
                                                    weighted)]
    try:
        json.dumps(config)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"save_model: the compile settings are not JSON-able ({exc}); a "
                         f"custom loss's or metric's get_config() must return JSON-able "
                         f"values") from None
    return config

def layer_classes(custom_objects: dict | None = None) -> dict[str, type]:
    """The layer classes a model config may name, by name: the layer registry (built-in
    and registered layers, with those of ``register_keras_serializable``; the model
    classes), then the active ``custom_object_scope`` blocks and ``custom_objects`` (each later
    one wins, as in Keras). Only ``Layer`` subclasses; nothing is imported."""
    from tinynet.layers.layer import Layer
    from tinynet.custom_objects import scoped_objects

    table = registry.registered_layers()
    for objects in (scoped_objects(), custom_objects or {}):
        for key, obj in objects.items():
            if isinstance(key, str) and isinstance(obj, type) and issubclass(obj, Layer):
                table[key] = obj
                if ">" in key:
                    table[key.split(">", 1)[1]] = obj
    return table


def check_model_config(config: Any, where: str, custom_objects: dict | None = None) -> dict:
    """The file's model config as ``{"class_name", "config"}`` (a bare config, as files
    written before functional models hold, is a ``Sequential``'s), type-checked down to
    the models inside it; every layer class must be known by name (the layer registry,
    registered objects, the active scopes or ``custom_objects``)."""
    bad = f"{where}: invalid model_config:"
    if not isinstance(config, dict):
        raise ValueError(f"{bad} expected a JSON object, got {type(config).__name__}")
    known = layer_classes(custom_objects)
    if "class_name" in config:
        class_name, inner = config["class_name"], config.get("config")
        if not isinstance(class_name, str) or class_name not in {
                cls.__name__ for cls in registry.model_classes()}:
            if not (isinstance(class_name, str) and registry.plain_name(class_name)):
                raise ValueError(f"{bad} 'class_name' must name a model class, got "
                                 f"{class_name!r:.80}")
            if not _subclassed_model(known.get(class_name)):
                raise ValueError(f"{where}: unknown model class {class_name!r}; decorate the "
                                 f"class with @tinynet.saving.register_keras_serializable(), "
                                 f"or pass it to load_model in "
                                 f"custom_objects={{{class_name!r}: {class_name}}}")
            if not isinstance(inner, dict) or not isinstance(inner.get("name"), str):
                raise ValueError(f"{bad} a subclassed model's config must be an object with "
                                 f"a 'name' string")
            return {"class_name": class_name, "config": inner}
    else:
        class_name, inner = "Sequential", config
    _check_container(inner, bad, where, known)
    return {"class_name": class_name, "config": inner}


def _check_limits(config: dict, bad: str, known: dict) -> None:
    """Counts what a (type-checked) container config would build, refusing more than
    MAX_LAYERS layers, layer calls or call inputs in all, or models nested more than
    MAX_NESTING deep (each refused before anything is built)."""
    models = registry.model_classes()
    layers = calls = refs = 0
    stack = [(config, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_NESTING:
            raise ValueError(f"{bad} models are nested more than {MAX_NESTING} deep "
                             f"(MAX_NESTING)")
        for entry in container["layers"]:
            layers += 1
            nodes = entry.get("inbound_nodes")
            if isinstance(nodes, list):
                calls += len(nodes)
                refs += sum(len(n["inputs"]) for n in nodes
                            if isinstance(n, dict) and isinstance(n.get("inputs"), list))
            if known[entry["class_name"]] in models:
                stack.append((entry["config"], depth + 1))
        for count, what in ((layers, "layers"), (calls, "layer calls (inbound nodes)"),
                            (refs, "call inputs (inbound node inputs)")):
            if count > MAX_LAYERS:
                raise ValueError(f"{bad} the model has more than {MAX_LAYERS} {what}, "
                                 f"counting those of the models inside it (MAX_LAYERS)")


def _subclassed_model(cls: Any) -> bool:
    """Whether ``cls`` is a subclass of ``tn.Model`` that defines ``call()`` (rebuilt
    from its constructor arguments, not from a layer graph)."""
    return (isinstance(cls, type) and issubclass(cls, registry.model_classes())
            and bool(getattr(cls, "_has_call", False)))


def _check_container(config: Any, bad: str, where: str, known: dict,
                     depth: int = 1) -> None:
    """Type-checks a Sequential's or functional model's config, and those of the models
    inside it (``depth``: how deep this one is, the outermost 1)."""
    if not isinstance(config, dict):
        raise ValueError(f"{bad} expected a JSON object, got {type(config).__name__}")
    if not isinstance(config.get("name"), str) or not config["name"]:
        raise ValueError(f"{bad} 'name' must be a non-empty string")
    layers = config.get("layers")
    if not isinstance(layers, list):
        raise ValueError(f"{bad} 'layers' must be a list")
    models = registry.model_classes()
    for i, entry in enumerate(layers):
        if not isinstance(entry, dict):
            raise ValueError(f"{bad} layer {i} must be a JSON object")
        class_name = entry.get("class_name")
        if not isinstance(class_name, str):
            raise ValueError(f"{bad} layer {i} has no string 'class_name'")
        if not registry.plain_name(class_name):
            raise ValueError(f"{where}: unknown layer class {class_name!r:.80} (layer {i}); "
                             f"a layer class is named by a plain identifier")
        if class_name not in known:
            raise ValueError(f"{where}: unknown layer class {class_name!r} (layer {i}); "
                             f"decorate the class with "
                             f"@tinynet.saving.register_keras_serializable() (or "
                             f"@tinynet.saving.register_layer), or pass it to load_model in "
                             f"custom_objects={{{class_name!r}: {class_name}}}")
        if not isinstance(entry.get("config"), dict):
            raise ValueError(f"{bad} layer {i} ({class_name}) has no 'config' object")
        if known[class_name] in models:
            if depth >= MAX_NESTING:
                raise ValueError(f"{bad} models are nested more than {MAX_NESTING} deep "
                                 f"(MAX_NESTING)")
            _check_container(entry["config"], bad, where, known, depth + 1)
    if depth == 1:
        _check_limits(config, bad, known)
    shape = config.get("build_input_shape")
    if shape is not None and (not isinstance(shape, list) or not all(
            d is None or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
            for d in shape)):
        raise ValueError(f"{bad} 'build_input_shape' must be null or a list of "
                         f"non-negative ints and nulls, got {shape!r}")

def build_model(config: dict, where: str, limit: int,
                custom_objects: dict | None = None, field: str = "model_config",
                limit_is: str | None = None) -> Any:
    """Rebuilds the model within a budget: its layers (and their sub-layers) may allocate
    at most ``limit`` values in all at build (weights, fixed statistics such as a
    ``Normalization``'s, buffers), each asked before it is allocated; a transient trial
    batch may hold at most ``max(limit, SCRATCH_VALUES)`` (a lying config cannot exhaust
    memory). Layer classes come from the registry, the registered objects, the active
    scopes and ``custom_objects`` (:func:`layer_classes`)."""
    from tinynet.layers import hooks

    table = layer_classes(custom_objects)
    builtin = {cls.__name__: cls for cls in registry.model_classes()}
    model_cls = builtin.get(config["class_name"]) or table[config["class_name"]]
    sizes: dict[tuple[int, str], int] = {}
    total = 0

    def check(layer: Any, what: str, shape: tuple, transient: bool = False) -> None:
        nonlocal total
        size = math.prod(shape)
        name = f"layer {layer.name!r} ({type(layer).__name__})"
        if transient:
            if size > max(limit, SCRATCH_VALUES):
                raise hooks.AllocationRefused(
                    f"{where}: {field}: {name} would allocate {size} values for {what}, "
                    f"shape {shape}, more than the {max(limit, SCRATCH_VALUES)} a load may "
                    f"allocate at once (SCRATCH_VALUES, or the file's budget if larger); "
                    f"refused before allocating")
            return
        key = (id(layer), what)
        why = limit_is or (f"the {limit - WEIGHT_SLACK} values its tensors hold plus "
                           f"WEIGHT_SLACK = {WEIGHT_SLACK}")
        new_total = total - sizes.get(key, 0) + size
        if new_total > limit:
            raise hooks.AllocationRefused(
                f"{where}: {field}: {name} would allocate {size} values for {what}, shape "
                f"{shape}, bringing the model to {new_total} values, more than the {limit} "
                f"the file allows ({why}); refused before allocating")
        sizes[key] = size
        total = new_total

    hook = hooks.allocation_check
    previous = getattr(hook, "check", None)
    hook.check = check
    try:
        return model_cls.from_config(config["config"], custom_objects=table)
    except hooks.AllocationRefused as exc:
        raise ValueError(str(exc)) from None
    except (TypeError, ValueError, KeyError, IndexError, MemoryError, OverflowError,
            NotImplementedError) as exc:
        raise ValueError(f"{where}: cannot rebuild the model from its {field}: "
                         f"{type(exc).__name__}: {exc}") from None
    finally:
        hook.check = previous

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
        raise ValueError(f"{bad} {type(exc).__name__}: {exc} (load_model(..., compile=False) "
                         f"loads the model without its compile settings)") from None


def _metric_class(entry: Any) -> Any:
    """The metric class a file's ``{"class_name", "config"}`` entry names: a built-in one,
    ``MeanMetricWrapper`` (its function by registered name), or a registered custom
    ``Metric`` subclass (by registered name only; nothing is imported)."""
    from tinynet import metrics as metrics_module
    from tinynet.custom_objects import resolve_class

    if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
        raise ValueError("not a {'class_name', 'config'} entry")
    name = entry.get("class_name")
    public = {n: getattr(metrics_module, n) for n in metrics_module.__all__}
    cls = public.get(name) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, metrics_module.Metric)):
        cls = resolve_class(name, metrics_module.Metric)
    if cls is None or cls is metrics_module.Metric:
        raise ValueError(f"unknown metric {name!r:.80}")
    return cls


def _metrics(entries: Any, loss_obj: Any, bad: str, dropped: list) -> list:
    from tinynet import metrics as metrics_module

    if not isinstance(entries, list):
        raise ValueError(f"{bad} 'metrics' must be a list")
    out = []
    for entry in entries:
        try:
            if isinstance(entry, str):
                out.append(metrics_module.get(entry, loss=loss_obj))
                continue
            out.append(_metric_class(entry).from_config(entry["config"]))
        except (TypeError, ValueError, KeyError, OverflowError) as exc:
            dropped.append(f"{entry!r:.200} ({exc})")
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
        weighted = [_metrics(o.get("weighted_metrics", []), l, bad, dropped)
                    for o, l in zip(outputs, loss)]
    else:
        loss = _loss(config.get("loss"), bad)
        weights = config.get("loss_weight")
        metrics = _metrics(config.get("metrics"), loss, bad, dropped)
        weighted = _metrics(config.get("weighted_metrics", []), loss, bad, dropped)
    if dropped:
        warnings.warn(f"{where}: these metrics cannot be rebuilt from the file and were left "
                      f"out (register custom metrics and their functions with "
                      f"@tinynet.saving.register_keras_serializable() or pass them in "
                      f"custom_objects; or compile the model again to add them): "
                      f"{'; '.join(dropped):.600}", stacklevel=3)
    try:
        model.compile(optimizer=optimizer, loss=loss, metrics=metrics, loss_weights=weights,
                      weighted_metrics=weighted)
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ValueError(f"{bad} {type(exc).__name__}: {exc}") from None
