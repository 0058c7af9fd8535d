"""The shared body of the image augmentation layers: the seeded generator, the
training/inference switch, the cache of the last transformation and the argument checks.

Each layer draws its transformation's parameters from its own NumPy generator ``rng``
(created on the first training call with :func:`tinynet.random.make_rng`: the layer's
``seed`` if given, else the next stream of the global seed), on the calling thread and in
a fixed order, so the draws do not depend on the thread count; saving a model stores the
generator's state (``tinynet.saving``), so a resumed training draws the same values.
The parameters go to the layer's ``_apply(x, params)``, which computes the transformed
batch and caches what the exact backward of that transformation needs.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from tinynet.layers.layer import Layer
from tinynet.layers.seeded import OwnGenerator
from tinynet.layers.validation import check_data_format, check_seed
from tinynet.ops.arrays import affine
from tinynet.ops.arrays.affine import FILL_MODES, INTERPOLATIONS
from tinynet.scalars import is_real, to_float
from tinynet.tensor import Tensor, as_array

__all__ = ["BaseAugmentation", "BaseAffine", "check_factor", "check_choice", "check_number",
           "factor_config", "per_sample"]


def _or(names: tuple) -> str:
    """``'a', 'b' or 'c'``."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def check_choice(value: Any, arg: str, owner: str, allowed: tuple) -> str:
    """A string among ``allowed`` (exact, as Keras compares them)."""
    what = f"{owner}: {arg} must be {_or(allowed)}, got {value!r}"
    if not isinstance(value, str):
        raise TypeError(what)
    if value not in allowed:
        raise ValueError(what)
    return value


def check_number(value: Any, arg: str, owner: str) -> float:
    """A finite real number (int or float, not bool), as a float."""
    what = f"{owner}: {arg} must be a finite number, got {value!r}"
    if not is_real(value):
        raise TypeError(what)
    number = to_float(value)
    if not math.isfinite(number):
        raise ValueError(what)
    return number


def check_factor(value: Any, arg: str, owner: str, low: float, high: float,
                 low_open: bool = False) -> tuple[float, float]:
    """Keras's ``factor`` rule: a number ``f`` gives ``(max(-|f|, low), |f|)``, a pair gives
    its sorted entries; every number must lie in ``[low, high]`` (``(low, high]`` with
    ``low_open``).

    Returns:
        ``(lower, upper)`` as floats.
    """
    interval = f"{'(' if low_open else '['}{low:g}, {high:g}]"
    shown = tuple(value) if isinstance(value, list) else value
    what = (f"{owner}: {arg} must be a number or a tuple of 2 numbers in {interval}, "
            f"got {shown!r}")

    def inside(v: Any) -> float:
        if not is_real(v):
            raise TypeError(what)
        v = to_float(v)
        if not (low < v <= high if low_open else low <= v <= high):  # also rejects NaN
            raise ValueError(what)
        return v

    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(what)
        lower, upper = sorted(inside(v) for v in value)
        return lower, upper
    f = abs(inside(value))
    return max(-f, low), f


def factor_config(value: Any) -> Any:
    """A factor argument as given, JSON-able: a float, or a list of 2 floats."""
    if isinstance(value, (tuple, list)):
        return [float(v) for v in value]
    return float(value)


class _Cache(NamedTuple):
    input_shape: tuple
    output_shape: tuple
    params: dict | None   # the transformation applied (None: the identity of inference)
    state: Any            # what the layer's backward needs


class BaseAugmentation(OwnGenerator, Layer):
    """Base of the augmentation layers (no weights).

    ``forward(x, training=True)`` draws a transformation with :meth:`_draw` and applies it
    with :meth:`_apply`; ``forward(x, training=False)`` runs :meth:`_inference` (the
    identity unless a subclass says otherwise). ``backward`` is the exact input gradient
    of the last forward's transformation.

    Args:
        seed: Optional seed of the layer's generator; ``None`` uses the next stream of the
            global seed (``tn.set_seed``).
        data_format: ``None`` or ``"channels_last"`` (tinynet's layout).
        name: Optional layer name.
        trainable: Accepted for Keras compatibility (no weights).
        input_shape: Optional input shape without the batch axis.

    Shape:
        Input: ``[batch, height, width, channels]``; output: ``output_shape``.

    Attributes:
        rng: The layer's ``numpy.random.Generator`` (created on first use); saving stores
            ``rng.bit_generator.state`` so training can resume bitwise.
    """

    def __init__(self, seed: int | None, data_format: str | None, *, name: str | None,
                 trainable: bool, input_shape: tuple | None) -> None:
        super().__init__(name=name, trainable=trainable, input_shape=input_shape)
        owner = type(self).__name__
        self.seed = check_seed(seed, owner)
        self.data_format = check_data_format(data_format, owner)
        self._rng: np.random.Generator | None = None

    # -- shapes ----------------------------------------------------------------
    def output_shape(self, input_shape: tuple) -> tuple:
        return self._shape4(input_shape)

    def build(self, input_shape: tuple) -> None:
        self.output_shape(input_shape)
        super().build(input_shape)

    # -- the transformation (subclasses) ---------------------------------------
    def _draw(self, input_shape: tuple) -> dict:  # pragma: no cover - abstract
        """Draws the parameters of one training transformation of a batch of
        ``input_shape`` from :attr:`rng`."""
        raise NotImplementedError

    def _transform(self, x: np.ndarray, params: dict) -> tuple[np.ndarray, Any]:
        """The transformed batch and the state :meth:`_adjoint` needs."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _adjoint(self, g: np.ndarray, input_shape: tuple, state: Any) -> np.ndarray:
        """The input gradient for the output gradient ``g``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _apply(self, x: Any, params: dict) -> Tensor:
        """Applies the transformation ``params`` (as :meth:`_draw` returns them, e.g. the
        values Keras drew) to ``x`` and caches it for :meth:`backward`."""
        arr = as_array(x)
        self._check_rank(arr, 4, 4)
        out, state = self._transform(arr, params)
        self._cache = _Cache(arr.shape, out.shape, params, state)
        return Tensor(out)

    def _inference(self, x: np.ndarray) -> Tensor:
        """The inference pass: the identity."""
        self._cache = _Cache(x.shape, x.shape, None, None)
        return Tensor(x)

    # -- forward / backward ----------------------------------------------------
    def forward(self, x: Any, training: bool = False) -> Tensor:
        arr = as_array(x)
        self._check_rank(arr, 4, 4)
        self.output_shape(arr.shape)
        if not training:
            return self._inference(arr)
        return self._apply(arr, self._draw(arr.shape))

    def backward(self, grad_output: Any) -> Tensor:
        cache = self._require_cache()
        g = self._check_grad(grad_output, cache.output_shape)
        if cache.params is None and cache.state is None:
            return Tensor(g)
        return Tensor(self._adjoint(g, cache.input_shape, cache.state))

    def backward_params(self, grad_output: Any) -> None:
        """No parameters: only checks the gradient's shape (dL/dx is not needed)."""
        self._check_grad(grad_output, self._require_cache().output_shape)

    @property
    def transformation(self) -> dict | None:
        """The parameters of the last forward's transformation (``None`` after an
        identity inference pass)."""
        return None if self._cache is None else self._cache.params

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(seed=self.seed, data_format=self.data_format)
        return config


class BaseAffine(BaseAugmentation):
    """Base of the layers that resample with an affine map (translation, rotation, zoom):
    the ``fill_mode``, ``interpolation`` and ``fill_value`` arguments and the shared
    sampler (:mod:`tinynet.ops.arrays.affine`)."""

    def __init__(self, fill_mode: str, interpolation: str, seed: int | None,
                 fill_value: float, data_format: str | None, *, name: str | None,
                 trainable: bool, input_shape: tuple | None) -> None:
        super().__init__(seed, data_format, name=name, trainable=trainable,
                         input_shape=input_shape)
        owner = type(self).__name__
        self.fill_mode = check_choice(fill_mode, "fill_mode", owner, FILL_MODES)
        self.interpolation = check_choice(interpolation, "interpolation", owner,
                                          INTERPOLATIONS)
        self.fill_value = check_number(fill_value, "fill_value", owner)

    def _matrix(self, params: dict, input_shape: tuple) -> np.ndarray:
        """The ``[batch, 6]`` float32 affine rows of ``params``."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _transform(self, x: np.ndarray, params: dict) -> tuple[np.ndarray, Any]:
        b = x.shape[0]
        matrix = self._matrix(params, x.shape)
        if matrix.shape != (b, 6):
            raise ValueError(f"{type(self).__name__} {self.name!r}: the transformation "
                             f"holds {matrix.shape[0]} samples for a batch of {b}")
        return affine.transform(x, matrix, self.interpolation, self.fill_mode, self.fill_value)

    def _adjoint(self, g: np.ndarray, input_shape: tuple, state: Any) -> np.ndarray:
        return affine.sample_backward(g, state)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update(fill_mode=self.fill_mode, interpolation=self.interpolation,
                      fill_value=self.fill_value)
        return config


def per_sample(value: Any, batch: int, key: str, owner: str) -> np.ndarray:
    """A transformation entry as a float32 vector of ``batch`` values (Keras gives
    ``[batch, 1]`` columns)."""
    arr = np.asarray(value, dtype=np.float32).reshape(-1)
    if arr.size != batch:
        raise ValueError(f"{owner}: the transformation's {key!r} holds {arr.size} values "
                         f"for a batch of {batch}")
    return arr
