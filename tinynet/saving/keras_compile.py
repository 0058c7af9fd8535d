"""Compile settings between tinynet and Keras 3 ``.keras`` files: tinynet's optimizer,
loss, loss weights and metrics as Keras's ``compile_config``, and Keras's back (keys
tinynet's classes lack dropped when neutral, else refused)."""

from __future__ import annotations

from typing import Any

from tinynet.saving.keras_config import neutral

__all__ = ["keras_compile_config", "tinynet_compile_config"]


def _keras_object(entry: Any, module: str) -> Any:
    if isinstance(entry, dict) and "class_name" in entry:
        return {"module": module, "class_name": entry["class_name"],
                "config": entry.get("config", {}), "registered_name": None}
    return entry


def keras_compile_config(tinynet_config: dict) -> dict:
    """tinynet's compile settings (``saving.config.compile_config``) as Keras's
    ``compile_config``."""
    opt = dict(tinynet_config["optimizer"])
    opt_config = dict(opt["config"])
    lr = opt_config.get("learning_rate")
    if isinstance(lr, dict):
        opt_config["learning_rate"] = _keras_object(lr, "keras.optimizers.schedules")
    out = {"optimizer": {"module": "keras.optimizers", "class_name": opt["class_name"],
                         "config": opt_config, "registered_name": None}}
    if "outputs" in tinynet_config:
        outputs = tinynet_config["outputs"]
        out["loss"] = [_keras_object(o["loss"], "keras.losses") for o in outputs]
        weights = [o.get("loss_weight") for o in outputs]
        out["loss_weights"] = None if all(w is None for w in weights) else [
            1.0 if w is None else w for w in weights]
        out["metrics"] = [[_keras_object(m, "keras.metrics") for m in o["metrics"]]
                          for o in outputs]
    else:
        out["loss"] = _keras_object(tinynet_config["loss"], "keras.losses")
        out["loss_weights"] = tinynet_config.get("loss_weight")
        out["metrics"] = [_keras_object(m, "keras.metrics") for m in tinynet_config["metrics"]]
    out.update(weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
               jit_compile="auto")
    return out


def _strip(entry: Any, base: Any, what: str, where: str) -> Any:
    """A Keras loss / metric / optimizer entry as tinynet's ``{"class_name", "config"}``:
    keys tinynet's class (``base``: a default instance's config) lacks are dropped when
    neutral, else refused."""
    if not isinstance(entry, dict):
        return entry
    config = dict(entry.get("config") or {})
    out = {}
    for key, value in config.items():
        if base is None or key in base:
            out[key] = value
        elif not (neutral(key, value) or key in ("reduction", "ignore_class")
                  and value in ("sum_over_batch_size", None)):
            raise ValueError(f"{where}: {what} {entry.get('class_name')!r:.80} has {key}="
                             f"{value!r:.80}, which tinynet's does not support")
    return {"class_name": entry.get("class_name"), "config": out}


def _default_config(kind: str, name: Any) -> dict | None:
    from tinynet import losses, optimizers

    try:
        obj = (optimizers.get if kind == "optimizer" else losses.get)(name)
        return obj.get_config()
    except (TypeError, ValueError, KeyError):
        return None


def tinynet_compile_config(config: Any, where: str) -> dict | None:
    """Keras's ``compile_config`` as tinynet's (``saving.config.compile_model`` reads it);
    ``None`` for a model compiled without an optimizer."""
    from tinynet import losses

    if not isinstance(config, dict) or not config.get("optimizer"):
        return None
    opt = config["optimizer"]
    if isinstance(opt, str):
        opt = {"class_name": opt, "config": {}}
    if not isinstance(opt, dict):
        raise ValueError(f"{where}: invalid compile_config: 'optimizer' must be an object")
    opt_config = dict(opt.get("config") or {})
    if opt_config.get("use_ema"):
        raise ValueError(f"{where}: the optimizer uses use_ema=True, which tinynet does not "
                         f"support")
    lr = opt_config.get("learning_rate")
    if isinstance(lr, dict):
        opt_config["learning_rate"] = {"class_name": lr.get("class_name"),
                                       "config": lr.get("config")}
    opt = _strip({**opt, "config": opt_config}, _default_config("optimizer", opt.get("class_name")),
                 "optimizer", where)

    def loss_entry(loss: Any) -> Any:
        if loss is None:
            return None
        if isinstance(loss, str):
            try:
                return losses.serialize(losses.get(loss))
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{where}: invalid compile_config: {exc}") from None
        if isinstance(loss, dict) and loss.get("class_name") == "function":
            return loss_entry(loss.get("config"))
        return _strip(loss, _default_config("loss", loss.get("class_name")
                                            if isinstance(loss, dict) else None), "loss", where)

    def metric_entry(metric: Any) -> Any:
        if isinstance(metric, dict) and metric.get("class_name") != "function":
            inner = {k: v for k, v in (metric.get("config") or {}).items() if k != "dtype"}
            return {"class_name": metric.get("class_name"), "config": inner}
        if isinstance(metric, dict):
            return metric.get("config")
        return metric

    loss, metrics, weights = config.get("loss"), config.get("metrics"), config.get("loss_weights")
    if isinstance(loss, list):
        metrics = metrics if isinstance(metrics, list) else [[] for _ in loss]
        weights = weights if isinstance(weights, list) else [None] * len(loss)
        return {"optimizer": opt, "outputs": [
            {"loss": loss_entry(l), "loss_weight": w,
             "metrics": [metric_entry(m) for m in (ms if isinstance(ms, list) else [ms])]}
            for l, w, ms in zip(loss, weights, metrics)]}
    if isinstance(loss, dict) and "class_name" not in loss:
        raise ValueError(f"{where}: a compile_config with losses by output name (a dict) is "
                         f"not supported; tinynet reads a loss or a list of losses")
    return {"optimizer": opt, "loss": loss_entry(loss),
            "metrics": [metric_entry(m) for m in (metrics or [])], "loss_weight": weights}
