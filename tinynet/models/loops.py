"""The loops of ``fit``, ``evaluate`` and ``predict``: epochs of batches from a data
adapter (:mod:`tinynet.models.data_adapter`), every hook through one
:class:`~tinynet.callbacks.CallbackList`, in Keras 3's order.

The model provides the steps (``_train_step``, ``_test_step``, ``_run_forward``) and
the logs' bookkeeping (``metrics_names``, ``_running_keys``,
``_reset_running_metrics``); these functions only order them.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np

from tinynet.callbacks.callback_list import CallbackList
from tinynet.models.weighting import accumulate, means

__all__ = ["train", "test", "predict"]

_RAN_OUT = ("Your input ran out of data; interrupting training. Make sure that your dataset "
            "or generator can generate at least `steps_per_epoch * epochs` batches.")


# -- a non-finite batch loss ------------------------------------------------------------------
# The step raises FloatingPointError before its update (the weights stay the last finite
# ones). The callbacks still see the batch, with a nan loss and metrics; unless one of them
# then stops training (TerminateOnNaN sets model.stop_training), fit raises that error.
def _train_batch(model: Any, batch: tuple, params: list, guard: list,
                 where: Callable[[], str]) -> tuple[float, list, FloatingPointError | None]:
    """One training step: ``(loss, metric values, None)``, or ``(nan, nans, error)``
    when the loss is not finite (nothing applied)."""
    xs, ys, sw = batch
    try:
        loss, values = model._train_step(xs, ys, params, guard, where, sw)
    except FloatingPointError as error:
        return math.nan, [math.nan] * (len(model.metrics_names) - 1), error
    return loss, values, None


def _raise_unless_stopped(model: Any, error: FloatingPointError | None) -> None:
    if error is not None and not model.stop_training:
        raise error


# -- fit ----------------------------------------------------------------------------------------
def train(model: Any, data: Any, val: Any, cbs: CallbackList, *, epochs: int,
          initial_epoch: int, validate_at: Callable[[int], bool], owner: str) -> dict:
    """Runs ``fit``'s epochs (Keras 3's hook order); returns the last epoch's logs.

    Each epoch's loss and metrics are means over its samples of the batch values, each
    measured on the forward pass before that batch's update; validation (``val``, at the
    epochs ``validate_at`` picks, 1-based) adds ``val_*`` entries.
    """
    keys, running_keys = model.metrics_names, model._running_keys
    params, guard = model._step_state()
    batch_begin = cbs.wants("on_train_batch_begin")
    batch_end = cbs.wants("on_train_batch_end")
    model.stop_training = False
    logs: dict = {}
    cbs.on_train_begin()
    for epoch in range(cbs.resume_epoch(initial_epoch), epochs):
        cbs.on_epoch_begin(epoch)
        batches = data.epoch()  # draws the shuffled order now, after on_epoch_begin
        model._reset_running_metrics()
        sums, seen = [0.0] * len(keys), 0
        for step, batch in enumerate(batches):
            if batch_begin:
                cbs.on_train_batch_begin(step)
            loss, values, error = _train_batch(
                model, batch, params, guard,
                lambda: f"{owner}: epoch {epoch + 1}, batch {step + 1}")
            seen += batch[0][0].shape[0]
            accumulate(sums, loss, values, batch[0][0].shape[0], running_keys)
            if batch_end:
                cbs.on_train_batch_end(step, means(keys, sums, seen, running_keys))
            _raise_unless_stopped(model, error)
            if model.stop_training:
                break
        data.end_epoch()
        if seen == 0:  # a generator that ran out before this epoch
            warnings.warn(_RAN_OUT, stacklevel=3)
            break
        logs = means(keys, sums, seen, running_keys)
        if val is not None and validate_at(epoch + 1):
            val_logs = test(model, val, cbs, f"{owner} (validation_data)")
            logs.update({f"val_{key}": v for key, v in val_logs.items()})
        cbs.on_epoch_end(epoch, logs)
        if getattr(data, "ran_out", False):
            warnings.warn(_RAN_OUT, stacklevel=3)
            break
        if model.stop_training:
            break
    cbs.on_train_end(logs)
    return logs


# -- evaluate, and fit's validation -------------------------------------------------------------
def test(model: Any, data: Any, cbs: CallbackList, owner: str) -> dict:
    """One pass over ``data`` in inference mode with the ``on_test_*`` hooks; returns the
    means of the batch loss and metrics over the samples."""
    keys, running_keys = model.metrics_names, model._running_keys
    batch_begin = cbs.wants("on_test_batch_begin")
    batch_end = cbs.wants("on_test_batch_end")
    model._reset_running_metrics()
    sums, seen = [0.0] * len(keys), 0
    cbs.on_test_begin()
    for step, (xs, ys, sw) in enumerate(data.epoch()):
        if batch_begin:
            cbs.on_test_batch_begin(step)
        loss, values = model._test_step(xs, ys, sw)
        seen += xs[0].shape[0]
        accumulate(sums, loss, values, xs[0].shape[0], running_keys)
        if batch_end:
            cbs.on_test_batch_end(step, means(keys, sums, seen, running_keys))
    data.end_epoch()
    if seen == 0:
        raise ValueError(f"{owner}: the data gave no batch (an empty or exhausted generator)")
    logs = means(keys, sums, seen, running_keys)
    cbs.on_test_end(logs)
    return logs


# -- predict ------------------------------------------------------------------------------------
def predict(model: Any, data: Any, cbs: CallbackList, n: int | None,
            owner: str) -> list[np.ndarray]:
    """The outputs over ``data`` (inference mode) with the ``on_predict_*`` hooks, one
    array per output; ``n`` (the number of samples, when known) lets the results be
    written in place instead of joined at the end."""
    batch_begin = cbs.wants("on_predict_batch_begin")
    batch_end = cbs.wants("on_predict_batch_end")
    results: list | None = None
    start = 0
    cbs.on_predict_begin()
    for step, (xs, _, _) in enumerate(data.epoch()):
        if batch_begin:
            cbs.on_predict_batch_begin(step)
        outs = model._run_forward(xs, False)
        if results is None:
            results = ([np.empty((n, *o.shape[1:]), dtype=o.dtype) for o in outs]
                       if n is not None else [[] for _ in outs])
        k = outs[0].shape[0]
        if n is not None:
            for result, out in zip(results, outs):
                result[start:start + k] = out
            batch_outs = [r[start:start + k] for r in results]
        else:
            batch_outs = [np.array(o) for o in outs]
            for chunks, out in zip(results, batch_outs):
                chunks.append(out)
        start += k
        if batch_end:
            cbs.on_predict_batch_end(step, {"outputs": model._pack_outputs(batch_outs)})
    data.end_epoch()
    if results is None:
        raise ValueError(f"{owner}: the data gave no batch (an empty or exhausted generator)")
    cbs.on_predict_end()
    return results if n is not None else [np.concatenate(chunks) for chunks in results]
