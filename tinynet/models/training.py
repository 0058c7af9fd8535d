"""The training loop every model shares (Keras 3's ``compile``/``fit`` surface).

:class:`Trainer` is mixed into a model class that provides the graph over lists of
arrays, one per model input or output: ``_input_arrays`` and ``_target_arrays`` (convert
and check), ``_run_forward`` and ``_run_backward``, ``output_names``, ``layers`` and
``trainable_parameters``. The training step is explicit: the forward pass
(``training=True``), each output's loss and its gradient (times its loss weight), the
backward pass, then one ``optimizer.apply`` over the trainable parameters. Per step,
``fit`` does no validation and no conversion (the data are converted once per call;
batches are views, or gathered into reused buffers when shuffling), so small models are
not dominated by Python.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import sys
import time
from typing import Any, Callable

import numpy as np

from tinynet.callbacks.base import CallbackList, check_callbacks
from tinynet.callbacks.history import History
from tinynet.callbacks.terminate_on_nan import TerminateOnNaN
from tinynet.keywords import checked_method
from tinynet.layers.layer import Parameter
from tinynet.models.added_losses import (add_penalty_grads, forward_with_losses,
                                         may_add_losses, zeros_for_none)
from tinynet.models.checks import check_targets, check_validation_freq
from tinynet.models.weighting import (accumulate, format_logs, masked_weights, means,
                                      sample_weights)
from tinynet.optimizers.step_undo import is_finite
from tinynet.random import make_rng
from tinynet.scalars import is_real, to_float
from tinynet.tensor import Tensor, as_array
from tinynet.tools import compile_ahead

__all__ = ["Trainer", "locked", "targets", "fits"]


def _check_int(value: Any, arg: str, owner: str, minimum: int) -> int:
    expected = "a positive int" if minimum == 1 else "a non-negative int"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{owner}: {arg} must be {expected}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{owner}: {arg} must be {expected}, got {value}")
    return int(value)


def _check_verbose(value: Any, owner: str) -> int:
    if value == "auto":
        return 1
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value not in (0, 1, 2):
        raise ValueError(f"{owner}: verbose must be 0, 1, 2 or 'auto', got {value!r}")
    return int(value)


def locked(method: Callable) -> Callable:
    """Runs ``method`` under the model's lock: layers keep per-call state (forward caches,
    reused buffers), so concurrent inference calls on one model take turns."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


def fits(shape: tuple, arr: np.ndarray) -> bool:
    """Whether ``arr`` has the rank of ``shape`` and its sizes past the batch axis
    (``None`` in ``shape``: any size)."""
    return arr.ndim == len(shape) and all(w is None or w == d
                                          for w, d in zip(shape[1:], arr.shape[1:]))


def targets(y: Any, owner: str) -> np.ndarray:
    """``y`` as a C-contiguous array: floats and bools as float32, integer labels kept."""
    try:
        arr = y.data if isinstance(y, Tensor) else np.asarray(y)
    except ValueError:  # ragged: as_array names y in the error
        arr = y
    if getattr(arr, "dtype", None) is None or arr.dtype.kind not in "iu":
        return as_array(arr, f"{owner}: y")
    return np.ascontiguousarray(arr)


def _per_output(value: Any, names: list[str], arg: str, owner: str) -> list:
    """One entry per output from a single value, a list (in output order) or a dict
    keyed by output name (outputs not in the dict get ``None``)."""
    if isinstance(value, dict):
        unknown = [k for k in value if k not in names]
        if unknown:
            raise ValueError(f"{owner}: {arg} has keys {unknown} that are not output names; "
                             f"the outputs are {names}")
        return [value.get(name) for name in names]
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(f"{owner}: {arg} must have one entry per output ({len(names)}: "
                             f"{names}), got {len(value)}")
        return list(value)
    return [value] * len(names)


def _loss_weight(value: Any, owner: str) -> float | None:
    if value is None:
        return None
    if not is_real(value) or not math.isfinite(to_float(value)):
        raise ValueError(f"{owner}: loss_weights must hold finite numbers, got {value!r}")
    return float(value)


class Trainer:
    """``compile``, ``fit``, ``evaluate``, ``predict`` and ``train_on_batch`` over a
    model's graph (see the module docstring)."""

    #: Whether a cold ``fit`` may start the compile-ahead helper (one input, one output,
    #: rebuilt in the helper from the model's pickle).
    _compiles_ahead = False

    # -- compile ---------------------------------------------------------------------------------
    @checked_method
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                loss_weights: Any = None) -> None:
        """Sets the optimizer, loss and metrics (identifiers or objects, as in Keras).

        With several outputs, ``loss`` is one loss for every output, a list in output
        order or a dict keyed by output name; ``loss_weights`` likewise (the loss is the
        weighted sum); ``metrics`` a list with one entry (a metric or a list) per output,
        or a dict. History keys follow Keras: ``loss``, ``<output>_loss`` (unweighted),
        ``<output>_<metric>``.

        Also creates the model's shuffling generator, ``shuffle_rng``, from the global seed.
        """
        from tinynet import losses, metrics as metrics_module, optimizers

        owner = f"{type(self).__name__}.compile"
        names = list(self.output_names)
        multi = len(names) > 1
        opt = optimizers.get(optimizer)
        if isinstance(loss, (list, tuple, dict)):
            loss_objs = [losses.get(l) if l is not None else None
                         for l in _per_output(loss, names, "loss", owner)]
        else:
            loss_objs = [losses.get(loss) if loss is not None else None] * len(names)
        weights = [_loss_weight(w, owner) for w in _per_output(loss_weights, names,
                                                               "loss_weights", owner)]
        if metrics is None:
            metrics = []
        if not isinstance(metrics, (list, tuple, dict)):
            raise TypeError(f"{owner}: metrics must be a list, got "
                            f"{type(metrics).__name__}: {metrics!r}")
        if not metrics:
            per_output = [[] for _ in names]
        elif not multi and not isinstance(metrics, dict):
            per_output = [list(metrics)]
        else:
            per_output = [[] if m is None else list(m) if isinstance(m, (list, tuple)) else [m]
                          for m in _per_output(metrics, names, "metrics", owner)]
        slots, keys, base_keys = [], [], []
        for i, (name, entries) in enumerate(zip(names, per_output)):
            for m in entries:
                obj = metrics_module.get(m, loss=loss_objs[i])
                key = m if isinstance(m, str) else obj.name
                keys.append(f"{name}_{key}" if multi else key)
                base_keys.append(key)
                slots.append((i, obj))
        loss_slots = [(i, l, w) for i, (l, w) in enumerate(zip(loss_objs, weights))
                      if l is not None]
        loss_keys = [f"{names[i]}_loss" for i, _, _ in loss_slots] if len(loss_slots) > 1 else []
        all_keys = [*loss_keys, *keys]
        if len(set(all_keys)) != len(all_keys) or "loss" in all_keys:
            raise ValueError(f"{owner}: metric names must be unique and not 'loss', got {keys}")
        self.optimizer = opt
        self.loss = loss_objs[0] if not multi else loss_objs
        self.loss_weights = weights[0] if not multi else weights
        self.metrics = [obj for _, obj in slots]
        self.metrics_names = ["loss", *all_keys]
        self._loss_slots, self._metric_slots = loss_slots, slots
        self._metric_keys = base_keys  # as given to compile (saving rebuilds them)
        self.shuffle_rng = make_rng()
        self.compiled = True

    def _require_compiled(self, owner: str) -> None:
        if not self.compiled:
            raise RuntimeError(f"{owner}: model {self.name!r} is not compiled; call compile() "
                               f"first, e.g. model.compile(optimizer='adam', loss='mse')")
        if not self._loss_slots and not may_add_losses(self):
            raise ValueError(f"{owner}: no loss to compute; pass loss= to compile()")

    # -- data ----------------------------------------------------------------------------------
    def _data(self, x: Any, y: Any, owner: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
        xs = self._input_arrays(x, owner)
        ys = self._target_arrays(y, owner)
        n = xs[0].shape[0]
        if any(a.ndim == 0 or a.shape[0] != n for a in [*xs, *ys]):
            if len(xs) == 1 and len(ys) == 1:
                raise ValueError(f"{owner}: x and y must hold the same number of samples, got x "
                                 f"with shape {xs[0].shape} and y with shape {ys[0].shape}")
            raise ValueError(f"{owner}: every input and target must hold the same number of "
                             f"samples, got x shapes {[a.shape for a in xs]} and y shapes "
                             f"{[a.shape for a in ys]}")
        check_targets(self, ys, owner)  # a label/loss mismatch, before any forward pass
        return xs, ys

    def _pack_outputs(self, outputs: list[np.ndarray]) -> Any:
        """``predict``'s result: one array, or the outputs as the model declares them."""
        return outputs[0] if len(outputs) == 1 else outputs

    # -- the steps -------------------------------------------------------------------------------
    def _step_state(self) -> tuple[list[Parameter], list[tuple[Parameter, np.ndarray]]]:
        """The trainable parameters, and backups for the statistics a training forward
        pass updates (non-trainable parameters of trainable layers, e.g. BN moving stats)."""
        guarded = [p for layer in self.layers if layer.trainable
                   for p in layer.parameters() if not p.trainable]
        return self.trainable_parameters(), [(p, np.empty_like(p.value)) for p in guarded]

    def _metric_values(self, ys: list[np.ndarray], preds: list[np.ndarray]) -> list[float]:
        """Each metric's value for a batch: the batch mean, or for a metric of counts
        (``stateful``: Precision, Recall, AUC) its running value with the batch added."""
        values = []
        for i, m in self._metric_slots:
            if m.stateful:
                m.update_state(ys[i], preds[i])
                result = np.asarray(m.result(), dtype=np.float64)  # an array per class, too
                values.append(float(result) if result.ndim == 0 else result.copy())
            else:
                values.append(float(m(ys[i], preds[i])))
        return values

    @property
    def _running_keys(self) -> frozenset:
        """Indices in ``metrics_names`` of the metrics whose logged value is their running
        ``result()``, not a mean of batch values."""
        first = len(self.metrics_names) - len(self._metric_slots)
        return frozenset(first + j for j, (_, m) in enumerate(self._metric_slots)
                         if m.stateful)

    def _reset_running_metrics(self) -> None:
        for _, m in self._metric_slots:
            if m.stateful:
                m.reset_state()

    def _losses(self, ys: list[np.ndarray], preds: list[np.ndarray], with_grads: bool,
                sw: np.ndarray | None = None, extra: list = ()) -> tuple[float, list[float], list]:
        """The total loss (the weighted sum, plus the ``extra`` losses the layers added), each
        output's loss unweighted (when there are several, as Keras reports ``<output>_loss``)
        and each output's gradient (``None`` without a loss); ``sw`` weighs the samples."""
        grads: list = [None] * len(preds)
        values, weighted = [], []
        masks = self.__dict__.get("_output_masks") or [None] * len(preds)
        for i, loss, weight in self._loss_slots:
            w = sw if masks[i] is None else masked_weights(masks[i], sw)
            if with_grads:
                value, grad = loss.value_and_grad(ys[i], preds[i], w)
            else:
                value, grad = loss.value_and_grad(ys[i], preds[i], w, need_grad=False)[0], None
            value = float(value)
            values.append(value)
            if weight is not None:
                value *= weight
                if grad is not None:
                    grad = grad * np.float32(weight)
            grads[i] = grad
            weighted.append(value)
        total = weighted[0] if weighted else 0.0
        for value in [*weighted[1:], *extra]:  # Keras's order: compiled, then added
            total += value
        return total, values if len(values) > 1 else [], grads

    def _train_step(self, xs: list[np.ndarray], ys: list[np.ndarray], params: list[Parameter],
                    guard: list[tuple[Parameter, np.ndarray]],
                    where: Callable[[], str],
                    sw: np.ndarray | None = None) -> tuple[float, list[float]]:
        for p, backup in guard:
            np.copyto(backup, p.value)
        preds, extra, penalties = forward_with_losses(self, xs, True, params, where)
        total, values, grads = self._losses(ys, preds, True, sw, extra)
        stat = None if not math.isfinite(total) else next(
            (p for p, _ in guard if not is_finite(p.value)), None)
        if not math.isfinite(total) or stat is not None:
            for p, backup in guard:
                np.copyto(p.value, backup)
            what = (f"the loss is {total}" if stat is None
                    else f"the statistic {stat.path} is not finite")
            raise FloatingPointError(f"{where()}: {what}; training stopped before this "
                                     f"step's update (weights are those after the last "
                                     f"finite step)")
        values += self._metric_values(ys, preds)
        self._run_backward(zeros_for_none(grads, preds), False)
        add_penalty_grads(penalties)  # the weight penalties' gradients join the weights'
        bad = self.optimizer.apply_or_undo(params)
        if bad is not None:  # the optimizer undid its step; the statistics follow
            for p, backup in guard:
                np.copyto(p.value, backup)
            raise FloatingPointError(f"{where()}: the weight {bad.path} is not finite after "
                                     f"this step's update; training stopped and the step "
                                     f"undone (weights are those after the last finite "
                                     f"step)")
        return total, values

    def _test_arrays(self, xs: list[np.ndarray], ys: list[np.ndarray], batch_size: int,
                     bar: Any = None, sw: np.ndarray | None = None) -> dict[str, float]:
        """Means of the batch loss and metrics weighted by batch size (inference mode);
        ``sw`` weighs the losses' samples (Keras's ``sample_weight``)."""
        n = xs[0].shape[0]
        sums = [0.0] * len(self.metrics_names)
        running = self._running_keys
        self._reset_running_metrics()
        for start in range(0, n, batch_size):
            xb = [a[start:start + batch_size] for a in xs]
            yb = [a[start:start + batch_size] for a in ys]
            k = xb[0].shape[0]
            preds, extra, _ = forward_with_losses(self, xb, False, self.trainable_parameters())
            swb = None if sw is None else sw[start:start + batch_size]
            total, values, _ = self._losses(yb, preds, False, swb, extra)
            values += self._metric_values(yb, preds)
            accumulate(sums, total, values, k, running)
            if bar is not None:
                bar.update(1)
        return means(self.metrics_names, sums, n, running)

    def _ahead(self, xs: list[np.ndarray], ys: list[np.ndarray], batch_size: int,
               val: tuple | None) -> Any:
        if not self._compiles_ahead or len(xs) != 1 or len(ys) != 1:
            return contextlib.nullcontext()
        return compile_ahead.ahead_of_fit(self, xs[0], ys[0], batch_size,
                                          None if val is None else (val[0][0], val[1][0]))

    # -- public training API -----------------------------------------------------------------
    @checked_method
    def fit(self, x: Any, y: Any, batch_size: int = 32, epochs: int = 1, verbose: int = 1,
            callbacks: list | None = None, validation_split: float = 0.0,
            validation_data: tuple | None = None, shuffle: bool = True,
            class_weight: dict | None = None, sample_weight: Any = None,
            initial_epoch: int = 0, validation_freq: int | list = 1) -> History:
        """Trains until epoch ``epochs`` (Keras 3 semantics).

        Each epoch's ``loss`` (and each metric) is the sample-weighted mean of its batch
        values, each measured on the forward pass before that batch's update.
        ``validation_split`` holds out the last samples, before shuffling; validation runs
        at the end of the epochs ``validation_freq`` picks (``val_loss``,
        ``val_<metric>``): every ``validation_freq``-th epoch for an int, the listed
        (1-based) epochs for a list. ``initial_epoch`` (0-based) is the first epoch run, to
        resume an earlier fit: epochs ``initial_epoch .. epochs - 1`` run, and the
        callbacks and the progress bar see those numbers.

        ``sample_weight`` (one weight per sample, or per per-sample loss) or
        ``class_weight`` (``{class: weight}``, a sample's weight that of its label; one
        output only) weigh each output's loss as Keras does: ``sum(w * loss) / count``.
        Metrics stay unweighted (Keras's ``metrics``). ``validation_data`` may be
        ``(x, y, sample_weight)``; ``validation_split`` splits the weights too.

        Returns:
            The :class:`~tinynet.callbacks.History` (also stored as ``model.history``).

        Raises:
            RuntimeError: the model is not compiled.
            ValueError: bad arguments or data (the message names the shapes).
            FloatingPointError: a batch loss or a moving statistic is not finite (epoch
                and batch named, 1-based; raised before that step's update), or the update
                made a weight non-finite (the step is undone: weights, optimizer state and
                statistics are those after the last finite step), unless a
                ``TerminateOnNaN`` callback is given: then the update is not applied
                either, the callbacks see a ``nan`` loss, and training stops.
        """
        owner = f"{type(self).__name__}.fit"
        self._require_compiled(owner)
        batch_size = _check_int(batch_size, "batch_size", owner, 1)
        epochs = _check_int(epochs, "epochs", owner, 0)
        initial_epoch = _check_int(initial_epoch, "initial_epoch", owner, 0)
        validate_at = check_validation_freq(validation_freq, owner)
        verbose = _check_verbose(verbose, owner)
        if not isinstance(shuffle, (bool, np.bool_)):
            raise TypeError(f"{owner}: shuffle must be a bool, got {shuffle!r}")
        user_callbacks = check_callbacks(callbacks, owner)
        if isinstance(validation_split, bool) or not isinstance(validation_split, numbers.Real) \
                or not 0.0 <= validation_split < 1.0:
            raise ValueError(f"{owner}: validation_split must be a float in [0, 1), got "
                             f"{validation_split!r}")
        xs, ys = self._data(x, y, owner)
        sw = sample_weights(sample_weight, class_weight, ys, owner)
        val, val_sw = None, None
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                raise ValueError(f"{owner}: validation_data must be a tuple (x_val, y_val) or "
                                 f"(x_val, y_val, sample_weight_val), got "
                                 f"{type(validation_data).__name__}")
            vowner = owner + " (validation_data)"
            val = self._data(validation_data[0], validation_data[1], vowner)
            if len(validation_data) == 3:
                val_sw = sample_weights(validation_data[2], None, val[1], vowner)
        elif validation_split:
            n_all = xs[0].shape[0]
            split_at = int(math.floor(n_all * (1.0 - validation_split)))
            if split_at == 0 or split_at == n_all:
                raise ValueError(f"{owner}: {n_all} samples are not enough to split into a "
                                 f"training and a validation set with validation_split="
                                 f"{validation_split}")
            val = ([a[split_at:] for a in xs], [a[split_at:] for a in ys])
            xs, ys = [a[:split_at] for a in xs], [a[:split_at] for a in ys]
            if sw is not None:
                # class weights weigh the training loss only (Keras splits first)
                sw, val_sw = sw[:split_at], (sw[split_at:] if class_weight is None else None)

        n = xs[0].shape[0]
        steps = -(-n // batch_size)
        params, guard = self._step_state()
        history = History()
        cbs = CallbackList([*user_callbacks, history], self,
                           {"verbose": verbose, "epochs": epochs, "steps": steps})
        batch_begin, batch_end = cbs.wants("on_train_batch_begin"), cbs.wants("on_train_batch_end")
        nan_stops = any(isinstance(cb, TerminateOnNaN) for cb in user_callbacks)
        if shuffle:
            rows = min(batch_size, n)
            bufs = [np.empty((rows, *a.shape[1:]), dtype=a.dtype)
                    for a in [*xs, *ys, *([] if sw is None else [sw])]]
        keys = self.metrics_names
        running_keys = self._running_keys
        self.stop_training = False
        self.history = history
        epoch_logs: dict[str, float] = {}
        # an empty kernel cache: a helper compiles the step's end meanwhile (same bits)
        arrays, n_x, n_xy = [*xs, *ys], len(xs), len(xs) + len(ys)
        if sw is not None:
            arrays.append(sw)
        with self._ahead(xs, ys, batch_size, val):
            self._resume_epoch = None
            cbs.call("on_train_begin", None)
            if self._resume_epoch is not None:  # BackupAndRestore restored a backup
                initial_epoch = max(initial_epoch, self._resume_epoch)
                self._resume_epoch = None
            for epoch in range(initial_epoch, epochs):
                cbs.call("on_epoch_begin", epoch, None)
                order = self.shuffle_rng.permutation(n) if shuffle else None
                self._reset_running_metrics()
                sums = [0.0] * len(keys)
                seen = 0
                started = time.perf_counter()
                bar = self._bar(steps, f"Epoch {epoch + 1}/{epochs}") if verbose == 1 else None
                try:
                    for step in range(steps):
                        start = step * batch_size
                        end = min(start + batch_size, n)
                        k = end - start
                        if order is None:
                            batch = [a[start:end] for a in arrays]
                        else:
                            idx = order[start:end]
                            batch = [np.take(a, idx, axis=0, out=buf[:k], mode="clip")
                                     for a, buf in zip(arrays, bufs)]
                        if batch_begin:
                            cbs.call("on_train_batch_begin", step, None)
                        try:
                            loss_value, values = self._train_step(
                                batch[:n_x], batch[n_x:n_xy], params, guard,
                                lambda: f"{owner}: epoch {epoch + 1}, batch {step + 1}",
                                batch[n_xy] if sw is not None else None)
                        except FloatingPointError:
                            if not nan_stops:
                                raise
                            # not applied; the callbacks see a nan loss (TerminateOnNaN)
                            loss_value, values = math.nan, [math.nan] * (len(keys) - 1)
                        seen += k
                        accumulate(sums, loss_value, values, k, running_keys)
                        if batch_end or bar is not None:
                            running = means(keys, sums, seen, running_keys)
                            if batch_end:
                                cbs.call("on_train_batch_end", step, running)
                            if bar is not None:
                                bar.set_postfix_str(format_logs(running), refresh=False)
                                bar.update(1)
                        if self.stop_training:
                            break
                    epoch_logs = means(keys, sums, seen, running_keys)
                    if val is not None and validate_at(epoch + 1):
                        val_logs = self._test_arrays(val[0], val[1], batch_size, sw=val_sw)
                        epoch_logs.update({f"val_{key}": v for key, v in val_logs.items()})
                    if bar is not None:
                        bar.set_postfix_str(format_logs(epoch_logs), refresh=False)
                finally:
                    if bar is not None:
                        bar.close()
                cbs.call("on_epoch_end", epoch, epoch_logs)
                if verbose == 2:
                    elapsed = time.perf_counter() - started
                    print(f"Epoch {epoch + 1}/{epochs} - {steps}/{steps} - {elapsed:.0f}s - "
                          f"{1000 * elapsed / steps:.0f}ms/step - {format_logs(epoch_logs)}",
                          file=sys.stdout, flush=True)
                if self.stop_training:
                    break
        cbs.call("on_train_end", epoch_logs)
        return history

    @checked_method
    def train_on_batch(self, x: Any, y: Any, sample_weight: Any = None,
                       class_weight: dict | None = None) -> float | list[float]:
        """One training step on one batch (``sample_weight``, ``class_weight`` as in
        :meth:`fit`).

        Returns:
            The batch loss from the forward pass before the update, or
            ``[loss, *per-output losses, *metrics]`` when there are more (Keras 3).
        """
        owner = f"{type(self).__name__}.train_on_batch"
        self._require_compiled(owner)
        xs, ys = self._data(x, y, owner)
        sw = sample_weights(sample_weight, class_weight, ys, owner)
        params, guard = self._step_state()
        self._reset_running_metrics()  # one batch's counts, as Keras resets its metrics
        loss_value, values = self._train_step(xs, ys, params, guard, lambda: owner, sw)
        return [loss_value, *values] if values else loss_value

    @checked_method
    @locked
    def evaluate(self, x: Any, y: Any, batch_size: int = 32, verbose: int = 1,
                 return_dict: bool = False, sample_weight: Any = None
                 ) -> float | list[float] | dict[str, float]:
        """The loss (and metrics) over ``x``, ``y`` in inference mode; ``sample_weight``
        weighs the loss as in :meth:`fit`.

        Returns:
            The loss alone without metrics, else ``[loss, *metrics]``, or a dict
            ``{"loss": ..., "<metric>": ...}`` with ``return_dict=True``.
        """
        owner = f"{type(self).__name__}.evaluate"
        self._require_compiled(owner)
        batch_size = _check_int(batch_size, "batch_size", owner, 1)
        verbose = _check_verbose(verbose, owner)
        xs, ys = self._data(x, y, owner)
        sw = sample_weights(sample_weight, None, ys, owner)
        steps = -(-xs[0].shape[0] // batch_size)
        bar = self._bar(steps, "Evaluate") if verbose == 1 else None
        started = time.perf_counter()
        try:
            logs = self._test_arrays(xs, ys, batch_size, bar, sw)
            if bar is not None:
                bar.set_postfix_str(format_logs(logs), refresh=False)
        finally:
            if bar is not None:
                bar.close()
        if verbose == 2:
            elapsed = time.perf_counter() - started
            print(f"{steps}/{steps} - {elapsed:.0f}s - {1000 * elapsed / steps:.0f}ms/step - "
                  f"{format_logs(logs)}", file=sys.stdout, flush=True)
        if return_dict:
            return logs
        values = list(logs.values())
        return values if len(values) > 1 else values[0]

    @checked_method
    @locked
    def predict(self, x: Any, batch_size: int = 32, verbose: int = 1) -> Any:
        """The model's outputs for ``x`` (inference mode): one float32 NumPy array, or
        one per output (a list, or a dict when the model's outputs were given as one).

        Needs no ``compile``; an unbuilt model is built from ``x``'s shape.
        """
        owner = f"{type(self).__name__}.predict"
        batch_size = _check_int(batch_size, "batch_size", owner, 1)
        verbose = _check_verbose(verbose, owner)
        xs = self._input_arrays(x, owner)
        n = xs[0].shape[0]
        if any(a.shape[0] != n for a in xs):
            raise ValueError(f"{owner}: every input must hold the same number of samples, "
                             f"got shapes {[a.shape for a in xs]}")
        steps = -(-n // batch_size)
        bar = self._bar(steps, "Predict") if verbose == 1 else None
        results: list[np.ndarray] | None = None
        try:
            for start in range(0, n, batch_size):
                outs = self._run_forward([a[start:start + batch_size] for a in xs], False)
                if results is None:
                    results = [np.empty((n, *o.shape[1:]), dtype=o.dtype) for o in outs]
                for result, out in zip(results, outs):
                    result[start:start + out.shape[0]] = out
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return self._pack_outputs(results)

    @staticmethod
    def _bar(total: int, desc: str) -> Any:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, file=sys.stdout, unit="step", leave=True)
