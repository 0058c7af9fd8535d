"""The training loop every model shares (Keras 3's ``compile``/``fit`` surface).

:class:`Trainer` is mixed into a model class that provides the layer container:
``layers`` in order, ``build``, ``_input_shape``, ``trainable_parameters`` and
``parameters``. The training step is explicit: forward through the layers
(``training=True``), the loss and its gradient, backward through the layers in reverse
order, then one ``optimizer.apply`` over the trainable parameters. Per step, ``fit`` does
no validation and no conversion (the data are converted once per call; batches are views,
or gathered into reused buffers when shuffling), so small models are not dominated by
Python.
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
import time
from typing import Any, Callable

import numpy as np

from tinynet.callbacks.base import CallbackList, check_callbacks
from tinynet.callbacks.history import History
from tinynet.layers.layer import Parameter
from tinynet.math.matmul import single_threaded_blas
from tinynet.random import make_rng
from tinynet.tensor import Tensor, as_array
from tinynet.tools import compile_ahead

__all__ = ["Trainer", "locked"]


def _format_value(value: float) -> str:
    """Keras's progress-bar number format."""
    return f"{value:.4f}" if abs(value) > 1e-3 else f"{value:.4e}"


def _format_logs(logs: dict) -> str:
    return " - ".join(f"{k}: {_format_value(v)}" for k, v in logs.items())


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


def _targets(y: Any, owner: str) -> np.ndarray:
    """``y`` as a C-contiguous array: floats and bools as float32, integer labels kept."""
    try:
        arr = y.data if isinstance(y, Tensor) else np.asarray(y)
    except ValueError:  # ragged: as_array names y in the error
        arr = y
    if getattr(arr, "dtype", None) is None or arr.dtype.kind not in "iu":
        return as_array(arr, f"{owner}: y")
    return np.ascontiguousarray(arr)


class Trainer:
    """``compile``, ``fit``, ``evaluate``, ``predict`` and ``train_on_batch`` over a
    model's layer container (see the module docstring)."""


    # -- compile ---------------------------------------------------------------------------------
    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: list | None = None) -> None:
        """Sets the optimizer, loss and metrics (identifiers or objects, as in Keras).

        Also creates the model's shuffling generator, ``shuffle_rng``, from the global seed.
        """
        from tinynet import losses, metrics as metrics_module, optimizers

        opt = optimizers.get(optimizer)
        loss_obj = losses.get(loss) if loss is not None else None
        if metrics is None:
            metrics = []
        if not isinstance(metrics, (list, tuple)):
            raise TypeError(f"Sequential.compile: metrics must be a list, got "
                            f"{type(metrics).__name__}: {metrics!r}")
        metric_objs = [metrics_module.get(m, loss=loss_obj) for m in metrics]
        keys = [m if isinstance(m, str) else obj.name for m, obj in zip(metrics, metric_objs)]
        if len(set(keys)) != len(keys) or "loss" in keys:
            raise ValueError(f"Sequential.compile: metric names must be unique and not 'loss', "
                             f"got {keys}")
        self.optimizer, self.loss, self.metrics = opt, loss_obj, metric_objs
        self.metrics_names = ["loss", *keys]
        self.shuffle_rng = make_rng()
        self.compiled = True

    def _require_compiled(self, owner: str) -> None:
        if not self.compiled:
            raise RuntimeError(f"{owner}: model {self.name!r} is not compiled; call compile() "
                               f"first, e.g. model.compile(optimizer='adam', loss='mse')")
        if self.loss is None:
            raise ValueError(f"{owner}: no loss to compute; pass loss= to compile()")

    # -- data ----------------------------------------------------------------------------------
    def _inputs(self, x: Any, owner: str) -> np.ndarray:
        """``x`` as C-contiguous float32, checked against (or defining) the input shape."""
        x = as_array(x, f"{owner}: x")
        if x.ndim < 2 or x.shape[0] == 0:
            raise ValueError(f"{owner}: x must be a non-empty batch with at least one feature "
                             f"axis, got x with shape {x.shape}")
        if self._input_shape is None:
            self.build((None, *x.shape[1:]))
        elif not self.built or len(self._output_shapes) != len(self._layers):
            self._build_from(0)
        want = self._input_shape
        if len(want) != x.ndim or any(w is not None and w != d for w, d in zip(want[1:], x.shape[1:])):
            raise ValueError(f"{owner}: model {self.name!r} expects input shape {want} "
                             f"(None = any), got x with shape {x.shape}")
        return x

    def _data(self, x: Any, y: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
        x = self._inputs(x, owner)
        y = _targets(y, owner)
        if y.ndim == 0 or y.shape[0] != x.shape[0]:
            raise ValueError(f"{owner}: x and y must hold the same number of samples, got x "
                             f"with shape {x.shape} and y with shape {y.shape}")
        return x, y

    # -- the steps -------------------------------------------------------------------------------
    def _forward(self, x: np.ndarray, training: bool) -> np.ndarray:
        out = x
        with single_threaded_blas():  # one BLAS setting per pass, not per product
            for layer in self._layers:
                out = layer.forward(out, training=training)
        return as_array(out)

    def _step_state(self) -> tuple[list[Parameter], list[tuple[Parameter, np.ndarray]]]:
        """The trainable parameters, and backups for the statistics a training forward
        pass updates (non-trainable parameters of trainable layers, e.g. BN moving stats)."""
        guarded = [p for layer in self._layers if layer.trainable
                   for p in layer.parameters() if not p.trainable]
        return self.trainable_parameters(), [(p, np.empty_like(p.value)) for p in guarded]

    def _train_step(self, x: np.ndarray, y: np.ndarray, params: list[Parameter],
                    guard: list[tuple[Parameter, np.ndarray]],
                    where: Callable[[], str]) -> tuple[float, list[float]]:
        with single_threaded_blas():  # one BLAS setting per step (nested scopes are free)
            return self._step(x, y, params, guard, where)

    def _step(self, x: np.ndarray, y: np.ndarray, params: list[Parameter],
              guard: list[tuple[Parameter, np.ndarray]],
              where: Callable[[], str]) -> tuple[float, list[float]]:
        for p, backup in guard:
            np.copyto(backup, p.value)
        y_pred = self._forward(x, True)
        loss_value, grad = self.loss.value_and_grad(y, y_pred)
        loss_value = float(loss_value)
        if not math.isfinite(loss_value):
            for p, backup in guard:
                np.copyto(p.value, backup)
            raise FloatingPointError(f"{where()}: the loss is {loss_value}; training stopped "
                                     f"before this step's update (weights are those after the "
                                     f"last finite step)")
        values = [float(m(y, y_pred)) for m in self.metrics]
        for layer in self._layers[:0:-1]:
            grad = layer.backward(grad)
        if self._layers:  # nothing consumes dL/dx of the first layer
            self._layers[0].backward_params(grad)
        self.optimizer.apply(params)
        return loss_value, values

    def _test_arrays(self, x: np.ndarray, y: np.ndarray, batch_size: int,
                     bar: Any = None) -> dict[str, float]:
        """Sample-weighted means of the batch loss and metrics (inference mode)."""
        n = x.shape[0]
        sums = [0.0] * len(self.metrics_names)
        for start in range(0, n, batch_size):
            xb, yb = x[start:start + batch_size], y[start:start + batch_size]
            k = xb.shape[0]
            y_pred = self._forward(xb, False)
            sums[0] += float(self.loss(yb, y_pred)) * k
            for j, metric in enumerate(self.metrics, 1):
                sums[j] += float(metric(yb, y_pred)) * k
            if bar is not None:
                bar.update(1)
        return {key: s / n for key, s in zip(self.metrics_names, sums)}

    # -- public training API -----------------------------------------------------------------
    def fit(self, x: Any, y: Any, batch_size: int = 32, epochs: int = 1, verbose: int = 1,
            callbacks: list | None = None, validation_split: float = 0.0,
            validation_data: tuple | None = None, shuffle: bool = True) -> History:
        """Trains for ``epochs`` epochs (Keras 3 semantics).

        Each epoch's ``loss`` (and each metric) is the sample-weighted mean of its batch
        values, each measured on the forward pass before that batch's update.
        ``validation_split`` holds out the last samples, before shuffling; validation runs
        at each epoch's end (``val_loss``, ``val_<metric>``).

        Returns:
            The :class:`~tinynet.callbacks.History` (also stored as ``model.history``).

        Raises:
            RuntimeError: the model is not compiled.
            ValueError: bad arguments or data (the message names the shapes).
            FloatingPointError: a batch loss is not finite (epoch and batch named, 1-based;
                raised before that step's update).
        """
        owner = "Sequential.fit"
        self._require_compiled(owner)
        batch_size = _check_int(batch_size, "batch_size", owner, 1)
        epochs = _check_int(epochs, "epochs", owner, 0)
        verbose = _check_verbose(verbose, owner)
        if not isinstance(shuffle, (bool, np.bool_)):
            raise TypeError(f"{owner}: shuffle must be a bool, got {shuffle!r}")
        user_callbacks = check_callbacks(callbacks, owner)
        if isinstance(validation_split, bool) or not isinstance(validation_split, numbers.Real) \
                or not 0.0 <= validation_split < 1.0:
            raise ValueError(f"{owner}: validation_split must be a float in [0, 1), got "
                             f"{validation_split!r}")
        x, y = self._data(x, y, owner)
        val = None
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
                raise ValueError(f"{owner}: validation_data must be a tuple (x_val, y_val), got "
                                 f"{type(validation_data).__name__}")
            val = self._data(validation_data[0], validation_data[1], owner + " (validation_data)")
        elif validation_split:
            n_all = x.shape[0]
            split_at = int(math.floor(n_all * (1.0 - validation_split)))
            if split_at == 0 or split_at == n_all:
                raise ValueError(f"{owner}: {n_all} samples are not enough to split into a "
                                 f"training and a validation set with validation_split="
                                 f"{validation_split}")
            val = (x[split_at:], y[split_at:])
            x, y = x[:split_at], y[:split_at]

        n = x.shape[0]
        steps = -(-n // batch_size)
        params, guard = self._step_state()
        history = History()
        cbs = CallbackList([*user_callbacks, history], self,
                           {"verbose": verbose, "epochs": epochs, "steps": steps})
        batch_begin, batch_end = cbs.wants("on_train_batch_begin"), cbs.wants("on_train_batch_end")
        if shuffle:
            rows = min(batch_size, n)
            x_buf = np.empty((rows, *x.shape[1:]), dtype=x.dtype)
            y_buf = np.empty((rows, *y.shape[1:]), dtype=y.dtype)
        keys = self.metrics_names
        self.stop_training = False
        self.history = history
        epoch_logs: dict[str, float] = {}
        # an empty kernel cache: a helper compiles the step's end meanwhile (same bits)
        with compile_ahead.ahead_of_fit(self, x, y, batch_size, val):
            cbs.call("on_train_begin", None)
            for epoch in range(epochs):
                cbs.call("on_epoch_begin", epoch, None)
                order = self.shuffle_rng.permutation(n) if shuffle else None
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
                            xb, yb = x[start:end], y[start:end]
                        else:
                            idx = order[start:end]
                            xb = np.take(x, idx, axis=0, out=x_buf[:k], mode="clip")
                            yb = np.take(y, idx, axis=0, out=y_buf[:k], mode="clip")
                        if batch_begin:
                            cbs.call("on_train_batch_begin", step, None)
                        loss_value, values = self._train_step(
                            xb, yb, params, guard,
                            lambda: f"{owner}: epoch {epoch + 1}, batch {step + 1}")
                        seen += k
                        sums[0] += loss_value * k
                        for j, v in enumerate(values, 1):
                            sums[j] += v * k
                        if batch_end or bar is not None:
                            running = {key: s / seen for key, s in zip(keys, sums)}
                            if batch_end:
                                cbs.call("on_train_batch_end", step, running)
                            if bar is not None:
                                bar.set_postfix_str(_format_logs(running), refresh=False)
                                bar.update(1)
                        if self.stop_training:
                            break
                    epoch_logs = {key: s / seen for key, s in zip(keys, sums)}
                    if val is not None:
                        val_logs = self._test_arrays(val[0], val[1], batch_size)
                        epoch_logs.update({f"val_{key}": v for key, v in val_logs.items()})
                    if bar is not None:
                        bar.set_postfix_str(_format_logs(epoch_logs), refresh=False)
                finally:
                    if bar is not None:
                        bar.close()
                cbs.call("on_epoch_end", epoch, epoch_logs)
                if verbose == 2:
                    elapsed = time.perf_counter() - started
                    print(f"Epoch {epoch + 1}/{epochs} - {steps}/{steps} - {elapsed:.0f}s - "
                          f"{1000 * elapsed / steps:.0f}ms/step - {_format_logs(epoch_logs)}",
                          file=sys.stdout, flush=True)
                if self.stop_training:
                    break
        cbs.call("on_train_end", epoch_logs)
        return history

    def train_on_batch(self, x: Any, y: Any) -> float | list[float]:
        """One training step on one batch.

        Returns:
            The batch loss from the forward pass before the update, or
            ``[loss, *metrics]`` when metrics are compiled (Keras 3).
        """
        owner = "Sequential.train_on_batch"
        self._require_compiled(owner)
        x, y = self._data(x, y, owner)
        params, guard = self._step_state()
        loss_value, values = self._train_step(x, y, params, guard, lambda: owner)
        return [loss_value, *values] if self.metrics else loss_value

    @locked
    def evaluate(self, x: Any, y: Any, batch_size: int = 32, verbose: int = 1,
                 return_dict: bool = False) -> float | list[float] | dict[str, float]:
        """The loss (and metrics) over ``x``, ``y`` in inference mode.

        Returns:
            The loss alone without metrics, else ``[loss, *metrics]``, or a dict
            ``{"loss": ..., "<metric>": ...}`` with ``return_dict=True``.
        """
        owner = "Sequential.evaluate"
        self._require_compiled(owner)
        batch_size = _check_int(batch_size, "batch_size", owner, 1)
        verbose = _check_verbose(verbose, owner)
        x, y = self._data(x, y, owner)
        steps = -(-x.shape[0] // batch_size)
        bar = self._bar(steps, "Evaluate") if verbose == 1 else None
        started = time.perf_counter()
        try:
            logs = self._test_arrays(x, y, batch_size, bar)
            if bar is not None:
                bar.set_postfix_str(_format_logs(logs), refresh=False)
        finally:
            if bar is not None:
                bar.close()
        if verbose == 2:
            elapsed = time.perf_counter() - started
            print(f"{steps}/{steps} - {elapsed:.0f}s - {1000 * elapsed / steps:.0f}ms/step - "
                  f"{_format_logs(logs)}", file=sys.stdout, flush=True)
        if return_dict:
            return logs
        values = list(logs.values())
        return values if self.metrics else values[0]

    @locked
    def predict(self, x: Any, batch_size: int = 32, verbose: int = 1) -> np.ndarray:
        """The model's outputs for ``x`` (inference mode), as one float32 NumPy array.

        Needs no ``compile``; an unbuilt model is built from ``x``'s shape.
        """
        owner = "Sequential.predict"
        batch_size = _check_int(batch_size, "batch_size", owner, 1)
        verbose = _check_verbose(verbose, owner)
        x = self._inputs(x, owner)
        n = x.shape[0]
        steps = -(-n // batch_size)
        bar = self._bar(steps, "Predict") if verbose == 1 else None
        result: np.ndarray | None = None
        try:
            for start in range(0, n, batch_size):
                out = self._forward(x[start:start + batch_size], False)
                if result is None:
                    result = np.empty((n, *out.shape[1:]), dtype=out.dtype)
                result[start:start + out.shape[0]] = out
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return result

    @staticmethod
    def _bar(total: int, desc: str) -> Any:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, file=sys.stdout, unit="step", leave=True)
