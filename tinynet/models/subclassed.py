"""Subclassed models: ``class MyModel(tn.Model)`` with layers as attributes and a
``call()`` written with those layers and :mod:`tinynet.ops` (Keras's model subclassing).

The forward pass records ``call`` (:mod:`tinynet.layers.traced`): built-in layers called in
it run their own forward and, in the backward pass, their own hand-written backward (the
same bits as in a Sequential); ops between them get their derived VJPs. ``compile``,
``fit``, ``evaluate``, ``predict``, ``summary``, ``save`` and ``load_model`` work as for
any model; the model builds on its first batch (or ``build(input_shape)``).

:class:`SubclassedModel` holds the behaviour; ``tn.Model`` installs it on a subclass that
defines ``call`` (see ``Model.__init_subclass__``), so the user's class keeps ``tn.Model``
as its base, as in Keras.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tinynet.layers import traced
from tinynet.layers.layer import Layer
from tinynet.models.training import targets
from tinynet.tensor import Tensor, as_array

__all__ = ["SubclassedModel", "install"]


class SubclassedModel:
    """The methods a subclassed model uses in place of the functional graph's."""

    def _init_subclassed(self, name: str | None, trainable: bool = True,
                         dtype: Any = None) -> None:
        self._init_model(name)
        self._trainable = trainable
        self.built = False
        self._build_shape: Any = None

    @classmethod
    def default_name(cls) -> str:
        from tinynet.layers.layer import snake_case

        return snake_case(cls.__name__)

    @property
    def layers(self) -> list[Layer]:
        return self.sublayers()

    def layer_graph(self) -> None:
        """``None``: a subclassed model's computation is its Python ``call()``, not a
        graph of layer calls."""
        return None

    @property
    def multiple_inputs(self) -> bool:  # type: ignore[override]
        return isinstance(self._build_shape, (list, dict))

    def _multiple_outputs(self) -> bool:
        out = getattr(self, "_out_shape", None)
        return isinstance(out, list)

    @property
    def output_names(self) -> list[str]:
        out = getattr(self, "_out_shape", None)
        if isinstance(out, list):
            return [f"output_{i + 1}" for i in range(len(out))]
        return [self.name]

    @property
    def input_shape(self) -> Any:
        if self._build_shape is None:
            raise ValueError(f"model {self.name!r} is not built yet: call it on data, fit it "
                             f"or build(input_shape) first")
        return self._build_shape

    @property
    def output_shape(self) -> Any:
        self.input_shape  # noqa: B018 - the error when not built
        return self._out_shape

    @property
    def built_input_shape(self) -> Any:
        return self._build_shape

    @built_input_shape.setter
    def built_input_shape(self, value: Any) -> None:
        pass

    def build(self, input_shape: Any = None) -> None:
        """Builds every layer by running ``call`` on a small zero batch of
        ``input_shape`` (batch axis included, e.g. ``(None, 784)``; a list of shapes, or
        a dict of them for a ``call`` that takes a dict of inputs)."""
        if input_shape is None:
            return
        if isinstance(input_shape, dict):
            shape: Any = {k: tuple(s) for k, s in input_shape.items()}
        else:
            shape = ([tuple(s) for s in input_shape] if isinstance(input_shape, list)
                     else tuple(input_shape))
        self._build_shape = shape
        self._out_shape = traced.placeholder_output_shape(self, shape)
        traced.name_sublayers(self)
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> Any:
        if not self.built:
            self.build(input_shape)
        return self._out_shape

    def _input_arrays(self, x: Any, owner: str) -> list[np.ndarray]:
        if isinstance(x, dict):  # call() gets the dict (in the built order of its keys)
            keys = list(self._build_shape) if isinstance(self._build_shape, dict) else list(x)
            if sorted(map(str, x)) != sorted(map(str, keys)):
                raise ValueError(f"{owner}: x must be a dict with the keys {keys}, got "
                                 f"{list(x)}")
            arrays = [as_array(x[k], f"{owner}: input {k!r}") for k in keys]
            if not self.built:
                self.build({k: (None, *a.shape[1:]) for k, a in zip(keys, arrays)})
            return arrays
        if isinstance(x, (list, tuple)):
            arrays = [as_array(a, f"{owner}: input {i}") for i, a in enumerate(x)]
            shape: Any = [(None, *a.shape[1:]) for a in arrays]
        else:
            arrays = [as_array(x, f"{owner}: input")]
            shape = (None, *arrays[0].shape[1:])
        if not self.built:
            self.build(shape)
        return arrays

    def _target_arrays(self, y: Any, owner: str) -> list[np.ndarray]:
        if self._multiple_outputs():
            return [targets(item, f"{owner}: y[{i}]") for i, item in enumerate(y)]
        return [targets(y, owner)]

    def _run_forward(self, xs: list[np.ndarray], training: bool) -> list[np.ndarray]:
        self._take_input_masks(len(xs))  # a subclassed model's call() sees no mask
        if isinstance(self._build_shape, dict):
            x: Any = dict(zip(self._build_shape, xs))
        else:
            x = xs if self.multiple_inputs else xs[0]
        out = traced.forward(self, x, training)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        return [as_array(o) for o in outs]

    def _run_backward(self, grads: list, input_grads: bool) -> list[np.ndarray] | None:
        g = grads if self._multiple_outputs() else grads[0]
        if isinstance(g, list):
            rec = self._require_cache()
            g = [np.zeros(o.shape, dtype=np.float32) if gi is None else gi
                 for gi, o in zip(g, rec.outputs)]
        if not input_grads:
            traced.backward_params(self, g)
            return None
        dx = traced.backward(self, g)
        dxs = dx if isinstance(dx, list) else [dx]
        return [as_array(d) for d in dxs]

    def _pack_outputs(self, outputs: list[np.ndarray]) -> Any:
        return outputs if self._multiple_outputs() else outputs[0]

    def forward_state(self) -> Any:
        return self._cache

    def restore_forward_state(self, state: Any) -> None:
        self._cache = state

    def get_config(self) -> dict:
        """Keras's default for a subclassed model: ``name``, ``trainable`` and the
        constructor's JSON-able arguments; ``build_config`` keeps the input shape."""
        config = Layer.get_config(self)
        config.pop("input_shape", None)
        if self._build_shape is not None:
            config["build_input_shape"] = (
                [list(s) for s in self._build_shape] if isinstance(self._build_shape, list)
                else list(self._build_shape))
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> Any:
        config = dict(config)
        shape = config.pop("build_input_shape", None)
        model = cls(**config)
        if shape is not None:
            model.build([tuple(s) for s in shape] if shape and isinstance(shape[0], list)
                        else tuple(shape))
        return model


_METHODS = [name for name, value in vars(SubclassedModel).items()
            if not name.startswith("__") and name != "_init_subclassed"]


def install(cls: type, base: type) -> None:
    """Gives ``cls`` (a subclass of ``base``, ``tn.Model``, that defines ``call``) the
    subclassed-model methods it does not define itself (nor inherits from a class between
    it and ``base``)."""
    own: set[str] = set()
    for klass in cls.__mro__:
        if klass is base:
            break
        own.update(vars(klass))
    for name in _METHODS:
        if name not in own:
            setattr(cls, name, vars(SubclassedModel)[name])
    cls._has_call = True
    if "__setattr__" not in own:
        cls.__setattr__ = Layer._track_setattr
    cls.keras_class_name = cls.__name__
    cls._init_subclassed = SubclassedModel._init_subclassed
