"""``Sequential``: a linear stack of layers with Keras 3's ``compile``/``fit`` surface.

The training step is explicit: forward through the layers (``training=True``), the
loss and its gradient, backward through the layers in reverse order, then one
``optimizer.apply`` over the trainable parameters. Per step, ``fit`` does no validation
and no conversion (the data are converted once per call; batches are views, or gathered
into reused buffers when shuffling), so small models are not dominated by Python.
"""

from __future__ import annotations

import functools
import math
import numbers
import sys
import threading
import time
from typing import Any, Callable

import numpy as np

from tinynet.tools import compile_ahead
from tinynet.callbacks.base import CallbackList, check_callbacks
from tinynet.callbacks.history import History
from tinynet.layers.input import Input
from tinynet import saving
from tinynet.layers.layer import Layer, Parameter, normalize_shape, snake_case
from tinynet.layers.registry import register_model, registered_layers
from tinynet.math.matmul import single_threaded_blas
from tinynet.random import make_rng
from tinynet.tensor import Tensor, as_array

__all__ = ["Sequential"]


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


def _locked(method: Callable) -> Callable:
    """Runs ``method`` under the model's lock: layers keep per-call state (forward caches,
    reused buffers), so concurrent inference calls on one model take turns."""
    @functools.wraps(method)
    def wrapper(self: "Sequential", *args: Any, **kwargs: Any) -> Any:
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


class Sequential:
    """A linear stack of layers (Keras 3 ``keras.Sequential``).

    Args:
        layers: Optional list of layers to ``add`` in order (an ``Input`` may come first).
        name: The model name (shown by ``summary``).

    Attributes:
        layers: The layers, in order (an ``Input`` is not listed, as in Keras).
        optimizer, loss, metrics: Set by :meth:`compile` (objects, not identifiers).
        metrics_names: ``["loss", *metric keys]``; keys are the strings passed to compile.
        shuffle_rng: The ``numpy`` generator ``fit`` shuffles with (created by ``compile``).
        stop_training: Set it to ``True`` (from a callback) to end ``fit``.
        history: The :class:`~tinynet.callbacks.History` of the last ``fit``.

    Shape:
        Input: ``[batch, *input_shape[1:]]``; output: ``[batch, *output_shape[1:]]``.
    """

    def __init__(self, layers: list | None = None, *, name: str = "sequential") -> None:
        if not isinstance(name, str) or not name:
            raise TypeError(f"Sequential: name must be a non-empty str, got {name!r}")
        self.name = name
        self._layers: list[Layer] = []
        self._input: Input | None = None
        self._input_shape: tuple | None = None
        self._output_shapes: list[tuple] = []
        self.built = False
        self.compiled = False
        self.optimizer: Any = None
        self.loss: Any = None
        self.metrics: list = []
        self.metrics_names: list[str] = ["loss"]
        self.shuffle_rng: np.random.Generator | None = None
        self.stop_training = False
        self.history: History | None = None
        self._lock = threading.RLock()
        if layers is not None:
            if not isinstance(layers, (list, tuple)):
                raise TypeError(f"Sequential: layers must be a list of layers, got "
                                f"{type(layers).__name__}")
            for layer in layers:
                self.add(layer)

    # -- structure ---------------------------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        return list(self._layers)

    def add(self, layer: Layer) -> None:
        """Appends ``layer`` (an ``Input`` first declares the input shape).

        The layer gets a name unique in the model (``dense``, ``dense_1``, ... for
        automatic names) and, when the input shape is known, is built at once.

        Raises:
            TypeError: ``layer`` is not a tinynet ``Layer``.
            ValueError: duplicate name, misplaced ``Input``, or the layer cannot take the
                previous layer's output (the message names both layers and the shape).
        """
        if isinstance(layer, Input):
            if self._layers or self._input is not None or self._input_shape is not None:
                raise ValueError(f"Sequential: an Input must be the first element and appear "
                                 f"once; got {layer!r} after the input shape was set")
            self._input = layer
            self._input_shape = tuple(layer.input_shape_arg)
            self.built = True
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: expected a tinynet Layer, got "
                            f"{type(layer).__name__}: {layer!r}")
        if any(layer is other for other in self._layers):
            raise ValueError(f"Sequential.add: layer {layer.name!r} is already in the model")
        taken = {other.name for other in self._layers}
        if getattr(layer, "_auto_name", False):
            base = snake_case(type(layer).__name__)
            name, k = base, 0
            while name in taken:
                k += 1
                name = f"{base}_{k}"
            layer.name = name
        elif layer.name in taken:
            raise ValueError(f"Sequential.add: all layers must have unique names; "
                             f"{layer.name!r} is already the name of a layer in this model")
        previous = self._input_shape
        if not self._layers and previous is None and layer.input_shape_arg is not None:
            self._input_shape = tuple(layer.input_shape_arg)
        self._layers.append(layer)
        if self._input_shape is not None:
            try:
                self._build_from(len(self._output_shapes))
            except ValueError:
                self._layers.pop()
                self._input_shape = previous
                raise

    def pop(self) -> Layer:
        """Removes and returns the last layer.

        Raises:
            IndexError: the model has no layers.
        """
        if not self._layers:
            raise IndexError(f"Sequential.pop: model {self.name!r} has no layers")
        layer = self._layers.pop()
        del self._output_shapes[len(self._layers):]
        return layer

    def build(self, input_shape: tuple | None = None) -> None:
        """Builds every layer in order for ``input_shape`` (batch axis included, e.g.
        ``(None, 8, 8, 1)``), chaining the output shapes.

        Raises:
            ValueError: no input shape is known, it conflicts with the declared one, or a
                layer cannot take the previous output (both layers and shapes named).
        """
        if input_shape is None:
            if self._input_shape is None:
                raise ValueError(f"Sequential.build: model {self.name!r} has no input shape; "
                                 f"pass input_shape, e.g. build((None, 8))")
            input_shape = self._input_shape
        shape = normalize_shape(input_shape, "Sequential.build: input_shape")
        if len(shape) < 2:
            raise ValueError(f"Sequential.build: input_shape must include the batch axis and "
                             f"at least one feature axis, e.g. (None, 8), got {shape}")
        shape = (None, *shape[1:])
        if self._input_shape is not None and self._input_shape[1:] != shape[1:]:
            raise ValueError(f"Sequential.build: model {self.name!r} expects input shape "
                             f"{self._input_shape}, got {shape}")
        previous, self._input_shape = self._input_shape, shape
        try:
            self._build_from(0)
        except ValueError:
            self._input_shape = previous
            raise

    def _build_from(self, start: int) -> None:
        shape = self._input_shape if start == 0 else self._output_shapes[start - 1]
        del self._output_shapes[start:]
        for i in range(start, len(self._layers)):
            layer = self._layers[i]
            try:
                if not layer.built:
                    layer.build(shape)
                    if getattr(layer, "built_input_shape", None) is None:
                        layer.built_input_shape = tuple(shape)
                    layer.built = True
                elif (layer.built_input_shape is not None
                      and tuple(layer.built_input_shape[1:]) != tuple(shape[1:])):
                    raise ValueError(f"it was already built for input shape "
                                     f"{tuple(layer.built_input_shape)}")
                out = tuple(layer.output_shape(shape))
            except ValueError as exc:
                if i == 0:
                    source = "the model input"
                else:
                    prev = self._layers[i - 1]
                    source = f"the output of {prev.name!r} ({type(prev).__name__})"
                raise ValueError(f"Layer {layer.name!r} ({type(layer).__name__}) cannot take "
                                 f"{source} with shape {shape}: {exc}") from exc
            self._output_shapes.append(out)
            shape = out
        self.built = True

    @property
    def input_shape(self) -> tuple:
        """The input shape with the batch axis as ``None``, e.g. ``(None, 8, 8, 1)``."""
        if self._input_shape is None:
            raise AttributeError(f"Sequential model {self.name!r} has no defined input shape yet.")
        return self._input_shape

    @property
    def output_shape(self) -> tuple:
        """The output shape with the batch axis as ``None``, e.g. ``(None, 10)``."""
        if self._input_shape is None or len(self._output_shapes) != len(self._layers):
            raise AttributeError(f"Sequential model {self.name!r} is not built yet, so it has "
                                 f"no output shape.")
        return self._output_shapes[-1] if self._output_shapes else self._input_shape

    # -- weights -------------------------------------------------------------------------------
    def parameters(self) -> list[Parameter]:
        """Every parameter of every layer, in layer order (non-trainable included)."""
        return [p for layer in self._layers for p in layer.parameters()]

    def trainable_parameters(self) -> list[Parameter]:
        """The parameters the optimizer updates (those of trainable layers)."""
        return [p for p in self.parameters() if p.trainable]

    def count_params(self) -> int:
        """Total number of weight scalars, trainable or not."""
        if not self.built or not all(layer.built for layer in self._layers):
            raise ValueError(f"Sequential model {self.name!r} is not built yet: call "
                             f"build(input_shape), or fit/predict on data, first")
        return sum(layer.count_params() for layer in self._layers)

    def get_weights(self) -> list[np.ndarray]:
        """Copies of every weight array, in layer and parameter order."""
        return [p.value.copy() for p in self.parameters()]

    def set_weights(self, weights: list) -> None:
        """Sets every weight from a list like :meth:`get_weights`'s (checked before any
        change, so a mismatch leaves the model untouched)."""
        params = self.parameters()
        if len(weights) != len(params):
            raise ValueError(f"Sequential.set_weights: expected {len(params)} arrays, got "
                             f"{len(weights)}")
        arrays = [np.asarray(w, dtype=np.float32) for w in weights]
        for p, a in zip(params, arrays):
            if a.shape != p.value.shape:
                raise ValueError(f"Sequential.set_weights: {p.path} expects shape "
                                 f"{p.value.shape}, got {a.shape}")
        for p, a in zip(params, arrays):
            p.value[...] = a

    # -- config ----------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """``{"name", "layers": [{"class_name", "config"}, ...], "build_input_shape"}``
        (JSON-able; an ``Input`` appears first in ``layers`` when one was added)."""
        layers = [self._input, *self._layers] if self._input is not None else self._layers
        return {
            "name": self.name,
            "layers": [{"class_name": type(l).__name__, "config": l.get_config()} for l in layers],
            "build_input_shape": list(self._input_shape) if self._input_shape is not None else None,
        }

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Sequential":
        """Rebuilds a model from :meth:`get_config`'s dict (fresh weights).

        Layer classes are looked up in ``custom_objects`` first, then in ``tinynet.layers``.
        """
        model = cls(name=config.get("name", "sequential"))
        for entry in config.get("layers", []):
            layer_cls = _layer_class(entry["class_name"], custom_objects)
            model.add(layer_cls.from_config(dict(entry.get("config", {}))))
        shape = config.get("build_input_shape")
        if shape is not None and model._input_shape is None:
            model.build(tuple(shape))
        return model

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

    @_locked
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

    @_locked
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

    @_locked
    def __call__(self, x: Any, training: bool = False) -> Tensor:
        """Forward pass on ``x`` (builds the model from ``x``'s shape if needed)."""
        return Tensor(self._forward(self._inputs(x, "Sequential.__call__"), training))

    @staticmethod
    def _bar(total: int, desc: str) -> Any:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, file=sys.stdout, unit="step", leave=True)

    # -- summary -----------------------------------------------------------------------------------
    def summary(self, line_length: int | None = None,
                print_fn: Callable[[str], Any] | None = None) -> None:
        """Prints Keras 3's summary table (byte for byte); see :mod:`tinynet.utils.summary`.

        Args:
            line_length: Total width; default ``min(88, terminal columns - 4)``.
            print_fn: Receives the whole text in one call (as Keras 3); default stdout.
        """
        from tinynet.utils.summary import print_summary

        print_summary(self, line_length=line_length, print_fn=print_fn)

    # -- persistence (tinynet.saving) --------------------------------------------------------
    def save(self, path: str) -> None:
        """Saves architecture, weights, compile settings, optimizer and random states
        to one ``.safetensors`` file (atomically)."""
        saving.save_model(self, path)

    def save_weights(self, path: str) -> None:
        """Saves the weights alone to one ``.safetensors`` file (atomically)."""
        saving.save_weights(self, path)

    def load_weights(self, path: str) -> None:
        """Loads weights saved by :meth:`save_weights` or :meth:`save`; names and shapes
        must match this model."""
        saving.load_weights(self, path)

    def __getstate__(self) -> dict:  # the lock cannot be pickled or deep-copied
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"<Sequential name={self.name!r} layers={len(self._layers)} built={self.built}>"


register_model(Sequential)  # so that tinynet.saving rebuilds it without importing this module


def _layer_class(class_name: str, custom_objects: dict | None) -> type:
    if custom_objects and class_name in custom_objects:
        return custom_objects[class_name]
    known = registered_layers()
    if class_name in known:
        return known[class_name]
    raise ValueError(f"Sequential.from_config: unknown layer class {class_name!r}; pass it in "
                     f"custom_objects or register it")
