"""The training surface every model shares (Keras 3's ``compile``/``fit``/``evaluate``/
``predict``).

:class:`Trainer` is mixed into a model class that provides the graph over lists of
arrays, one per model input or output: ``_input_arrays`` and ``_target_arrays`` (convert
and check), ``_run_forward`` and ``_run_backward``, ``output_names``, ``layers`` and
``trainable_parameters``. The training step is explicit: the forward pass
(``training=True``), each output's loss and its gradient (times its loss weight), the
backward pass, then one ``optimizer.apply`` over the trainable parameters. ``fit``,
``evaluate`` and ``predict`` check their arguments, turn the data into an adapter
(:mod:`tinynet.models.data_adapter`) and hand it to the loops
(:mod:`tinynet.models.loops`) with one :class:`~tinynet.callbacks.CallbackList`. Arrays
are converted once per call and batches are views, or gathered into reused buffers when
shuffling, so small models are not dominated by Python.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
from typing import Any, Callable

import numpy as np

from tinynet.callbacks.base import check_callbacks
from tinynet.callbacks.callback_list import CallbackList
from tinynet.callbacks.history import History
from tinynet.keywords import checked_method
from tinynet.layers.layer import Parameter
from tinynet.models.added_losses import (add_penalty_grads, forward_with_losses,
                                         may_add_losses, zeros_for_none)
from tinynet.metrics.weighted import WeightedMetric
from tinynet.models import loops
from tinynet.models.checks import check_targets, check_validation_freq
from tinynet.models.data_adapter import (ArrayAdapter, check_steps, is_dataset, make_adapter,
                                         split_validation)
from tinynet.models.step_state import step_state
from tinynet.models.weighting import masked_weights, sample_weights
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
    if y is None:
        raise TypeError(f"{owner}: y is None; targets are needed: pass y (one row per sample "
                        f"of x), or x as a dataset of (x, y) batches")
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


def _logged(result: Any) -> Any:
    """A running metric's ``result()`` as logged: a float, or a copy of an array result
    (one value per class)."""
    result = np.asarray(result, dtype=np.float64)
    return float(result) if result.ndim == 0 else result.copy()


def _loss_weight(value: Any, owner: str) -> float | None:
    if value is None:
        return None
    if not is_real(value) or not math.isfinite(to_float(value)):
        raise ValueError(f"{owner}: loss_weights must hold finite numbers, got {value!r}")
    return float(value)


class Trainer:
    """``compile``, ``fit``, ``evaluate``, ``predict`` and ``train_on_batch`` over a
    model's graph (see the module docstring)."""

    #: Whether a cold fit's compile-ahead helper may run the model layer by layer (a
    #: chain of layers, each fed the previous one's output); else it runs whole steps.
    _ahead_by_layer = False
    #: ``(output index, WeightedMetric)`` of ``compile(weighted_metrics=...)``.
    _weighted_slots: list = []

    # -- compile ---------------------------------------------------------------------------------
    @checked_method
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                loss_weights: Any = None, weighted_metrics: Any = None) -> None:
        """Sets the optimizer, loss and metrics (identifiers or objects, as in Keras).

        With several outputs, ``loss`` is one loss for every output, a list in output
        order or a dict keyed by output name; ``loss_weights`` likewise (the loss is the
        weighted sum); ``metrics`` a list with one entry (a metric or a list) per output,
        or a dict. History keys follow Keras: ``loss``, ``<output>_loss`` (unweighted),
        ``<output>_<metric>``.

        ``weighted_metrics`` (the same forms as ``metrics``) are computed with the sample
        weights of ``sample_weight`` or ``class_weight`` (Keras: ``sum(w * value) /
        sum(w)``, confusion counts weighted; without weights they equal the unweighted
        ones). A weighted metric whose name a plain metric already has is logged as
        ``weighted_<name>``, as in Keras.

        Compiling again with ``loss=None`` keeps the loss (and its ``loss_weights``) of the
        last compile, and with neither ``metrics`` nor ``weighted_metrics`` its metrics, as
        Keras 3 does.

        Also creates the model's shuffling generator, ``shuffle_rng``, from the global seed.
        """
        from tinynet import losses, optimizers

        owner = f"{type(self).__name__}.compile"
        kept = self.__dict__.get("_compile_args", {"loss": (None, None), "metrics": (None, None)})
        loss, loss_weights = (loss, loss_weights) if loss is not None else kept["loss"]
        if metrics is None and weighted_metrics is None:
            metrics, weighted_metrics = kept["metrics"]
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
        slots, keys, base_keys = self._metric_entries(metrics, "metrics", loss_objs, owner)
        wslots, wkeys, wbase = self._metric_entries(weighted_metrics, "weighted_metrics",
                                                    loss_objs, owner)
        wkeys = [f"weighted_{k}" if k in keys else k for k in wkeys]
        keys = [*keys, *wkeys]
        loss_slots = [(i, l, w) for i, (l, w) in enumerate(zip(loss_objs, weights))
                      if l is not None]
        loss_keys = [f"{names[i]}_loss" for i, _, _ in loss_slots] if len(loss_slots) > 1 else []
        all_keys = [*loss_keys, *keys]
        if len(set(all_keys)) != len(all_keys) or "loss" in all_keys:
            raise ValueError(f"{owner}: metric names must be unique and not 'loss', got {keys}")
        self.optimizer = opt
        self.loss = loss_objs[0] if not multi else loss_objs
        self.loss_weights = weights[0] if not multi else weights
        self.metrics = [obj for _, obj in [*slots, *wslots]]
        self.metrics_names = ["loss", *all_keys]
        self._loss_slots, self._metric_slots = loss_slots, slots
        self._weighted_slots = [(i, WeightedMetric(obj)) for i, obj in wslots]
        self._metric_keys = base_keys  # as given to compile (saving rebuilds them)
        self._weighted_keys = wbase
        self._compile_args = {"loss": (loss, loss_weights), "metrics": (metrics, weighted_metrics)}
        self.shuffle_rng = make_rng()
        self.compiled = True

    def _metric_entries(self, metrics: Any, arg: str, loss_objs: list,
                        owner: str) -> tuple[list, list[str], list]:
        """``compile``'s ``metrics`` (or ``weighted_metrics``) as ``(output index, metric)``
        slots, their log keys and the identifiers as given."""
        from tinynet import metrics as metrics_module

        names = list(self.output_names)
        multi = len(names) > 1
        if metrics is None:
            metrics = []
        if not isinstance(metrics, (list, tuple, dict)):
            raise TypeError(f"{owner}: {arg} must be a list, got "
                            f"{type(metrics).__name__}: {metrics!r}")
        if not metrics:
            per_output = [[] for _ in names]
        elif not multi and not isinstance(metrics, dict):
            per_output = [list(metrics)]
        else:
            per_output = [[] if m is None else list(m) if isinstance(m, (list, tuple)) else [m]
                          for m in _per_output(metrics, names, arg, owner)]
        slots, keys, base_keys = [], [], []
        for i, (name, entries) in enumerate(zip(names, per_output)):
            for m in entries:
                obj = metrics_module.get(m, loss=loss_objs[i])
                key = m if isinstance(m, str) else obj.name
                keys.append(f"{name}_{key}" if multi else key)
                base_keys.append(key)
                slots.append((i, obj))
        return slots, keys, base_keys

    def _require_compiled(self, owner: str) -> None:
        if not self.compiled:
            raise RuntimeError(f"{owner}: model {self.name!r} is not compiled; call compile() "
                               f"first, e.g. model.compile(optimizer='adam', loss='mse')")
        if not self._loss_slots and not may_add_losses(self):
            raise ValueError(f"{owner}: no loss to compute; pass loss= to compile()")

    # -- data ----------------------------------------------------------------------------------
    def _data(self, x: Any, y: Any, owner: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
        xs = self._input_arrays(x, owner)
        ys = self._target_arrays(y, owner) if y is not None or self._needs_targets else []
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

    @property
    def _needs_targets(self) -> bool:
        """Whether a step needs ``y``: a compiled loss or metric reads it (a model whose
        only loss is what its layers add trains on ``x`` alone, as in Keras)."""
        return bool(getattr(self, "_loss_slots", 0) or getattr(self, "_metric_slots", 0)
                    or self._weighted_slots)

    def _pack_outputs(self, outputs: list[np.ndarray]) -> Any:
        """``predict``'s result: one array, or the outputs as the model declares them."""
        return outputs[0] if len(outputs) == 1 else outputs

    # -- the steps -------------------------------------------------------------------------------
    def _step_state(self) -> tuple[list[Parameter], list[tuple[Parameter, np.ndarray]]]:
        """The trainable parameters, and backups for the statistics a training forward
        pass updates (:func:`tinynet.models.step_state.step_state`)."""
        return step_state(self)

    def _metric_values(self, ys: list[np.ndarray], preds: list[np.ndarray],
                       sw: np.ndarray | None = None) -> list:
        """Each metric's value for a batch: the batch mean, or for a metric of counts
        (``stateful``: Precision, Recall, AUC) and a weighted metric (fed ``sw``) its
        running value with the batch added."""
        values = []
        for i, m in self._metric_slots:
            if m.stateful:
                m.update_state(ys[i], preds[i])
                values.append(_logged(m.result()))
            else:
                values.append(float(m(ys[i], preds[i])))
        for i, m in self._weighted_slots:
            m.update_state(ys[i], preds[i], sw)
            values.append(_logged(m.result()))
        return values

    @property
    def _running_keys(self) -> frozenset:
        """Indices in ``metrics_names`` of the metrics whose logged value is their running
        ``result()``, not a mean of batch values."""
        slots = [*self._metric_slots, *self._weighted_slots]
        first = len(self.metrics_names) - len(slots)
        return frozenset(first + j for j, (_, m) in enumerate(slots) if m.stateful)

    def _reset_running_metrics(self) -> None:
        for _, m in [*self._metric_slots, *self._weighted_slots]:
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
        values += self._metric_values(ys, preds, sw)
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

    def _test_step(self, xs: list[np.ndarray], ys: list[np.ndarray],
                   sw: np.ndarray | None = None) -> tuple[float, list]:
        """A batch's loss and metric values in inference mode; ``sw`` weighs the losses'
        samples (Keras's ``sample_weight``) and the weighted metrics."""
        preds, extra, _ = forward_with_losses(self, xs, False, self.trainable_parameters())
        total, values, _ = self._losses(ys, preds, False, sw, extra)
        return total, values + self._metric_values(ys, preds, sw)

    def _ahead(self, data: Any, val: Any) -> Any:
        """The compile-ahead helper of a cold fit on arrays (one input, one output)."""
        if not isinstance(data, ArrayAdapter) or len(data.xs) != 1 or len(data.ys) != 1:
            return contextlib.nullcontext()
        arrays = (val.xs[0], val.ys[0]) if isinstance(val, ArrayAdapter) else None
        return compile_ahead.ahead_of_fit(self, data.xs[0], data.ys[0], data.batch_size,
                                          arrays)

    # -- public training API -----------------------------------------------------------------
    def _callbacks(self, callbacks: Any, owner: str, *, verbose: int, epochs: int,
                   steps: int | None, fit: bool = False) -> CallbackList:
        """The one :class:`CallbackList` of a call: the user's callbacks, a ``History``
        (``fit``) and a ``ProgbarLogger`` when ``verbose`` asks for output."""
        return CallbackList(check_callbacks(callbacks, owner), self, add_history=fit,
                            add_progbar=verbose != 0, verbose=verbose, epochs=epochs,
                            steps=steps)

    @checked_method
    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = 32, epochs: int = 1,
            verbose: int | str = 1, callbacks: list | None = None,
            validation_split: float = 0.0, validation_data: Any = None, shuffle: bool = True,
            class_weight: dict | None = None, sample_weight: Any = None,
            initial_epoch: int = 0, steps_per_epoch: int | None = None,
            validation_steps: int | None = None, validation_freq: int | list = 1) -> History:
        """Trains until epoch ``epochs`` (Keras 3 semantics).

        ``x`` is arrays (one per input: an array, a list, or a dict keyed by input name)
        with targets ``y``, or a dataset with ``y=None``: a
        :class:`~tinynet.utils.PyDataset`, a Python generator of ``(x, y)`` or ``(x, y,
        sample_weight)`` batches (``steps_per_epoch`` batches per epoch, or until it runs
        out), or an iterable of batches with a length. A model whose only loss is what its
        layers add (``add_loss``, no compiled loss or metric) needs no ``y``, as in Keras:
        ``fit(x)``, or a dataset of ``x`` batches. Each epoch's ``loss`` (and each
        metric) is the sample-weighted mean of its batch values, each measured on the
        forward pass before that batch's update. ``validation_split`` (arrays only) holds
        out the last samples, before shuffling; ``validation_data`` is ``(x, y)``, ``(x, y,
        sample_weight)`` or a dataset (``validation_steps`` batches). Validation runs at
        the end of the epochs ``validation_freq`` picks (``val_loss``, ``val_<metric>``):
        every ``validation_freq``-th epoch for an int, the listed (1-based) epochs for a
        list. ``initial_epoch`` (0-based) is the first epoch run, to resume an earlier
        fit. ``shuffle`` reorders arrays, or a ``PyDataset``'s batches, each epoch with the
        model's seeded generator.

        ``sample_weight`` (one weight per sample, or per per-sample loss) or
        ``class_weight`` (``{class: weight}``, a sample's weight that of its label; one
        output only) weigh each output's loss as Keras does: ``sum(w * loss) / count``,
        and the ``weighted_metrics``; ``metrics`` stay unweighted.

        The hooks of ``callbacks`` run in Keras's order (see :mod:`tinynet.callbacks`),
        with a ``History`` and, unless ``verbose=0``, a ``ProgbarLogger``.

        Returns:
            The :class:`~tinynet.callbacks.History` (also stored as ``model.history``).

        Raises:
            RuntimeError: the model is not compiled.
            ValueError: bad arguments or data (the message names the shapes).
            FloatingPointError: a batch loss or a moving statistic is not finite (epoch
                and batch named, 1-based; that step's update is not applied), or the update
                made a weight non-finite (the step is undone: weights, optimizer state and
                statistics are those after the last finite step). The callbacks see that
                batch with a ``nan`` loss first; one that sets ``model.stop_training`` then
                (as ``TerminateOnNaN`` does) ends training instead of the error.
        """
        owner = f"{type(self).__name__}.fit"
        self._require_compiled(owner)
        batch_size = _check_int(32 if batch_size is None else batch_size, "batch_size", owner, 1)
        epochs = _check_int(epochs, "epochs", owner, 0)
        initial_epoch = _check_int(initial_epoch, "initial_epoch", owner, 0)
        steps_per_epoch = check_steps(steps_per_epoch, "steps_per_epoch", owner)
        validation_steps = check_steps(validation_steps, "validation_steps", owner)
        validate_at = check_validation_freq(validation_freq, owner)
        verbose = _check_verbose(verbose, owner)
        if not isinstance(shuffle, (bool, np.bool_)):
            raise TypeError(f"{owner}: shuffle must be a bool, got {shuffle!r}")
        user_callbacks = check_callbacks(callbacks, owner)
        if isinstance(validation_split, bool) or not isinstance(validation_split, numbers.Real) \
                or not 0.0 <= validation_split < 1.0:
            raise ValueError(f"{owner}: validation_split must be a float in [0, 1), got "
                             f"{validation_split!r}")
        rng = (lambda: self.shuffle_rng) if shuffle else None
        data = make_adapter(self, x, y, sample_weight, batch_size=batch_size,
                            steps=steps_per_epoch, steps_arg="steps_per_epoch", owner=owner,
                            class_weight=class_weight, rng=rng)
        val = None
        if validation_data is not None:
            val = self._validation_adapter(validation_data, batch_size, validation_steps,
                                           owner)
        elif validation_split:
            if not isinstance(data, ArrayAdapter):
                raise ValueError(f"{owner}: validation_split is for arrays; with a dataset "
                                 f"pass validation_data, got validation_split="
                                 f"{validation_split}")
            data, val = split_validation(data, validation_split, class_weight, rng, owner)
        cbs = self._callbacks(user_callbacks, owner, verbose=verbose, epochs=epochs,
                              steps=data.steps, fit=True)
        self.history = cbs.history
        # an empty kernel cache: a helper compiles the step's end meanwhile (same bits)
        with self._ahead(data, val):
            loops.train(self, data, val, cbs, epochs=epochs, initial_epoch=initial_epoch,
                        validate_at=validate_at, owner=owner)
        return cbs.history

    def _validation_adapter(self, validation_data: Any, batch_size: int,
                            steps: int | None, owner: str) -> Any:
        """``fit``'s ``validation_data``: a dataset, or ``(x, y[, sample_weight])``."""
        vowner = owner + " (validation_data)"
        if is_dataset(validation_data):
            return make_adapter(self, validation_data, None, None, batch_size=batch_size,
                                steps=steps, steps_arg="validation_steps", owner=vowner)
        if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
            raise ValueError(f"{owner}: validation_data must be a tuple (x_val, y_val) or "
                             f"(x_val, y_val, sample_weight_val), got "
                             f"{type(validation_data).__name__}; or a dataset (a PyDataset "
                             f"or a generator)")
        sw = validation_data[2] if len(validation_data) == 3 else None
        return make_adapter(self, validation_data[0], validation_data[1], sw,
                            batch_size=batch_size, steps=steps, steps_arg="validation_steps",
                            owner=vowner)

    @checked_method
    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: dict | None = None, return_dict: bool = False
                       ) -> float | list[float] | dict[str, float]:
        """One training step on one batch (``sample_weight``, ``class_weight`` as in
        :meth:`fit`).

        Returns:
            The batch loss from the forward pass before the update, or
            ``[loss, *per-output losses, *metrics]`` when there are more (Keras 3), or
            those by name (:attr:`metrics_names`) with ``return_dict=True``.
        """
        owner = f"{type(self).__name__}.train_on_batch"
        self._require_compiled(owner)
        xs, ys = self._data(x, y, owner)
        sw = sample_weights(sample_weight, class_weight, ys, owner)
        params, guard = self._step_state()
        self._reset_running_metrics()  # one batch's counts, as Keras resets its metrics
        loss_value, values = self._train_step(xs, ys, params, guard, lambda: owner, sw)
        if return_dict:
            return dict(zip(self.metrics_names, [loss_value, *values]))
        return [loss_value, *values] if values else loss_value

    @checked_method
    @locked
    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = 32,
                 verbose: int | str = 1, return_dict: bool = False, sample_weight: Any = None,
                 steps: int | None = None, callbacks: list | None = None
                 ) -> float | list[float] | dict[str, float]:
        """The loss (and metrics) over ``x``, ``y`` in inference mode; ``x`` may be a
        dataset (``y=None``; ``steps`` batches, or all of it) as in :meth:`fit`;
        ``sample_weight`` weighs the loss and the weighted metrics. ``callbacks`` get the
        ``on_test_*`` hooks.

        Returns:
            The loss alone without metrics, else ``[loss, *metrics]``, or a dict
            ``{"loss": ..., "<metric>": ...}`` with ``return_dict=True``.
        """
        return self._evaluate(x, y, batch_size, verbose, return_dict, sample_weight, steps,
                              callbacks, f"{type(self).__name__}.evaluate")

    def _evaluate(self, x: Any, y: Any, batch_size: int | None, verbose: int | str,
                  return_dict: bool, sample_weight: Any, steps: int | None,
                  callbacks: list | None, owner: str) -> float | list[float] | dict[str, float]:
        """:meth:`evaluate` under ``owner``'s name (also :meth:`test_on_batch`'s)."""
        self._require_compiled(owner)
        batch_size = _check_int(32 if batch_size is None else batch_size, "batch_size", owner, 1)
        verbose = _check_verbose(verbose, owner)
        steps = check_steps(steps, "steps", owner)
        cb_list = check_callbacks(callbacks, owner)
        data = make_adapter(self, x, y, sample_weight, batch_size=batch_size, steps=steps,
                            steps_arg="steps", owner=owner)
        cbs = self._callbacks(cb_list, owner, verbose=verbose, epochs=1, steps=data.steps)
        logs = loops.test(self, data, cbs, owner)
        if return_dict:
            return logs
        values = list(logs.values())
        return values if len(values) > 1 else values[0]

    @checked_method
    @locked
    def predict(self, x: Any, batch_size: int | None = 32, verbose: int | str = 1,
                steps: int | None = None, callbacks: list | None = None) -> Any:
        """The model's outputs for ``x`` (inference mode): one float32 NumPy array, or
        one per output (a list, or a dict when the model's outputs were given as one).
        ``x`` may be a dataset whose batches are ``x`` or ``(x, ...)`` (``steps`` batches,
        or all of it); ``callbacks`` get the ``on_predict_*`` hooks.

        Needs no ``compile``; an unbuilt model is built from ``x``'s shape.
        """
        return self._predict(x, batch_size, verbose, steps, callbacks,
                             f"{type(self).__name__}.predict")

    def _predict(self, x: Any, batch_size: int | None, verbose: int | str, steps: int | None,
                 callbacks: list | None, owner: str) -> Any:
        """:meth:`predict` under ``owner``'s name (also :meth:`predict_on_batch`'s)."""
        batch_size = _check_int(32 if batch_size is None else batch_size, "batch_size", owner, 1)
        verbose = _check_verbose(verbose, owner)
        steps = check_steps(steps, "steps", owner)
        cb_list = check_callbacks(callbacks, owner)
        data = make_adapter(self, x, None, None, batch_size=batch_size, steps=steps,
                            steps_arg="steps", owner=owner, with_targets=False)
        cbs = self._callbacks(cb_list, owner, verbose=verbose, epochs=1, steps=data.steps)
        n = data.n if isinstance(data, ArrayAdapter) else None
        return self._pack_outputs(loops.predict(self, data, cbs, n, owner))

    @checked_method
    @locked
    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      return_dict: bool = False) -> float | list[float] | dict[str, float]:
        """One evaluation step on one batch (Keras 3): :meth:`evaluate` of ``x``, ``y`` as
        a single batch, its metrics counted on this batch alone.

        Returns:
            As :meth:`evaluate`: the loss, ``[loss, *metrics]``, or a dict with
            ``return_dict=True``.
        """
        owner = f"{type(self).__name__}.test_on_batch"
        n = self._input_arrays(x, owner)[0].shape[0]
        return self._evaluate(x, y, max(n, 1), 0, return_dict, sample_weight, None, None, owner)

    @checked_method
    @locked
    def predict_on_batch(self, x: Any) -> Any:
        """The model's outputs for ``x`` as one batch (Keras 3): :meth:`predict` without
        batching or progress output."""
        owner = f"{type(self).__name__}.predict_on_batch"
        n = self._input_arrays(x, owner)[0].shape[0]
        return self._predict(x, max(n, 1), 0, None, None, owner)
