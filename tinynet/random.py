"""The global seed and per-consumer random generators.

``tn.set_seed(seed)`` makes everything random in tinynet reproducible: weight
initialisation, dropout masks and ``fit``'s shuffling. Each consumer (a layer's
initialiser, a dropout layer, a model's shuffler) draws its own
``numpy.random.Generator`` from the global seed and a running counter, so the streams
are independent of one another and of the thread count.

It is also Keras's ``keras.random`` namespace: :class:`SeedGenerator` and the samplers
:func:`normal`, :func:`uniform`, :func:`truncated_normal`, :func:`randint`,
:func:`dropout` and :func:`shuffle`, with Keras's arguments. Their ``seed`` is, as in
Keras, an int (the same values on every call), a :class:`SeedGenerator` (new values on
every call, reproducible from its seed) or ``None`` (the next global stream: reproducible
after ``tn.set_seed``). They draw with NumPy, so values differ from Keras's (JAX's PRNG).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["set_seed", "get_seed", "make_rng", "check_seed", "check_shape", "SeedGenerator",
           "normal", "uniform", "truncated_normal", "randint", "dropout", "shuffle"]

_lock = threading.Lock()
_seed: int | None = None
_counter = 0


def check_seed(value: Any, owner: str, allow_none: bool = True) -> int | None:
    """The one seed check (layers, ``set_seed``, ``make_rng``, ``load_digits``): a
    non-negative int, or ``None`` where ``allow_none``.

    Raises:
        TypeError: not an int (``bool`` included) and not an allowed ``None``.
        ValueError: a negative int.
    """
    if value is None and allow_none:
        return None
    expect = "None or a non-negative int" if allow_none else "a non-negative int"
    what = f"{owner}: seed must be {expect}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(what)
    if value < 0:
        raise ValueError(what)
    return int(value)


def set_seed(seed: int) -> None:
    """Seeds tinynet's random streams (weights, dropout, shuffling) for reproducibility.

    Args:
        seed: A non-negative int.

    Raises:
        TypeError: ``seed`` is not an int.
        ValueError: ``seed`` is negative.
    """
    global _seed, _counter
    seed = check_seed(seed, "set_seed", allow_none=False)
    with _lock:
        _seed, _counter = seed, 0


def get_seed() -> int | None:
    """Returns the global seed, or ``None`` when none was set."""
    return _seed


def make_rng(seed: int | None = None) -> np.random.Generator:
    """Returns a new generator: from ``seed`` if given, else the next global stream.

    Without a global seed (and no ``seed``), the generator is seeded from the OS.
    """
    global _counter
    if seed is not None:
        return np.random.default_rng(check_seed(seed, "make_rng"))
    with _lock:
        if _seed is None:
            return np.random.default_rng()
        stream = _counter
        _counter += 1
        return np.random.default_rng([_seed, stream])


# -- keras.random ------------------------------------------------------------------------------
class SeedGenerator:
    """Keras ``keras.random.SeedGenerator``: a seed with a draw counter, for the samplers'
    ``seed=`` argument. Each draw gets the next seed state ``[seed, n]`` (``n = 0, 1, ...``),
    so a layer holding one draws new values on every call, reproducibly.

    Args:
        seed: A non-negative int, or ``None``: drawn from the global stream (reproducible
            after ``tn.set_seed``).
        name: Accepted as in Keras (unused).

    Unlike Keras, a layer does not list the generator's state among its weights (it is
    not saved with the model).
    """

    def __init__(self, seed: int | None = None, name: str | None = None, **kwargs: Any) -> None:
        if kwargs:
            from tinynet.keywords import unexpected_keywords

            raise unexpected_keywords("SeedGenerator", list(kwargs), ["seed", "name"])
        seed = check_seed(seed, "SeedGenerator")
        if seed is None:
            seed = int(make_rng().integers(0, 2 ** 31 - 1))
        self._initial_seed = seed
        self.name = name
        self._count = 0
        self._lock = threading.Lock()

    @property
    def state(self) -> np.ndarray:
        """The next seed state, ``[seed, draws so far]`` (uint32, as Keras's)."""
        return np.array([self._initial_seed, self._count], dtype=np.uint32)

    def next(self, ordered: bool = True) -> np.ndarray:
        """The current seed state; advances the counter (``ordered`` as in Keras)."""
        with self._lock:
            state = self.state
            self._count += 1
        return state

    def get_config(self) -> dict:
        return {"seed": self._initial_seed}

    @classmethod
    def from_config(cls, config: dict) -> "SeedGenerator":
        return cls(**config)

    def __repr__(self) -> str:
        return f"SeedGenerator(seed={self._initial_seed}, draws={self._count})"


def _generator(seed: Any, owner: str) -> np.random.Generator:
    """The NumPy generator of one draw for a Keras ``seed`` argument."""
    if isinstance(seed, SeedGenerator):
        return np.random.default_rng([int(v) for v in seed.next()])
    if seed is None:
        return make_rng()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{owner}: seed must be a keras.random.SeedGenerator (tinynet.random."
                        f"SeedGenerator), a non-negative int or None, got {seed!r}")
    return np.random.default_rng([check_seed(seed, owner), 0])  # SeedGenerator(seed)'s first


def check_shape(shape: Any, owner: str) -> tuple[int, ...]:
    """``shape`` (``None`` for a scalar, an int, a tuple or a list of known non-negative
    sizes) as a tuple of ints: the shape of a draw, an initializer's output or a weight.

    Raises:
        TypeError: not a shape, or a size that is not an int.
        ValueError: an unknown (``None``) or negative size.
    """
    if shape is None:
        shape = ()
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TypeError(f"{owner}: shape must be a tuple of ints, got {shape!r}")
    for d in shape:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise (ValueError if d is None else TypeError)(
                f"{owner}: shape must hold known non-negative ints, got {tuple(shape)!r}")
        if d < 0:
            raise ValueError(f"{owner}: shape must hold known non-negative ints, got "
                             f"{tuple(shape)!r}")
    return tuple(int(d) for d in shape)


_shape = check_shape


def _float_dtype(dtype: Any, owner: str) -> np.dtype:
    try:
        dt = np.dtype("float32" if dtype is None else dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind != "f":
        raise TypeError(f"{owner}: dtype must be a float dtype, got {dtype!r}")
    return dt


def _real(value: Any, owner: str, arg: str) -> float:
    """``value`` (a real number, not a bool) as a finite float."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{owner}: {arg} must be a real number, got {value!r}")
    if not np.isfinite(value):
        raise ValueError(f"{owner}: {arg} must be a finite number, got {value!r}")
    return float(value)


def _int(value: Any, owner: str, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{owner}: {arg} must be an int, got {value!r}")
    return int(value)


def _tensor(values: np.ndarray) -> Any:
    from tinynet.tensor import Tensor

    return Tensor._wrap(np.ascontiguousarray(values))


def normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
           seed: Any = None) -> Any:
    """Keras ``random.normal``: a Tensor of normal draws (float32 unless ``dtype``)."""
    dt = _float_dtype(dtype, "random.normal")
    mean, stddev = _real(mean, "random.normal", "mean"), _real(stddev, "random.normal", "stddev")
    rng = _generator(seed, "random.normal")
    values = rng.standard_normal(_shape(shape, "random.normal")) * stddev + mean
    return _tensor(values.astype(dt))


def uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None,
            seed: Any = None) -> Any:
    """Keras ``random.uniform``: a Tensor of draws in ``[minval, maxval)``."""
    dt = _float_dtype(dtype, "random.uniform")
    minval = _real(minval, "random.uniform", "minval")
    maxval = _real(maxval, "random.uniform", "maxval")
    if minval > maxval:
        raise ValueError(f"random.uniform: minval must not exceed maxval, got minval={minval!r} "
                         f"and maxval={maxval!r}")
    rng = _generator(seed, "random.uniform")
    return _tensor(rng.uniform(minval, maxval, _shape(shape, "random.uniform")).astype(dt))


def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                     seed: Any = None) -> Any:
    """Keras ``random.truncated_normal``: normal draws, redrawn beyond two standard
    deviations."""
    dt = _float_dtype(dtype, "random.truncated_normal")
    mean = _real(mean, "random.truncated_normal", "mean")
    stddev = _real(stddev, "random.truncated_normal", "stddev")
    rng = _generator(seed, "random.truncated_normal")
    values = rng.standard_normal(_shape(shape, "random.truncated_normal"))
    bad = np.abs(values) > 2
    while bad.any():
        values[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(values) > 2
    return _tensor((values * stddev + mean).astype(dt))


def randint(shape: Any, minval: int, maxval: int, dtype: Any = "int32", seed: Any = None
            ) -> Any:
    """Keras ``random.randint``: integers in ``[minval, maxval)``."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt is None or dt.kind not in "iu":
        raise TypeError(f"random.randint: dtype must be an integer dtype, got {dtype!r}")
    minval = _int(minval, "random.randint", "minval")
    maxval = _int(maxval, "random.randint", "maxval")
    if minval >= maxval:
        raise ValueError(f"random.randint: minval must be less than maxval (the range "
                         f"[minval, maxval) must not be empty), got minval={minval} and "
                         f"maxval={maxval}")
    rng = _generator(seed, "random.randint")
    return _tensor(rng.integers(minval, maxval, _shape(shape, "random.randint")).astype(dt))


def dropout(inputs: Any, rate: float, noise_shape: Any = None, seed: Any = None) -> Any:
    """Keras ``random.dropout``: zeroes each entry with probability ``rate`` and scales
    the rest by ``1 / (1 - rate)``. An op: inside a ``call()`` layer it is recorded (the
    gradient passes where the mask keeps)."""
    from tinynet import ops

    expected = f"random.dropout: rate must be a float in [0, 1), got {rate!r}"
    if isinstance(rate, bool) or not isinstance(rate, (int, float, np.integer, np.floating)):
        raise TypeError(expected)
    if not 0.0 <= float(rate) < 1.0:
        raise ValueError(expected)
    shape = ops.shape(inputs)
    if noise_shape is None:
        noise = shape
    else:
        expected = (f"random.dropout: noise_shape must be None or a tuple of {len(shape)} "
                    f"entries, each None, 1 or the size of that axis of inputs {shape}, got "
                    f"{noise_shape!r}")
        if not isinstance(noise_shape, (tuple, list)):
            raise TypeError(expected)
        if len(noise_shape) != len(shape):
            raise ValueError(expected)
        for n, s in zip(noise_shape, shape):
            if n is None:
                continue
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
                raise TypeError(expected)
            if n not in (1, s):
                raise ValueError(expected)
        noise = tuple(s if n is None else int(n) for n, s in zip(noise_shape, shape))
    keep = 1.0 - float(rate)
    mask = _generator(seed, "random.dropout").random(_shape(noise, "random.dropout")) < keep
    return ops.where(np.broadcast_to(mask, shape), ops.divide(inputs, keep), 0.0)


def shuffle(x: Any, axis: int = 0, seed: Any = None) -> Any:
    """Keras ``random.shuffle``: ``x`` with its entries along ``axis`` permuted."""
    from tinynet import ops

    shape = ops.shape(x)
    if not shape:
        raise ValueError("random.shuffle: x must have rank >= 1, got a scalar")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"random.shuffle: axis must be an int, got {axis!r}")
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"random.shuffle: axis {axis} is out of range for x of rank "
                         f"{len(shape)} (shape {shape})")
    n = shape[axis]
    order = _generator(seed, "random.shuffle").permutation(n)
    return ops.take(x, order, axis=axis)
